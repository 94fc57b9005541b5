// ShardingRules.cpp - one small builder per op family. Everything shape-dependent (which
// dimensions broadcast, how a reshape regroups dimensions) is derived from the op itself.
#include "passes/ShardingRules.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>

namespace hspmd::passes {

bool OpShardingRule::operandHas(int operand, int factor) const {
  for (const auto &dim : operands[operand])
    if (std::find(dim.begin(), dim.end(), factor) != dim.end())
      return true;
  return false;
}

std::pair<int64_t, int64_t> OpShardingRule::scaleOf(int operand, int dim) const {
  for (const Scale &scale : scales)
    if (scale.operand == operand && scale.dim == dim)
      return {scale.num, scale.den};
  return {1, 1};
}

std::string OpShardingRule::str() const {
  auto name = [](int factor) {
    std::string text(1, static_cast<char>('i' + factor % 18));
    return factor >= 18 ? text + std::to_string(factor / 18) : text;
  };
  auto tensors = [&](const std::vector<std::vector<std::vector<int>>> &list) {
    std::string text = "(";
    for (size_t t = 0; t < list.size(); ++t) {
      text += (t ? ", [" : "[");
      for (size_t d = 0; d < list[t].size(); ++d) {
        text += d ? ", " : "";
        if (list[t][d].empty())
          text += "_";
        for (size_t f = 0; f < list[t][d].size(); ++f)
          text += (f ? "*" : "") + name(list[t][d][f]);
      }
      text += "]";
    }
    return text + ")";
  };
  std::string text = tensors(operands) + " -> " + tensors(results);
  for (size_t f = 0; f < factors.size(); ++f) {
    if (factors[f].kind == FactorKind::Contraction)
      text += " " + name(static_cast<int>(f)) + ":contraction";
    else if (factors[f].kind == FactorKind::NeedWhole)
      text += " " + name(static_cast<int>(f)) + ":need-whole";
    else if (factors[f].kind == FactorKind::Internal)
      text += " " + name(static_cast<int>(f)) + ":internal";
  }
  return text;
}

namespace {

using ir::OpKind;
using ir::SymExpr;

class RuleBuilder {
public:
  explicit RuleBuilder(const ir::Op &op) : op_(op) {
    rule_.operands.resize(op.operands.size());
    rule_.results.resize(op.results.size());
    for (size_t i = 0; i < op.operands.size(); ++i)
      rule_.operands[i].resize(op.operands[i]->type.rank());
    for (size_t i = 0; i < op.results.size(); ++i)
      rule_.results[i].resize(op.results[i]->type.rank());
  }
  int factor(SymExpr size, FactorKind kind = FactorKind::PassThrough) {
    rule_.factors.push_back(Factor{std::move(size), kind});
    return static_cast<int>(rule_.factors.size()) - 1;
  }
  void operand(int index, int dim, int f) { rule_.operands[index][dim].push_back(f); }
  void result(int index, int dim, int f) { rule_.results[index][dim].push_back(f); }
  const ir::Shape &operandShape(int index) const { return op_.operands[index]->type.shape; }
  const ir::Shape &resultShape(int index) const { return op_.results[index]->type.shape; }
  OpShardingRule take(Linearity linearity, std::vector<bool> linearIn = {}) {
    rule_.linearity = linearity;
    rule_.linearIn =
        linearIn.empty() ? std::vector<bool>(op_.operands.size(), linearity != Linearity::None) : std::move(linearIn);
    return std::move(rule_);
  }
  OpShardingRule &rule() { return rule_; }

  // Result dims map one to one onto factors; operands broadcast against the result
  // (numpy rules: trailing alignment, size-1 dimensions get no factor).
  void elementwise() {
    const ir::Shape &out = resultShape(0);
    std::vector<int> factors;
    for (const SymExpr &size : out)
      factors.push_back(factor(size));
    for (size_t d = 0; d < out.size(); ++d)
      result(0, static_cast<int>(d), factors[d]);
    for (size_t i = 0; i < op_.operands.size(); ++i) {
      const ir::Shape &in = operandShape(static_cast<int>(i));
      const size_t offset = out.size() - in.size();
      for (size_t d = 0; d < in.size(); ++d)
        if (in[d] == out[offset + d])
          operand(static_cast<int>(i), static_cast<int>(d), factors[offset + d]);
    }
  }

private:
  const ir::Op &op_;
  OpShardingRule rule_;
};

OpShardingRule matmulRule(const ir::Op &op) {
  RuleBuilder b(op);
  const ir::Shape &a = b.operandShape(0), &w = b.operandShape(1), &out = b.resultShape(0);
  const size_t batch = out.size() - 2;
  for (size_t d = 0; d < batch; ++d) {
    int f = b.factor(out[d]);
    b.result(0, static_cast<int>(d), f);
    const size_t aOffset = batch - (a.size() - 2), wOffset = batch - (w.size() - 2);
    if (d >= aOffset && a[d - aOffset] == out[d])
      b.operand(0, static_cast<int>(d - aOffset), f);
    if (d >= wOffset && w[d - wOffset] == out[d])
      b.operand(1, static_cast<int>(d - wOffset), f);
  }
  int m = b.factor(out[batch]), k = b.factor(a.back(), FactorKind::Contraction), n = b.factor(out.back());
  b.operand(0, static_cast<int>(a.size()) - 2, m);
  b.operand(0, static_cast<int>(a.size()) - 1, k);
  b.operand(1, static_cast<int>(w.size()) - 2, k);
  b.operand(1, static_cast<int>(w.size()) - 1, n);
  b.result(0, static_cast<int>(batch), m);
  b.result(0, static_cast<int>(batch) + 1, n);
  return b.take(Linearity::OneOperand);
}

// All dims pass through except `whole` dims (need-whole), shared by operand 0 and the result;
// further operands are 1-D weights over the last dim (norms).
OpShardingRule sameShapeRule(const ir::Op &op, const std::vector<int> &wholeDims, Linearity linearity) {
  RuleBuilder b(op);
  const ir::Shape &x = b.operandShape(0);
  for (size_t d = 0; d < x.size(); ++d) {
    bool whole = std::find(wholeDims.begin(), wholeDims.end(), static_cast<int>(d)) != wholeDims.end();
    int f = b.factor(x[d], whole ? FactorKind::NeedWhole : FactorKind::PassThrough);
    b.operand(0, static_cast<int>(d), f);
    b.result(0, static_cast<int>(d), f);
    if (d + 1 == x.size())
      for (size_t i = 1; i < op.operands.size(); ++i)
        b.operand(static_cast<int>(i), 0, f);
  }
  return b.take(linearity);
}

// Reshape: split input and output dims into the finest common factors, walking both shapes
// left to right. [B, S, 3d] -> [B, S, H, 3, D] gives dim 2 = H*3*D: a split of dim 2 is a
// split of its major factor H.
OpShardingRule reshapeRule(const ir::Op &op) {
  RuleBuilder b(op);
  const ir::Shape &in = b.operandShape(0), &out = b.resultShape(0);
  size_t i = 0, j = 0;
  SymExpr restIn = i < in.size() ? in[0] : SymExpr(1), restOut = j < out.size() ? out[0] : SymExpr(1);
  auto advanceIn = [&] { restIn = ++i < in.size() ? in[i] : SymExpr(1); };
  auto advanceOut = [&] { restOut = ++j < out.size() ? out[j] : SymExpr(1); };
  while (i < in.size() || j < out.size()) {
    if (i < in.size() && restIn == SymExpr(1)) {
      advanceIn();
      continue;
    }
    if (j < out.size() && restOut == SymExpr(1)) {
      advanceOut();
      continue;
    }
    if (i >= in.size() || j >= out.size())
      break;
    SymExpr common(1); // 1: no common factor
    if (restIn == restOut)
      common = restIn;
    else if (restIn.divide(restOut))
      common = restOut;
    else if (restOut.divide(restIn))
      common = restIn;
    else if (restIn.constant() && restOut.constant())
      common = SymExpr(std::gcd(*restIn.constant(), *restOut.constant()));
    if (common == SymExpr(1)) {
      // No common factor: the rest of both shapes is one indivisible block.
      int f = b.factor(restIn, FactorKind::NeedWhole);
      for (; i < in.size(); ++i)
        b.operand(0, static_cast<int>(i), f);
      for (; j < out.size(); ++j)
        b.result(0, static_cast<int>(j), f);
      break;
    }
    int f = b.factor(common);
    b.operand(0, static_cast<int>(i), f);
    b.result(0, static_cast<int>(j), f);
    restIn = *restIn.divide(common);
    restOut = *restOut.divide(common);
    if (restIn == SymExpr(1))
      advanceIn();
    if (restOut == SymExpr(1))
      advanceOut();
  }
  return b.take(Linearity::Additive);
}

OpShardingRule transposeRule(const ir::Op &op) {
  RuleBuilder b(op);
  const ir::Shape &x = b.operandShape(0);
  int64_t d0 = ir::intAttr(op.attrs, "dim0"), d1 = ir::intAttr(op.attrs, "dim1");
  for (size_t d = 0; d < x.size(); ++d) {
    int f = b.factor(x[d]);
    b.operand(0, static_cast<int>(d), f);
    int64_t to = static_cast<int64_t>(d) == d0 ? d1 : static_cast<int64_t>(d) == d1 ? d0 : static_cast<int64_t>(d);
    b.result(0, static_cast<int>(to), f);
  }
  return b.take(Linearity::Additive);
}

// unbind, split, slice, concat: the cut dimension is need-whole; the others pass through.
OpShardingRule cutRule(const ir::Op &op) {
  RuleBuilder b(op);
  const int64_t cut = ir::intAttr(op.attrs, "dim");
  const ir::Shape &x = b.operandShape(0);
  const bool removes = op.kind == OpKind::Unbind;
  std::vector<int> shared(x.size(), -1);
  for (size_t d = 0; d < x.size(); ++d)
    if (static_cast<int64_t>(d) != cut)
      shared[d] = b.factor(x[d]);
  for (size_t i = 0; i < op.operands.size(); ++i)
    for (size_t d = 0; d < x.size(); ++d)
      b.operand(static_cast<int>(i), static_cast<int>(d),
                shared[d] >= 0 ? shared[d] : b.factor(b.operandShape(static_cast<int>(i))[d], FactorKind::NeedWhole));
  for (size_t r = 0; r < op.results.size(); ++r) {
    int rd = 0;
    for (size_t d = 0; d < x.size(); ++d) {
      if (static_cast<int64_t>(d) == cut) {
        if (!removes)
          b.result(static_cast<int>(r), rd++, b.factor(b.resultShape(static_cast<int>(r))[d], FactorKind::NeedWhole));
        continue;
      }
      b.result(static_cast<int>(r), rd++, shared[d]);
    }
  }
  return b.take(Linearity::Additive);
}

OpShardingRule reduceRule(const ir::Op &op) {
  RuleBuilder b(op);
  const ir::Shape &x = b.operandShape(0);
  auto dims = ir::listAttr(op.attrs, "dims");
  const bool keep = ir::boolAttr(op.attrs, "keepdim");
  int rd = 0;
  for (size_t d = 0; d < x.size(); ++d) {
    bool reduced = dims.empty() || std::find(dims.begin(), dims.end(), SymExpr(static_cast<int64_t>(d))) != dims.end();
    int f = b.factor(x[d], reduced ? FactorKind::Contraction : FactorKind::PassThrough);
    b.operand(0, static_cast<int>(d), f);
    if (!reduced)
      b.result(0, rd++, f);
    else if (keep)
      rd++; // a kept dimension of size 1: no factor
  }
  return b.take(Linearity::Additive);
}

// embedding(table [V, D], ids [...]) -> [..., D]: a vocabulary split leaves partial sums.
OpShardingRule embeddingRule(const ir::Op &op) {
  RuleBuilder b(op);
  const ir::Shape &table = b.operandShape(0), &ids = b.operandShape(1);
  int v = b.factor(table[0], FactorKind::Contraction), dModel = b.factor(table[1]);
  b.operand(0, 0, v);
  b.operand(0, 1, dModel);
  for (size_t d = 0; d < ids.size(); ++d) {
    int f = b.factor(ids[d]);
    b.operand(1, static_cast<int>(d), f);
    b.result(0, static_cast<int>(d), f);
  }
  b.result(0, static_cast<int>(ids.size()), dModel);
  b.rule().preferContraction = true;
  return b.take(Linearity::OneOperand, {true, false});
}

// attention(q [B, S, H, D], k [B, T, Hk, D], v [B, T, Hk, Dv]) -> [B, S, H, Dv]. Heads pass
// through (key/value heads are the same factor scaled by Hk/H); a query-sequence split
// passes through, but keys and values are needed whole along T.
OpShardingRule attentionRule(const ir::Op &op) {
  RuleBuilder b(op);
  const ir::Shape &q = b.operandShape(0), &k = b.operandShape(1), &v = b.operandShape(2);
  int batch = b.factor(q[0]), s = b.factor(q[1]), t = b.factor(k[1], FactorKind::NeedWhole);
  int h = b.factor(q[2]), dqk = b.factor(q[3], FactorKind::NeedWhole), dv = b.factor(v[3], FactorKind::NeedWhole);
  for (int i : {0, 1, 2})
    b.operand(i, 0, batch);
  b.operand(0, 1, s);
  b.operand(1, 1, t);
  b.operand(2, 1, t);
  for (int i : {0, 1, 2})
    b.operand(i, 2, h);
  b.operand(0, 3, dqk);
  b.operand(1, 3, dqk);
  b.operand(2, 3, dv);
  b.result(0, 0, batch);
  b.result(0, 1, s);
  b.result(0, 2, h);
  b.result(0, 3, dv);
  auto heads = q[2].constant(), kvHeads = k[2].constant();
  if (heads && kvHeads && *heads != *kvHeads) {
    b.rule().scales.push_back({1, 2, *kvHeads, *heads});
    b.rule().scales.push_back({2, 2, *kvHeads, *heads});
  }
  return b.take(Linearity::None);
}

// cross_entropy(logits [..., V], targets [...]) -> []: the mean over positions turns any
// split of them into partial sums; a class split is handled inside (vocabulary-parallel).
OpShardingRule crossEntropyRule(const ir::Op &op) {
  RuleBuilder b(op);
  const ir::Shape &logits = b.operandShape(0);
  for (size_t d = 0; d + 1 < logits.size(); ++d) {
    int f = b.factor(logits[d], FactorKind::Contraction);
    b.operand(0, static_cast<int>(d), f);
    b.operand(1, static_cast<int>(d), f);
  }
  b.operand(0, static_cast<int>(logits.size()) - 1, b.factor(logits.back(), FactorKind::Internal));
  return b.take(Linearity::None);
}

// Backward rules: each result is laid out like the forward operand it is the gradient of. A
// factor missing from a result is summed out for it: position factors split on the way in
// leave dx split and dw partial.
OpShardingRule normGradRule(const ir::Op &op) {
  RuleBuilder b(op);
  const ir::Shape &x = b.operandShape(0);
  for (size_t d = 0; d < x.size(); ++d) {
    const bool last = d + 1 == x.size();
    int f = b.factor(x[d], last ? FactorKind::NeedWhole : FactorKind::PassThrough);
    b.operand(0, static_cast<int>(d), f);
    b.operand(2, static_cast<int>(d), f);
    b.result(0, static_cast<int>(d), f);
    if (last) {
      b.operand(1, 0, f);
      for (size_t r = 1; r < op.results.size(); ++r)
        b.result(static_cast<int>(r), 0, f);
    }
  }
  return b.take(Linearity::None);
}

OpShardingRule embeddingGradRule(const ir::Op &op) {
  RuleBuilder b(op);
  const ir::Shape &ids = b.operandShape(0), &dy = b.operandShape(1);
  for (size_t d = 0; d < ids.size(); ++d) {
    int f = b.factor(ids[d], FactorKind::Contraction); // positions sum into the table rows
    b.operand(0, static_cast<int>(d), f);
    b.operand(1, static_cast<int>(d), f);
  }
  int vocab = b.factor(b.resultShape(0)[0], FactorKind::NeedWhole), dModel = b.factor(dy.back());
  b.operand(1, static_cast<int>(ids.size()), dModel);
  b.result(0, 0, vocab);
  b.result(0, 1, dModel);
  return b.take(Linearity::OneOperand, {false, true});
}

} // namespace

OpShardingRule shardingRule(const ir::Op &op) {
  switch (op.kind) {
  case OpKind::Param:
  case OpKind::Input:
  case OpKind::Constant:
    return RuleBuilder(op).take(Linearity::None);
  case OpKind::MatMul:
    return matmulRule(op);
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Neg:
  case OpKind::Reshard: {
    RuleBuilder b(op);
    b.elementwise();
    return b.take(Linearity::Additive);
  }
  case OpKind::Mul:
  case OpKind::Div: {
    RuleBuilder b(op);
    b.elementwise();
    return b.take(Linearity::OneOperand, {true, op.kind == OpKind::Mul});
  }
  case OpKind::Gelu:
  case OpKind::Silu:
  case OpKind::Relu: {
    RuleBuilder b(op);
    b.elementwise();
    return b.take(Linearity::None);
  }
  case OpKind::Softmax:
    return sameShapeRule(op, {static_cast<int>(ir::intAttr(op.attrs, "dim"))}, Linearity::None);
  case OpKind::RmsNorm:
  case OpKind::LayerNorm:
    return sameShapeRule(op, {op.operands[0]->type.rank() - 1}, Linearity::None);
  case OpKind::Embedding:
    return embeddingRule(op);
  case OpKind::Reshape:
    return reshapeRule(op);
  case OpKind::Transpose:
    return transposeRule(op);
  case OpKind::Unbind:
  case OpKind::Split:
  case OpKind::Concat:
  case OpKind::Slice:
    return cutRule(op);
  case OpKind::Sum:
  case OpKind::Mean:
    return reduceRule(op);
  case OpKind::Attention:
    return attentionRule(op);
  case OpKind::CrossEntropy:
    return crossEntropyRule(op);
  case OpKind::Broadcast: {
    RuleBuilder b(op);
    b.elementwise();
    return b.take(Linearity::Additive);
  }
  case OpKind::Pad:
    return cutRule(op);
  case OpKind::GeluGrad:
  case OpKind::SiluGrad:
  case OpKind::ReluGrad: {
    RuleBuilder b(op);
    b.elementwise();
    return b.take(Linearity::OneOperand, {false, true});
  }
  case OpKind::RmsNormGrad:
  case OpKind::LayerNormGrad:
    return normGradRule(op);
  case OpKind::EmbeddingGrad:
    return embeddingGradRule(op);
  case OpKind::AttentionGrad: {
    // Laid out like the forward attention: dq like q, dk like k, dv like v.
    OpShardingRule rule = attentionRule(op);
    rule.results = {rule.operands[0], rule.operands[1], rule.operands[2]};
    rule.operands[3] = rule.operands[0]; // dy is laid out like the output, i.e. like q
    rule.linearIn = {false, false, false, true};
    return rule;
  }
  case OpKind::CrossEntropyGrad: {
    OpShardingRule rule = crossEntropyRule(op); // positions appear in dlogits: they pass through
    for (auto &factor : rule.factors)
      if (factor.kind == FactorKind::Contraction)
        factor.kind = FactorKind::PassThrough;
    rule.results = {rule.operands[0]}; // operand 2, the scalar loss gradient, has no dimensions
    rule.linearIn = {false, false, true};
    return rule;
  }
  }
  return RuleBuilder(op).take(Linearity::None);
}

void appendOpSignature(std::string &key, const ir::Op &op) {
  auto word = [&key](int64_t v) { key.append(reinterpret_cast<const char *>(&v), sizeof v); };
  auto text = [&](const std::string &t) {
    word(static_cast<int64_t>(t.size()));
    key += t;
  };
  auto dim = [&](const ir::SymExpr &e) {
    if (auto c = e.constant()) {
      word(0);
      word(*c);
    } else {
      word(1);
      text(e.str());
    }
  };
  auto type = [&](const ir::Value *v) {
    word(static_cast<int64_t>(v->type.dtype) | static_cast<int64_t>(v->type.rank()) << 8);
    for (const ir::SymExpr &e : v->type.shape)
      dim(e);
  };
  word(static_cast<int64_t>(op.kind) | static_cast<int64_t>(op.operands.size()) << 16 |
       static_cast<int64_t>(op.results.size()) << 40);
  word(static_cast<int64_t>(op.attrs.size()));
  for (const auto &[name, value] : op.attrs) {
    text(name);
    word(static_cast<int64_t>(value.index()));
    if (const auto *i = std::get_if<int64_t>(&value)) {
      word(*i);
    } else if (const auto *r = std::get_if<double>(&value)) {
      int64_t bits;
      std::memcpy(&bits, r, sizeof bits);
      word(bits);
    } else if (const auto *b = std::get_if<bool>(&value)) {
      word(*b);
    } else if (const auto *t = std::get_if<std::string>(&value)) {
      text(*t);
    } else {
      const auto &dims = std::get<std::vector<ir::SymExpr>>(value);
      word(static_cast<int64_t>(dims.size()));
      for (const ir::SymExpr &e : dims)
        dim(e);
    }
  }
  for (const ir::Value *v : op.operands)
    type(v);
  for (const ir::Value *v : op.results)
    type(v);
}

const OpShardingRule &ShardingRuleCache::of(const ir::Op &op) {
  key_.clear();
  appendOpSignature(key_, op);
  return of(op, key_);
}

const OpShardingRule &ShardingRuleCache::of(const ir::Op &op, const std::string &signature) {
  auto it = rules_.find(signature);
  if (it == rules_.end())
    it = rules_.emplace(signature, shardingRule(op)).first;
  return it->second;
}

} // namespace hspmd::passes
