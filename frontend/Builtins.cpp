// Builtins.cpp - the built-in tensor functions of the language and how their arguments map
// onto IR ops and attributes. Shapes are checked by ir::inferResultTypes.
//
//   softmax(x, dim = -1)            rmsnorm(x, w, eps = 1e-5)     layernorm(x, w, b, eps = 1e-5)
//   gelu(x) silu(x) relu(x)         matmul(a, b)                  embedding(table, ids)
//   reshape(x, [dims])              transpose(x, dim0 = -2, dim1 = -1)
//   unbind(x, dim = 0)              split(x, [sizes], dim = 0)    concat([xs], dim = 0)
//   slice(x, dim, start, end)       sum(x, dim = all, keepdim = false)   mean(...)
//   attention(q, k, v, causal, scale = 1/sqrt(head_dim))  cross_entropy(logits, targets)
#include "frontend/ElaboratorImpl.h"

#include <cmath>

namespace hspmd::frontend {

namespace {
struct BuiltinSpec {
  std::vector<std::string> params; // in positional order
  size_t required;                 // how many leading params must be given
};

const std::map<std::string, BuiltinSpec> &builtinSpecs() {
  static const std::map<std::string, BuiltinSpec> specs = {
      {"matmul", {{"a", "b"}, 2}},
      {"gelu", {{"x"}, 1}},
      {"silu", {{"x"}, 1}},
      {"relu", {{"x"}, 1}},
      {"softmax", {{"x", "dim"}, 1}},
      {"rmsnorm", {{"x", "weight", "eps"}, 2}},
      {"layernorm", {{"x", "weight", "bias", "eps"}, 3}},
      {"embedding", {{"table", "ids"}, 2}},
      {"reshape", {{"x", "shape"}, 2}},
      {"transpose", {{"x", "dim0", "dim1"}, 1}},
      {"unbind", {{"x", "dim"}, 1}},
      {"split", {{"x", "sizes", "dim"}, 2}},
      {"concat", {{"tensors", "dim"}, 1}},
      {"slice", {{"x", "dim", "start", "end"}, 4}},
      {"sum", {{"x", "dim", "keepdim"}, 1}},
      {"mean", {{"x", "dim", "keepdim"}, 1}},
      {"attention", {{"q", "k", "v", "causal", "scale"}, 3}},
      {"cross_entropy", {{"logits", "targets"}, 2}},
  };
  return specs;
}
} // namespace

bool Elaborator::isBuiltin(const std::string &name) {
  return builtinSpecs().count(name) > 0;
}

EValue Elaborator::callBuiltin(const std::string &name, const std::vector<ArgValue> &args, const Location &at) {
  const BuiltinSpec &spec = builtinSpecs().at(name);
  std::vector<const ArgValue *> bound(spec.params.size(), nullptr);
  size_t positional = 0;
  for (const ArgValue &arg : args) {
    size_t index = positional;
    if (arg.name.empty()) {
      if (positional >= spec.params.size())
        fail(arg.loc, "'" + name + "' takes at most " + std::to_string(spec.params.size()) + " arguments");
      ++positional;
    } else {
      auto it = std::find(spec.params.begin(), spec.params.end(), arg.name);
      if (it == spec.params.end())
        fail(arg.loc, "'" + name + "' has no argument '" + arg.name + "'");
      index = static_cast<size_t>(it - spec.params.begin());
    }
    if (bound[index])
      fail(arg.loc, "argument '" + spec.params[index] + "' of '" + name + "' is given twice");
    bound[index] = &arg;
  }
  for (size_t i = 0; i < spec.required; ++i)
    if (!bound[i])
      fail(at, "missing argument '" + spec.params[i] + "' in call to '" + name + "'");

  auto tensor = [&](size_t i) { return expectTensor(bound[i]->value, bound[i]->valueLoc, "'" + spec.params[i] + "'"); };
  // A dimension argument, negative counting from the end, checked against `rank`.
  auto dimArg = [&](size_t i, int64_t fallback, int rank) {
    int64_t dim = bound[i] ? expectConstInt(bound[i]->value, bound[i]->valueLoc, "'" + spec.params[i] + "'") : fallback;
    if (dim < 0)
      dim += rank;
    if (dim < 0 || dim >= rank)
      fail(bound[i] ? bound[i]->valueLoc : at, "dimension " + std::to_string(dim < 0 ? dim - rank : dim) +
                                                   " is out of range for a tensor of rank " + std::to_string(rank));
    return dim;
  };
  auto floatArg = [&](size_t i, double fallback) {
    return bound[i] ? expectFloat(bound[i]->value, bound[i]->valueLoc, "'" + spec.params[i] + "'") : fallback;
  };
  auto boolArg = [&](size_t i, bool fallback) {
    if (!bound[i])
      return fallback;
    if (auto *b = std::get_if<bool>(&bound[i]->value))
      return *b;
    fail(bound[i]->valueLoc, "'" + spec.params[i] + "' must be true or false, got " + describe(bound[i]->value));
  };
  auto listArg = [&](size_t i) -> std::vector<EValue> {
    auto *list = std::get_if<std::shared_ptr<EList>>(&bound[i]->value);
    if (!list)
      fail(bound[i]->valueLoc, "'" + spec.params[i] + "' must be a list, got " + describe(bound[i]->value));
    return (*list)->items;
  };
  auto unary = [&](ir::OpKind kind) { return makeOp(kind, {tensor(0)}, {}, at); };

  if (name == "matmul")
    return makeOp(ir::OpKind::MatMul, {tensor(0), tensor(1)}, {}, at);
  if (name == "gelu")
    return unary(ir::OpKind::Gelu);
  if (name == "silu")
    return unary(ir::OpKind::Silu);
  if (name == "relu")
    return unary(ir::OpKind::Relu);
  if (name == "softmax") {
    ir::Value *x = tensor(0);
    return makeOp(ir::OpKind::Softmax, {x}, {{"dim", dimArg(1, -1, x->type.rank())}}, at);
  }
  if (name == "rmsnorm")
    return makeOp(ir::OpKind::RmsNorm, {tensor(0), tensor(1)}, {{"eps", floatArg(2, 1e-5)}}, at);
  if (name == "layernorm")
    return makeOp(ir::OpKind::LayerNorm, {tensor(0), tensor(1), tensor(2)}, {{"eps", floatArg(3, 1e-5)}}, at);
  if (name == "embedding")
    return makeOp(ir::OpKind::Embedding, {tensor(0), tensor(1)}, {}, at);
  if (name == "reshape") {
    ir::Value *x = tensor(0);
    std::vector<ir::SymExpr> shape;
    int inferred = -1;
    for (const EValue &item : listArg(1)) {
      ir::SymExpr dim = expectInt(item, bound[1]->valueLoc, "a dimension");
      if (dim == ir::SymExpr(-1)) {
        if (inferred >= 0)
          fail(bound[1]->valueLoc, "only one dimension of a reshape can be -1");
        inferred = static_cast<int>(shape.size());
      }
      shape.push_back(dim);
    }
    if (inferred >= 0) {
      ir::SymExpr known(1);
      for (size_t i = 0; i < shape.size(); ++i)
        if (static_cast<int>(i) != inferred)
          known = known * shape[i];
      auto rest = x->type.numElements().divide(known);
      if (!rest)
        fail(bound[1]->valueLoc, "cannot infer the -1 dimension: " + x->type.numElements().str() +
                                     " elements are not a multiple of " + known.str());
      shape[inferred] = *rest;
    }
    return makeOp(ir::OpKind::Reshape, {x}, {{"shape", shape}}, at);
  }
  if (name == "transpose") {
    ir::Value *x = tensor(0);
    int rank = x->type.rank();
    if (rank < 2)
      fail(at, "transpose needs a tensor of rank 2 or more, got " + x->type.str());
    return makeOp(ir::OpKind::Transpose, {x}, {{"dim0", dimArg(1, -2, rank)}, {"dim1", dimArg(2, -1, rank)}}, at);
  }
  if (name == "unbind" || name == "split") {
    ir::Value *x = tensor(0);
    const bool isSplit = name == "split";
    ir::AttrMap attrs{{"dim", dimArg(isSplit ? 2 : 1, 0, x->type.rank())}};
    if (isSplit) {
      std::vector<ir::SymExpr> sizes;
      for (const EValue &item : listArg(1))
        sizes.push_back(expectInt(item, bound[1]->valueLoc, "a split size"));
      attrs["sizes"] = sizes;
    }
    auto results = makeMultiOp(isSplit ? ir::OpKind::Split : ir::OpKind::Unbind, {x}, attrs, at);
    auto list = std::make_shared<EList>();
    list->items.assign(results.begin(), results.end());
    return list;
  }
  if (name == "concat") {
    std::vector<ir::Value *> parts;
    for (const EValue &item : listArg(0))
      parts.push_back(expectTensor(item, bound[0]->valueLoc, "each concatenated value"));
    if (parts.empty())
      fail(bound[0]->valueLoc, "concat needs at least one tensor");
    return makeOp(ir::OpKind::Concat, parts, {{"dim", dimArg(1, 0, parts[0]->type.rank())}}, at);
  }
  if (name == "slice") {
    ir::Value *x = tensor(0);
    return makeOp(ir::OpKind::Slice, {x},
                  {{"dim", dimArg(1, 0, x->type.rank())},
                   {"start", expectConstInt(bound[2]->value, bound[2]->valueLoc, "'start'")},
                   {"end", expectConstInt(bound[3]->value, bound[3]->valueLoc, "'end'")}},
                  at);
  }
  if (name == "sum" || name == "mean") {
    ir::Value *x = tensor(0);
    std::vector<ir::SymExpr> dims;
    if (bound[1]) {
      if (std::holds_alternative<std::shared_ptr<EList>>(bound[1]->value)) {
        for (const EValue &item : listArg(1)) {
          int64_t dim = expectConstInt(item, bound[1]->valueLoc, "a dimension");
          dims.push_back(dim < 0 ? dim + x->type.rank() : dim);
        }
      } else {
        dims.push_back(dimArg(1, 0, x->type.rank()));
      }
    }
    return makeOp(name == "sum" ? ir::OpKind::Sum : ir::OpKind::Mean, {x},
                  {{"dims", dims}, {"keepdim", boolArg(2, false)}}, at);
  }
  if (name == "attention") {
    ir::Value *q = tensor(0);
    // No default: a language model that forgets `causal = true` lets each position see the
    // targets it predicts, and trains to a loss that means nothing.
    if (!bound[3])
      fail(at, "attention needs 'causal': true when each position may only see earlier ones (a language "
               "model), false when it sees all of them");
    ir::AttrMap attrs{{"causal", boolArg(3, false)}};
    double headDim =
        q->type.rank() == 4 && q->type.shape[3].constant() ? static_cast<double>(*q->type.shape[3].constant()) : 1;
    attrs["scale"] = floatArg(4, 1.0 / std::sqrt(headDim));
    return makeOp(ir::OpKind::Attention, {q, tensor(1), tensor(2)}, attrs, at);
  }
  if (name == "cross_entropy")
    return makeOp(ir::OpKind::CrossEntropy, {tensor(0), tensor(1)}, {}, at);
  fail(at, "unknown built-in '" + name + "'");
}

} // namespace hspmd::frontend
