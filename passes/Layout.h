// Layout.h - private to passes/: how deduce-annotations reads an annotation through an op's
// sharding rule. Each mesh axis (and the hetero placement) of an operand "means" something
// for the op: it duplicates, holds partial sums, or splits one factor of the rule.
#pragma once

#include "passes/LoweredPlan.h"
#include "passes/ShardingRules.h"

namespace hspmd::passes {

struct Meaning {
  enum class Kind { Dup, Partial, Split, Free, Opaque };
  Meaning(Kind k = Kind::Dup, int f = -1, std::vector<int64_t> s = {}, bool r = false)
      : kind(k), factor(f), sizes(std::move(s)), ratio(r) {}
  Kind kind;
  int factor;                 // Split
  std::vector<int64_t> sizes; // hetero Split: one size per cell, in units of the factor
  bool ratio;                 // hetero Split: sizes are ratios
  bool operator==(const Meaning &) const = default;
};

/// An operand aligned to the op's cells.
struct OperandView {
  Meaning hetero;
  std::vector<std::vector<Meaning>> axes; // [cell][axis]
  double bytes = 0;                       // whole tensor
};

/// Reads `annotation` (already on the op's cells) as meanings for operand `operand` of `rule`.
OperandView viewOf(const OpShardingRule &rule, int operand, const ir::Value &value, const ir::Annotation &annotation);

/// Builds the annotation of a tensor whose dims are `dims` (factor lists, as in the rule)
/// from the chosen meanings. Returns nullopt when a split factor is not the major factor
/// of its dimension (the layout cannot be written as an annotation).
std::optional<ir::Annotation> buildAnnotation(const OpShardingRule &rule, const std::vector<std::vector<int>> &dims,
                                              int operandIndex, const ir::Value &value, const std::vector<Cell> &cells,
                                              const Meaning &hetero, const std::vector<std::vector<Meaning>> &axes);

/// Estimated bytes to turn one meaning into another over `count` devices holding `bytes`.
double conversionCost(const Meaning &from, const Meaning &to, int count, double bytes);

/// Concrete bytes of a value, with unbound symbols taken as 1.
double valueBytes(const ir::Value &value);

/// The cells of an annotation (devices and axis counts of each subgroup).
std::vector<Cell> cellsOf(const ir::Annotation &annotation);

} // namespace hspmd::passes
