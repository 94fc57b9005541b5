// Hspmd.g4 - one grammar for hspmd model files and annotation plan files.
//
// The generated C++ parser is checked in under grammar/generated/ and is rebuilt by the
// `hspmd_regenerate_grammar` CMake target when this file's hash changes (needs Debian's
// antlr4 tool). ANTLR types never leave frontend/: AstBuilder.cpp turns the parse tree
// into frontend/Ast.h. Newlines are not significant; every statement starts with a keyword.
grammar Hspmd;

file : importDecl* topDecl* EOF ;

importDecl : 'import' STRING ;

topDecl : moduleDecl | aliasDecl | planDecl ;

// ---------------------------------------------------------------- models and layers
moduleDecl : kind=('layer' | 'model') name=ident '(' (moduleParam (',' moduleParam)* ','?)? ')'
             '{' memberDecl* '}' ;
aliasDecl  : 'model' name=ident '=' target=ident callArgs ;
moduleParam : name=ident ':' typeName=ident ('=' expr)? ;

memberDecl : paramDecl | sublayerDecl | constDecl | fnDecl ;
paramDecl    : 'param' name=ident (':' dtype=ident)? '=' init=ident '[' exprList? ']' callArgs? ;
sublayerDecl : 'layer' name=ident '=' callee=ident callArgs ('*' count=expr)? ;
constDecl    : 'let' name=ident '=' expr ;
fnDecl       : 'fn' name=ident '(' (fnParam (',' fnParam)*)? ')' ('->' result=typeExpr)? block ;
fnParam      : name=ident ':' typeExpr ;
typeExpr     : dtype=ident ('[' exprList? ']')? ;

block : '{' stmt* '}' ;
stmt  : letStmt | returnStmt ;
letStmt    : 'let' ident (',' ident)* '=' expr ;
returnStmt : 'return' expr ;

expr
  : expr '.' ident                              # memberExpr
  | expr '[' indexItem ']'                      # indexExpr
  | expr callArgs                               # callExpr
  | '-' expr                                    # negExpr
  | expr op=('*' | '/' | '@' | '%') expr        # mulExpr
  | expr op=('+' | '-') expr                    # addExpr
  | '(' expr ')'                                # parenExpr
  | '[' exprList? ']'                           # listExpr
  | INT                                         # intExpr
  | FLOAT                                       # floatExpr
  | STRING                                      # stringExpr
  | ('true' | 'false')                          # boolExpr
  | ident                                       # nameExpr
  ;
indexItem : expr | lo=expr? ':' hi=expr? ;
exprList  : expr (',' expr)* ','? ;
callArgs  : '(' (arg (',' arg)* ','?)? ')' ;
arg       : (name=ident '=')? expr ;

// ---------------------------------------------------------------- plans
planDecl : 'plan' name=ident 'for' model=ident callArgs? '{' planItem* '}' ;
planItem
  : 'cluster' STRING                                          # clusterItem
  | 'bind' binding (',' binding)*                             # bindItem
  | 'optimizer' name=ident callArgs?                          # optimizerItem
  | 'schedule' (ident | '1f1b')                               # scheduleItem
  | 'zero' ('replicas' replicas=INT)?                         # zeroItem
  | 'recompute'                                               # recomputeItem
  | 'chunked'                                                 # chunkedItem
  | 'precision' ident                                         # precisionItem
  | 'pipeline' name=ident? pipelineOption* '{' stageDecl* '}' # pipelineItem
  | 'annotate' valuePath '=' annotation                       # annotateItem
  | 'reshard' valuePath 'to' annotation                       # reshardItem
  ;
binding        : name=ident '=' expr ;
pipelineOption : key=('share' | 'microbatches') expr ;
stageDecl      : 'stage' stageClause* ;
stageClause
  : 'devices' deviceList                                      # devicesClause
  | 'tp' INT                                                  # tpClause
  | key=('cp' | 'hp') '[' shareEntry (',' shareEntry)* ']'    # shareClause
  | 'layers' valuePath                                        # layersClause
  | 'with' valuePath (',' valuePath)*                         # withClause
  | 'zero' ('replicas' replicas=INT)?                         # stageZeroClause
  | 'recompute'                                               # stageRecomputeClause
  ;
shareEntry : (INT | deviceList) ':' INT ;

valuePath : pathSegment ('.' pathSegment)* ;
pathSegment : ident ('[' pathIndex ']')? ;
pathIndex : INT | '*' | lo=INT? ':' hi=INT? ;

// HSPMD annotation notation (shared/DESIGN.md section 4); checked by AstBuilder.
annotation      : localAnnotation | '{' localAnnotation ('|' localAnnotation)* '}' hetero ;
localAnnotation : deviceList ':' meshAxis ('x' meshAxis)* ;
deviceList      : '[' deviceItem (',' deviceItem)* ']' ;
deviceItem      : lo=INT ('..' hi=INT)? ;
meshAxis        : ident ('*' INT)? ;
hetero          : ident ('ratio'? '[' INT (',' INT)* ']')? ;

// Plan words are keywords only where a plan expects them; elsewhere they are names.
ident
  : IDENT | 'layers' | 'devices' | 'share' | 'microbatches' | 'tp' | 'cp' | 'hp' | 'zero'
  | 'recompute' | 'stage' | 'with' | 'to' | 'bind' | 'cluster' | 'optimizer' | 'schedule'
  | 'pipeline' | 'x' | 'ratio' | 'chunked' | 'replicas' | 'precision'
  ;

// ---------------------------------------------------------------- tokens
INT    : [0-9]+ ;
FLOAT  : [0-9]+ '.' [0-9]+ ([eE] [+-]? [0-9]+)? | [0-9]+ [eE] [+-]? [0-9]+ ;
STRING : '"' (~["\\\r\n] | '\\' .)* '"' ;
IDENT  : [a-zA-Z_] [a-zA-Z0-9_]* ;
LINE_COMMENT  : '//' ~[\r\n]* -> skip ;
BLOCK_COMMENT : '/*' .*? '*/' -> skip ;
WS : [ \t\r\n]+ -> skip ;

