// Ops.cpp - the op registry: names, arity and the shape rule of every op kind (ir/Ops.h).
#include "ir/Ops.h"

#include <charconv>

#include "ir/TextLexer.h"

namespace hspmd::ir {

namespace {
const std::vector<OpInfo> kOps = {
    {OpKind::Param, "param", 0, 0, true},
    {OpKind::Input, "input", 0, 0, true},
    {OpKind::Constant, "constant", 0, 0, true},
    {OpKind::MatMul, "matmul", 2, 2, false},
    {OpKind::Add, "add", 2, 2, false},
    {OpKind::Sub, "sub", 2, 2, false},
    {OpKind::Mul, "mul", 2, 2, false},
    {OpKind::Div, "div", 2, 2, false},
    {OpKind::Neg, "neg", 1, 1, false},
    {OpKind::Gelu, "gelu", 1, 1, false},
    {OpKind::Silu, "silu", 1, 1, false},
    {OpKind::Relu, "relu", 1, 1, false},
    {OpKind::Softmax, "softmax", 1, 1, false},
    {OpKind::RmsNorm, "rmsnorm", 2, 2, false},
    {OpKind::LayerNorm, "layernorm", 3, 3, false},
    {OpKind::Embedding, "embedding", 2, 2, false},
    {OpKind::Reshape, "reshape", 1, 1, false},
    {OpKind::Transpose, "transpose", 1, 1, false},
    {OpKind::Unbind, "unbind", 1, 1, false},
    {OpKind::Split, "split", 1, 1, false},
    {OpKind::Concat, "concat", 1, -1, false},
    {OpKind::Slice, "slice", 1, 1, false},
    {OpKind::Sum, "sum", 1, 1, false},
    {OpKind::Mean, "mean", 1, 1, false},
    {OpKind::Attention, "attention", 3, 3, false},
    {OpKind::CrossEntropy, "cross_entropy", 2, 2, false},
    {OpKind::Reshard, "reshard", 1, 1, false},
    {OpKind::Broadcast, "broadcast", 1, 1, false},
    {OpKind::Pad, "pad", 1, 1, false},
    {OpKind::GeluGrad, "gelu_grad", 2, 2, false},
    {OpKind::SiluGrad, "silu_grad", 2, 2, false},
    {OpKind::ReluGrad, "relu_grad", 2, 2, false},
    {OpKind::RmsNormGrad, "rmsnorm_grad", 3, 3, false},
    {OpKind::LayerNormGrad, "layernorm_grad", 3, 3, false},
    {OpKind::EmbeddingGrad, "embedding_grad", 2, 2, false},
    {OpKind::AttentionGrad, "attention_grad", 4, 4, false},
    {OpKind::CrossEntropyGrad, "cross_entropy_grad", 3, 3, false},
};

TypeResult fail(std::string message) {
  return TypeResult{{}, std::move(message)};
}
TypeResult one(TensorType type) {
  return TypeResult{{std::move(type)}, {}};
}

std::string dimText(const SymExpr &dim) {
  return dim.str();
}

// Checks that `dim` indexes a tensor of `rank`; negative dims were resolved by the frontend.
bool dimInRange(int64_t dim, int rank) {
  return dim >= 0 && dim < rank;
}

TypeResult inferElementwise(const std::vector<TensorType> &in) {
  if (in.size() == 1)
    return one(in[0]);
  if (in[0].dtype != in[1].dtype)
    return fail("element types differ: " + in[0].str() + " and " + in[1].str());
  auto shape = broadcastShapes(in[0].shape, in[1].shape);
  if (!shape)
    return fail("shapes " + shapeStr(in[0].shape) + " and " + shapeStr(in[1].shape) + " do not broadcast");
  return one(TensorType{in[0].dtype, *shape});
}

TypeResult inferMatMul(const std::vector<TensorType> &in) {
  const TensorType &a = in[0], &b = in[1];
  if (a.rank() < 2 || b.rank() < 2)
    return fail("matmul needs operands of rank 2 or more, got " + a.str() + " and " + b.str());
  if (a.dtype != b.dtype)
    return fail("element types differ: " + a.str() + " and " + b.str());
  const SymExpr &k1 = a.shape[a.rank() - 1], &k2 = b.shape[b.rank() - 2];
  if (k1 != k2)
    return fail("contracted dimensions differ: " + a.str() + " @ " + b.str() + " (" + dimText(k1) + " vs " +
                dimText(k2) + ")");
  Shape batchA(a.shape.begin(), a.shape.end() - 2), batchB(b.shape.begin(), b.shape.end() - 2);
  auto batch = broadcastShapes(batchA, batchB);
  if (!batch)
    return fail("batch dimensions do not broadcast: " + a.str() + " @ " + b.str());
  batch->push_back(a.shape[a.rank() - 2]);
  batch->push_back(b.shape[b.rank() - 1]);
  return one(TensorType{a.dtype, *batch});
}

TypeResult inferNorm(const std::vector<TensorType> &in) {
  const TensorType &x = in[0];
  if (x.rank() < 1)
    return fail("cannot normalize a scalar");
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].rank() != 1 || in[i].shape[0] != x.shape.back())
      return fail("the weight must have shape [" + dimText(x.shape.back()) + "], got " + in[i].str());
  return one(x);
}

TypeResult inferEmbedding(const std::vector<TensorType> &in) {
  const TensorType &table = in[0], &ids = in[1];
  if (table.rank() != 2 || !isFloat(table.dtype))
    return fail("the embedding table must be a float matrix, got " + table.str());
  if (isFloat(ids.dtype))
    return fail("token ids must be integers, got " + ids.str());
  Shape shape = ids.shape;
  shape.push_back(table.shape[1]);
  return one(TensorType{table.dtype, shape});
}

TypeResult inferReshape(const TensorType &x, const AttrMap &attrs) {
  Shape shape = listAttr(attrs, "shape");
  if (TensorType{x.dtype, shape}.numElements().overflowed())
    return fail("cannot reshape " + x.str() + " to " + shapeStr(shape) + ": it has more elements than an int64 counts");
  if (x.numElements() != TensorType{x.dtype, shape}.numElements())
    return fail("cannot reshape " + x.str() + " (" + x.numElements().str() + " elements) to " + shapeStr(shape) + " (" +
                TensorType{x.dtype, shape}.numElements().str() + " elements)");
  return one(TensorType{x.dtype, shape});
}

TypeResult inferTranspose(const TensorType &x, const AttrMap &attrs) {
  int64_t d0 = intAttr(attrs, "dim0"), d1 = intAttr(attrs, "dim1");
  if (!dimInRange(d0, x.rank()) || !dimInRange(d1, x.rank()))
    return fail("transpose dimensions " + std::to_string(d0) + " and " + std::to_string(d1) + " are out of range for " +
                x.str());
  TensorType out = x;
  std::swap(out.shape[d0], out.shape[d1]);
  return one(out);
}

TypeResult inferUnbindOrSplit(OpKind kind, const TensorType &x, const AttrMap &attrs) {
  int64_t dim = intAttr(attrs, "dim");
  if (!dimInRange(dim, x.rank()))
    return fail("dimension " + std::to_string(dim) + " is out of range for " + x.str());
  TypeResult result;
  if (kind == OpKind::Unbind) {
    auto count = x.shape[dim].constant();
    if (!count || *count < 1 || *count > 4096)
      return fail("unbind needs a small constant dimension, got " + dimText(x.shape[dim]));
    TensorType piece = x;
    piece.shape.erase(piece.shape.begin() + dim);
    result.types.assign(*count, piece);
    return result;
  }
  SymExpr total(0);
  for (const SymExpr &size : listAttr(attrs, "sizes")) {
    TensorType piece = x;
    piece.shape[dim] = size;
    result.types.push_back(piece);
    total = total + size;
  }
  if (result.types.empty() || total != x.shape[dim])
    return fail("split sizes sum to " + total.str() + ", but dimension " + std::to_string(dim) + " of " + x.str() +
                " has size " + dimText(x.shape[dim]));
  return result;
}

TypeResult inferConcat(const std::vector<TensorType> &in, const AttrMap &attrs) {
  int64_t dim = intAttr(attrs, "dim");
  TensorType out = in[0];
  if (!dimInRange(dim, out.rank()))
    return fail("dimension " + std::to_string(dim) + " is out of range for " + out.str());
  for (size_t i = 1; i < in.size(); ++i) {
    bool same = in[i].rank() == out.rank() && in[i].dtype == out.dtype;
    for (int d = 0; same && d < out.rank(); ++d)
      same = d == dim || in[i].shape[d] == out.shape[d];
    if (!same)
      return fail("cannot concatenate " + in[0].str() + " and " + in[i].str() + " along dimension " +
                  std::to_string(dim));
    out.shape[dim] = out.shape[dim] + in[i].shape[dim];
  }
  return one(out);
}

TypeResult inferSlice(const TensorType &x, const AttrMap &attrs) {
  int64_t dim = intAttr(attrs, "dim"), start = intAttr(attrs, "start"), end = intAttr(attrs, "end");
  if (!dimInRange(dim, x.rank()))
    return fail("dimension " + std::to_string(dim) + " is out of range for " + x.str());
  auto size = x.shape[dim].constant();
  if (start < 0 || end < start || (size && end > *size))
    return fail("slice [" + std::to_string(start) + ", " + std::to_string(end) + ") is out of range for dimension " +
                std::to_string(dim) + " of " + x.str());
  TensorType out = x;
  out.shape[dim] = SymExpr(end - start);
  return one(out);
}

TypeResult inferReduce(const TensorType &x, const AttrMap &attrs) {
  auto dims = listAttr(attrs, "dims");
  bool keep = boolAttr(attrs, "keepdim");
  std::vector<bool> reduced(x.rank(), dims.empty());
  for (const auto &dim : dims) {
    auto d = dim.constant();
    if (!d || !dimInRange(*d, x.rank()))
      return fail("dimension " + dim.str() + " is out of range for " + x.str());
    reduced[*d] = true;
  }
  TensorType out{x.dtype, {}};
  for (int d = 0; d < x.rank(); ++d)
    if (!reduced[d])
      out.shape.push_back(x.shape[d]);
    else if (keep)
      out.shape.push_back(SymExpr(1));
  return one(out);
}

TypeResult inferAttention(const std::vector<TensorType> &in) {
  const TensorType &q = in[0], &k = in[1], &v = in[2];
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
    return fail("attention takes [batch, seq, heads, head_dim] tensors, got " + q.str() + ", " + k.str() + ", " +
                v.str());
  if (k.shape != v.shape && (k.shape[0] != v.shape[0] || k.shape[1] != v.shape[1] || k.shape[2] != v.shape[2]))
    return fail("keys and values disagree: " + k.str() + " and " + v.str());
  if (q.shape[0] != k.shape[0] || q.shape[3] != k.shape[3])
    return fail("queries " + q.str() + " and keys " + k.str() + " disagree in batch or head size");
  auto heads = q.shape[2].constant(), kvHeads = k.shape[2].constant();
  if (!heads || !kvHeads || *kvHeads < 1 || *heads % *kvHeads != 0)
    return fail("query heads (" + dimText(q.shape[2]) + ") must be a multiple of key/value heads (" +
                dimText(k.shape[2]) + ")");
  TensorType out = q;
  out.shape[3] = v.shape[3];
  return one(out);
}

TypeResult inferCrossEntropy(const std::vector<TensorType> &in) {
  const TensorType &logits = in[0], &targets = in[1];
  if (!isFloat(logits.dtype) || isFloat(targets.dtype))
    return fail("cross_entropy takes float logits and integer targets, got " + logits.str() + " and " + targets.str());
  Shape expected(logits.shape.begin(), logits.shape.end() - (logits.rank() > 0 ? 1 : 0));
  if (logits.rank() < 1 || targets.shape != expected)
    return fail("targets " + targets.str() + " do not match logits " + logits.str());
  return one(TensorType{DType::F32, {}}); // the loss is f32 whatever the logits' type (docs/language.md)
}
} // namespace

const std::vector<OpInfo> &allOps() {
  return kOps;
}

const OpInfo &opInfo(OpKind kind) {
  return kOps[static_cast<size_t>(kind)];
}

std::optional<OpKind> opKindFromName(std::string_view name) {
  for (const auto &info : kOps)
    if (info.name == name)
      return info.kind;
  return std::nullopt;
}

int64_t intAttr(const AttrMap &attrs, const std::string &name, int64_t fallback) {
  auto it = attrs.find(name);
  if (it == attrs.end() || !std::holds_alternative<int64_t>(it->second))
    return fallback;
  return std::get<int64_t>(it->second);
}

double floatAttr(const AttrMap &attrs, const std::string &name, double fallback) {
  auto it = attrs.find(name);
  if (it == attrs.end() || !std::holds_alternative<double>(it->second))
    return fallback;
  return std::get<double>(it->second);
}

bool boolAttr(const AttrMap &attrs, const std::string &name, bool fallback) {
  auto it = attrs.find(name);
  if (it == attrs.end() || !std::holds_alternative<bool>(it->second))
    return fallback;
  return std::get<bool>(it->second);
}

std::vector<SymExpr> listAttr(const AttrMap &attrs, const std::string &name) {
  auto it = attrs.find(name);
  if (it == attrs.end() || !std::holds_alternative<std::vector<SymExpr>>(it->second))
    return {};
  return std::get<std::vector<SymExpr>>(it->second);
}

std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  const Shape &longer = a.size() >= b.size() ? a : b;
  const Shape &shorter = a.size() >= b.size() ? b : a;
  Shape out = longer;
  const size_t offset = longer.size() - shorter.size();
  for (size_t i = 0; i < shorter.size(); ++i) {
    const SymExpr &x = longer[offset + i], &y = shorter[i];
    if (x == y || y == SymExpr(1))
      continue;
    if (x == SymExpr(1))
      out[offset + i] = y;
    else
      return std::nullopt;
  }
  return out;
}

std::string printAttrValue(const AttrValue &value) {
  struct Printer {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const {
      char buffer[64];
      auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
      std::string text(buffer, end);
      if (text.find_first_of(".eEn") == std::string::npos)
        text += ".0";
      return text;
    }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string &v) const { return quoteString(v); }
    std::string operator()(const std::vector<SymExpr> &v) const { return shapeStr(v); }
  };
  return std::visit(Printer{}, value);
}

TypeResult inferResultTypes(OpKind kind, const std::vector<TensorType> &in, const AttrMap &attrs) {
  const OpInfo &info = opInfo(kind);
  const int count = static_cast<int>(in.size());
  if (count < info.minOperands || (info.maxOperands >= 0 && count > info.maxOperands))
    return fail(std::string(info.name) + " takes " + std::to_string(info.minOperands) +
                (info.maxOperands == info.minOperands ? "" : " or more") + " operands, got " + std::to_string(count));
  switch (kind) {
  case OpKind::Param:
  case OpKind::Input:
  case OpKind::Constant:
    return fail(std::string(info.name) + " has an explicit type");
  case OpKind::MatMul:
    return inferMatMul(in);
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Neg:
  case OpKind::Gelu:
  case OpKind::Silu:
  case OpKind::Relu:
    return inferElementwise(in);
  case OpKind::Softmax:
    if (!dimInRange(intAttr(attrs, "dim"), in[0].rank()))
      return fail("softmax dimension is out of range for " + in[0].str());
    return one(in[0]);
  case OpKind::RmsNorm:
  case OpKind::LayerNorm:
    return inferNorm(in);
  case OpKind::Embedding:
    return inferEmbedding(in);
  case OpKind::Reshape:
    return inferReshape(in[0], attrs);
  case OpKind::Transpose:
    return inferTranspose(in[0], attrs);
  case OpKind::Unbind:
  case OpKind::Split:
    return inferUnbindOrSplit(kind, in[0], attrs);
  case OpKind::Concat:
    return inferConcat(in, attrs);
  case OpKind::Slice:
    return inferSlice(in[0], attrs);
  case OpKind::Sum:
  case OpKind::Mean:
    return inferReduce(in[0], attrs);
  case OpKind::Attention:
    return inferAttention(in);
  case OpKind::CrossEntropy:
    return inferCrossEntropy(in);
  case OpKind::Reshard:
    return one(in[0]);
  case OpKind::Broadcast: {
    Shape shape = listAttr(attrs, "shape");
    auto out = broadcastShapes(in[0].shape, shape);
    if (!out || *out != shape)
      return fail("cannot broadcast " + in[0].str() + " to " + shapeStr(shape));
    return one(TensorType{in[0].dtype, shape});
  }
  case OpKind::Pad: {
    int64_t dim = intAttr(attrs, "dim");
    if (!dimInRange(dim, in[0].rank()) || intAttr(attrs, "before") < 0 || intAttr(attrs, "after") < 0)
      return fail("pad is out of range for " + in[0].str());
    TensorType out = in[0];
    out.shape[dim] = out.shape[dim] + SymExpr(intAttr(attrs, "before") + intAttr(attrs, "after"));
    return one(out);
  }
  case OpKind::GeluGrad:
  case OpKind::SiluGrad:
  case OpKind::ReluGrad:
    if (!(in[0] == in[1]))
      return fail("the gradient " + in[1].str() + " does not match " + in[0].str());
    return one(in[0]);
  case OpKind::RmsNormGrad:
  case OpKind::LayerNormGrad: {
    if (!(in[0] == in[2]) || in[1].rank() != 1 || in[0].rank() < 1 || in[1].shape[0] != in[0].shape.back())
      return fail("norm gradient operands disagree: " + in[0].str() + ", " + in[1].str() + ", " + in[2].str());
    TypeResult result{{in[0], in[1]}, {}};
    if (kind == OpKind::LayerNormGrad)
      result.types.push_back(in[1]);
    return result;
  }
  case OpKind::EmbeddingGrad: {
    const TensorType &ids = in[0], &dy = in[1];
    if (isFloat(ids.dtype) || dy.rank() != ids.rank() + 1)
      return fail("embedding_grad takes integer ids and a gradient of one more dimension");
    return one(TensorType{dy.dtype, {SymExpr(intAttr(attrs, "vocab")), dy.shape.back()}});
  }
  case OpKind::AttentionGrad: {
    TypeResult forward = inferAttention({in[0], in[1], in[2]});
    if (!forward.ok())
      return forward;
    if (!(forward.types[0] == in[3]))
      return fail("the gradient " + in[3].str() + " does not match the attention output " + forward.types[0].str());
    return TypeResult{{in[0], in[1], in[2]}, {}};
  }
  case OpKind::CrossEntropyGrad: {
    TypeResult forward = inferCrossEntropy({in[0], in[1]});
    if (!forward.ok())
      return forward;
    if (in[2].rank() != 0)
      return fail("the loss gradient must be a scalar, got " + in[2].str());
    return one(in[0]);
  }
  }
  return fail("unknown op");
}

} // namespace hspmd::ir
