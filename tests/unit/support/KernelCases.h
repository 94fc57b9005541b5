// KernelCases.h - test support: the GPU kernels' cases, each an op with its attributes, inputs
// and outputs, handed to a comparison that runs the op on the CPU and on a GPU kernel. The GPU
// tests (tests/gpu/GpuKernelTest.cpp: on a GPU) and the emulated ones
// (tests/unit/runtime/GpuEmulatedKernelsTest.cpp: the same kernels on CPU threads) run the same
// cases.
#pragma once

#include "ir/Ops.h"
#include "runtime/Kernels.h"

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace hspmd::testing {

/// A tensor in host memory: f32, i32 or bf16 bytes.
struct KernelTensor {
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> shape;
  std::vector<char> bytes;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  float *f32() { return reinterpret_cast<float *>(bytes.data()); }
};

inline KernelTensor f32(std::vector<int64_t> shape, std::mt19937 &random, float lo = -2, float hi = 2) {
  KernelTensor t{ir::DType::F32, std::move(shape), {}};
  t.bytes.resize(static_cast<size_t>(t.numel()) * 4);
  std::uniform_real_distribution<float> values(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.f32()[i] = values(random);
  return t;
}

inline KernelTensor i32(std::vector<int64_t> shape, std::vector<int32_t> values) {
  KernelTensor t{ir::DType::I32, std::move(shape), {}};
  t.bytes.resize(values.size() * 4);
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

inline KernelTensor zeros(std::vector<int64_t> shape) {
  KernelTensor t{ir::DType::F32, std::move(shape), {}};
  t.bytes.assign(static_cast<size_t>(t.numel()) * 4, 0);
  return t;
}

inline std::vector<runtime::TensorView> views(std::vector<KernelTensor> &tensors) {
  std::vector<runtime::TensorView> out;
  for (KernelTensor &t : tensors)
    out.push_back(runtime::TensorView{t.bytes.data(), t.dtype, t.shape});
  return out;
}

/// Runs `op` on the CPU and on the kernel under test from the same tensors and compares every
/// f32 output and input (an optimizer updates its state in place) within `bound` relative.
using KernelCompare =
    std::function<void(const std::string &op, const ir::AttrMap &attrs, std::vector<KernelTensor> inputs,
                       std::vector<KernelTensor> outputs, const runtime::KernelContext &context, double bound)>;

namespace kernelcases {

inline void elementwise(const KernelCompare &compare) {
  std::mt19937 random(1);
  for (const char *op : {"add", "sub", "mul"}) {
    compare(op, {}, {f32({4, 33}, random), f32({4, 33}, random)}, {zeros({4, 33})}, {}, 1e-5);
    compare(op, {}, {f32({4, 33}, random), f32({33}, random)}, {zeros({4, 33})}, {}, 1e-5);
    compare(op, {}, {f32({4, 1, 5}, random), f32({3, 1}, random)}, {zeros({4, 3, 5})}, {}, 1e-5);
  }
  compare("div", {}, {f32({4, 33}, random), f32({33}, random, 0.5f, 2.0f)}, {zeros({4, 33})}, {}, 1e-5);
  for (const char *op : {"neg", "gelu", "silu", "relu"})
    compare(op, {}, {f32({1000}, random, -6, 6)}, {zeros({1000})}, {}, 1e-5);
  for (const char *op : {"gelu_grad", "silu_grad", "relu_grad"})
    compare(op, {}, {f32({1000}, random, -6, 6), f32({1000}, random)}, {zeros({1000})}, {}, 1e-5);
  compare("broadcast", {}, {f32({33}, random)}, {zeros({4, 33})}, {}, 1e-5);
  compare("constant", {{"value", 2.5}}, {}, {zeros({7, 5})}, {}, 1e-5);
}

inline void normsAndSoftmax(const KernelCompare &compare) {
  std::mt19937 random(2);
  compare("layernorm", {{"eps", 1e-5}}, {f32({6, 100}, random), f32({100}, random), f32({100}, random)},
          {zeros({6, 100})}, {}, 1e-5);
  compare("layernorm_grad", {{"eps", 1e-5}}, {f32({6, 100}, random), f32({100}, random), f32({6, 100}, random)},
          {zeros({6, 100}), zeros({100}), zeros({100})}, {}, 1e-5);
  compare("rmsnorm", {{"eps", 1e-6}}, {f32({5, 2000}, random), f32({2000}, random)}, {zeros({5, 2000})}, {}, 1e-5);
  compare("rmsnorm_grad", {{"eps", 1e-6}}, {f32({5, 64}, random), f32({64}, random), f32({5, 64}, random)},
          {zeros({5, 64}), zeros({64})}, {}, 1e-5);
  compare("softmax", {{"dim", int64_t{1}}}, {f32({3, 17, 5}, random, -8, 8)}, {zeros({3, 17, 5})}, {}, 1e-5);
}

inline void embeddingAndCrossEntropy(const KernelCompare &compare) {
  std::mt19937 random(3);
  const KernelTensor targets = i32({12}, {0, 5, 49, -1, 7, 7, 3, 20, 33, 48, 1, 2});
  compare("cross_entropy", {{"tokens", int64_t{22}}}, {f32({12, 50}, random, -5, 5), targets}, {zeros({})}, {}, 1e-5);
  compare("cross_entropy_grad", {{"tokens", int64_t{22}}},
          {f32({12, 50}, random, -5, 5), targets, f32({}, random, 0.5f, 1.5f)}, {zeros({12, 50})}, {}, 1e-5);
  const KernelTensor ids = i32({3, 4}, {10, 11, 59, 60, 5, 12, 12, 30, 10, 59, 0, 41});
  compare("embedding", {{"vocab_offset", int64_t{10}}}, {f32({50, 16}, random), ids}, {zeros({3, 4, 16})}, {}, 1e-5);
  compare("embedding_grad", {{"vocab_offset", int64_t{10}}}, {ids, f32({3, 4, 16}, random)}, {zeros({50, 16})}, {},
          1e-5);
}

// The embedding's gradient sums each table row's ids in their order, as the CPU's loop does: bit
// for bit the CPU's (bound 0), on 3000 ids of which 1200 name one row (its sum in another order
// would differ in the last bits), the rest spread over a table of 2500 rows (more than the GPU
// kernel's prefix-sum threads: each sums a run of rows), some outside this piece of it on both
// sides, and rows no id names.
inline void embeddingGradientInOrder(const KernelCompare &compare) {
  std::mt19937 random(21);
  const int64_t V = 2500, D = 8, offset = 7;
  std::uniform_int_distribution<int32_t> anyId(0, 2100); // rows 2094 and on named by none
  std::vector<int32_t> ids(3000);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = i % 5 < 2 ? static_cast<int32_t>(offset + 42) : i % 50 == 7 ? offset + V + 3 : anyId(random);
  compare("embedding_grad", {{"vocab_offset", offset}}, {i32({3, 1000}, ids), f32({3, 1000, D}, random)},
          {zeros({V, D})}, {}, 0.0);
}

// The vocabulary-parallel cross-entropy's steps (the NCCL backend runs them on the GPU around
// its all-reduces), on a piece of 50 columns from vocabulary offset 25.
inline void vocabularyParallelCrossEntropy(const KernelCompare &compare) {
  std::mt19937 random(7);
  const ir::AttrMap attrs = {{"tokens", int64_t{22}}, {"vocab_offset", int64_t{25}}};
  const KernelTensor logits = f32({12, 50}, random, -5, 5), peak = f32({12}, random, 4, 5);
  const KernelTensor targets = i32({12}, {0, 30, 49, -1, 74, 75, 3, 26, 33, 48, 100, 2});
  const KernelTensor sums = f32({24}, random, 1, 40);
  compare("vocab_parallel_max", attrs, {logits}, {zeros({12})}, {}, 1e-5);
  compare("vocab_parallel_sums", attrs, {logits, targets, peak}, {zeros({24})}, {}, 1e-5);
  compare("vocab_parallel_loss", attrs, {targets, peak, sums}, {zeros({})}, {}, 1e-5);
  compare("vocab_parallel_grad", attrs, {logits, targets, peak, sums, f32({}, random, 0.5f, 1.5f)}, {zeros({12, 50})},
          {}, 1e-5);
}

inline void optimizerSteps(const KernelCompare &compare) {
  std::mt19937 random(4);
  runtime::KernelContext third;
  third.step = 3;
  const KernelTensor p = f32({1000}, random);
  compare("adamw", {{"lr", 1e-2}},
          {p, f32({1000}, random), f32({1000}, random, -0.1f, 0.1f), f32({1000}, random, 0, 0.1f)}, {p}, third, 1e-5);
  compare("sgd", {{"lr", 0.1}, {"momentum", 0.9}}, {p, f32({1000}, random), f32({1000}, random)}, {p}, third, 1e-5);
}

inline void layout(const KernelCompare &compare) {
  std::mt19937 random(6);
  compare("reshape", {}, {f32({4, 6}, random)}, {zeros({2, 12})}, {}, 1e-5);
  compare("transpose", {{"dim0", int64_t{1}}, {"dim1", int64_t{2}}}, {f32({2, 3, 4}, random)}, {zeros({2, 4, 3})}, {},
          1e-5);
  compare("transpose", {{"dim0", int64_t{0}}, {"dim1", int64_t{2}}}, {f32({2, 3, 4}, random)}, {zeros({4, 3, 2})}, {},
          1e-5);
  compare("unbind", {{"dim", int64_t{1}}}, {f32({2, 3, 4}, random)}, {zeros({2, 4}), zeros({2, 4}), zeros({2, 4})}, {},
          1e-5);
  compare("split", {{"dim", int64_t{2}}}, {f32({2, 3, 5}, random)}, {zeros({2, 3, 2}), zeros({2, 3, 3})}, {}, 1e-5);
  compare("concat", {{"dim", int64_t{0}}}, {f32({2, 3}, random), f32({1, 3}, random)}, {zeros({3, 3})}, {}, 1e-5);
  compare("slice", {{"dim", int64_t{1}}, {"start", int64_t{2}}}, {f32({3, 7}, random)}, {zeros({3, 4})}, {}, 1e-5);
  compare("pad", {{"dim", int64_t{0}}, {"before", int64_t{1}}}, {f32({2, 3}, random)}, {zeros({5, 3})}, {}, 1e-5);
  const ir::AttrMap overRows{{"dims", std::vector<ir::SymExpr>{ir::SymExpr(int64_t{0}), ir::SymExpr(int64_t{1})}}};
  compare("sum", overRows, {f32({4, 5, 6}, random)}, {zeros({6})}, {}, 1e-5);
  const ir::AttrMap middle{{"dims", std::vector<ir::SymExpr>{ir::SymExpr(int64_t{1})}}};
  compare("mean", middle, {f32({4, 5, 6}, random)}, {zeros({4, 6})}, {}, 1e-5);
}

} // namespace kernelcases

/// An attention kernel's case: q [B, S, H, D], k [B, T, Hk, D], v [B, T, Hk, Dv], and the mask.
struct AttentionCase {
  std::string name;
  int64_t B, S, T, H, Hk, D, Dv;
  bool causal;
  int64_t queryOffset, keyOffset;
  std::vector<int32_t> starts; // documents: [B, seq] block starts; empty: none
  int64_t seq = 0;
  unsigned blocks = 3; // of a launch, fewer than its items: the grid-stride loops take the rest
};

/// The masks every attention kernel is tried on, with heads of D values: causal in one tile, not
/// causal, context-parallel pieces (query offsets; key offsets, whose first rows see no key), and
/// documents (a batch of 2 rows x 80 tokens: row 0 split at 30 and 61, row 1 one document), whole
/// and in a piece.
inline std::vector<AttentionCase> attentionMasks(int64_t D) {
  std::vector<int32_t> starts(160);
  for (int32_t i = 0; i < 80; ++i)
    starts[static_cast<size_t>(i)] = i < 30 ? 0 : i < 61 ? 30 : 61;
  return {
      {"causal, one tile", 1, 16, 16, 2, 2, D, D, true, 0, 0, {}},
      {"not causal", 1, 45, 45, 2, 1, D, D, false, 0, 0, {}},
      {"piece, query offset", 2, 40, 80, 2, 2, D, D, true, 40, 0, {}},
      {"piece, key offset", 1, 64, 32, 2, 2, D, D, true, 0, 20, {}},
      {"documents", 2, 80, 80, 2, 1, D, D, true, 0, 0, starts, 80},
      {"documents, piece", 2, 40, 40, 2, 1, D, D, true, 40, 40, starts, 80},
  };
}

} // namespace hspmd::testing
