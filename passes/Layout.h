// Layout.h - private to passes/: how deduce-annotations reads an annotation through an op's
// sharding rule. Each mesh axis (and the hetero placement) of an operand "means" something
// for the op: it duplicates, holds partial sums, or splits one factor of the rule.
// Candidates.cpp prices the meanings an op may take on one axis.
#pragma once

#include "passes/LoweredPlan.h"
#include "passes/ShardingRules.h"

#include <map>
#include <optional>

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

/// One candidate meaning of an op on one axis (or the hetero level), with what it requires
/// of each operand, what it makes of each result, and its price.
struct Candidate {
  Meaning meaning;      // what the op does on this axis
  int keepPartial = -1; // OneOperand partial: the operand that keeps its partial sums
  std::vector<Meaning> required;
  std::vector<Meaning> results;
  double cost = 0;
  int64_t freeFactorSize = 0;
  int kindRank = 3;
  bool moves = false; // some operand must move between the cells now
};

/// Cheaper first; ties to the kind rank (pass-through splits, then partial sums, then copies),
/// then to the largest factor of an undecided leaf.
bool better(const Candidate &a, const Candidate &b);

/// Candidates for one axis (or the hetero level) given each operand's meaning there, best
/// first. `growth[o]`: how many times more bytes a device would hold of the results than of
/// operand o when o's partial sums are carried through the op (1 when not known). `known`: at
/// the hetero level, unequal splits the plan made of dimensions of a size over these cells
/// (factor size -> sizes per cell).
std::vector<Candidate> candidates(const ir::Op &op, const OpShardingRule &rule, const std::vector<Meaning> &m,
                                  const std::vector<double> &bytes, int count, bool hetero,
                                  const std::vector<double> &growth = {},
                                  const std::map<int64_t, std::vector<int64_t>> &known = {});

/// Per operand, the bytes a device holds of the op's largest result over those it holds of
/// the operand, from the operands' axes in the first cell.
std::vector<double> growth(const ir::Op &op, const OpShardingRule &rule, const std::vector<OperandView> &operands,
                           const std::vector<Cell> &cells);

/// Restricts a copy held on more cells to `cells`; nullopt when it cannot.
std::optional<ir::Annotation> restrictTo(const ir::Annotation &a, const std::vector<Cell> &cells);

/// The same meanings on other devices (a pipeline hop, or a layout move).
ir::Annotation moveTo(const ir::Annotation &a, const std::vector<Cell> &cells);

} // namespace hspmd::passes
