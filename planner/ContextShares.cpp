// ContextShares.cpp - the integer program of unequal context-parallel shares, solved with CBC
// (planner/ContextShares.h).
#include "planner/ContextShares.h"

#include "planner/Cbc.h"

#include <algorithm>
#include <functional>
#include <limits>

namespace hspmd::planner {

namespace {

// FLOPs of the positions [a, b) of a causal sequence.
double rangeFlops(int64_t a, int64_t b, const ContextCost &cost) {
  const double pairs =
      (static_cast<double>(b) * static_cast<double>(b + 1) - static_cast<double>(a) * static_cast<double>(a + 1)) / 2;
  return pairs * cost.flopsPerPair + static_cast<double>(b - a) * cost.flopsPerPosition;
}

// Seconds `device` takes for the positions [a, b).
double rangeSeconds(const ShareDevice &device, int64_t a, int64_t b, const ContextCost &cost) {
  return rangeFlops(a, b, cost) / device.flops + static_cast<double>(b - a) * device.secondsPerPosition;
}

bool fits(const ShareDevice &device, int64_t length, const ContextCost &cost) {
  return device.memoryBytes <= 0 || static_cast<double>(length) * cost.bytesPerPosition <= device.memoryBytes;
}

} // namespace

double contextMakespan(const std::vector<ShareDevice> &devices, const std::vector<int64_t> &lengths,
                       const ContextCost &cost) {
  double slowest = 0;
  int64_t at = 0;
  for (size_t d = 0; d < devices.size(); ++d) {
    slowest = std::max(slowest, rangeSeconds(devices[d], at, at + lengths[d], cost));
    at += lengths[d];
  }
  return slowest;
}

ContextPlan planContextShares(const std::vector<ShareDevice> &devices, int64_t sequence, int64_t block,
                              const ContextCost &cost, double timeLimitSeconds) {
  ContextPlan plan;
  const int n = static_cast<int>(devices.size());
  const int64_t blocks = sequence / block;
  if (n == 0 || blocks <= 0 || sequence % block != 0) {
    plan.error = "the sequence (" + std::to_string(sequence) + ") must be a positive multiple of the block (" +
                 std::to_string(block) + ")";
    return plan;
  }
  Cbc_Model *model = cbc().newModel();
  cbc().setParameter(model, "log", "0");
  cbc().setMaximumSeconds(model, timeLimitSeconds);
  // Columns: y[d][k] for d < n - 1 (device n - 1 holds what is left), then T.
  auto y = [&](int d, int64_t k) { return static_cast<int>(d * blocks + k); };
  for (int d = 0; d + 1 < n; ++d)
    for (int64_t k = 0; k < blocks; ++k)
      cbc().addCol(model, "", 0, 1, 0, 1, 0, nullptr, nullptr);
  const int T = (n - 1) * static_cast<int>(blocks);
  cbc().addCol(model, "", 0, std::numeric_limits<double>::max(), 1, 0, 0, nullptr, nullptr);
  // Prefixes: y[d][k] >= y[d][k + 1]; nested: y[d][k] <= y[d + 1][k].
  for (int d = 0; d + 1 < n; ++d)
    for (int64_t k = 0; k < blocks; ++k) {
      if (k + 1 < blocks) {
        int cols[2] = {y(d, k), y(d, k + 1)};
        double coefs[2] = {1, -1};
        cbc().addRow(model, "", 2, cols, coefs, 'G', 0);
      }
      if (d + 2 < n) {
        int cols[2] = {y(d, k), y(d + 1, k)};
        double coefs[2] = {1, -1};
        cbc().addRow(model, "", 2, cols, coefs, 'L', 0);
      }
    }
  // Device d holds x[d][k] = y[d][k] - y[d - 1][k] (y[-1] = 0, y[n - 1] = 1).
  for (int d = 0; d < n; ++d) {
    std::vector<int> cols;
    std::vector<double> time, memory;
    double constantTime = 0, constantMemory = 0;
    for (int64_t k = 0; k < blocks; ++k) {
      const double seconds = rangeSeconds(devices[static_cast<size_t>(d)], k * block, (k + 1) * block, cost);
      const double bytes = static_cast<double>(block) * cost.bytesPerPosition;
      if (d + 1 < n) {
        cols.push_back(y(d, k));
        time.push_back(seconds);
        memory.push_back(bytes);
      } else {
        constantTime += seconds;
        constantMemory += bytes;
      }
      if (d > 0) {
        cols.push_back(y(d - 1, k));
        time.push_back(-seconds);
        memory.push_back(-bytes);
      }
    }
    // sum time * x - T <= -constant
    std::vector<int> timeCols = cols;
    std::vector<double> timeCoefs = time;
    timeCols.push_back(T);
    timeCoefs.push_back(-1);
    cbc().addRow(model, "", static_cast<int>(timeCols.size()), timeCols.data(), timeCoefs.data(), 'L', -constantTime);
    if (devices[static_cast<size_t>(d)].memoryBytes > 0)
      cbc().addRow(model, "", static_cast<int>(cols.size()), cols.data(), memory.data(), 'L',
                   devices[static_cast<size_t>(d)].memoryBytes - constantMemory);
  }
  cbc().solve(model);
  if (cbc().isProvenInfeasible(model)) {
    plan.error = "no split of " + std::to_string(sequence) + " positions fits the devices' memory";
    cbc().deleteModel(model);
    return plan;
  }
  const double *solution = cbc().getColSolution(model);
  plan.optimal = cbc().isProvenOptimal(model) != 0;
  int64_t previous = 0;
  for (int d = 0; d < n; ++d) {
    int64_t upTo = blocks;
    if (d + 1 < n) {
      upTo = 0;
      for (int64_t k = 0; k < blocks; ++k)
        upTo += solution[y(d, k)] > 0.5 ? 1 : 0;
    }
    plan.lengths.push_back((upTo - previous) * block);
    previous = upTo;
  }
  cbc().deleteModel(model);
  plan.makespan = contextMakespan(devices, plan.lengths, cost);
  return plan;
}

ContextPlan planContextSharesFast(const std::vector<ShareDevice> &devices, int64_t sequence, int64_t block,
                                  const ContextCost &cost) {
  ContextPlan plan;
  const int64_t blocks = block > 0 ? sequence / block : 0;
  if (devices.empty() || blocks <= 0 || sequence % block != 0) {
    plan.error = "the sequence (" + std::to_string(sequence) + ") must be a positive multiple of the block (" +
                 std::to_string(block) + ")";
    return plan;
  }
  // The greedy split for a makespan, or empty when it does not cover the sequence.
  auto greedy = [&](double makespan) {
    std::vector<int64_t> lengths;
    int64_t at = 0; // in blocks
    for (const ShareDevice &device : devices) {
      int64_t lo = at, hi = blocks; // the furthest end in [at, blocks] within time and memory
      while (lo < hi) {
        const int64_t mid = (lo + hi + 1) / 2;
        if (rangeSeconds(device, at * block, mid * block, cost) <= makespan && fits(device, (mid - at) * block, cost))
          lo = mid;
        else
          hi = mid - 1;
      }
      lengths.push_back((lo - at) * block);
      at = lo;
    }
    if (at < blocks)
      lengths.clear();
    return lengths;
  };
  double slowest = 0;
  for (const ShareDevice &device : devices)
    slowest = std::max(slowest, rangeSeconds(device, 0, sequence, cost));
  if (greedy(slowest * 1.000001).empty()) {
    plan.error = "no split of " + std::to_string(sequence) + " positions fits the devices' memory";
    return plan;
  }
  double lo = 0, hi = slowest * 1.000001;
  for (int i = 0; i < 100 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (greedy(mid).empty() ? lo : hi) = mid;
  }
  plan.lengths = greedy(hi);
  plan.makespan = contextMakespan(devices, plan.lengths, cost);
  plan.optimal = true;
  return plan;
}

ContextPlan bruteForceContextShares(const std::vector<ShareDevice> &devices, int64_t sequence, int64_t block,
                                    const ContextCost &cost) {
  ContextPlan best;
  best.makespan = std::numeric_limits<double>::infinity();
  const int64_t blocks = sequence / block;
  std::vector<int64_t> lengths(devices.size(), 0);
  std::function<void(size_t, int64_t)> place = [&](size_t d, int64_t left) {
    if (d + 1 == devices.size()) {
      lengths[d] = left * block;
      if (!fits(devices[d], lengths[d], cost))
        return;
      const double makespan = contextMakespan(devices, lengths, cost);
      if (makespan < best.makespan) {
        best.makespan = makespan;
        best.lengths = lengths;
      }
      return;
    }
    for (int64_t take = 0; take <= left; ++take) {
      lengths[d] = take * block;
      if (fits(devices[d], lengths[d], cost))
        place(d + 1, left - take);
    }
  };
  place(0, blocks);
  best.optimal = !best.lengths.empty();
  if (best.lengths.empty())
    best.error = "no split fits";
  return best;
}

} // namespace hspmd::planner
