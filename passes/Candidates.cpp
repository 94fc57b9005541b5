// Candidates.cpp - deduce-annotations' choice on one axis: every candidate meaning of an
// op (duplicate, partial sums, a split of one factor), priced in bytes moved (Layout.h).
#include "passes/Layout.h"

#include <algorithm>
#include <set>

namespace hspmd::passes {

namespace {

using Kind = Meaning::Kind;

int64_t constantOr(const ir::SymExpr &size) {
  return size.constant().value_or(2);
}

} // namespace

bool better(const Candidate &a, const Candidate &b) {
  if (a.cost != b.cost)
    return a.cost < b.cost;
  if (a.kindRank != b.kindRank)
    return a.kindRank < b.kindRank;
  if (a.freeFactorSize != b.freeFactorSize)
    return a.freeFactorSize > b.freeFactorSize;
  return a.meaning.factor < b.meaning.factor;
}

// Candidates for one axis (or the hetero level) given each operand's meaning there.
// `growth[o]`: how many times more bytes a device would hold of the results than of operand
// o when o's partial sums are carried through the op (1 when not known).
// `known`: at the hetero level, unequal splits the plan made of dimensions of a size over
// these cells (factor size -> sizes per cell).
std::vector<Candidate> candidates(const ir::Op &op, const OpShardingRule &rule, const std::vector<Meaning> &m,
                                  const std::vector<double> &bytes, int count, bool hetero,
                                  const std::vector<double> &growth,
                                  const std::map<int64_t, std::vector<int64_t>> &known) {
  std::vector<Candidate> list;
  std::set<int> factors;
  std::map<int, Meaning> splitAs; // factor -> the meaning an operand splits it with (hetero sizes)
  for (size_t o = 0; o < m.size(); ++o) {
    if (m[o].kind == Kind::Split) {
      factors.insert(m[o].factor);
      splitAs.emplace(m[o].factor, m[o]);
    } else if (m[o].kind == Kind::Free && !hetero) {
      // An undecided leaf may be split, but only evenly: deduction does not invent chunks.
      for (const auto &dim : rule.operands[o])
        for (int f : dim) {
          int64_t size = constantOr(rule.factors[f].size);
          if (size > 1 && size % count == 0)
            factors.insert(f);
        }
    }
  }
  auto add = [&](Candidate c) {
    c.required.resize(m.size());
    for (size_t o = 0; o < m.size(); ++o) {
      Meaning want{Kind::Dup};
      if (c.meaning.kind == Kind::Split && rule.operandHas(static_cast<int>(o), c.meaning.factor))
        want = c.meaning;
      else if (c.meaning.kind == Kind::Partial &&
               (rule.linearity == Linearity::Additive || static_cast<int>(o) == c.keepPartial))
        want = Meaning{Kind::Partial};
      c.required[o] = want;
      const double now = conversionCost(m[o], want, count, bytes[o]);
      c.cost += now;
      c.moves = c.moves || now > 0;
      // Across groups, a piece taken as a partial sum of the whole tensor costs nothing to
      // move now, but the whole tensor is to be reduced later where the pieces were not.
      if (hetero && m[o].kind == Kind::Split && want.kind == Kind::Partial)
        c.cost += conversionCost(want, m[o], count, bytes[o]);
    }
    c.results.clear();
    for (size_t r = 0; r < op.results.size(); ++r) {
      Meaning out{Kind::Dup};
      if (c.meaning.kind == Kind::Partial) {
        out = Meaning{Kind::Partial};
      } else if (c.meaning.kind == Kind::Split) {
        bool inResult = false;
        for (const auto &dim : rule.results[r])
          inResult = inResult || std::find(dim.begin(), dim.end(), c.meaning.factor) != dim.end();
        FactorKind kind = rule.factors[c.meaning.factor].kind;
        if (inResult)
          out = c.meaning;
        else if (kind == FactorKind::NeedWhole)
          return;
        else if (kind != FactorKind::Internal)
          out = Meaning{Kind::Partial}; // summed out for this result
      }
      // Across groups, a contraction split whose result outgrows the split operand's pieces
      // leaves each group a partial sum of the whole, to be reduced later (at least
      // reduce-scattered): charged now, so that a large result is not made from small pieces
      // (attention's output projection after head parallelism moves its pieces to the
      // sequence shares instead).
      if (hetero && c.meaning.kind == Kind::Split && out.kind == Kind::Partial) {
        bool grows = false;
        for (size_t o = 0; o < m.size(); ++o)
          grows =
              grows || (rule.operandHas(static_cast<int>(o), c.meaning.factor) && o < growth.size() && growth[o] > 1);
        if (grows)
          c.cost += conversionCost(out, c.meaning, count, valueBytes(*op.results[r]));
      }
      c.results.push_back(out);
    }
    list.push_back(std::move(c));
  };
  add(Candidate{Meaning{Kind::Dup}, -1, {}, {}, 0, 0, 3});
  // A factor the plan splits unequally elsewhere (over the same cells) may be split so here:
  // a partial sum reduce-scattered to the sequence shares rather than all-reduced.
  std::set<int> fromPlan; // factors split as the plan split a dimension of their size
  if (hetero)
    for (size_t f = 0; f < rule.factors.size(); ++f)
      if (auto size = rule.factors[f].size.constant(); size && known.count(*size) && !splitAs.count(int(f))) {
        splitAs.emplace(static_cast<int>(f), Meaning{Kind::Split, static_cast<int>(f), known.at(*size), false});
        factors.insert(static_cast<int>(f));
        fromPlan.insert(static_cast<int>(f));
      }
  for (int f : factors) {
    if (rule.factors[f].kind == FactorKind::NeedWhole)
      continue;
    Meaning split = splitAs.count(f) ? splitAs[f] : Meaning{Kind::Split, f};
    if (hetero && split.sizes.empty() && !splitAs.count(f))
      continue;
    const bool passThrough = rule.factors[f].kind == FactorKind::PassThrough;
    Candidate c{split, -1, {}, {}, 0, 0, passThrough != rule.preferContraction ? 0 : 1};
    for (size_t o = 0; o < m.size(); ++o)
      if ((m[o].kind == Kind::Free && rule.operandHas(static_cast<int>(o), f)) || fromPlan.count(f))
        c.freeFactorSize = std::max(c.freeFactorSize, constantOr(rule.factors[f].size));
    add(c);
  }
  bool anyPartial = std::any_of(m.begin(), m.end(), [](const Meaning &x) { return x.kind == Kind::Partial; });
  if (anyPartial && rule.linearity == Linearity::Additive)
    add(Candidate{Meaning{Kind::Partial}, -1, {}, {}, 0, 0, 2});
  if (rule.linearity == Linearity::OneOperand)
    for (size_t o = 0; o < m.size(); ++o)
      if (m[o].kind == Kind::Partial && rule.linearIn[o]) {
        add(Candidate{Meaning{Kind::Partial}, static_cast<int>(o), {}, {}, 0, 0, 2});
        // The sums are still to be reduced, later and larger when the results outgrow the
        // operand on each device (a tensor-parallel matmul whose contraction is split
        // leaves its whole result on every member): that growth is charged now.
        if (o < growth.size() && growth[o] > 1)
          list.back().cost += conversionCost(m[o], Meaning{Kind::Dup}, count, bytes[o] * (growth[o] - 1));
      }
  std::sort(list.begin(), list.end(), better);
  return list;
}

// Per operand, the bytes a device holds of the op's largest result over those it holds of
// the operand, from the operands' axes in the first cell: an axis that splits the operand
// divides its piece; it divides the result's only when the split factor is in the result.
std::vector<double> growth(const ir::Op &op, const OpShardingRule &rule, const std::vector<OperandView> &operands,
                           const std::vector<Cell> &cells) {
  std::vector<double> out(operands.size(), 1.0);
  if (cells.empty())
    return out;
  for (size_t o = 0; o < operands.size(); ++o) {
    const auto &axes = operands[o].axes;
    if (axes.empty())
      continue;
    double operandSplit = 1, resultSplit = 1;
    for (size_t a = 0; a < axes[0].size() && a < cells[0].mesh.size(); ++a) {
      const Meaning &meaning = axes[0][a];
      if (meaning.kind != Kind::Split)
        continue;
      operandSplit *= cells[0].mesh[a];
      bool inResults = true;
      for (size_t r = 0; r < op.results.size(); ++r) {
        bool here = false;
        for (const auto &dim : rule.results[r])
          here = here || std::find(dim.begin(), dim.end(), meaning.factor) != dim.end();
        inResults = inResults && here;
      }
      if (inResults)
        resultSplit *= cells[0].mesh[a];
    }
    double largest = 0;
    for (const ir::Value *r : op.results)
      largest = std::max(largest, static_cast<double>(valueBytes(*r)));
    if (operands[o].bytes > 0 && largest > 0)
      out[o] = (largest / resultSplit) / (operands[o].bytes / operandSplit);
  }
  return out;
}

// Restricts a copy held on more cells to the op's cells; nullopt when it cannot.
std::optional<ir::Annotation> restrictTo(const ir::Annotation &a, const std::vector<Cell> &cells) {
  if (cellsOf(a) == cells)
    return a;
  if (a.hetero.kind != ir::HeteroKind::Dup && a.subgroups.size() > 1)
    return std::nullopt;
  ir::Annotation restricted;
  auto have = cellsOf(a);
  for (const Cell &cell : cells) {
    auto it = std::find(have.begin(), have.end(), cell);
    if (it == have.end())
      return std::nullopt;
    restricted.subgroups.push_back(a.subgroups[it - have.begin()]);
  }
  return restricted;
}

// The same meanings on other devices (a pipeline hop, or a layout move).
ir::Annotation moveTo(const ir::Annotation &a, const std::vector<Cell> &cells) {
  ir::Annotation moved;
  for (size_t g = 0; g < cells.size(); ++g) {
    ir::LocalAnnotation local{cells[g].devices, {}};
    bool same = g < a.subgroups.size() && cellsOf(a)[g].mesh == cells[g].mesh;
    for (size_t axis = 0; axis < cells[g].mesh.size(); ++axis)
      local.axes.push_back(same ? a.subgroups[g].axes[axis] : ir::MeshAxis{ir::AxisKind::Dup, 0, cells[g].mesh[axis]});
    moved.subgroups.push_back(local);
  }
  if (a.subgroups.size() == cells.size() && cells.size() > 1)
    moved.hetero = a.hetero;
  return moved;
}

} // namespace hspmd::passes
