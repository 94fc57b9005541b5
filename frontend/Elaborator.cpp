// Elaborator.cpp - module instantiation, parameters, stacks and fn calls.
#include "frontend/ElaboratorImpl.h"

#include <algorithm>
#include <cctype>

namespace hspmd::frontend {

void Elaborator::fail(const Location &at, std::string message) {
  auto error = compilation_.diags().error(at, std::move(message));
  // An error in another file than the model's (a stdlib layer) says which instance it is of and
  // where the model was made, which is where the argument to change usually is.
  if (modelAt_.isKnown() && at.file != modelAt_.file) {
    const std::string path = active_.empty() ? "" : active_.back()->path;
    error.note(modelAt_,
               "in " + (path.empty() ? std::string("the model") : path) + " of " + modelName_ + ", instantiated here");
  }
  throw ElaborationAbort{};
}

static std::string joinPath(const std::string &prefix, const std::string &name) {
  return prefix.empty() ? name : prefix + "." + name;
}

bool Elaborator::elaborateModel(const ModuleDecl &model, const std::vector<ArgValue> &args,
                                const std::map<std::string, int64_t> &bindings, const Location &instantiatedAt) {
  try {
    modelAt_ = instantiatedAt;
    modelName_ = model.name;
    Instance *root = instantiate(model, "", args, model.loc);
    const FnDecl *forward = nullptr;
    for (const Member &member : root->decl->members)
      if (auto *fn = std::get_if<FnDecl>(&member); fn && fn->name == "forward")
        forward = fn;
    if (!forward)
      fail(root->decl->loc, "model '" + model.name + "' has no 'fn forward'");
    // The model's inputs: one input op per forward parameter, with its symbols declared.
    Scope signatureScope{{}, &root->scope};
    std::vector<ArgValue> inputs;
    for (const FnParam &param : forward->params) {
      if (!param.type.hasShape)
        fail(param.loc, "the inputs of a model's forward must be tensors");
      auto dtype = ir::dtypeFromName(param.type.dtype);
      if (!dtype)
        fail(param.type.loc, "unknown element type '" + param.type.dtype + "'");
      ir::TensorType type{*dtype, {}};
      for (const ExprPtr &dim : param.type.dims) {
        if (dim->kind == ExprKind::Name && !signatureScope.find(dim->text)) {
          if (auto bound = bindings.find(dim->text); bound != bindings.end()) {
            signatureScope.names[dim->text] = ir::SymExpr(bound->second);
          } else {
            signatureScope.names[dim->text] = ir::SymExpr::symbol(dim->text);
            graph_.symbols.push_back(dim->text);
          }
        }
        type.shape.push_back(expectInt(eval(*dim, signatureScope), dim->loc, "a dimension"));
      }
      checkSize(type, param.loc, "input '" + param.name + "'");
      ir::Op *op = graph_.createOp(ir::OpKind::Input, {}, {type}, {}, param.loc, {param.name});
      inputs.push_back(ArgValue{"", op->result(), param.loc, param.loc});
    }
    EValue result = callFn(root, *forward, inputs, forward->loc);
    ir::Value *output = expectTensor(result, forward->loc, "the result of a model's forward");
    graph_.outputs.push_back(output);
    return true;
  } catch (const ElaborationAbort &) {
    return false;
  }
}

Instance *Elaborator::instantiate(const ModuleDecl &decl, const std::string &path, const std::vector<ArgValue> &args,
                                  const Location &at) {
  if (decl.isAlias()) {
    // `model Tiny = GPT(d = 64)`: the alias's arguments, replaced by any given by name.
    const ModuleDecl *target = compilation_.findModule(decl.aliasTarget);
    if (!target || target == &decl)
      fail(decl.aliasTargetLoc, "unknown model '" + decl.aliasTarget + "'");
    if (++callDepth_ > 64)
      fail(decl.loc, "model aliases refer to each other in a cycle");
    Scope empty;
    std::vector<ArgValue> merged = evalArgs(decl.aliasArgs, empty);
    for (const ArgValue &arg : args) {
      if (arg.name.empty())
        fail(arg.loc, "arguments to a model alias must be named");
      auto same = std::find_if(merged.begin(), merged.end(), [&](const ArgValue &a) { return a.name == arg.name; });
      if (same != merged.end())
        *same = arg;
      else
        merged.push_back(arg);
    }
    Instance *instance = instantiate(*target, path, merged, at);
    --callDepth_;
    return instance;
  }
  auto owned = std::make_unique<Instance>();
  Instance *instance = owned.get();
  instances_.push_back(std::move(owned));
  instance->decl = &decl;
  instance->path = path;
  ActiveGuard guard(active_, instance);
  bindModuleParams(*instance, args, at);
  for (const Member &member : decl.members)
    elaborateMember(*instance, member);
  return instance;
}

void Elaborator::bindModuleParams(Instance &instance, const std::vector<ArgValue> &args, const Location &at) {
  const ModuleDecl &decl = *instance.decl;
  const std::string kind = decl.isModel ? "model" : "layer";
  std::vector<const ArgValue *> given(decl.params.size(), nullptr);
  size_t positional = 0;
  for (const ArgValue &arg : args) {
    size_t index = positional;
    if (arg.name.empty()) {
      if (positional >= decl.params.size())
        fail(arg.loc, kind + " '" + decl.name + "' takes " + std::to_string(decl.params.size()) + " arguments");
      ++positional;
    } else {
      auto it = std::find_if(decl.params.begin(), decl.params.end(),
                             [&](const ModuleParam &p) { return p.name == arg.name; });
      if (it == decl.params.end())
        fail(arg.loc, kind + " '" + decl.name + "' has no parameter '" + arg.name + "'");
      index = static_cast<size_t>(it - decl.params.begin());
    }
    if (given[index])
      fail(arg.loc, "parameter '" + decl.params[index].name + "' is given twice");
    given[index] = &arg;
  }
  for (size_t i = 0; i < decl.params.size(); ++i) {
    const ModuleParam &param = decl.params[i];
    EValue value;
    Location where = given[i] ? given[i]->valueLoc : param.loc;
    if (given[i]) {
      value = given[i]->value;
    } else if (param.defaultValue) {
      value = eval(*param.defaultValue, instance.scope);
      where = param.defaultValue->loc;
    } else {
      compilation_.diags()
          .error(at, "missing argument '" + param.name + "' for " + kind + " '" + decl.name + "'")
          .note(param.loc, "parameter declared here");
      throw ElaborationAbort{};
    }
    const std::string what = "parameter '" + param.name + "'";
    if (param.typeName == "int") {
      value = expectInt(value, where, what);
    } else if (param.typeName == "float") {
      value = expectFloat(value, where, what);
    } else if (param.typeName == "bool") {
      if (!std::holds_alternative<bool>(value))
        fail(where, what + " must be a bool, got " + describe(value));
    } else {
      fail(param.loc, "unknown parameter type '" + param.typeName + "'; expected int, float or bool");
    }
    instance.scope.names[param.name] = value;
  }
}

void Elaborator::elaborateMember(Instance &instance, const Member &member) {
  auto declare = [&](const std::string &name, const Location &at, EValue value) {
    if (instance.scope.names.count(name))
      fail(at, "'" + name + "' is already defined in " + instance.decl->name);
    instance.scope.names[name] = std::move(value);
  };
  if (auto *c = std::get_if<ConstDecl>(&member)) {
    declare(c->name, c->loc, eval(*c->value, instance.scope));
  } else if (auto *p = std::get_if<ParamDecl>(&member)) {
    createParam(instance, *p);
  } else if (auto *fn = std::get_if<FnDecl>(&member)) {
    declare(fn->name, fn->loc, BoundFn{&instance, fn});
  } else if (auto *layer = std::get_if<SublayerDecl>(&member)) {
    const ModuleDecl *callee = compilation_.findModule(layer->callee);
    if (!callee)
      fail(layer->calleeLoc, "unknown layer '" + layer->callee + "'");
    if (callee->isModel)
      fail(layer->calleeLoc, "'" + layer->callee + "' is a model; only layers can be used inside another module");
    if (++callDepth_ > 64)
      fail(layer->calleeLoc, "layers contain each other in a cycle (or nest deeper than 64)");
    std::vector<ArgValue> args = evalArgs(layer->args, instance.scope);
    const std::string path = joinPath(instance.path, layer->name);
    if (layer->count) {
      int64_t count = expectConstInt(eval(*layer->count, instance.scope), layer->count->loc, "a stack size");
      // 4096 is far beyond any real model, and keeps elaboration time bounded.
      if (count < 1 || count > 4096)
        fail(layer->count->loc, "a stack needs between 1 and 4096 layers, got " + std::to_string(count));
      auto stack = std::make_unique<Stack>();
      stack->path = path;
      for (int64_t i = 0; i < count; ++i)
        stack->items.push_back(instantiate(*callee, path + "[" + std::to_string(i) + "]", args, layer->calleeLoc));
      stacks_.push_back(std::move(stack));
      declare(layer->name, layer->loc, stacks_.back().get());
    } else {
      declare(layer->name, layer->loc, instantiate(*callee, path, args, layer->calleeLoc));
    }
    --callDepth_;
  }
}

void Elaborator::createParam(Instance &instance, const ParamDecl &decl) {
  auto dtype = ir::dtypeFromName(decl.dtype);
  if (!dtype)
    fail(decl.loc, "unknown element type '" + decl.dtype + "'");
  ir::TensorType type{*dtype, {}};
  for (const ExprPtr &dim : decl.shape) {
    int64_t size = expectConstInt(eval(*dim, instance.scope), dim->loc, "a parameter dimension");
    if (size < 1)
      fail(dim->loc, "parameter dimensions must be positive, got " + std::to_string(size));
    type.shape.push_back(size);
  }
  static const std::map<std::string, std::vector<std::string>> kInits = {
      {"zeros", {}}, {"ones", {}}, {"normal", {"std", "mean"}}, {"uniform", {"low", "high"}}};
  auto init = kInits.find(decl.init);
  if (init == kInits.end())
    fail(decl.loc, "unknown initializer '" + decl.init + "'; expected zeros, ones, normal or uniform");
  ir::AttrMap attrs{{"init", decl.init}};
  for (const Arg &arg : decl.initArgs) {
    const auto &allowed = init->second;
    if (arg.name.empty() || std::find(allowed.begin(), allowed.end(), arg.name) == allowed.end())
      fail(arg.loc,
           "initializer '" + decl.init + "' takes " +
               (allowed.empty() ? std::string("no arguments") : "named arguments " + allowed[0] + ", " + allowed[1]));
    attrs[arg.name] = expectFloat(eval(*arg.value, instance.scope), arg.value->loc, "'" + arg.name + "'");
  }
  if (instance.scope.names.count(decl.name))
    fail(decl.loc, "'" + decl.name + "' is already defined in " + instance.decl->name);
  checkSize(type, decl.loc, "parameter '" + decl.name + "'");
  ir::Op *op = graph_.createOp(ir::OpKind::Param, {}, {type}, attrs, decl.loc, {joinPath(instance.path, decl.name)});
  instance.scope.names[decl.name] = op->result();
}

void Elaborator::bindSignature(Scope &scope, const TypeExpr &type, ir::Value *value, const std::string &what,
                               const Location &at, bool declareSymbols, const std::map<std::string, int64_t> &) {
  const ir::TensorType &actual = value->type;
  auto mismatch = [&](const std::string &detail) {
    compilation_.diags().error(at, what + " has type " + actual.str() + ", " + detail).note(type.loc, "declared here");
    throw ElaborationAbort{};
  };
  if (type.dtype != ir::dtypeName(actual.dtype))
    mismatch("but the signature says " + type.dtype);
  if (type.dims.size() != actual.shape.size())
    mismatch("but the signature has rank " + std::to_string(type.dims.size()));
  for (size_t i = 0; i < type.dims.size(); ++i) {
    const Expr &dim = *type.dims[i];
    if (declareSymbols && dim.kind == ExprKind::Name && !scope.find(dim.text)) {
      scope.names[dim.text] = actual.shape[i];
      continue;
    }
    if (dim.kind == ExprKind::Name && !scope.find(dim.text))
      fail(dim.loc, "unknown dimension '" + dim.text + "'");
    ir::SymExpr expected = expectInt(eval(dim, scope), dim.loc, "a dimension");
    if (expected != actual.shape[i])
      mismatch("but the signature says dimension " + std::to_string(i) + " is " + expected.str());
  }
}

EValue Elaborator::callFn(Instance *self, const FnDecl &fn, const std::vector<ArgValue> &args, const Location &at) {
  ActiveGuard guard(active_, self);
  if (++callDepth_ > 200)
    fail(at, "calls nest deeper than 200 (recursion?)");
  Scope scope{{}, &self->scope};
  std::vector<const ArgValue *> given(fn.params.size(), nullptr);
  size_t positional = 0;
  for (const ArgValue &arg : args) {
    size_t index = positional;
    if (arg.name.empty()) {
      if (positional >= fn.params.size())
        fail(arg.loc, "'" + fn.name + "' takes " + std::to_string(fn.params.size()) + " arguments, got " +
                          std::to_string(args.size()));
      ++positional;
    } else {
      auto it = std::find_if(fn.params.begin(), fn.params.end(), [&](const FnParam &p) { return p.name == arg.name; });
      if (it == fn.params.end())
        fail(arg.loc, "'" + fn.name + "' has no parameter '" + arg.name + "'");
      index = static_cast<size_t>(it - fn.params.begin());
    }
    given[index] = &arg;
  }
  const std::string owner = self->decl->name + "." + fn.name;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const FnParam &param = fn.params[i];
    if (!given[i])
      fail(at, "missing argument '" + param.name + "' in call to '" + owner + "'");
    const EValue &value = given[i]->value;
    if (param.type.hasShape) {
      ir::Value *tensor = expectTensor(value, given[i]->valueLoc, "argument '" + param.name + "'");
      bindSignature(scope, param.type, tensor, "argument '" + param.name + "' of '" + owner + "'", given[i]->valueLoc,
                    true, {});
      scope.names[param.name] = tensor;
    } else if (param.type.dtype == "int") {
      scope.names[param.name] = expectInt(value, given[i]->valueLoc, "argument '" + param.name + "'");
    } else if (param.type.dtype == "float") {
      scope.names[param.name] = expectFloat(value, given[i]->valueLoc, "argument '" + param.name + "'");
    } else if (param.type.dtype == "bool" && std::holds_alternative<bool>(value)) {
      scope.names[param.name] = value;
    } else {
      fail(given[i]->valueLoc,
           "argument '" + param.name + "' must be " + param.type.dtype + ", got " + describe(value));
    }
  }
  const std::string prefix = joinPath(self->path, fn.name) + ".";
  for (const Stmt &stmt : fn.body) {
    if (auto *let = std::get_if<LetStmt>(&stmt)) {
      const size_t firstNewOp = graph_.ops().size();
      EValue value = eval(*let->value, scope);
      std::vector<EValue> parts;
      if (let->names.size() == 1) {
        parts.push_back(value);
      } else {
        auto *list = std::get_if<std::shared_ptr<EList>>(&value);
        if (!list || (*list)->items.size() != let->names.size())
          fail(let->loc, "cannot unpack " + describe(value) + " into " + std::to_string(let->names.size()) + " names");
        parts = (*list)->items;
      }
      for (size_t i = 0; i < parts.size(); ++i) {
        // Name the value after the let when this statement created it and no inner let
        // named it already (numbered values are unnamed).
        if (auto *tensor = std::get_if<ir::Value *>(&parts[i]);
            tensor && (*tensor)->def->id >= static_cast<int>(firstNewOp) &&
            std::all_of((*tensor)->name.begin(), (*tensor)->name.end(), ::isdigit))
          graph_.rename(*tensor, prefix + let->names[i]);
        scope.names[let->names[i]] = parts[i];
      }
    } else {
      const ReturnStmt &ret = std::get<ReturnStmt>(stmt);
      EValue value = eval(*ret.value, scope);
      if (fn.result) {
        if (fn.result->hasShape) {
          ir::Value *tensor = expectTensor(value, ret.value->loc, "the result of '" + owner + "'");
          bindSignature(scope, *fn.result, tensor, "the result of '" + owner + "'", ret.value->loc, false, {});
        }
      }
      --callDepth_;
      return value;
    }
  }
  fail(fn.endLoc, "'" + owner + "' ends without 'return'");
}

EValue Elaborator::call(const EValue &callee, const std::vector<ArgValue> &args, const Location &at) {
  if (auto *builtin = std::get_if<BuiltinRef>(&callee))
    return callBuiltin(builtin->name, args, at);
  if (auto *fn = std::get_if<BoundFn>(&callee))
    return callFn(fn->self, *fn->fn, args, at);
  auto forwardOf = [&](Instance *instance) -> const FnDecl & {
    for (const Member &member : instance->decl->members)
      if (auto *fn = std::get_if<FnDecl>(&member); fn && fn->name == "forward")
        return *fn;
    fail(at, "layer '" + instance->decl->name + "' has no 'fn forward' to call");
  };
  if (auto *instance = std::get_if<Instance *>(&callee))
    return callFn(*instance, forwardOf(*instance), args, at);
  if (auto *stack = std::get_if<Stack *>(&callee)) {
    // A stack applies its layers in order: blocks(x) == blocks[n-1](...blocks[0](x)).
    if (args.size() != 1 || !args[0].name.empty())
      fail(at, "a stack of layers takes exactly one positional argument");
    EValue value = args[0].value;
    for (Instance *instance : (*stack)->items)
      value = callFn(instance, forwardOf(instance), {ArgValue{"", value, args[0].loc, args[0].valueLoc}}, at);
    return value;
  }
  fail(at, "cannot call " + describe(callee));
}

} // namespace hspmd::frontend
