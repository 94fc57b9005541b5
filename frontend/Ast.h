// Ast.h - hspmd's own syntax tree. AstBuilder.cpp builds it from the ANTLR parse tree;
// nothing outside frontend/ sees ANTLR types.
#pragma once

#include "ir/Annotation.h"
#include "ir/AnnotationText.h"
#include "ir/Location.h"

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace hspmd::frontend {

using ir::Location;

enum class ExprKind { Int, Float, String, Bool, Name, List, Member, Index, Call, Neg, Binary };

struct Expr {
  ExprKind kind = ExprKind::Int;
  Location loc; // for Binary: the operator
  int64_t intValue = 0;
  double floatValue = 0;
  bool boolValue = false;
  std::string text; // Name, String, Member (the member), Binary (the operator)
  // List: elements. Member: [base]. Neg: [operand]. Binary: [lhs, rhs].
  // Call: [callee, args...]. Index: [base, index] or [base, lo?, hi?] when isSlice.
  std::vector<std::unique_ptr<Expr>> children;
  std::vector<std::string> argNames; // Call: one per argument, "" when positional
  std::vector<Location> argLocs;     // Call: the argument's name when named, else its value
  bool isSlice = false;
};
using ExprPtr = std::unique_ptr<Expr>;

struct TypeExpr {
  std::string dtype; // "f32", or a scalar type "int" / "float" / "bool"
  Location loc;
  bool hasShape = false;
  std::vector<ExprPtr> dims;
};

struct Arg {
  std::string name; // "" when positional
  ExprPtr value;
  Location loc;
};

struct ModuleParam {
  std::string name, typeName;
  ExprPtr defaultValue; // may be null
  Location loc;
};

struct ParamDecl {
  std::string name, dtype, init;
  std::vector<ExprPtr> shape;
  std::vector<Arg> initArgs;
  Location loc;
};

struct SublayerDecl {
  std::string name, callee;
  std::vector<Arg> args;
  ExprPtr count; // "* layers": a stack when set
  Location loc, calleeLoc;
};

struct ConstDecl {
  std::string name;
  ExprPtr value;
  Location loc;
};

struct LetStmt {
  std::vector<std::string> names;
  std::vector<Location> nameLocs;
  ExprPtr value;
  Location loc;
};
struct ReturnStmt {
  ExprPtr value;
  Location loc;
};
using Stmt = std::variant<LetStmt, ReturnStmt>;

struct FnParam {
  std::string name;
  TypeExpr type;
  Location loc;
};

struct FnDecl {
  std::string name;
  std::vector<FnParam> params;
  std::optional<TypeExpr> result;
  std::vector<Stmt> body;
  Location loc, endLoc;
};

using Member = std::variant<ParamDecl, SublayerDecl, ConstDecl, FnDecl>;

struct ModuleDecl {
  bool isModel = false;
  std::string name;
  std::vector<ModuleParam> params;
  std::vector<Member> members;
  // A model alias (`model Tiny = GPT(d = 64)`): the target and its arguments.
  std::string aliasTarget;
  std::vector<Arg> aliasArgs;
  Location loc, aliasTargetLoc;
  bool isAlias() const { return !aliasTarget.empty(); }
};

// ------------------------------------------------------------------ plans

/// A parameter or value path as written: blocks[*].wqkv, blocks[0:8], blocks[2].forward.h.
struct PathSegment {
  std::string name;
  enum class Index { None, At, All, Range } index = Index::None;
  int64_t at = 0;                // At
  std::optional<int64_t> lo, hi; // Range
};
struct Path {
  std::vector<PathSegment> segments;
  Location loc;
  std::string str() const;
};

struct AnnotationExpr {
  ir::Annotation annotation;
  ir::AnnotationSourceMap map;
  Location loc;
};

struct ShareEntry {
  std::vector<int> devices; // one device, or a group
  int64_t value = 0;
  Location loc;
};

struct StageDecl {
  std::vector<int> devices;
  Location devicesLoc;
  std::optional<int64_t> tp;
  Location tpLoc;
  std::vector<ShareEntry> cp, hp;
  Location cpLoc, hpLoc;
  std::optional<Path> layers;
  std::vector<Path> with;
  bool zero = false, recompute = false;
  int64_t zeroReplicas = 1; // `zero replicas N`: each shard of the optimizer state on N devices
  Location loc, zeroLoc;
};

struct PipelineDecl {
  std::string name;
  ExprPtr share, microbatches;
  std::vector<StageDecl> stages;
  Location loc;
};

struct PlanDecl {
  std::string name, model;
  Location loc, modelLoc;
  std::vector<Arg> modelArgs;
  std::optional<std::string> cluster;
  Location clusterLoc;
  std::vector<Arg> bindings;
  std::string optimizer;
  std::vector<Arg> optimizerArgs;
  Location optimizerLoc;
  std::string schedule;
  Location scheduleLoc;
  bool zero = false, recompute = false, chunked = false;
  int64_t zeroReplicas = 1; // `zero replicas N`
  Location zeroLoc;
  std::string precision; // `precision bf16` ("" when not given)
  Location precisionLoc;
  std::vector<PipelineDecl> pipelines;
  struct Annotate {
    Path path;
    AnnotationExpr annotation;
  };
  std::vector<Annotate> annotates, reshards;
};

struct ImportDecl {
  std::string path;
  Location loc;
};

struct FileAst {
  std::string fileName;
  std::vector<ImportDecl> imports;
  std::vector<std::unique_ptr<ModuleDecl>> modules;
  std::vector<std::unique_ptr<PlanDecl>> plans;
};

} // namespace hspmd::frontend
