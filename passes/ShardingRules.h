// ShardingRules.h - per-op sharding rules as data, in the spirit of Shardy's factor rules.
//
// An op's rule names the factors of its iteration space and says which factors make up each
// dimension of each operand and result. matmul is ([b, m, k], [k, n]) -> ([b, m, n]) with k a
// contraction factor: splitting k on both operands leaves each device a partial sum.
// Factor kinds:
//   pass-through  may be split; the split carries over to every result dimension made of it
//   contraction   may be split (on every operand that has it); results become partial sums
//                 (any factor missing from a result is summed out for it and acts so)
//   internal      may be split; the op communicates inside and its result does not depend on
//                 the split (vocabulary-parallel cross-entropy)
//   need-whole    must not be split (a softmax or norm dimension, attention keys)
// The propagation algorithm that uses the rules is written once, in DeduceAnnotations.cpp.
#pragma once

#include "ir/Graph.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace hspmd::passes {

enum class FactorKind { PassThrough, Contraction, Internal, NeedWhole };

struct Factor {
  ir::SymExpr size;
  FactorKind kind = FactorKind::PassThrough;
};

/// How partial sums flow through an op: through every operand at once (add, reshape),
/// through one operand at a time (mul, matmul, embedding's table), or not at all.
enum class Linearity { None, Additive, OneOperand };

struct OpShardingRule {
  std::vector<Factor> factors;
  /// [operand][dim] -> factor ids, major first. A broadcast dimension has none.
  std::vector<std::vector<std::vector<int>>> operands;
  std::vector<std::vector<std::vector<int>>> results;
  Linearity linearity = Linearity::None;
  /// When deduction may choose freely, split contraction factors before pass-through ones
  /// (embedding tables: vocabulary-parallel, as in Megatron-LM).
  bool preferContraction = false;
  std::vector<bool> linearIn; // OneOperand: which operands may carry partial sums
  /// A dimension whose size is its factor's size times num/den (attention's key/value heads
  /// are the query-head factor scaled by kv_heads/heads). Indexed like `operands`.
  struct Scale {
    int operand, dim;
    int64_t num, den;
  };
  std::vector<Scale> scales;

  bool operandHas(int operand, int factor) const;
  /// The (operand, dim) scale for a factor occurrence, 1/1 when none.
  std::pair<int64_t, int64_t> scaleOf(int operand, int dim) const;
  /// Shardy-like text: "([i, k], [k, j]) -> ([i, j]) k:contraction". Factors are named i, j, k,
  /// ... in order of first appearance; broadcast dimensions print as "_".
  std::string str() const;
};

/// The rule of an op, built from its kind, attributes and operand shapes.
OpShardingRule shardingRule(const ir::Op &op);

/// Appends bytes that identify everything an op's rule is built from (its kind, attributes,
/// operand and result types): ops with equal bytes have equal rules.
void appendOpSignature(std::string &key, const ir::Op &op);

/// Rules by signature: the op of a model's identical layers is ruled once. References stay
/// valid as long as the cache.
class ShardingRuleCache {
public:
  const OpShardingRule &of(const ir::Op &op);
  /// With the op's signature already made (appendOpSignature alone).
  const OpShardingRule &of(const ir::Op &op, const std::string &signature);

private:
  std::unordered_map<std::string, OpShardingRule> rules_;
  std::string key_;
};

} // namespace hspmd::passes
