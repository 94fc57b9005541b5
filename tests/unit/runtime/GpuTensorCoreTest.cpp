// The tensor-core kernels on CPU threads (runtime/gpu/Emulation.h): warpProduct, the warp's
// 16 x 16 tile product (wmma on a GPU), against a product in double in each layout, and its
// alignment rules; attention's forward pass on bf16 tensors (TensorCoreAttention.cuh) against
// the CPU kernel on the same values, and the dispatch's choice of it.
#include "runtime/Bf16.h"
#include "runtime/Kernels.h"
#include "runtime/gpu/AttentionKernels.cuh"
#include "runtime/gpu/TensorCoreAttention.cuh"
#include "tests/unit/support/KernelCases.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace hspmd;
namespace gpu = runtime::gpu;

namespace {

// One warp's product of a 16 x k by a k x 16 matrix, each stored as its layout says.
template <bool aColumns, bool bColumns>
HSPMD_KERNEL void productKernel(const uint16_t *a, int lda, const uint16_t *b, int ldb, float *c, int ldc, int k,
                                bool accumulate) {
  gpu::warpProduct<aColumns, bColumns>(a, lda, b, ldb, c, ldc, k, accumulate);
}

// 32-byte aligned storage of `count` elements (the GPU's shared memory is).
template <typename T> struct Aligned {
  explicit Aligned(size_t count) : data(static_cast<T *>(std::aligned_alloc(64, (count * sizeof(T) + 63) / 64 * 64))) {
    std::fill_n(data, count, T{});
  }
  ~Aligned() { std::free(data); }
  Aligned(const Aligned &) = delete;
  Aligned &operator=(const Aligned &) = delete;
  T *data;
};

template <bool aColumns, bool bColumns> void checkProduct(int k, bool accumulate) {
  SCOPED_TRACE("a " + std::string(aColumns ? "column" : "row") + "-major, b " + (bColumns ? "column" : "row") +
               "-major, k " + std::to_string(k) + (accumulate ? ", accumulating" : ""));
  std::mt19937 random(static_cast<unsigned>(k * 4 + aColumns * 2 + bColumns));
  std::uniform_real_distribution<float> values(-2, 2);
  const int lda = (aColumns ? 16 : k) + 8, ldb = (bColumns ? k : 16) + 8, ldc = 16 + 4;
  Aligned<uint16_t> a(static_cast<size_t>(lda) * (aColumns ? k : 16)),
      b(static_cast<size_t>(ldb) * (bColumns ? 16 : k));
  Aligned<float> c(static_cast<size_t>(ldc) * 16);
  auto at = [](int row, int col, int ld, bool columns) { return columns ? row + col * ld : row * ld + col; };
  std::vector<double> want(16 * 16, 0.0);
  for (int r = 0; r < 16; ++r)
    for (int col = 0; col < 16; ++col) {
      c.data[r * ldc + col] = values(random);
      want[r * 16 + col] = accumulate ? c.data[r * ldc + col] : 0.0;
    }
  for (int r = 0; r < 16; ++r)
    for (int i = 0; i < k; ++i)
      a.data[at(r, i, lda, aColumns)] = runtime::toBf16(values(random));
  for (int i = 0; i < k; ++i)
    for (int col = 0; col < 16; ++col)
      b.data[at(i, col, ldb, bColumns)] = runtime::toBf16(values(random));
  for (int r = 0; r < 16; ++r)
    for (int col = 0; col < 16; ++col)
      for (int i = 0; i < k; ++i)
        want[r * 16 + col] += static_cast<double>(runtime::fromBf16(a.data[at(r, i, lda, aColumns)])) *
                              runtime::fromBf16(b.data[at(i, col, ldb, bColumns)]);
  gpu::emulation::launch(1, 32, 0, productKernel<aColumns, bColumns>, static_cast<const uint16_t *>(a.data), lda,
                         static_cast<const uint16_t *>(b.data), ldb, c.data, ldc, k, accumulate);
  for (int r = 0; r < 16; ++r)
    for (int col = 0; col < 16; ++col) // f32 sums of k exact products of numbers below 4
      ASSERT_NEAR(c.data[r * ldc + col], want[r * 16 + col], 1e-6 * 4 * k) << "row " << r << ", column " << col;
}

} // namespace

TEST(WarpProduct, MatchesAProductInEveryLayout) {
  for (int k : {16, 48})
    for (bool accumulate : {false, true}) {
      checkProduct<false, false>(k, accumulate);
      checkProduct<false, true>(k, accumulate);
      checkProduct<true, false>(k, accumulate);
      checkProduct<true, true>(k, accumulate);
    }
}

// What wmma's loads would refuse on a GPU (or load wrongly) stops the emulation with the rule.
TEST(WarpProductDeathTest, RefusesWhatWmmaRefuses) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Aligned<uint16_t> a(16 * 40), b(16 * 40);
  Aligned<float> c(16 * 20);
  auto run = [&](const uint16_t *left, int lda, int ldc, int k) {
    gpu::emulation::launch(1, 32, 0, productKernel<false, false>, left, lda, static_cast<const uint16_t *>(b.data), 24,
                           c.data, ldc, k, false);
  };
  EXPECT_DEATH(run(a.data + 1, 24, 20, 16), "warpProduct: pointers must be 32-byte aligned");
  EXPECT_DEATH(run(a.data, 20, 20, 16), "warpProduct: lda and ldb must be multiples of 8 elements, ldc of 4");
  EXPECT_DEATH(run(a.data, 24, 18, 16), "warpProduct: lda and ldb must be multiples of 8 elements, ldc of 4");
  EXPECT_DEATH(run(a.data, 24, 20, 24), "warpProduct: k must be a positive multiple of 16");
}

namespace {

using Case = hspmd::testing::AttentionCase;

struct Bf16Tensor {
  std::vector<uint16_t> bits;
  std::vector<float> widened; // the same values in f32
  std::vector<int64_t> shape;
  runtime::TensorView view() { return {bits.data(), ir::DType::BF16, shape}; }
};

Bf16Tensor bf16Random(std::vector<int64_t> shape, std::mt19937 &random) {
  std::uniform_real_distribution<float> values(-2, 2);
  Bf16Tensor t;
  t.shape = std::move(shape);
  int64_t count = 1;
  for (int64_t d : t.shape)
    count *= d;
  for (int64_t i = 0; i < count; ++i) {
    t.bits.push_back(runtime::toBf16(values(random)));
    t.widened.push_back(runtime::fromBf16(t.bits.back()));
  }
  return t;
}

Bf16Tensor bf16Filled(std::vector<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  return {std::vector<uint16_t>(static_cast<size_t>(count), runtime::toBf16(-7.0f)), {}, std::move(shape)};
}

// Each element of `got` (bf16) within `bound` times the largest of `want` (at least 1) of it.
void expectNear(const Bf16Tensor &got, const std::vector<float> &want, double bound, const char *what) {
  float largest = 1;
  for (float w : want)
    largest = std::max(largest, std::fabs(w));
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const float g = runtime::fromBf16(got.bits[i]);
    ASSERT_NEAR(g, want[i], bound * largest) << what << " element " << i;
    worst = std::max(worst, std::fabs(static_cast<double>(g) - want[i]) / largest);
  }
  std::printf("  %s: largest difference %.2e of the largest value, %.3g\n", what, worst, largest);
}

// The tensor-core kernels (through attentionKernel, as the kernel table runs them, on the case's
// few blocks: the grid-stride loops take the rest) against the CPU kernel on the widened values, relative
// to each tensor's largest value. Forward: P is rounded to bf16 before its product with V (a
// relative error of 2^-9 each, under 2^-9 of V's largest value in all) and Y to bf16 (2^-9 of
// Y): 8e-3 of V's largest, 2 here. Backward: P and dS are rounded for their products, and each
// gradient on its way out; 1e-2 (3.9e-3 at most seen).
void check(const Case &c) {
  SCOPED_TRACE(c.name);
  std::printf("%s\n", c.name.c_str());
  std::mt19937 random(17);
  Bf16Tensor q = bf16Random({c.B, c.S, c.H, c.D}, random), k = bf16Random({c.B, c.T, c.Hk, c.D}, random),
             v = bf16Random({c.B, c.T, c.Hk, c.Dv}, random), dy = bf16Random({c.B, c.S, c.H, c.Dv}, random);
  Bf16Tensor y = bf16Filled({c.B, c.S, c.H, c.Dv}), dq = bf16Filled(q.shape), dk = bf16Filled(k.shape),
             dv = bf16Filled(v.shape);
  ir::AttrMap attrs{{"causal", c.causal}, {"query_offset", c.queryOffset}, {"key_offset", c.keyOffset}};
  runtime::KernelContext context;
  if (!c.starts.empty()) {
    context.blockStarts = c.starts.data();
    context.seq = c.seq;
  }
  std::vector<float> wantY(y.bits.size()), wantDq(q.bits.size()), wantDk(k.bits.size()), wantDv(v.bits.size());
  auto f32 = [](std::vector<float> &data, const std::vector<int64_t> &shape) {
    return runtime::TensorView{data.data(), ir::DType::F32, shape};
  };
  const std::vector<runtime::TensorView> cpuIn{f32(q.widened, q.shape), f32(k.widened, k.shape),
                                               f32(v.widened, v.shape), f32(dy.widened, dy.shape)},
      cpuY{f32(wantY, y.shape)}, cpuGrads{f32(wantDq, q.shape), f32(wantDk, k.shape), f32(wantDv, v.shape)};
  runtime::runKernel("attention", attrs, {cpuIn.data(), 3}, cpuY, context);
  runtime::runKernel("attention_grad", attrs, cpuIn, cpuGrads, context);
  const std::vector<runtime::TensorView> in{q.view(), k.view(), v.view(), dy.view()}, out{y.view()},
      grads{dq.view(), dk.view(), dv.view()};
  const gpu::In forwardIn{in.data(), 3};
  ASSERT_TRUE(gpu::tensorAttentionTakes("attention", forwardIn, out, false));
  ASSERT_TRUE(gpu::tensorAttentionTakes("attention_grad", in, grads, false));
  const gpu::emulation::BlockCap cap(c.blocks);
  ASSERT_TRUE(gpu::attentionKernel("attention", attrs, forwardIn, out, context, nullptr, false));
  ASSERT_TRUE(gpu::attentionKernel("attention_grad", attrs, in, grads, context, nullptr, false));
  expectNear(y, wantY, 8e-3, "y");
  expectNear(dq, wantDq, 1e-2, "dq");
  expectNear(dk, wantDk, 1e-2, "dk");
  expectNear(dv, wantDv, 1e-2, "dv");
}

} // namespace

TEST(TensorCoreAttention, MatchesTheCpuKernelInBf16) {
  std::vector<Case> cases = hspmd::testing::attentionMasks(16);
  // Rows and keys past a tile (two tiles of 64 and 6 more), GQA (4 query heads on 2 KV heads),
  // D != Dv.
  cases.push_back({"causal, GQA, 134 rows", 2, 134, 134, 4, 2, 16, 32, true, 0, 0, {}});
  cases.push_back({"not causal, D 32", 1, 45, 45, 2, 1, 32, 16, false, 0, 0, {}});
  // Only the second half of a tile of 64 rows sees the keys (the keys kernel must not skip it).
  cases.push_back({"piece, later keys", 1, 64, 32, 2, 2, 16, 16, true, 0, 40, {}});
  // The largest heads the kernel takes, keys over several tiles.
  cases.push_back({"heads of 128", 1, 150, 150, 2, 1, 128, 128, true, 0, 0, {}});
  for (const Case &c : cases)
    check(c);
}

// Tensors whose rows do not start 16-byte aligned (here one element into their buffers) are read
// an element at a time instead of 8: the same results, bit for bit.
TEST(TensorCoreAttention, ReadsRowsNotAlignedForVectorsAsAlignedOnes) {
  std::mt19937 random(19);
  const std::vector<int64_t> shape{2, 70, 2, 16};
  std::vector<Bf16Tensor> aligned;
  for (int t = 0; t < 4; ++t) // q, k, v, dy
    aligned.push_back(bf16Random(shape, random));
  const ir::AttrMap attrs{{"causal", true}};
  // Runs forward and backward on the four tensors `shift` elements into buffers of their own; Y,
  // dQ, dK and dV.
  auto run = [&](size_t shift) {
    std::vector<std::vector<uint16_t>> buffers;
    for (const Bf16Tensor &t : aligned) {
      buffers.emplace_back(shift, uint16_t{0});
      buffers.back().insert(buffers.back().end(), t.bits.begin(), t.bits.end());
    }
    std::vector<runtime::TensorView> in;
    for (auto &buffer : buffers)
      in.push_back({buffer.data() + shift, ir::DType::BF16, shape});
    std::vector<Bf16Tensor> outs(4, bf16Filled(shape));
    const std::vector<runtime::TensorView> y{outs[0].view()}, grads{outs[1].view(), outs[2].view(), outs[3].view()};
    EXPECT_EQ(reinterpret_cast<uintptr_t>(in[0].data) % 16 == 0, shift == 0);
    EXPECT_TRUE(gpu::attentionKernel("attention", attrs, {in.data(), 3}, y, {}, nullptr, false));
    EXPECT_TRUE(gpu::attentionKernel("attention_grad", attrs, in, grads, {}, nullptr, false));
    std::vector<std::vector<uint16_t>> bits;
    for (const Bf16Tensor &t : outs)
      bits.push_back(t.bits);
    return bits;
  };
  EXPECT_EQ(run(1), run(0));
}

// The dispatch takes bf16 attention as it is where the kernels do (heads of multiples of 16 up
// to 128, every tensor bf16, neither the row kernels nor the f32 tiles asked for), forward and
// backward, else it widens.
TEST(TensorCoreAttention, TakesBf16WhereItHoldsTheHeads) {
  std::mt19937 random(3);
  auto make = [&](int64_t D, int64_t Dv) { // q, k, v, dy; y; dq, dk, dv
    return std::vector<Bf16Tensor>{bf16Random({1, 4, 2, D}, random),  bf16Random({1, 4, 2, D}, random),
                                   bf16Random({1, 4, 2, Dv}, random), bf16Random({1, 4, 2, Dv}, random),
                                   bf16Random({1, 4, 2, Dv}, random), bf16Random({1, 4, 2, D}, random),
                                   bf16Random({1, 4, 2, D}, random),  bf16Random({1, 4, 2, Dv}, random)};
  };
  auto takes = [](std::vector<Bf16Tensor> &t, bool backward = false, bool others = false) {
    const std::vector<runtime::TensorView> in{t[0].view(), t[1].view(), t[2].view(), t[3].view()}, y{t[4].view()},
        grads{t[5].view(), t[6].view(), t[7].view()};
    return backward ? gpu::tensorAttentionTakes("attention_grad", in, grads, others)
                    : gpu::tensorAttentionTakes("attention", {in.data(), 3}, y, others);
  };
  auto heads16 = make(16, 16), heads128 = make(128, 64), heads8 = make(8, 8), heads24 = make(24, 24),
       heads256 = make(256, 256);
  for (bool backward : {false, true}) {
    SCOPED_TRACE(backward ? "backward" : "forward");
    EXPECT_TRUE(takes(heads16, backward));
    EXPECT_TRUE(takes(heads128, backward));
    EXPECT_FALSE(takes(heads16, backward, true));
    EXPECT_FALSE(takes(heads8, backward));
    EXPECT_FALSE(takes(heads24, backward));
    EXPECT_FALSE(takes(heads256, backward));
  }
  // Any tensor in f32 (here k, or dK): widened.
  std::vector<float> f32(16 * 8);
  const runtime::TensorView wide{f32.data(), ir::DType::F32, {1, 4, 2, 16}};
  const std::vector<runtime::TensorView> mixed{heads16[0].view(), wide, heads16[2].view(), heads16[3].view()},
      in{heads16[0].view(), heads16[1].view(), heads16[2].view(), heads16[3].view()}, y{heads16[4].view()},
      grads{heads16[5].view(), wide, heads16[7].view()};
  EXPECT_FALSE(gpu::tensorAttentionTakes("attention", {mixed.data(), 3}, y, false));
  EXPECT_FALSE(gpu::tensorAttentionTakes("attention_grad", in, grads, false));
  EXPECT_FALSE(gpu::tensorAttentionTakes("softmax", {in.data(), 1}, y, false));
}

// The kernels ask the GPU for what they need: on an A100 (163 KiB of shared memory a block), heads
// of 128 run forward on tensor cores (110.5 KiB) but backward on widened copies (the keys kernel
// needs 178.5 KiB), heads of 64 both ways; a GPU without bf16 tensor cores (compute capability 7)
// takes none, and refuses a kernel more shared memory than it has.
TEST(TensorCoreAttention, AsksTheGpuForWhatItNeeds) {
  std::mt19937 random(5);
  auto takes = [&](int64_t D, bool backward) {
    std::vector<Bf16Tensor> t;
    for (int i = 0; i < 4; ++i)
      t.push_back(bf16Random({1, 4, 2, D}, random));
    std::vector<Bf16Tensor> outs(3, bf16Filled({1, 4, 2, D}));
    const std::vector<runtime::TensorView> in{t[0].view(), t[1].view(), t[2].view(), t[3].view()},
        grads{outs[0].view(), outs[1].view(), outs[2].view()};
    return backward ? gpu::tensorAttentionTakes("attention_grad", in, grads, false)
                    : gpu::tensorAttentionTakes("attention", {in.data(), 3}, {grads.data(), 1}, false);
  };
  const gpu::emulation::DeviceProperties h100 = gpu::emulation::device;
  EXPECT_TRUE(takes(128, false) && takes(128, true));
  // Heads of 128: forward Q, K, V tiles of 64 rows of 136 bf16 (17,408 bytes each), 4 warps' scores
  // (64 rows of 68 floats, 17,408), P (64 of 72 bf16, 9,216), O (64 of 132 floats, 33,792) and 512
  // bytes of exchange: 113,152. The keys kernel: K, V, Q, dY (4 x 17,408), S^T and dP^T (2 x
  // 17,408), P^T (9,216), dK and dV (2 x 33,792), rows' statistics (512) and bounds (1,024):
  // 182,784, more than the rows kernel's 147,968.
  EXPECT_EQ(gpu::tensor::forwardSharedBytes(128, 128), 113152u);
  EXPECT_EQ(gpu::tensor::backwardSharedBytes(128, 128), 182784u);
  gpu::emulation::device = {8, 163 * 1024};
  EXPECT_TRUE(takes(128, false));
  EXPECT_FALSE(takes(128, true));
  EXPECT_TRUE(takes(64, false) && takes(64, true));
  EXPECT_EQ(gpu::cudaFuncSetAttribute(nullptr, gpu::cudaFuncAttributeMaxDynamicSharedMemorySize, 164 * 1024),
            gpu::cudaErrorInvalidValue);
  gpu::emulation::device = {7, 96 * 1024};
  EXPECT_FALSE(takes(16, false));
  EXPECT_FALSE(takes(16, true));
  gpu::emulation::device = h100;
}
