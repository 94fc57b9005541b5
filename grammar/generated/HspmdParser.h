
// Generated from Hspmd.g4 by ANTLR 4.7.2

#pragma once


#include "antlr4-runtime.h"


namespace hspmd::grammar {


class  HspmdParser : public antlr4::Parser {
public:
  enum {
    T__0 = 1, T__1 = 2, T__2 = 3, T__3 = 4, T__4 = 5, T__5 = 6, T__6 = 7, 
    T__7 = 8, T__8 = 9, T__9 = 10, T__10 = 11, T__11 = 12, T__12 = 13, T__13 = 14, 
    T__14 = 15, T__15 = 16, T__16 = 17, T__17 = 18, T__18 = 19, T__19 = 20, 
    T__20 = 21, T__21 = 22, T__22 = 23, T__23 = 24, T__24 = 25, T__25 = 26, 
    T__26 = 27, T__27 = 28, T__28 = 29, T__29 = 30, T__30 = 31, T__31 = 32, 
    T__32 = 33, T__33 = 34, T__34 = 35, T__35 = 36, T__36 = 37, T__37 = 38, 
    T__38 = 39, T__39 = 40, T__40 = 41, T__41 = 42, T__42 = 43, T__43 = 44, 
    T__44 = 45, T__45 = 46, T__46 = 47, T__47 = 48, T__48 = 49, T__49 = 50, 
    T__50 = 51, T__51 = 52, T__52 = 53, T__53 = 54, T__54 = 55, INT = 56, 
    FLOAT = 57, STRING = 58, IDENT = 59, LINE_COMMENT = 60, BLOCK_COMMENT = 61, 
    WS = 62
  };

  enum {
    RuleFile = 0, RuleImportDecl = 1, RuleTopDecl = 2, RuleModuleDecl = 3, 
    RuleAliasDecl = 4, RuleModuleParam = 5, RuleMemberDecl = 6, RuleParamDecl = 7, 
    RuleSublayerDecl = 8, RuleConstDecl = 9, RuleFnDecl = 10, RuleFnParam = 11, 
    RuleTypeExpr = 12, RuleBlock = 13, RuleStmt = 14, RuleLetStmt = 15, 
    RuleReturnStmt = 16, RuleExpr = 17, RuleIndexItem = 18, RuleExprList = 19, 
    RuleCallArgs = 20, RuleArg = 21, RulePlanDecl = 22, RulePlanItem = 23, 
    RuleBinding = 24, RulePipelineOption = 25, RuleStageDecl = 26, RuleStageClause = 27, 
    RuleShareEntry = 28, RuleValuePath = 29, RulePathSegment = 30, RulePathIndex = 31, 
    RuleAnnotation = 32, RuleLocalAnnotation = 33, RuleDeviceList = 34, 
    RuleDeviceItem = 35, RuleMeshAxis = 36, RuleHetero = 37, RuleIdent = 38
  };

  HspmdParser(antlr4::TokenStream *input);
  ~HspmdParser();

  virtual std::string getGrammarFileName() const override;
  virtual const antlr4::atn::ATN& getATN() const override { return _atn; };
  virtual const std::vector<std::string>& getTokenNames() const override { return _tokenNames; }; // deprecated: use vocabulary instead.
  virtual const std::vector<std::string>& getRuleNames() const override;
  virtual antlr4::dfa::Vocabulary& getVocabulary() const override;


  class FileContext;
  class ImportDeclContext;
  class TopDeclContext;
  class ModuleDeclContext;
  class AliasDeclContext;
  class ModuleParamContext;
  class MemberDeclContext;
  class ParamDeclContext;
  class SublayerDeclContext;
  class ConstDeclContext;
  class FnDeclContext;
  class FnParamContext;
  class TypeExprContext;
  class BlockContext;
  class StmtContext;
  class LetStmtContext;
  class ReturnStmtContext;
  class ExprContext;
  class IndexItemContext;
  class ExprListContext;
  class CallArgsContext;
  class ArgContext;
  class PlanDeclContext;
  class PlanItemContext;
  class BindingContext;
  class PipelineOptionContext;
  class StageDeclContext;
  class StageClauseContext;
  class ShareEntryContext;
  class ValuePathContext;
  class PathSegmentContext;
  class PathIndexContext;
  class AnnotationContext;
  class LocalAnnotationContext;
  class DeviceListContext;
  class DeviceItemContext;
  class MeshAxisContext;
  class HeteroContext;
  class IdentContext; 

  class  FileContext : public antlr4::ParserRuleContext {
  public:
    FileContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    antlr4::tree::TerminalNode *EOF();
    std::vector<ImportDeclContext *> importDecl();
    ImportDeclContext* importDecl(size_t i);
    std::vector<TopDeclContext *> topDecl();
    TopDeclContext* topDecl(size_t i);

   
  };

  FileContext* file();

  class  ImportDeclContext : public antlr4::ParserRuleContext {
  public:
    ImportDeclContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    antlr4::tree::TerminalNode *STRING();

   
  };

  ImportDeclContext* importDecl();

  class  TopDeclContext : public antlr4::ParserRuleContext {
  public:
    TopDeclContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    ModuleDeclContext *moduleDecl();
    AliasDeclContext *aliasDecl();
    PlanDeclContext *planDecl();

   
  };

  TopDeclContext* topDecl();

  class  ModuleDeclContext : public antlr4::ParserRuleContext {
  public:
    antlr4::Token *kind = nullptr;;
    HspmdParser::IdentContext *name = nullptr;;
    ModuleDeclContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    IdentContext *ident();
    std::vector<ModuleParamContext *> moduleParam();
    ModuleParamContext* moduleParam(size_t i);
    std::vector<MemberDeclContext *> memberDecl();
    MemberDeclContext* memberDecl(size_t i);

   
  };

  ModuleDeclContext* moduleDecl();

  class  AliasDeclContext : public antlr4::ParserRuleContext {
  public:
    HspmdParser::IdentContext *name = nullptr;;
    HspmdParser::IdentContext *target = nullptr;;
    AliasDeclContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    CallArgsContext *callArgs();
    std::vector<IdentContext *> ident();
    IdentContext* ident(size_t i);

   
  };

  AliasDeclContext* aliasDecl();

  class  ModuleParamContext : public antlr4::ParserRuleContext {
  public:
    HspmdParser::IdentContext *name = nullptr;;
    HspmdParser::IdentContext *typeName = nullptr;;
    ModuleParamContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    std::vector<IdentContext *> ident();
    IdentContext* ident(size_t i);
    ExprContext *expr();

   
  };

  ModuleParamContext* moduleParam();

  class  MemberDeclContext : public antlr4::ParserRuleContext {
  public:
    MemberDeclContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    ParamDeclContext *paramDecl();
    SublayerDeclContext *sublayerDecl();
    ConstDeclContext *constDecl();
    FnDeclContext *fnDecl();

   
  };

  MemberDeclContext* memberDecl();

  class  ParamDeclContext : public antlr4::ParserRuleContext {
  public:
    HspmdParser::IdentContext *name = nullptr;;
    HspmdParser::IdentContext *dtype = nullptr;;
    HspmdParser::IdentContext *init = nullptr;;
    ParamDeclContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    std::vector<IdentContext *> ident();
    IdentContext* ident(size_t i);
    ExprListContext *exprList();
    CallArgsContext *callArgs();

   
  };

  ParamDeclContext* paramDecl();

  class  SublayerDeclContext : public antlr4::ParserRuleContext {
  public:
    HspmdParser::IdentContext *name = nullptr;;
    HspmdParser::IdentContext *callee = nullptr;;
    HspmdParser::ExprContext *count = nullptr;;
    SublayerDeclContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    CallArgsContext *callArgs();
    std::vector<IdentContext *> ident();
    IdentContext* ident(size_t i);
    ExprContext *expr();

   
  };

  SublayerDeclContext* sublayerDecl();

  class  ConstDeclContext : public antlr4::ParserRuleContext {
  public:
    HspmdParser::IdentContext *name = nullptr;;
    ConstDeclContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    ExprContext *expr();
    IdentContext *ident();

   
  };

  ConstDeclContext* constDecl();

  class  FnDeclContext : public antlr4::ParserRuleContext {
  public:
    HspmdParser::IdentContext *name = nullptr;;
    HspmdParser::TypeExprContext *result = nullptr;;
    FnDeclContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    BlockContext *block();
    IdentContext *ident();
    std::vector<FnParamContext *> fnParam();
    FnParamContext* fnParam(size_t i);
    TypeExprContext *typeExpr();

   
  };

  FnDeclContext* fnDecl();

  class  FnParamContext : public antlr4::ParserRuleContext {
  public:
    HspmdParser::IdentContext *name = nullptr;;
    FnParamContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    TypeExprContext *typeExpr();
    IdentContext *ident();

   
  };

  FnParamContext* fnParam();

  class  TypeExprContext : public antlr4::ParserRuleContext {
  public:
    HspmdParser::IdentContext *dtype = nullptr;;
    TypeExprContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    IdentContext *ident();
    ExprListContext *exprList();

   
  };

  TypeExprContext* typeExpr();

  class  BlockContext : public antlr4::ParserRuleContext {
  public:
    BlockContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    std::vector<StmtContext *> stmt();
    StmtContext* stmt(size_t i);

   
  };

  BlockContext* block();

  class  StmtContext : public antlr4::ParserRuleContext {
  public:
    StmtContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    LetStmtContext *letStmt();
    ReturnStmtContext *returnStmt();

   
  };

  StmtContext* stmt();

  class  LetStmtContext : public antlr4::ParserRuleContext {
  public:
    LetStmtContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    std::vector<IdentContext *> ident();
    IdentContext* ident(size_t i);
    ExprContext *expr();

   
  };

  LetStmtContext* letStmt();

  class  ReturnStmtContext : public antlr4::ParserRuleContext {
  public:
    ReturnStmtContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    ExprContext *expr();

   
  };

  ReturnStmtContext* returnStmt();

  class  ExprContext : public antlr4::ParserRuleContext {
  public:
    ExprContext(antlr4::ParserRuleContext *parent, size_t invokingState);
   
    ExprContext() = default;
    void copyFrom(ExprContext *context);
    using antlr4::ParserRuleContext::copyFrom;

    virtual size_t getRuleIndex() const override;

   
  };

  class  IntExprContext : public ExprContext {
  public:
    IntExprContext(ExprContext *ctx);

    antlr4::tree::TerminalNode *INT();
  };

  class  MemberExprContext : public ExprContext {
  public:
    MemberExprContext(ExprContext *ctx);

    ExprContext *expr();
    IdentContext *ident();
  };

  class  ParenExprContext : public ExprContext {
  public:
    ParenExprContext(ExprContext *ctx);

    ExprContext *expr();
  };

  class  NameExprContext : public ExprContext {
  public:
    NameExprContext(ExprContext *ctx);

    IdentContext *ident();
  };

  class  StringExprContext : public ExprContext {
  public:
    StringExprContext(ExprContext *ctx);

    antlr4::tree::TerminalNode *STRING();
  };

  class  IndexExprContext : public ExprContext {
  public:
    IndexExprContext(ExprContext *ctx);

    ExprContext *expr();
    IndexItemContext *indexItem();
  };

  class  FloatExprContext : public ExprContext {
  public:
    FloatExprContext(ExprContext *ctx);

    antlr4::tree::TerminalNode *FLOAT();
  };

  class  AddExprContext : public ExprContext {
  public:
    AddExprContext(ExprContext *ctx);

    antlr4::Token *op = nullptr;
    std::vector<ExprContext *> expr();
    ExprContext* expr(size_t i);
  };

  class  NegExprContext : public ExprContext {
  public:
    NegExprContext(ExprContext *ctx);

    ExprContext *expr();
  };

  class  MulExprContext : public ExprContext {
  public:
    MulExprContext(ExprContext *ctx);

    antlr4::Token *op = nullptr;
    std::vector<ExprContext *> expr();
    ExprContext* expr(size_t i);
  };

  class  BoolExprContext : public ExprContext {
  public:
    BoolExprContext(ExprContext *ctx);

  };

  class  CallExprContext : public ExprContext {
  public:
    CallExprContext(ExprContext *ctx);

    ExprContext *expr();
    CallArgsContext *callArgs();
  };

  class  ListExprContext : public ExprContext {
  public:
    ListExprContext(ExprContext *ctx);

    ExprListContext *exprList();
  };

  ExprContext* expr();
  ExprContext* expr(int precedence);
  class  IndexItemContext : public antlr4::ParserRuleContext {
  public:
    HspmdParser::ExprContext *lo = nullptr;;
    HspmdParser::ExprContext *hi = nullptr;;
    IndexItemContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    std::vector<ExprContext *> expr();
    ExprContext* expr(size_t i);

   
  };

  IndexItemContext* indexItem();

  class  ExprListContext : public antlr4::ParserRuleContext {
  public:
    ExprListContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    std::vector<ExprContext *> expr();
    ExprContext* expr(size_t i);

   
  };

  ExprListContext* exprList();

  class  CallArgsContext : public antlr4::ParserRuleContext {
  public:
    CallArgsContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    std::vector<ArgContext *> arg();
    ArgContext* arg(size_t i);

   
  };

  CallArgsContext* callArgs();

  class  ArgContext : public antlr4::ParserRuleContext {
  public:
    HspmdParser::IdentContext *name = nullptr;;
    ArgContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    ExprContext *expr();
    IdentContext *ident();

   
  };

  ArgContext* arg();

  class  PlanDeclContext : public antlr4::ParserRuleContext {
  public:
    HspmdParser::IdentContext *name = nullptr;;
    HspmdParser::IdentContext *model = nullptr;;
    PlanDeclContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    std::vector<IdentContext *> ident();
    IdentContext* ident(size_t i);
    CallArgsContext *callArgs();
    std::vector<PlanItemContext *> planItem();
    PlanItemContext* planItem(size_t i);

   
  };

  PlanDeclContext* planDecl();

  class  PlanItemContext : public antlr4::ParserRuleContext {
  public:
    PlanItemContext(antlr4::ParserRuleContext *parent, size_t invokingState);
   
    PlanItemContext() = default;
    void copyFrom(PlanItemContext *context);
    using antlr4::ParserRuleContext::copyFrom;

    virtual size_t getRuleIndex() const override;

   
  };

  class  PrecisionItemContext : public PlanItemContext {
  public:
    PrecisionItemContext(PlanItemContext *ctx);

    IdentContext *ident();
  };

  class  ZeroItemContext : public PlanItemContext {
  public:
    ZeroItemContext(PlanItemContext *ctx);

    antlr4::Token *replicas = nullptr;
    antlr4::tree::TerminalNode *INT();
  };

  class  AnnotateItemContext : public PlanItemContext {
  public:
    AnnotateItemContext(PlanItemContext *ctx);

    ValuePathContext *valuePath();
    AnnotationContext *annotation();
  };

  class  ChunkedItemContext : public PlanItemContext {
  public:
    ChunkedItemContext(PlanItemContext *ctx);

  };

  class  BindItemContext : public PlanItemContext {
  public:
    BindItemContext(PlanItemContext *ctx);

    std::vector<BindingContext *> binding();
    BindingContext* binding(size_t i);
  };

  class  OptimizerItemContext : public PlanItemContext {
  public:
    OptimizerItemContext(PlanItemContext *ctx);

    HspmdParser::IdentContext *name = nullptr;
    IdentContext *ident();
    CallArgsContext *callArgs();
  };

  class  ScheduleItemContext : public PlanItemContext {
  public:
    ScheduleItemContext(PlanItemContext *ctx);

    IdentContext *ident();
  };

  class  RecomputeItemContext : public PlanItemContext {
  public:
    RecomputeItemContext(PlanItemContext *ctx);

  };

  class  ReshardItemContext : public PlanItemContext {
  public:
    ReshardItemContext(PlanItemContext *ctx);

    ValuePathContext *valuePath();
    AnnotationContext *annotation();
  };

  class  ClusterItemContext : public PlanItemContext {
  public:
    ClusterItemContext(PlanItemContext *ctx);

    antlr4::tree::TerminalNode *STRING();
  };

  class  PipelineItemContext : public PlanItemContext {
  public:
    PipelineItemContext(PlanItemContext *ctx);

    HspmdParser::IdentContext *name = nullptr;
    std::vector<PipelineOptionContext *> pipelineOption();
    PipelineOptionContext* pipelineOption(size_t i);
    std::vector<StageDeclContext *> stageDecl();
    StageDeclContext* stageDecl(size_t i);
    IdentContext *ident();
  };

  PlanItemContext* planItem();

  class  BindingContext : public antlr4::ParserRuleContext {
  public:
    HspmdParser::IdentContext *name = nullptr;;
    BindingContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    ExprContext *expr();
    IdentContext *ident();

   
  };

  BindingContext* binding();

  class  PipelineOptionContext : public antlr4::ParserRuleContext {
  public:
    antlr4::Token *key = nullptr;;
    PipelineOptionContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    ExprContext *expr();

   
  };

  PipelineOptionContext* pipelineOption();

  class  StageDeclContext : public antlr4::ParserRuleContext {
  public:
    StageDeclContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    std::vector<StageClauseContext *> stageClause();
    StageClauseContext* stageClause(size_t i);

   
  };

  StageDeclContext* stageDecl();

  class  StageClauseContext : public antlr4::ParserRuleContext {
  public:
    StageClauseContext(antlr4::ParserRuleContext *parent, size_t invokingState);
   
    StageClauseContext() = default;
    void copyFrom(StageClauseContext *context);
    using antlr4::ParserRuleContext::copyFrom;

    virtual size_t getRuleIndex() const override;

   
  };

  class  DevicesClauseContext : public StageClauseContext {
  public:
    DevicesClauseContext(StageClauseContext *ctx);

    DeviceListContext *deviceList();
  };

  class  LayersClauseContext : public StageClauseContext {
  public:
    LayersClauseContext(StageClauseContext *ctx);

    ValuePathContext *valuePath();
  };

  class  WithClauseContext : public StageClauseContext {
  public:
    WithClauseContext(StageClauseContext *ctx);

    std::vector<ValuePathContext *> valuePath();
    ValuePathContext* valuePath(size_t i);
  };

  class  StageZeroClauseContext : public StageClauseContext {
  public:
    StageZeroClauseContext(StageClauseContext *ctx);

    antlr4::Token *replicas = nullptr;
    antlr4::tree::TerminalNode *INT();
  };

  class  TpClauseContext : public StageClauseContext {
  public:
    TpClauseContext(StageClauseContext *ctx);

    antlr4::tree::TerminalNode *INT();
  };

  class  StageRecomputeClauseContext : public StageClauseContext {
  public:
    StageRecomputeClauseContext(StageClauseContext *ctx);

  };

  class  ShareClauseContext : public StageClauseContext {
  public:
    ShareClauseContext(StageClauseContext *ctx);

    antlr4::Token *key = nullptr;
    std::vector<ShareEntryContext *> shareEntry();
    ShareEntryContext* shareEntry(size_t i);
  };

  StageClauseContext* stageClause();

  class  ShareEntryContext : public antlr4::ParserRuleContext {
  public:
    ShareEntryContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    std::vector<antlr4::tree::TerminalNode *> INT();
    antlr4::tree::TerminalNode* INT(size_t i);
    DeviceListContext *deviceList();

   
  };

  ShareEntryContext* shareEntry();

  class  ValuePathContext : public antlr4::ParserRuleContext {
  public:
    ValuePathContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    std::vector<PathSegmentContext *> pathSegment();
    PathSegmentContext* pathSegment(size_t i);

   
  };

  ValuePathContext* valuePath();

  class  PathSegmentContext : public antlr4::ParserRuleContext {
  public:
    PathSegmentContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    IdentContext *ident();
    PathIndexContext *pathIndex();

   
  };

  PathSegmentContext* pathSegment();

  class  PathIndexContext : public antlr4::ParserRuleContext {
  public:
    antlr4::Token *lo = nullptr;;
    antlr4::Token *hi = nullptr;;
    PathIndexContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    std::vector<antlr4::tree::TerminalNode *> INT();
    antlr4::tree::TerminalNode* INT(size_t i);

   
  };

  PathIndexContext* pathIndex();

  class  AnnotationContext : public antlr4::ParserRuleContext {
  public:
    AnnotationContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    std::vector<LocalAnnotationContext *> localAnnotation();
    LocalAnnotationContext* localAnnotation(size_t i);
    HeteroContext *hetero();

   
  };

  AnnotationContext* annotation();

  class  LocalAnnotationContext : public antlr4::ParserRuleContext {
  public:
    LocalAnnotationContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    DeviceListContext *deviceList();
    std::vector<MeshAxisContext *> meshAxis();
    MeshAxisContext* meshAxis(size_t i);

   
  };

  LocalAnnotationContext* localAnnotation();

  class  DeviceListContext : public antlr4::ParserRuleContext {
  public:
    DeviceListContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    std::vector<DeviceItemContext *> deviceItem();
    DeviceItemContext* deviceItem(size_t i);

   
  };

  DeviceListContext* deviceList();

  class  DeviceItemContext : public antlr4::ParserRuleContext {
  public:
    antlr4::Token *lo = nullptr;;
    antlr4::Token *hi = nullptr;;
    DeviceItemContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    std::vector<antlr4::tree::TerminalNode *> INT();
    antlr4::tree::TerminalNode* INT(size_t i);

   
  };

  DeviceItemContext* deviceItem();

  class  MeshAxisContext : public antlr4::ParserRuleContext {
  public:
    MeshAxisContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    IdentContext *ident();
    antlr4::tree::TerminalNode *INT();

   
  };

  MeshAxisContext* meshAxis();

  class  HeteroContext : public antlr4::ParserRuleContext {
  public:
    HeteroContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    IdentContext *ident();
    std::vector<antlr4::tree::TerminalNode *> INT();
    antlr4::tree::TerminalNode* INT(size_t i);

   
  };

  HeteroContext* hetero();

  class  IdentContext : public antlr4::ParserRuleContext {
  public:
    IdentContext(antlr4::ParserRuleContext *parent, size_t invokingState);
    virtual size_t getRuleIndex() const override;
    antlr4::tree::TerminalNode *IDENT();

   
  };

  IdentContext* ident();


  virtual bool sempred(antlr4::RuleContext *_localctx, size_t ruleIndex, size_t predicateIndex) override;
  bool exprSempred(ExprContext *_localctx, size_t predicateIndex);

private:
  static std::vector<antlr4::dfa::DFA> _decisionToDFA;
  static antlr4::atn::PredictionContextCache _sharedContextCache;
  static std::vector<std::string> _ruleNames;
  static std::vector<std::string> _tokenNames;

  static std::vector<std::string> _literalNames;
  static std::vector<std::string> _symbolicNames;
  static antlr4::dfa::Vocabulary _vocabulary;
  static antlr4::atn::ATN _atn;
  static std::vector<uint16_t> _serializedATN;


  struct Initializer {
    Initializer();
  };
  static Initializer _init;
};

}  // namespace hspmd::grammar
