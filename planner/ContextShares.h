// ContextShares.h - the local integer program of HexiSeq-style context parallelism: how
// many positions of a causal sequence each device of a context-parallel group takes, as
// contiguous ranges in device order, so that the slowest device finishes first.
//
// Position s attends to s + 1 keys, so a query range [a, b) costs in proportion to
// b^2 - a^2 (plus a part linear in b - a): equal shares would leave the last device with the
// most work. The sequence is cut into blocks of `block` positions; binary y[d][k] says block
// k lies in the ranges of devices 0..d; the program minimises T subject to, for every
// device, (its blocks' cost) / (its speed) + its positions x its seconds per position <= T
// and its activation memory <= its capacity.
// COIN-OR CBC solves it exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hspmd::planner {

struct ShareDevice {
  double flops = 1;       // FLOP/s it reaches
  double memoryBytes = 0; // for the activations of its range (0: no limit)
  /// Seconds per position that do not scale with its FLOP/s (a tensor-parallel group's
  /// all-reduces over its own links).
  double secondsPerPosition = 0;
};

/// FLOPs and bytes of a position: attention per (query, key) pair, the rest per position;
/// activation bytes per position.
struct ContextCost {
  double flopsPerPair = 1, flopsPerPosition = 0, bytesPerPosition = 0;
};

struct ContextPlan {
  std::vector<int64_t> lengths; // positions per device, in device order
  double makespan = 0;          // seconds of the slowest device
  bool optimal = false;         // proven optimal (CBC), or exhaustive (brute force)
  std::string error;            // when no split fits (memory)
};

/// The slowest device's seconds under `lengths`.
double contextMakespan(const std::vector<ShareDevice> &devices, const std::vector<int64_t> &lengths,
                       const ContextCost &cost);

/// The best split of `sequence` positions into blocks of `block` (solved with CBC).
ContextPlan planContextShares(const std::vector<ShareDevice> &devices, int64_t sequence, int64_t block,
                              const ContextCost &cost, double timeLimitSeconds = 10);

/// The same split found fast: bisection on the makespan, each time giving every device, in
/// order, the longest range it finishes in time (if any split meets a makespan, this greedy
/// one does: a later start only lowers a range's cost). Exact up to the block size.
ContextPlan planContextSharesFast(const std::vector<ShareDevice> &devices, int64_t sequence, int64_t block,
                                  const ContextCost &cost);

/// The same by trying every split into whole blocks (for tests; exponential).
ContextPlan bruteForceContextShares(const std::vector<ShareDevice> &devices, int64_t sequence, int64_t block,
                                    const ContextCost &cost);

} // namespace hspmd::planner
