// LocalPrograms.cpp - the planner's local programs (planner/Search.h): layers per stage,
// sequences per pipeline, heads and sequence shares of a head-parallel group. Each has a fast
// algorithm (bisection on the makespan over its candidate values) and the same program stated
// for COIN-OR CBC.
#include "planner/Search.h"

#include "planner/Cbc.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

namespace hspmd::planner {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A small CBC model: columns and rows by value, minimising the last column (T).
class Program {
public:
  Program() : model_(cbc().newModel()) { cbc().setParameter(model_, "log", "0"); }
  ~Program() { cbc().deleteModel(model_); }
  Program(const Program &) = delete;
  Program &operator=(const Program &) = delete;

  int column(double lower, double upper, bool integer, double objective = 0) {
    cbc().addCol(model_, "", lower, upper, objective, integer ? 1 : 0, 0, nullptr, nullptr);
    return columns_++;
  }
  void row(const std::vector<std::pair<int, double>> &terms, char sense, double rhs) {
    std::vector<int> cols;
    std::vector<double> coefs;
    for (const auto &[c, v] : terms) {
      cols.push_back(c);
      coefs.push_back(v);
    }
    cbc().addRow(model_, "", static_cast<int>(cols.size()), cols.data(), coefs.data(), sense, rhs);
  }
  // Solves; false when infeasible (or no solution within the time limit).
  bool solve(double seconds = 30) {
    cbc().setMaximumSeconds(model_, seconds);
    cbc().solve(model_);
    return !cbc().isProvenInfeasible(model_) && cbc().getColSolution(model_) != nullptr &&
           cbc().numberSavedSolutions(model_) > 0;
  }
  bool optimal() const { return cbc().isProvenOptimal(model_) != 0; }
  int64_t integer(int c) const { return std::llround(cbc().getColSolution(model_)[c]); }

private:
  Cbc_Model *model_;
  int columns_ = 0;
};

// The smallest of `values` for which `feasible` (monotone) holds (infinity when none): a binary
// search over the values' ranks, each rank found by selection (std::nth_element within the
// range still open), O(n) expected instead of a sort's O(n log n).
template <typename F> double smallestFeasible(std::vector<double> values, F &&feasible) {
  size_t lo = 0, hi = values.size();
  // Invariant: the values ranked [lo, hi) lie in [lo, hi) (in any order); the value ranked hi,
  // when hi < size, is in place and feasible.
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    std::nth_element(values.begin() + static_cast<long>(lo), values.begin() + static_cast<long>(mid),
                     values.begin() + static_cast<long>(hi));
    if (feasible(values[mid]))
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo < values.size() ? values[lo] : kInf;
}

// Whole units of `per` that fit in `budget` (a little slack for rounding).
int64_t unitsWithin(double budget, double per) {
  if (budget < -1e-12 * std::abs(budget))
    return -1;
  if (per <= 0)
    return std::numeric_limits<int32_t>::max();
  return static_cast<int64_t>(std::floor(budget / per * (1 + 1e-12) + 1e-9));
}

} // namespace

// ---- layers per stage ----------------------------------------------------------------

LayerSplit splitLayers(int64_t layers, const std::vector<double> &layerSeconds, const std::vector<double> &fixedSeconds,
                       const std::vector<int64_t> &maxLayers) {
  LayerSplit split;
  const size_t n = layerSeconds.size();
  auto capacity = [&](size_t s, double tau) {
    return std::min(maxLayers[s], unitsWithin(tau - fixedSeconds[s], layerSeconds[s]));
  };
  auto feasible = [&](double tau) {
    int64_t total = 0;
    for (size_t s = 0; s < n; ++s) {
      const int64_t c = capacity(s, tau);
      if (c < 1)
        return false;
      total += c;
    }
    return total >= layers;
  };
  std::vector<double> values;
  for (size_t s = 0; s < n; ++s)
    for (int64_t l = 1; l <= std::min(layers, maxLayers[s]); ++l)
      values.push_back(static_cast<double>(l) * layerSeconds[s] + fixedSeconds[s]);
  const double tau = n > 0 && static_cast<int64_t>(n) <= layers ? smallestFeasible(values, feasible) : kInf;
  if (!std::isfinite(tau))
    return split;
  int64_t total = 0;
  for (size_t s = 0; s < n; ++s) {
    split.layers.push_back(capacity(s, tau));
    total += split.layers.back();
  }
  // Hand back the excess from the slowest stages (each keeps at least one layer).
  auto time = [&](size_t s) { return static_cast<double>(split.layers[s]) * layerSeconds[s] + fixedSeconds[s]; };
  for (; total > layers; --total) {
    size_t worst = n;
    for (size_t s = 0; s < n; ++s)
      if (split.layers[s] > 1 && (worst == n || time(s) > time(worst)))
        worst = s;
    --split.layers[worst];
  }
  for (size_t s = 0; s < n; ++s)
    split.seconds = std::max(split.seconds, time(s));
  split.feasible = split.optimal = true;
  return split;
}

LayerSplit splitLayersExact(int64_t layers, const std::vector<double> &layerSeconds,
                            const std::vector<double> &fixedSeconds, const std::vector<int64_t> &maxLayers) {
  LayerSplit split;
  const size_t n = layerSeconds.size();
  Program program;
  std::vector<int> l;
  for (size_t s = 0; s < n; ++s)
    l.push_back(program.column(1, static_cast<double>(maxLayers[s]), true));
  const int T = program.column(0, 1e30, false, 1);
  std::vector<std::pair<int, double>> sum;
  for (size_t s = 0; s < n; ++s) {
    program.row({{l[s], layerSeconds[s]}, {T, -1}}, 'L', -fixedSeconds[s]);
    sum.push_back({l[s], 1});
  }
  program.row(sum, 'E', static_cast<double>(layers));
  if (!program.solve())
    return split;
  for (size_t s = 0; s < n; ++s) {
    split.layers.push_back(program.integer(l[s]));
    split.seconds =
        std::max(split.seconds, static_cast<double>(split.layers.back()) * layerSeconds[s] + fixedSeconds[s]);
  }
  split.feasible = true;
  split.optimal = program.optimal();
  return split;
}

// ---- sequences per pipeline ------------------------------------------------------------

BatchSplit splitBatch(int64_t sequences, const std::vector<int> &stages, const std::vector<double> &tau,
                      const std::vector<double> &afterSeconds, const std::vector<int64_t> &maxSequences) {
  BatchSplit split;
  const size_t n = tau.size();
  auto time = [&](size_t i, int64_t b) {
    return b == 0 ? 0.0 : static_cast<double>(b + stages[i] - 1) * tau[i] + afterSeconds[i];
  };
  auto capacity = [&](size_t i, double T) {
    const int64_t units = unitsWithin(T - afterSeconds[i], tau[i]);
    return std::clamp<int64_t>(units - stages[i] + 1, 0, maxSequences[i]);
  };
  auto feasible = [&](double T) {
    int64_t total = 0;
    for (size_t i = 0; i < n; ++i)
      total += capacity(i, T);
    return total >= sequences;
  };
  std::vector<double> values;
  for (size_t i = 0; i < n; ++i)
    for (int64_t b = 1; b <= std::min(sequences, maxSequences[i]); ++b)
      values.push_back(time(i, b));
  const double T = sequences > 0 ? smallestFeasible(values, feasible) : 0;
  if (!std::isfinite(T))
    return split;
  int64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    split.sequences.push_back(sequences > 0 ? capacity(i, T) : 0);
    total += split.sequences.back();
  }
  // The surplus comes off the pipeline that finishes last (the first of them on a tie), one
  // sequence at a time: a heap by finishing time (a scan of every pipeline per sequence was
  // quadratic, minutes of `hspmc plan` at 65536 devices, whose capacity far exceeds a batch).
  auto later = [&](size_t a, size_t b) { // whether b comes off before a
    const double ta = time(a, split.sequences[a]), tb = time(b, split.sequences[b]);
    return ta < tb || (ta == tb && a > b);
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> last(later);
  for (size_t i = 0; i < n && total > sequences; ++i)
    if (split.sequences[i] > 0)
      last.push(i);
  for (; total > sequences; --total) {
    const size_t worst = last.top();
    last.pop();
    if (--split.sequences[worst] > 0)
      last.push(worst);
  }
  for (size_t i = 0; i < n; ++i)
    split.seconds = std::max(split.seconds, time(i, split.sequences[i]));
  split.feasible = split.optimal = true;
  return split;
}

BatchSplit splitBatchExact(int64_t sequences, const std::vector<int> &stages, const std::vector<double> &tau,
                           const std::vector<double> &afterSeconds, const std::vector<int64_t> &maxSequences) {
  BatchSplit split;
  const size_t n = tau.size();
  Program program;
  std::vector<int> b, u;
  for (size_t i = 0; i < n; ++i) {
    b.push_back(program.column(0, static_cast<double>(maxSequences[i]), true));
    u.push_back(program.column(0, 1, true));
  }
  const int T = program.column(0, 1e30, false, 1);
  std::vector<std::pair<int, double>> sum;
  for (size_t i = 0; i < n; ++i) {
    // b_i <= max_i u_i; tau_i b_i + ((p_i - 1) tau_i + after_i) u_i <= T
    program.row({{b[i], 1}, {u[i], -static_cast<double>(maxSequences[i])}}, 'L', 0);
    program.row({{b[i], tau[i]}, {u[i], (stages[i] - 1) * tau[i] + afterSeconds[i]}, {T, -1}}, 'L', 0);
    sum.push_back({b[i], 1});
  }
  program.row(sum, 'E', static_cast<double>(sequences));
  if (!program.solve())
    return split;
  for (size_t i = 0; i < n; ++i) {
    split.sequences.push_back(program.integer(b[i]));
    const int64_t bi = split.sequences.back();
    if (bi > 0)
      split.seconds = std::max(split.seconds, static_cast<double>(bi + stages[i] - 1) * tau[i] + afterSeconds[i]);
  }
  split.feasible = true;
  split.optimal = program.optimal();
  return split;
}

// ---- heads and sequence shares -------------------------------------------------------

HeadSplit splitHeads(int64_t heads, int64_t headUnit, int64_t blocks, const std::vector<double> &headSeconds,
                     const std::vector<double> &blockSeconds) {
  HeadSplit split;
  const size_t n = headSeconds.size();
  const int64_t units = heads / headUnit;
  // For a makespan T: every group starts with one head unit; the others go one at a time to
  // the group left with the most room for blocks; then check that the blocks fit.
  auto assign = [&](double T, std::vector<int64_t> &h, std::vector<int64_t> &s) {
    h.assign(n, headUnit);
    s.assign(n, 0);
    std::vector<double> used(n, 0);
    for (size_t g = 0; g < n; ++g)
      used[g] = static_cast<double>(headUnit) * headSeconds[g];
    for (int64_t k = static_cast<int64_t>(n); k < units; ++k) {
      size_t best = n;
      double bestRoom = -kInf;
      for (size_t g = 0; g < n; ++g) {
        const double add = static_cast<double>(headUnit) * headSeconds[g];
        if (used[g] + add > T * (1 + 1e-12))
          continue;
        const double room = (T - used[g] - add) / blockSeconds[g];
        if (room > bestRoom) {
          bestRoom = room;
          best = g;
        }
      }
      if (best == n)
        return false;
      used[best] += static_cast<double>(headUnit) * headSeconds[best];
      h[best] += headUnit;
    }
    int64_t total = 0;
    for (size_t g = 0; g < n; ++g) {
      s[g] = std::max<int64_t>(0, unitsWithin(T - used[g], blockSeconds[g]));
      total += s[g];
    }
    if (total < blocks)
      return false;
    for (size_t g = n; total > blocks;) { // hand back the excess from the last groups
      g = g == 0 ? n - 1 : g - 1;
      const int64_t back = std::min(s[g], total - blocks);
      s[g] -= back;
      total -= back;
    }
    return true;
  };
  double hi = 0;
  for (size_t g = 0; g < n; ++g)
    hi = std::max(hi, static_cast<double>(heads) * headSeconds[g] + static_cast<double>(blocks) * blockSeconds[g]);
  std::vector<int64_t> h, s;
  if (n == 0 || heads % headUnit != 0 || units < static_cast<int64_t>(n) || !assign(hi, h, s))
    return split;
  double lo = 0;
  for (int i = 0; i < 100 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    if (assign(mid, h, s))
      hi = mid;
    else
      lo = mid;
  }
  assign(hi, split.heads, split.blocks);
  for (size_t g = 0; g < n; ++g)
    split.seconds = std::max(split.seconds, static_cast<double>(split.heads[g]) * headSeconds[g] +
                                                static_cast<double>(split.blocks[g]) * blockSeconds[g]);
  split.feasible = true;
  return split;
}

HeadSplit splitHeadsExact(int64_t heads, int64_t headUnit, int64_t blocks, const std::vector<double> &headSeconds,
                          const std::vector<double> &blockSeconds, double timeLimitSeconds) {
  HeadSplit split;
  const size_t n = headSeconds.size();
  Program program;
  std::vector<int> h, s;
  for (size_t g = 0; g < n; ++g) {
    h.push_back(program.column(1, static_cast<double>(heads / headUnit), true)); // a unit at least
    s.push_back(program.column(0, static_cast<double>(blocks), true));
  }
  const int T = program.column(0, 1e30, false, 1);
  std::vector<std::pair<int, double>> headSum, blockSum;
  for (size_t g = 0; g < n; ++g) {
    program.row({{h[g], static_cast<double>(headUnit) * headSeconds[g]}, {s[g], blockSeconds[g]}, {T, -1}}, 'L', 0);
    headSum.push_back({h[g], 1});
    blockSum.push_back({s[g], 1});
  }
  program.row(headSum, 'E', static_cast<double>(heads / headUnit));
  program.row(blockSum, 'E', static_cast<double>(blocks));
  if (n == 0 || heads % headUnit != 0 || !program.solve(timeLimitSeconds))
    return split;
  for (size_t g = 0; g < n; ++g) {
    split.heads.push_back(program.integer(h[g]) * headUnit);
    split.blocks.push_back(program.integer(s[g]));
    split.seconds = std::max(split.seconds, static_cast<double>(split.heads[g]) * headSeconds[g] +
                                                static_cast<double>(split.blocks[g]) * blockSeconds[g]);
  }
  split.feasible = true;
  split.optimal = program.optimal();
  return split;
}

} // namespace hspmd::planner
