// ElaboratorImpl.h - private to frontend/: the interpreter that runs a model's fn bodies
// at compile time and records the tensor operations into an ir::Graph.
//
// Integers are SymExpr (a dimension may be symbolic, like B), floats are double, tensors are
// ir::Value*. Module instances and stacks live in an arena owned by the Elaborator. The
// first error in a model aborts its elaboration (ElaborationAbort), so errors do not cascade.
#pragma once

#include "frontend/Ast.h"
#include "frontend/Compilation.h"
#include "frontend/Diagnostics.h"
#include "ir/Graph.h"

#include <map>
#include <memory>
#include <variant>

namespace hspmd::frontend {

struct Instance;
struct Stack;
struct EList;
struct BoundFn {
  Instance *self;
  const FnDecl *fn;
};
struct BuiltinRef {
  std::string name;
};
using EValue = std::variant<std::monostate, ir::SymExpr, double, bool, std::string, ir::Value *, Instance *, Stack *,
                            BoundFn, BuiltinRef, std::shared_ptr<EList>>;
struct EList {
  std::vector<EValue> items;
};

struct Scope {
  std::map<std::string, EValue> names;
  const Scope *parent = nullptr;
  const EValue *find(const std::string &name) const {
    for (const Scope *scope = this; scope; scope = scope->parent)
      if (auto it = scope->names.find(name); it != scope->names.end())
        return &it->second;
    return nullptr;
  }
};

struct Instance {
  const ModuleDecl *decl = nullptr;
  std::string path; // "" for the model itself, "blocks[3]", "blocks[3].attn"
  Scope scope;
};

struct Stack {
  std::string path;
  std::vector<Instance *> items;
};

struct ArgValue {
  std::string name; // "" when positional
  EValue value;
  Location loc;      // the name when named (for "no such argument"), else the value
  Location valueLoc; // the value (for type errors)
};

struct ElaborationAbort {};

class Elaborator {
public:
  Elaborator(Compilation &compilation, ir::Graph &graph) : compilation_(compilation), graph_(graph) {}

  /// Instantiates `model` and runs its forward, recording ops. False after an error.
  bool elaborateModel(const ModuleDecl &model, const std::vector<ArgValue> &args,
                      const std::map<std::string, int64_t> &bindings, const Location &instantiatedAt);
  /// Evaluates a constant expression (plan arguments and bindings).
  EValue evalConstant(const Expr &expr);

  static std::string describe(const EValue &value);
  [[noreturn]] void fail(const Location &at, std::string message);

private:
  Compilation &compilation_;
  ir::Graph &graph_;
  std::vector<std::unique_ptr<Instance>> instances_;
  std::vector<std::unique_ptr<Stack>> stacks_;
  int callDepth_ = 0;
  // What an error inside a layer's source (the stdlib, another file) is noted with: the
  // instance being elaborated, and where the model was instantiated (its declaration or alias).
  std::vector<const Instance *> active_;
  Location modelAt_;
  std::string modelName_;
  struct ActiveGuard {
    std::vector<const Instance *> &active;
    ActiveGuard(std::vector<const Instance *> &a, const Instance *i) : active(a) { active.push_back(i); }
    ~ActiveGuard() { active.pop_back(); }
  };

  // Elaborator.cpp
  Instance *instantiate(const ModuleDecl &decl, const std::string &path, const std::vector<ArgValue> &args,
                        const Location &at);
  void bindModuleParams(Instance &instance, const std::vector<ArgValue> &args, const Location &at);
  void elaborateMember(Instance &instance, const Member &member);
  void createParam(Instance &instance, const ParamDecl &decl);
  EValue callFn(Instance *self, const FnDecl &fn, const std::vector<ArgValue> &args, const Location &at);
  void bindSignature(Scope &scope, const TypeExpr &type, ir::Value *value, const std::string &what, const Location &at,
                     bool declareSymbols, const std::map<std::string, int64_t> &bindings);
  EValue call(const EValue &callee, const std::vector<ArgValue> &args, const Location &at);

  // Expressions.cpp
public:
  EValue eval(const Expr &expr, Scope &scope);
  std::vector<ArgValue> evalArgs(const Expr &call, Scope &scope);
  std::vector<ArgValue> evalArgs(const std::vector<Arg> &args, Scope &scope);
  ir::SymExpr expectInt(const EValue &value, const Location &at, const std::string &what);
  int64_t expectConstInt(const EValue &value, const Location &at, const std::string &what);
  double expectFloat(const EValue &value, const Location &at, const std::string &what);
  ir::Value *expectTensor(const EValue &value, const Location &at, const std::string &what);
  ir::Value *makeOp(ir::OpKind kind, std::vector<ir::Value *> operands, ir::AttrMap attrs, const Location &at);
  std::vector<ir::Value *> makeMultiOp(ir::OpKind kind, std::vector<ir::Value *> operands, ir::AttrMap attrs,
                                       const Location &at);
  ir::Value *scalarConstant(double value, ir::DType dtype, const Location &at);
  /// Fails when a tensor of `type` (its known dimensions) would exceed kMaxTensorBytes, or its
  /// element count 64 bits: byte counts downstream (memory plans, messages) stay exact.
  void checkSize(const ir::TensorType &type, const Location &at, const std::string &what);

private:
  EValue evalBinary(const Expr &expr, Scope &scope);
  EValue evalIndex(const Expr &expr, Scope &scope);
  EValue evalMember(const Expr &expr, Scope &scope);

  // Builtins.cpp
public:
  static bool isBuiltin(const std::string &name);
  EValue callBuiltin(const std::string &name, const std::vector<ArgValue> &args, const Location &at);
};

} // namespace hspmd::frontend
