// Cost.h - the one cost library: every constant of hspmd's cost models, named once with where
// it came from, and the formulas that the planner's search, the simulator, communication
// planning, lint's estimates and bench/ share. It sits in ir/, the lowest layer, because
// communication planning (passes/) and the planner (planner/) both call it.
//
// Where a constant came from matters more than its value: none of the GPU constants below
// was measured on this project's machines (they have no GPU). The CPU runtime's own numbers
// (its message latency, each kernel's efficiency) are measured by bench_simulate, which
// hands them to the simulator in place of these.
#pragma once

#include <algorithm>
#include <string>

namespace hspmd::cost {

// ---- constants ---------------------------------------------------------------------------

/// Seconds per message or collective round (alpha in the alpha-beta model). Assumed, not
/// measured: the order of a small NCCL message inside a node. (The search used 10 us and
/// the simulator and communication planning 5 us until they shared this one.)
inline constexpr double kMessageLatency = 5e-6;
/// The fraction of a device's peak FLOP/s (and memory bandwidth) kernels reach where nothing
/// better is known. Assumed: Megatron-LM reports 40-50% model FLOP utilisation on A100/H100.
inline constexpr double kKernelEfficiency = 0.5;

/// FLOPs per element of the ops that are not matrix products. Counted from the CPU kernels
/// (runtime/kernels/): a norm or softmax passes over its row for a reduction, a second
/// reduction and the scaling (about 5 operations an element); their backward passes about 8;
/// GELU and SiLU evaluate erf or exp (about 20); AdamW updates two moments and the weight
/// (about 12); the rest (adds, copies) one.
inline constexpr double kNormFlops = 5;
inline constexpr double kNormGradFlops = 8;
inline constexpr double kActivationFlops = 20;
inline constexpr double kAdamwFlops = 12;
inline constexpr double kElementwiseFlops = 1;
/// Attention's backward pass against its forward (FlashAttention-2: 2.5x the FLOPs).
inline constexpr double kAttentionBackwardFactor = 2.5;
/// A training step's passes in units of the forward pass: forward + backward (twice the
/// forward's matrix products) = 3; with recomputation the forward runs again: 4.
inline constexpr double kTrainingPasses = 3;
inline constexpr double kTrainingPassesRecompute = 4;

// ---- computation -------------------------------------------------------------------------

/// A matrix product: 2 FLOPs per multiply-add, for each element of the result.
inline double matmulFlops(double resultElements, double contracted) {
  return 2 * resultElements * contracted;
}
/// Attention's forward: scores (Q K^T) and their product with V, 2 x 2 FLOPs per (query,
/// key) pair per head dimension.
inline double attentionFlops(double batch, double heads, double keyPairs, double headDim) {
  return 4 * batch * heads * keyPairs * headDim;
}
/// (query, key) pairs a causal mask lets through for `queries` consecutive queries starting
/// `offset` positions after the first of `keys` keys: query s sees offset + s + 1 keys (at
/// most all of them).
/// Closed form (positions are whole numbers): the sum over s in [0, queries) of
/// clamp(offset + s + 1, 0, keys), whose terms are 0, then a + s, then keys.
inline double causalPairs(double queries, double keys, double offset) {
  const double a = offset + 1;                                           // the term at s = 0
  const double none = std::clamp(-a, 0.0, queries);                      // terms below 0
  const double all = std::clamp(queries - (keys - a + 1), 0.0, queries); // terms above keys
  const double middle = std::max(0.0, queries - none - all);             // terms a + s, s in [none, none + middle)
  return middle * a + middle * (2 * none + middle - 1) / 2 + all * keys;
}

// ---- communication -----------------------------------------------------------------------

/// Bytes each member of a ring all-reduce of a `buffer`-byte buffer over n members receives
/// (reduce-scatter, then all-gather): 2(n-1)/n x buffer, in 2(n-1) rounds.
inline double allReduceBytes(double buffer, int n) {
  return n > 1 ? 2.0 * (n - 1) / n * buffer : 0;
}
inline int allReduceRounds(int n) {
  return n > 1 ? 2 * (n - 1) : 0;
}
/// The same for a ring reduce-scatter or all-gather: (n-1)/n x buffer, in n-1 rounds.
inline double gatherBytes(double buffer, int n) {
  return n > 1 ? static_cast<double>(n - 1) / n * buffer : 0;
}
inline int gatherRounds(int n) {
  return n > 1 ? n - 1 : 0;
}
/// A ring collective's time: its rounds' latency, then the bytes each member receives over
/// the group's narrowest link (GB/s).
inline double ringSeconds(double bytesReceived, int rounds, double gbps, double alpha = kMessageLatency) {
  return rounds * alpha + bytesReceived / (gbps * 1e9);
}
/// A ring all-reduce of a `buffer`-byte buffer over n members.
inline double allReduceSeconds(double buffer, int n, double gbps, double alpha = kMessageLatency) {
  return n > 1 && buffer > 0 ? ringSeconds(allReduceBytes(buffer, n), allReduceRounds(n), gbps, alpha) : 0;
}
/// One message: latency, then its bytes over the link.
inline double messageSeconds(double bytes, double gbps, double alpha = kMessageLatency) {
  return alpha + bytes / (gbps * 1e9);
}

// ---------------------------------------------------------------- memory
// What the search (planner/SearchModel.cpp) and lint's estimates (planner/Estimates.cpp) charge
// for training state and activations before a program exists; plan-memory then measures the
// programs themselves.

/// Optimizer state copies of a parameter: AdamW keeps two moments, SGD with momentum one.
inline double optimizerStateCopies(const std::string &optimizer, bool momentum) {
  return optimizer == "sgd" ? (momentum ? 1 : 0) : 2;
}
/// A parameter's training state on one device holding `bytes` of it: the weights, their
/// gradient and the optimizer state, which `zero` splits over `zeroShards` copies.
inline double trainingStateBytes(double bytes, double stateCopies, double zeroShards = 1) {
  return bytes * (2 + stateCopies / zeroShards);
}
/// Micro-batches whose activations a stage keeps at once: 1F1B keeps (stages - stage) of them
/// (at most the micro-batches), GPipe all.
inline int inFlightMicrobatches(bool gpipe, int microbatches, int stages, int stage) {
  return gpipe ? microbatches : std::max(1, std::min(microbatches, stages - stage));
}

} // namespace hspmd::cost
