// GPU kernels written as headers (runtime/gpu/*.cuh), compiled for the host and run on CPU
// threads (runtime/gpu/Emulation.h) against the CPU kernels: any machine, CI included. On a GPU,
// GpuKernels.* runs them for real.
//
// - The tiled attention kernels (TiledAttention.cuh), within 1e-5 relative (GpuKernels.Attention's
//   bound on a GPU).
// - The elementwise kernels (ElementwiseKernels.cuh) on f32 and bf16 tensors in every mix: on bf16
//   tensors bit for bit what the f32 kernel on widened copies, rounded, writes (what runKernel ran
//   before they took bf16), and near the CPU's kernels.
// - Every op of KernelTable.cuh (every op but the products), through the table runKernel uses,
//   with GpuKernels.*'s cases and bound (1e-5 relative); attention in tiles and in the row kernels.
// - The products (MatmulKernels.cuh) on a reference GEMM with cuBLAS's conventions (column-major,
//   leading dimensions) in place of cuBLAS, f32 and bf16.
#include "runtime/Bf16.h"
#include "runtime/Kernels.h"
#include "runtime/Regions.h"
#include "runtime/gpu/ElementwiseKernels.cuh"
#include "runtime/gpu/GpuKernels.h"
#include "runtime/gpu/KernelTable.cuh"
#include "runtime/gpu/MatmulKernels.cuh"
#include "runtime/gpu/TiledAttention.cuh"
#include "tests/unit/support/EmulatedKernelTable.h"
#include "tests/unit/support/GpuFaults.h"
#include "tests/unit/support/Heavy.h"
#include "tests/unit/support/KernelCases.h"
#include "tests/unit/support/ReferenceGemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

using namespace hspmd;
namespace tiled = runtime::gpu::tiled;
namespace gpu = runtime::gpu;

namespace {

using Case = hspmd::testing::AttentionCase;

std::vector<float> randoms(size_t count, std::mt19937 &random) {
  std::uniform_real_distribution<float> values(-2, 2);
  std::vector<float> out(count);
  for (float &x : out)
    x = values(random);
  return out;
}

void expectNear(const std::vector<float> &got, const std::vector<float> &want, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5 * std::max(1.0f, std::fabs(want[i]))) << what << " element " << i;
}

void check(const Case &c) {
  SCOPED_TRACE(c.name);
  std::mt19937 random(11);
  const auto q = randoms(static_cast<size_t>(c.B * c.S * c.H * c.D), random);
  const auto k = randoms(static_cast<size_t>(c.B * c.T * c.Hk * c.D), random);
  const auto v = randoms(static_cast<size_t>(c.B * c.T * c.Hk * c.Dv), random);
  const auto dy = randoms(static_cast<size_t>(c.B * c.S * c.H * c.Dv), random);
  ir::AttrMap attrs{{"causal", c.causal}, {"query_offset", c.queryOffset}, {"key_offset", c.keyOffset}};
  runtime::KernelContext context;
  if (!c.starts.empty()) {
    context.blockStarts = c.starts.data();
    context.seq = c.seq;
  }
  auto view = [](const std::vector<float> &data, std::vector<int64_t> shape) {
    return runtime::TensorView{const_cast<float *>(data.data()), ir::DType::F32, std::move(shape)};
  };
  const std::vector<int64_t> qShape{c.B, c.S, c.H, c.D}, kShape{c.B, c.T, c.Hk, c.D}, vShape{c.B, c.T, c.Hk, c.Dv},
      yShape{c.B, c.S, c.H, c.Dv};
  std::vector<float> y(dy.size()), dq(q.size()), dk(k.size()), dv(v.size());
  const std::vector<runtime::TensorView> forwardIn{view(q, qShape), view(k, kShape), view(v, vShape)},
      forwardOut{view(y, yShape)}, backwardIn{view(q, qShape), view(k, kShape), view(v, vShape), view(dy, yShape)},
      backwardOut{view(dq, qShape), view(dk, kShape), view(dv, vShape)};
  runtime::runKernel("attention", attrs, forwardIn, forwardOut, context);
  runtime::runKernel("attention_grad", attrs, backwardIn, backwardOut, context);

  const runtime::gpu::AttentionDims n{c.B,
                                      c.S,
                                      c.T,
                                      c.H,
                                      c.Hk,
                                      c.D,
                                      c.Dv,
                                      c.H / c.Hk,
                                      static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.D))),
                                      c.causal,
                                      c.queryOffset,
                                      c.keyOffset,
                                      c.seq,
                                      c.starts.empty() ? nullptr : c.starts.data()};
  ASSERT_TRUE(tiled::takes(c.D, c.Dv));
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(c.blocks, tiled::items(n)));
  std::vector<float> gy(y.size(), -7.0f), gdq(q.size(), -7.0f), gdk(k.size(), 0.0f), gdv(v.size(), 0.0f);
  runtime::gpu::emulation::launch(blocks, tiled::kThreads, tiled::forwardSharedBytes(c.D, c.Dv),
                                  tiled::attentionForward, n, q.data(), k.data(), v.data(), gy.data());
  expectNear(gy, y, "y");
  runtime::gpu::emulation::launch(blocks, tiled::kThreads, tiled::backwardSharedBytes(c.D, c.Dv),
                                  tiled::attentionBackward, n, q.data(), k.data(), v.data(), dy.data(), gdq.data(),
                                  gdk.data(), gdv.data());
  expectNear(gdq, dq, "dq");
  expectNear(gdk, dk, "dk");
  expectNear(gdv, dv, "dv");
}

} // namespace

TEST(TiledAttention, MatchesTheCpuKernel) {
  HSPMD_SKIP_IF_HEAVY_RUNS_ARE_OFF(); // 22 s under the sanitizers; KernelTable.AttentionInTilesAndInRows runs there
  std::vector<Case> cases = hspmd::testing::attentionMasks(8);
  // Rows and keys past a tile, GQA (4 query heads on 2 KV heads), D != Dv.
  cases.push_back({"causal, GQA, 70 rows", 2, 70, 70, 4, 2, 16, 12, true, 0, 0, {}});
  // The largest heads the tiled kernels take.
  cases.push_back({"heads of 128", 1, 40, 40, 1, 1, 128, 128, true, 0, 0, {}, 0, 2});
  // GpuKernels.Attention's largest tiled case: 10 key tiles, 4 heads adding to each KV head.
  cases.push_back({"GpuKernels.Attention's", 2, 150, 300, 4, 2, 128, 128, true, 150, 0, {}, 0, 3});
  for (const Case &c : cases)
    check(c);
}

// The row kernels stay for heads larger than kMaxHead (AttentionKernels.cuh).
TEST(TiledAttention, TakesHeadsUpTo128) {
  EXPECT_TRUE(tiled::takes(64, 64));
  EXPECT_TRUE(tiled::takes(128, 128));
  EXPECT_FALSE(tiled::takes(160, 128));
  EXPECT_FALSE(tiled::takes(128, 256));
  EXPECT_FALSE(tiled::takes(0, 8));
}

namespace {

// A tensor of either storage type, from float values (rounded where bf16).
struct Stored {
  ir::DType dtype;
  std::vector<int64_t> shape;
  std::vector<float> f32;
  std::vector<uint16_t> bf16;
  Stored(ir::DType type, std::vector<int64_t> dims, const std::vector<float> &values) : dtype(type), shape(dims) {
    if (dtype == ir::DType::BF16)
      for (float x : values)
        bf16.push_back(runtime::toBf16(x));
    else
      f32 = values;
  }
  void *data() { return dtype == ir::DType::BF16 ? static_cast<void *>(bf16.data()) : f32.data(); }
  runtime::TensorView view() { return runtime::TensorView{data(), dtype, shape}; }
  std::vector<float> widened() const {
    if (dtype != ir::DType::BF16)
      return f32;
    std::vector<float> out;
    for (uint16_t x : bf16)
      out.push_back(runtime::fromBf16(x));
    return out;
  }
  // The bits of each element (exact comparisons, NaNs included).
  std::vector<uint32_t> bits() const {
    std::vector<uint32_t> out;
    if (dtype == ir::DType::BF16)
      for (uint16_t x : bf16)
        out.push_back(x);
    else
      for (float x : f32) {
        uint32_t b;
        std::memcpy(&b, &x, 4);
        out.push_back(b);
      }
    return out;
  }
};

// The f32 result rounded as a Y tensor stores it.
std::vector<uint32_t> storedBits(ir::DType dtype, const std::vector<float> &values) {
  return Stored(dtype, {static_cast<int64_t>(values.size())}, values).bits();
}

template <typename Call> void withType(ir::DType dtype, const Call &call) {
  if (dtype == ir::DType::BF16)
    call(static_cast<gpu::Bf16Bits *>(nullptr));
  else
    call(static_cast<float *>(nullptr));
}

template <typename T> using Element = std::remove_pointer_t<T>;

constexpr unsigned kBlocks = 2, kThreads = 32; // fewer threads than elements: the grid-stride loop

template <typename F> void checkBinary(const std::string &op, F f, std::mt19937 &random) {
  const std::vector<int64_t> aShape{4, 33}, bShape{33};
  const std::vector<float> av = randoms(4 * 33, random), bv = randoms(33, random);
  for (ir::DType ta : {ir::DType::F32, ir::DType::BF16})
    for (ir::DType tb : {ir::DType::F32, ir::DType::BF16})
      for (ir::DType ty : {ir::DType::F32, ir::DType::BF16}) {
        SCOPED_TRACE(op + " " + std::string(ir::dtypeName(ta)) + ", " + std::string(ir::dtypeName(tb)) + " -> " +
                     std::string(ir::dtypeName(ty)));
        Stored a(ta, aShape, av), b(tb, bShape, bv), y(ty, aShape, std::vector<float>(4 * 33, -7.0f));
        const gpu::BroadcastStrides s = gpu::broadcastStrides(aShape, bShape, aShape);
        withType(ta, [&](auto *pa) {
          withType(tb, [&](auto *pb) {
            withType(ty, [&](auto *py) {
              gpu::emulation::launch(
                  kBlocks, kThreads, 0,
                  gpu::binaryKernel<Element<decltype(pa)>, Element<decltype(pb)>, Element<decltype(py)>, F>,
                  static_cast<const Element<decltype(pa)> *>(a.data()),
                  static_cast<const Element<decltype(pb)> *>(b.data()), static_cast<Element<decltype(py)> *>(y.data()),
                  int64_t{4 * 33}, s, f);
            });
          });
        });
        // The f32 kernel on widened copies, its result rounded.
        std::vector<float> wa = a.widened(), wb = b.widened(), wide(4 * 33);
        gpu::emulation::launch(kBlocks, kThreads, 0, gpu::binaryKernel<float, float, float, F>,
                               static_cast<const float *>(wa.data()), static_cast<const float *>(wb.data()),
                               wide.data(), int64_t{4 * 33}, s, f);
        EXPECT_EQ(y.bits(), storedBits(ty, wide));
        // The CPU's kernel on the same tensors.
        Stored want(ty, aShape, std::vector<float>(4 * 33, 0.0f));
        const std::vector<runtime::TensorView> in = op == "broadcast"
                                                        ? std::vector<runtime::TensorView>{b.view()}
                                                        : std::vector<runtime::TensorView>{a.view(), b.view()};
        if (op == "broadcast")
          continue; // broadcast's operand is b alone here: checked against First below
        const std::vector<runtime::TensorView> out{want.view()};
        runtime::runKernel(op, {}, in, out);
        const std::vector<float> got = y.widened(), expected = want.widened();
        const double bound = ty == ir::DType::BF16 ? 1e-2 : 1e-5;
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], expected[i], bound * std::max(1.0f, std::fabs(expected[i]))) << "element " << i;
      }
}

template <typename F> void checkUnary(const std::string &op, F f, std::mt19937 &random) {
  const std::vector<float> xv = randoms(5 * 7, random);
  for (ir::DType tx : {ir::DType::F32, ir::DType::BF16})
    for (ir::DType ty : {ir::DType::F32, ir::DType::BF16}) {
      SCOPED_TRACE(op + " " + std::string(ir::dtypeName(tx)) + " -> " + std::string(ir::dtypeName(ty)));
      Stored x(tx, {5, 7}, xv), y(ty, {5, 7}, std::vector<float>(35, -7.0f));
      withType(tx, [&](auto *px) {
        withType(ty, [&](auto *py) {
          gpu::emulation::launch(kBlocks, kThreads, 0,
                                 gpu::unaryKernel<Element<decltype(px)>, Element<decltype(py)>, F>,
                                 static_cast<const Element<decltype(px)> *>(x.data()),
                                 static_cast<Element<decltype(py)> *>(y.data()), int64_t{35}, f);
        });
      });
      std::vector<float> wx = x.widened(), wide(35);
      gpu::emulation::launch(kBlocks, kThreads, 0, gpu::unaryKernel<float, float, F>,
                             static_cast<const float *>(wx.data()), wide.data(), int64_t{35}, f);
      EXPECT_EQ(y.bits(), storedBits(ty, wide));
      Stored want(ty, {5, 7}, std::vector<float>(35, 0.0f));
      const std::vector<runtime::TensorView> in{x.view()}, out{want.view()};
      runtime::runKernel(op, {}, in, out);
      const std::vector<float> got = y.widened(), expected = want.widened();
      const double bound = ty == ir::DType::BF16 ? 1e-2 : 1e-5;
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], expected[i], bound * std::max(1.0f, std::fabs(expected[i]))) << "element " << i;
    }
}

} // namespace

TEST(ElementwiseKernels, TakeBf16AsTheWidenedKernelsDo) {
  std::mt19937 random(5);
  checkBinary("add", gpu::Add{}, random);
  checkBinary("sub", gpu::Sub{}, random);
  checkBinary("mul", gpu::Mul{}, random);
  checkBinary("div", gpu::Div{}, random);
  checkBinary("gelu_grad", gpu::GeluGrad{}, random);
  checkBinary("silu_grad", gpu::SiluGrad{}, random);
  checkBinary("relu_grad", gpu::ReluGrad{}, random);
  checkBinary("broadcast", gpu::First{}, random);
  checkUnary("neg", gpu::Neg{}, random);
  checkUnary("gelu", gpu::Gelu{}, random);
  checkUnary("silu", gpu::Silu{}, random);
  checkUnary("relu", gpu::Relu{}, random);
  // constant: the value rounded as the CPU rounds it.
  std::vector<uint16_t> filled(40, 0);
  gpu::emulation::launch(kBlocks, kThreads, 0, gpu::fillKernel<gpu::Bf16Bits>,
                         reinterpret_cast<gpu::Bf16Bits *>(filled.data()), int64_t{40}, 0.3f);
  EXPECT_EQ(filled, std::vector<uint16_t>(40, runtime::toBf16(0.3f)));
}

// The kernels' rounding to bf16 is runtime/Bf16.h's (ties to even, NaNs quiet), bit for bit.
TEST(ElementwiseKernels, RoundToBf16AsTheCpuDoes) {
  std::vector<uint32_t> patterns = {0x00000000u, 0x80000000u, 0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x7f7fffffu,
                                    0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffbfffffu, 0x00008000u};
  std::mt19937 random(3);
  for (int i = 0; i < 100000; ++i)
    patterns.push_back(static_cast<uint32_t>(random()));
  for (uint32_t bits : patterns) {
    float value;
    std::memcpy(&value, &bits, 4);
    gpu::Bf16Bits stored{};
    gpu::storeElement(&stored, value);
    ASSERT_EQ(stored.bits, runtime::toBf16(value)) << std::hex << bits;
    ASSERT_EQ(gpu::bitsOfFloat(gpu::loadElement(stored)), static_cast<uint32_t>(stored.bits) << 16) << std::hex << bits;
  }
}

namespace {

using Tensor = hspmd::testing::KernelTensor;
using hspmd::testing::f32;
using hspmd::testing::i32;
using hspmd::testing::views;
using hspmd::testing::zeros;

// `op` through the CPU's kernel and through KernelTable.cuh's on CPU threads, from the same
// tensors: every f32 output, and every f32 input (an optimizer updates its state in place),
// within 1e-5 relative.
void compareRunning(const std::string &op, const ir::AttrMap &attrs, std::vector<Tensor> inputs,
                    std::vector<Tensor> outputs, const runtime::KernelContext &context, double bound,
                    bool rowAttention) {
  SCOPED_TRACE(op);
  std::vector<Tensor> cpuIn = inputs, cpuOut = outputs, gpuIn = inputs, gpuOut = outputs;
  runtime::runKernel(op, attrs, views(cpuIn), views(cpuOut), context);
  if (rowAttention) {
    ASSERT_TRUE(gpu::attentionKernel(op, attrs, views(gpuIn), views(gpuOut), context, nullptr, true));
  } else {
    const auto runner = hspmd::testing::emulatedKernelTable().find(op);
    ASSERT_NE(runner, hspmd::testing::emulatedKernelTable().end());
    runner->second(attrs, views(gpuIn), views(gpuOut), context, nullptr);
  }
  auto check = [bound](std::vector<Tensor> &cpu, std::vector<Tensor> &emulated, const char *what) {
    for (size_t k = 0; k < cpu.size(); ++k) {
      if (cpu[k].dtype != ir::DType::F32)
        continue;
      for (int64_t i = 0; i < cpu[k].numel(); ++i) {
        const float want = cpu[k].f32()[i], got = emulated[k].f32()[i];
        ASSERT_NEAR(got, want, bound * std::max(1.0f, std::fabs(want))) << what << " " << k << " element " << i;
      }
    }
  };
  check(cpuIn, gpuIn, "input");
  check(cpuOut, gpuOut, "output");
}

void compare(const std::string &op, const ir::AttrMap &attrs, std::vector<Tensor> inputs, std::vector<Tensor> outputs,
             const runtime::KernelContext &context = {}, double bound = 1e-5) {
  compareRunning(op, attrs, std::move(inputs), std::move(outputs), context, bound, false);
}

// The same through the row attention kernels (the table takes them for heads over 128 values).
void compareRows(const std::string &op, const ir::AttrMap &attrs, std::vector<Tensor> inputs,
                 std::vector<Tensor> outputs, const runtime::KernelContext &context = {}) {
  compareRunning(op, attrs, std::move(inputs), std::move(outputs), context, 1e-5, true);
}

} // namespace

// The table has every op of the CPU's but the products (GpuKernels.EveryCpuKernelHasAGpuKernel
// checks the whole set, matmul included, where nvcc is).
TEST(KernelTable, HoldsEveryCpuOpButTheProducts) {
  std::set<std::string> expected;
  for (const std::string &name : runtime::kernelNames())
    expected.insert(name);
  expected.erase("matmul");
  std::set<std::string> table;
  for (const auto &[name, _] : hspmd::testing::emulatedKernelTable())
    table.insert(name);
  EXPECT_EQ(table, expected);
}

TEST(KernelTable, Elementwise) {
  hspmd::testing::kernelcases::elementwise(compare);
}

TEST(KernelTable, NormsAndSoftmax) {
  hspmd::testing::kernelcases::normsAndSoftmax(compare);
}

TEST(KernelTable, EmbeddingAndCrossEntropy) {
  hspmd::testing::kernelcases::embeddingAndCrossEntropy(compare);
}

// The embedding's gradient sums each table row's ids in their order: bit for bit the CPU's
// (KernelCases.h).
TEST(KernelTable, EmbeddingGradientIsTheCpusBitForBit) {
  hspmd::testing::kernelcases::embeddingGradientInOrder(compare);
}

// Its ordering step puts each row's ids in increasing order whatever order the list holds them
// in (on a GPU the list's order is the order in which the ids' threads took their places).
TEST(KernelTable, EmbeddingGradientOrdersEachRowsIds) {
  const int64_t V = 4, offset = 1;
  // ids 0..9 name rows 0, 2, 0, -, 3, 0, 2, 0, -, 3 (id 0 is outside, 5 past the piece's 4 rows)
  const std::vector<int32_t> ids{1, 3, 1, 0, 4, 1, 3, 1, 5, 4};
  const std::vector<int32_t> starts{0, 4, 4, 6, 8};        // row 0: 4 ids, row 1: none, ...
  const std::vector<int32_t> list{7, 2, 5, 0, 6, 1, 9, 4}; // each row's ids scrambled
  std::vector<int32_t> sorted(list.size(), -1);
  gpu::launchKernel(2, 3, 0, nullptr, gpu::embeddingOrderKernel, ids.data(), starts.data(), list.data(), sorted.data(),
                    V, offset);
  EXPECT_EQ(sorted, (std::vector<int32_t>{0, 2, 5, 7, 1, 6, 4, 9}));
}

// A target past the vocabulary: the GPU's kernel says so as the CPU's does.
TEST(KernelTable, CrossEntropyRejectsATargetPastTheVocabulary) {
  std::mt19937 random(8);
  std::vector<Tensor> in{f32({2, 10}, random), i32({2}, {3, 10})}, out{zeros({})};
  EXPECT_THROW(hspmd::testing::emulatedKernelTable().at("cross_entropy")({{"tokens", int64_t{2}}}, views(in),
                                                                         views(out), {}, nullptr),
               runtime::KernelError);
}

// Through runtime/gpu/GpuKernels.h's runKernel and a stream (tests/unit/support/EmulatedGpu.cpp):
// the error waits for the stream's next synchronize.
TEST(KernelTable, ABadTargetFailsAtTheStreamsNextSynchronize) {
  hspmd::testing::badTargetsFailAtTheNextSynchronize();
}

TEST(KernelTable, VocabularyParallelCrossEntropySteps) {
  hspmd::testing::kernelcases::vocabularyParallelCrossEntropy(compare);
}

TEST(KernelTable, OptimizerSteps) {
  hspmd::testing::kernelcases::optimizerSteps(compare);
}

TEST(KernelTable, Layout) {
  hspmd::testing::kernelcases::layout(compare);
}

// Boxes copied and added between buffers (the runtime's copies of a reshard's pieces): f32 adds
// in float, bf16 adds in float and rounds, as runtime::copyBox does.
TEST(KernelTable, BoxesCopyAndAddAsTheCpuDoes) {
  std::mt19937 random(10);
  const std::vector<float> from = randoms(4 * 6, random);
  for (ir::DType dtype : {ir::DType::F32, ir::DType::BF16})
    for (bool add : {false, true}) {
      SCOPED_TRACE(std::string(ir::dtypeName(dtype)) + (add ? " add" : " copy"));
      Stored src(dtype, {4, 6}, from), cpu(dtype, {5, 8}, randoms(5 * 8, random)), emulated = cpu;
      // rows 1..3, columns 2..5 of src into rows 2..4, columns 0..3 of dst
      runtime::copyBox(static_cast<int>(ir::dtypeBytes(dtype)), src.data(), {4, 6}, {1, 2}, cpu.data(), {5, 8}, {2, 0},
                       {3, 4}, add);
      gpu::stridedCopy(src.data(), emulated.data(), static_cast<int>(ir::dtypeBytes(dtype)),
                       gpu::boxCopy({4, 6}, {1, 2}, {5, 8}, {2, 0}, {3, 4}), add, nullptr);
      EXPECT_EQ(emulated.bits(), cpu.bits());
    }
}

// Attention through the table (tiled: heads of 8) and through the row kernels, which the table
// runs for heads over 128 values (and bench_gpu under HSPMD_GPU_ATTENTION=rows): GpuKernels.Attention's
// case in tiles; in rows (a block of 128 threads per query row, each a std::thread here) fewer
// rows, over more keys than a chunk of 128; and documents, both ways.
TEST(KernelTable, AttentionInTilesAndInRows) {
  std::mt19937 random(7);
  for (int64_t T : {16, 300}) {
    const int64_t S = T / 2, D = 8;
    const ir::AttrMap attrs{{"causal", true}, {"query_offset", T - S}, {"key_offset", int64_t{0}}};
    const Tensor q = f32({2, S, 4, D}, random), k = f32({2, T, 2, D}, random), v = f32({2, T, 2, D}, random);
    compare("attention", attrs, {q, k, v}, {zeros({2, S, 4, D})});
    compare("attention_grad", attrs, {q, k, v, f32({2, S, 4, D}, random)},
            {zeros({2, S, 4, D}), zeros({2, T, 2, D}), zeros({2, T, 2, D})});
  }
  {
    const ir::AttrMap attrs{{"causal", true}, {"query_offset", int64_t{130}}, {"key_offset", int64_t{0}}};
    const Tensor q = f32({1, 10, 2, 8}, random), k = f32({1, 140, 1, 8}, random), v = f32({1, 140, 1, 8}, random);
    compareRows("attention", attrs, {q, k, v}, {zeros({1, 10, 2, 8})});
    compareRows("attention_grad", attrs, {q, k, v, f32({1, 10, 2, 8}, random)},
                {zeros({1, 10, 2, 8}), zeros({1, 140, 1, 8}), zeros({1, 140, 1, 8})});
  }
  // Documents: row 0 of the batch split at 5 and 11, a piece of keys [8, 16) and queries [8, 16).
  std::vector<int32_t> starts(2 * 16);
  for (int32_t i = 0; i < 16; ++i) {
    starts[static_cast<size_t>(i)] = i < 5 ? 0 : i < 11 ? 5 : 11;
    starts[static_cast<size_t>(16 + i)] = 0;
  }
  runtime::KernelContext documents;
  documents.blockStarts = starts.data();
  documents.seq = 16;
  const ir::AttrMap piece{{"causal", true}, {"query_offset", int64_t{8}}, {"key_offset", int64_t{8}}};
  for (bool rows : {false, true}) {
    SCOPED_TRACE(rows ? "documents, row kernels" : "documents, tiles");
    const Tensor q = f32({2, 8, 2, 8}, random), k = f32({2, 8, 2, 8}, random), v = f32({2, 8, 2, 8}, random);
    compareRunning("attention", piece, {q, k, v}, {zeros({2, 8, 2, 8})}, documents, 1e-5, rows);
    compareRunning("attention_grad", piece, {q, k, v, f32({2, 8, 2, 8}, random)},
                   {zeros({2, 8, 2, 8}), zeros({2, 8, 2, 8}), zeros({2, 8, 2, 8})}, documents, 1e-5, rows);
  }
}

// A GPU that gives a block no more than the 48 KiB it gets without asking refuses the tiled
// kernels of heads of 128 (52.5 KiB forward, 72.8 KiB backward): attention falls back to the row
// kernels, with the same results; heads of 64 (28.5 and 40.8 KiB) stay in tiles.
TEST(KernelTable, AttentionFallsBackToRowsWhereTheGpuRefusesTheTiles) {
  std::mt19937 random(18);
  const gpu::emulation::DeviceProperties h100 = gpu::emulation::device;
  gpu::emulation::device = {7, 48 * 1024};
  for (int64_t D : {128, 64}) {
    SCOPED_TRACE("heads of " + std::to_string(D));
    std::vector<Tensor> in{f32({1, 20, 2, D}, random), f32({1, 20, 2, D}, random), f32({1, 20, 2, D}, random)},
        out{zeros({1, 20, 2, D})};
    const gpu::AttentionDims n{1, 20, 20, 2, 2, D, D, 1, 0.1f, true, 0, 0, 0, nullptr};
    const std::vector<runtime::TensorView> inputs = views(in), outputs = views(out);
    EXPECT_EQ(gpu::tiledLaunch(n, true, inputs[0], inputs[1], inputs[2], inputs, outputs, nullptr), D == 64);
    const ir::AttrMap causal{{"causal", true}};
    compare("attention", causal, in, out);
    compare("attention_grad", causal, {in[0], in[1], in[2], f32({1, 20, 2, D}, random)},
            {zeros({1, 20, 2, D}), zeros({1, 20, 2, D}), zeros({1, 20, 2, D})});
  }
  gpu::emulation::device = h100;
}

namespace {

// matmul on the CPU and through MatmulKernels.cuh on the reference GEMM; `bound` relative.
void compareProduct(std::vector<Tensor> inputs, Tensor output, double bound, int expectedCalls) {
  std::vector<Tensor> cpuOut{output}, gpuOut{output};
  runtime::runKernel("matmul", {}, views(inputs), views(cpuOut));
  int calls = 0;
  gpu::matmulWith(hspmd::testing::ReferenceGemm{&calls}, views(inputs), views(gpuOut), nullptr);
  EXPECT_EQ(calls, expectedCalls);
  const bool bf16 = output.dtype == ir::DType::BF16;
  const int64_t n = output.numel();
  for (int64_t i = 0; i < n; ++i) {
    float want, got;
    if (bf16) {
      want = runtime::fromBf16(reinterpret_cast<const uint16_t *>(cpuOut[0].bytes.data())[i]);
      got = runtime::fromBf16(reinterpret_cast<const uint16_t *>(gpuOut[0].bytes.data())[i]);
    } else {
      want = cpuOut[0].f32()[i];
      got = gpuOut[0].f32()[i];
    }
    ASSERT_NEAR(got, want, bound * std::max(1.0f, std::fabs(want))) << "element " << i;
  }
}

Tensor bf16Tensor(std::vector<int64_t> shape, std::mt19937 &random) {
  Tensor wide = f32(shape, random), t{ir::DType::BF16, std::move(shape), {}};
  t.bytes.resize(static_cast<size_t>(t.numel()) * 2);
  runtime::narrowToBf16(wide.f32(), t.bytes.data(), t.numel());
  return t;
}

Tensor bf16Zeros(std::vector<int64_t> shape) {
  Tensor t{ir::DType::BF16, std::move(shape), {}};
  t.bytes.assign(static_cast<size_t>(t.numel()) * 2, 0);
  return t;
}

} // namespace

// GpuKernels.MatrixProducts's cases: one matrix, a batch against one matrix, batches, a batch
// broadcast against three, and a larger one; then bf16 (GpuKernels.Bf16TensorsWidenAroundEachKernel's).
TEST(MatmulKernels, ProductsAsTheCpuMakesThem) {
  std::mt19937 random(5);
  compareProduct({f32({5, 7}, random), f32({7, 3}, random)}, zeros({5, 3}), 1e-5, 1);
  compareProduct({f32({2, 5, 7}, random), f32({7, 3}, random)}, zeros({2, 5, 3}), 1e-5, 1);
  compareProduct({f32({2, 5, 7}, random), f32({2, 7, 3}, random)}, zeros({2, 5, 3}), 1e-5, 2);
  compareProduct({f32({1, 5, 7}, random), f32({3, 7, 4}, random)}, zeros({3, 5, 4}), 1e-5, 3);
  // 256 terms a sum: float sums in another order differ by more than 1e-5 of a small result.
  compareProduct({f32({64, 256}, random), f32({256, 96}, random)}, zeros({64, 96}), 1e-4, 1);
  // bf16: an activation by an f32 parameter, which the GPU rounds to bf16 for the product where
  // the CPU multiplies by it as it is (its values are bf16 numbers here, so that the two products
  // differ only in their sums' order and roundings), a batched product of two bf16 tensors, and
  // two bf16 activations into an f32 weight gradient.
  Tensor parameter = f32({64, 48}, random);
  for (int64_t i = 0; i < parameter.numel(); ++i)
    parameter.f32()[i] = runtime::fromBf16(runtime::toBf16(parameter.f32()[i]));
  compareProduct({bf16Tensor({8, 64}, random), parameter}, bf16Zeros({8, 48}), 1e-2, 1);
  compareProduct({bf16Tensor({2, 3, 8, 64}, random), bf16Tensor({3, 64, 16}, random)}, bf16Zeros({2, 3, 8, 16}), 1e-2,
                 6);
  compareProduct({bf16Tensor({16, 32}, random), bf16Tensor({32, 24}, random)}, zeros({16, 24}), 1e-3, 1);
  // An empty inner dimension: zeros, no product.
  Tensor y = f32({2, 3}, random);
  compareProduct({zeros({2, 0}), zeros({0, 3})}, y, 0, 0);
}

namespace {

// A 2-D tensor transposed (f32 or bf16: its elements moved, not changed).
Tensor transposed(const Tensor &t) {
  const int64_t rows = t.shape[0], cols = t.shape[1], size = ir::dtypeBytes(t.dtype);
  Tensor out{t.dtype, {cols, rows}, std::vector<char>(t.bytes.size())};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(&out.bytes[static_cast<size_t>((c * rows + r) * size)],
                  &t.bytes[static_cast<size_t>((r * cols + c) * size)], static_cast<size_t>(size));
  return out;
}

} // namespace

// A fused product (GpuKernels.h's fusedMatmul: transposes folded into cuBLAS's operands, the
// GpuOffload's dX = dY W^T and weight gradients) is bit for bit the product of the operands
// transposed first (matmulWith, the same reference GEMM), in each of the four ways, in f32 and in
// bf16 (bf16 activations by an f32 parameter, which it rounds as the unfused product does), through
// scratch as well; and near the CPU's sgemm, which is how the CPU executor fuses them.
TEST(MatmulKernels, FusedProductsAreTheTransposedProducts) {
  std::mt19937 random(21);
  const int64_t M = 6, N = 5, K = 9;
  for (bool bf16 : {false, true})
    for (bool transA : {false, true})
      for (bool transB : {false, true}) {
        SCOPED_TRACE(std::string(bf16 ? "bf16" : "f32") + (transA ? " a^T" : " a") + (transB ? " b^T" : " b"));
        const Tensor a = bf16 ? bf16Tensor({M, K}, random) : f32({M, K}, random), b = f32({K, N}, random);
        const Tensor storedA = transA ? transposed(a) : a, storedB = transB ? transposed(b) : b;
        std::vector<Tensor> operands{a, b}, want{bf16 ? bf16Zeros({M, N}) : zeros({M, N})};
        gpu::matmulWith(hspmd::testing::ReferenceGemm{}, views(operands), views(want), nullptr);
        for (bool scratch : {false, true}) {
          std::vector<Tensor> stored{storedA, storedB}, got{bf16 ? bf16Zeros({M, N}) : zeros({M, N})};
          const std::vector<runtime::TensorView> in = views(stored), out = views(got);
          gpu::fusedMatmulWith(hspmd::testing::ReferenceGemm{},
                               gpu::FusedProduct{in[0], in[1], out[0], transA, transB, M, N, K, bf16, scratch},
                               nullptr);
          EXPECT_EQ(got[0].bytes, want[0].bytes) << (scratch ? "through scratch" : "in place");
        }
        if (bf16)
          continue;
        std::vector<float> cpu(static_cast<size_t>(M * N));
        Tensor cpuA = storedA, cpuB = storedB;
        runtime::kernels::sgemm(transA, transB, M, N, K, 1.0f, cpuA.f32(), transA ? M : K, cpuB.f32(), transB ? K : N,
                                0.0f, cpu.data(), N);
        Tensor wantCopy = want[0];
        for (int64_t i = 0; i < M * N; ++i)
          ASSERT_NEAR(wantCopy.f32()[i], cpu[static_cast<size_t>(i)],
                      1e-5 * std::max(1.0f, std::fabs(cpu[static_cast<size_t>(i)])))
              << "element " << i;
      }
  // A weight's gradient: x^T dy over all B x S rows of x [B, S, d] and dy [B, S, N] (K = B S),
  // near the CPU's sum over the batch of transpose(x) @ dy.
  const int64_t B = 3, S = 4, d = 5, n = 7;
  std::vector<Tensor> xy{f32({B, S, d}, random), f32({B, S, n}, random)}, got{zeros({d, n})};
  const std::vector<runtime::TensorView> in = views(xy), out = views(got);
  gpu::fusedMatmulWith(hspmd::testing::ReferenceGemm{},
                       gpu::FusedProduct{in[0], in[1], out[0], true, false, d, n, B * S, false, false}, nullptr);
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t r = 0; r < B * S; ++r)
        sum += static_cast<double>(xy[0].f32()[r * d + i]) * xy[1].f32()[r * n + j];
      ASSERT_NEAR(got[0].f32()[i * n + j], sum, 1e-5 * std::max(1.0, std::fabs(sum))) << i << ", " << j;
    }
  // An empty inner dimension writes zeros.
  std::vector<Tensor> empty{zeros({2, 0}), zeros({0, 3})}, y{f32({2, 3}, random)};
  const std::vector<runtime::TensorView> ein = views(empty), eout = views(y);
  gpu::fusedMatmulWith(hspmd::testing::ReferenceGemm{},
                       gpu::FusedProduct{ein[0], ein[1], eout[0], false, false, 2, 3, 0, false, false}, nullptr);
  EXPECT_EQ(y[0].bytes, zeros({2, 3}).bytes);
}

namespace {

// `op` through the kernel table on tensors as they are (bf16 ones included), and on widened f32
// copies with the bf16 results rounded (what runKernel does for a kernel that does not take
// bf16): bit for bit the same outputs.
void expectWidenedEquivalent(const std::string &op, const ir::AttrMap &attrs, std::vector<Tensor> inputs,
                             std::vector<Tensor> outputs) {
  auto widened = [](std::vector<Tensor> tensors) {
    for (Tensor &t : tensors)
      if (t.dtype == ir::DType::BF16) {
        Tensor wide{ir::DType::F32, t.shape, std::vector<char>(static_cast<size_t>(t.numel()) * 4)};
        runtime::widenBf16(t.bytes.data(), wide.f32(), t.numel());
        t = std::move(wide);
      }
    return tensors;
  };
  std::vector<Tensor> wideIn = widened(inputs), wideOut = widened(outputs);
  hspmd::testing::emulatedKernelTable().at(op)(attrs, views(inputs), views(outputs), {}, nullptr);
  hspmd::testing::emulatedKernelTable().at(op)(attrs, views(wideIn), views(wideOut), {}, nullptr);
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::vector<char> expected = wideOut[k].bytes;
    if (outputs[k].dtype == ir::DType::BF16) {
      expected.resize(static_cast<size_t>(outputs[k].numel()) * 2);
      runtime::narrowToBf16(wideOut[k].f32(), expected.data(), outputs[k].numel());
    }
    EXPECT_EQ(outputs[k].bytes, expected) << op << " output " << k;
  }
}

} // namespace

// The norms read and write bf16 activations as they are (parameters and their gradients f32):
// bit for bit the widened kernels' results, rounded (docs/gpu.md).
TEST(KernelTable, NormsTakeBf16AsTheWidenedKernelsDo) {
  std::mt19937 random(12);
  for (const char *op : {"layernorm", "rmsnorm"}) {
    const bool layer = std::string(op) == "layernorm";
    for (bool bf16In : {false, true})
      for (bool bf16Out : {false, true}) {
        SCOPED_TRACE(std::string(op) + (bf16In ? " bf16 in" : " f32 in") + (bf16Out ? ", bf16 out" : ", f32 out"));
        std::vector<Tensor> in{bf16In ? bf16Tensor({6, 100}, random) : f32({6, 100}, random), f32({100}, random)};
        if (layer)
          in.push_back(f32({100}, random));
        expectWidenedEquivalent(op, {{"eps", 1e-5}}, in, {bf16Out ? bf16Zeros({6, 100}) : zeros({6, 100})});
        std::vector<Tensor> gradIn{bf16In ? bf16Tensor({6, 100}, random) : f32({6, 100}, random), f32({100}, random),
                                   bf16Out ? bf16Tensor({6, 100}, random) : f32({6, 100}, random)};
        std::vector<Tensor> gradOut{bf16In ? bf16Zeros({6, 100}) : zeros({6, 100}), zeros({100})};
        if (layer)
          gradOut.push_back(zeros({100}));
        expectWidenedEquivalent(std::string(op) + "_grad", {{"eps", 1e-5}}, gradIn, gradOut);
      }
  }
}

// Softmax, cross-entropy (forward, gradient, the vocabulary-parallel steps) and the embedding read
// and write bf16 activations, logits and their gradients as they are: bit for bit the widened
// kernels' results, rounded (a target < 0 not scored, an id outside this piece's rows zero).
TEST(KernelTable, RowKernelsTakeBf16AsTheWidenedKernelsDo) {
  std::mt19937 random(16);
  auto either = [&](bool bf16, std::vector<int64_t> shape) {
    return bf16 ? bf16Tensor(std::move(shape), random) : f32(std::move(shape), random);
  };
  auto none = [](bool bf16, std::vector<int64_t> shape) {
    return bf16 ? bf16Zeros(std::move(shape)) : zeros(std::move(shape));
  };
  const Tensor targets = i32({4}, {1, 29, -1, 0});
  const ir::AttrMap tokens{{"tokens", int64_t{3}}}, piece{{"vocab_offset", int64_t{10}}, {"tokens", int64_t{3}}};
  for (bool in16 : {false, true})
    for (bool out16 : {false, true}) {
      SCOPED_TRACE(std::string(in16 ? "bf16 in" : "f32 in") + (out16 ? ", bf16 out" : ", f32 out"));
      expectWidenedEquivalent("softmax", {{"dim", int64_t{1}}}, {either(in16, {3, 17, 2})}, {none(out16, {3, 17, 2})});
      expectWidenedEquivalent("cross_entropy", tokens, {either(in16, {4, 30}), targets}, {zeros({})});
      expectWidenedEquivalent("cross_entropy_grad", tokens,
                              {either(in16, {4, 30}), targets, f32({}, random, 0.5f, 1.5f)}, {none(out16, {4, 30})});
      const Tensor peak = f32({4}, random, 1.0f, 2.0f), sums = f32({8}, random, 3.0f, 5.0f);
      expectWidenedEquivalent("vocab_parallel_max", {}, {either(in16, {4, 20})}, {zeros({4})});
      expectWidenedEquivalent("vocab_parallel_sums", piece, {either(in16, {4, 20}), targets, peak}, {zeros({8})});
      expectWidenedEquivalent("vocab_parallel_grad", piece,
                              {either(in16, {4, 20}), targets, peak, sums, f32({}, random, 0.5f, 1.5f)},
                              {none(out16, {4, 20})});
      expectWidenedEquivalent("embedding", piece, {f32({20, 8}, random), i32({2, 3}, {11, 5, 29, 10, 17, 17})},
                              {none(out16, {2, 3, 8})});
      expectWidenedEquivalent("embedding_grad", piece, {i32({2, 3}, {11, 5, 29, 10, 17, 17}), either(in16, {2, 3, 8})},
                              {zeros({20, 8})});
    }
}

// Which of them runKernel hands bf16 tensors as they are: their f32 parts (the table and its
// gradient, the loss and its upstream gradient, maxima and sums) f32, ids and targets i32.
TEST(KernelTable, RowKernelsTakeBf16WhereTheirF32PartsAreF32) {
  std::mt19937 random(17);
  const Tensor targets = i32({4}, {1, 2, 3, 0});
  std::vector<Tensor> logits{bf16Tensor({4, 30}, random), targets}, loss{zeros({})}, bf16Loss{bf16Zeros({})};
  EXPECT_TRUE(gpu::rowKernelTakes("cross_entropy", views(logits), views(loss)));
  EXPECT_FALSE(gpu::rowKernelTakes("cross_entropy", views(logits), views(bf16Loss)));
  std::vector<Tensor> gradIn{bf16Tensor({4, 30}, random), targets, f32({}, random)},
      bf16Upstream{bf16Tensor({4, 30}, random), targets, bf16Tensor({}, random)}, grad{bf16Zeros({4, 30})};
  EXPECT_TRUE(gpu::rowKernelTakes("cross_entropy_grad", views(gradIn), views(grad)));
  EXPECT_FALSE(gpu::rowKernelTakes("cross_entropy_grad", views(bf16Upstream), views(grad)));
  std::vector<Tensor> table{f32({30, 8}, random), targets}, bf16Table{bf16Tensor({30, 8}, random), targets},
      rows{bf16Zeros({4, 8})};
  EXPECT_TRUE(gpu::rowKernelTakes("embedding", views(table), views(rows)));
  EXPECT_FALSE(gpu::rowKernelTakes("embedding", views(bf16Table), views(rows)));
  std::vector<Tensor> dy{targets, bf16Tensor({4, 8}, random)}, tableGrad{zeros({30, 8})},
      bf16TableGrad{bf16Zeros({30, 8})};
  EXPECT_TRUE(gpu::rowKernelTakes("embedding_grad", views(dy), views(tableGrad)));
  EXPECT_FALSE(gpu::rowKernelTakes("embedding_grad", views(dy), views(bf16TableGrad)));
  std::vector<Tensor> x{bf16Tensor({3, 5}, random)}, y{bf16Zeros({3, 5})};
  EXPECT_TRUE(gpu::rowKernelTakes("softmax", views(x), views(y)));
  EXPECT_FALSE(gpu::rowKernelTakes("sum", views(x), views(y)));
}

// Which norms runKernel hands bf16 tensors as they are: activations f32 or bf16, parameters and
// their gradients f32 (a bf16 parameter is widened around the kernel instead).
TEST(KernelTable, NormsTakeBf16ActivationsWithF32Parameters) {
  std::mt19937 random(13);
  std::vector<Tensor> in{bf16Tensor({2, 8}, random), f32({8}, random), f32({8}, random)}, out{bf16Zeros({2, 8})};
  EXPECT_TRUE(gpu::normTakes("layernorm", views(in), views(out)));
  EXPECT_TRUE(gpu::normTakes("rmsnorm", views(in), views(out)));
  std::vector<Tensor> bf16Parameter{bf16Tensor({2, 8}, random), bf16Tensor({8}, random)};
  EXPECT_FALSE(gpu::normTakes("rmsnorm", views(bf16Parameter), views(out)));
  std::vector<Tensor> gradIn{bf16Tensor({2, 8}, random), f32({8}, random), bf16Tensor({2, 8}, random)};
  std::vector<Tensor> gradOut{bf16Zeros({2, 8}), zeros({8}), zeros({8})}, bf16Grads{bf16Zeros({2, 8}), bf16Zeros({8})};
  EXPECT_TRUE(gpu::normTakes("layernorm_grad", views(gradIn), views(gradOut)));
  EXPECT_FALSE(gpu::normTakes("rmsnorm_grad", views(gradIn), views(bf16Grads)));
}

// The dispatch hands bf16 attention, forward and backward, to the tensor-core kernels as it is
// (heads of 16) and widens it for heads they do not take (8).
TEST(KernelTable, DispatchTakesBf16AttentionWhereTensorCoresDo) {
  std::mt19937 random(15);
  for (int64_t D : {16, 8}) {
    std::vector<Tensor> in{bf16Tensor({1, 4, 2, D}, random), bf16Tensor({1, 4, 2, D}, random),
                           bf16Tensor({1, 4, 2, D}, random), bf16Tensor({1, 4, 2, D}, random)},
        y{bf16Zeros({1, 4, 2, D})}, grads{bf16Zeros({1, 4, 2, D}), bf16Zeros({1, 4, 2, D}), bf16Zeros({1, 4, 2, D})};
    const std::vector<runtime::TensorView> inputs = views(in);
    EXPECT_EQ(hspmd::testing::emulatedReadsBf16("attention", {inputs.data(), 3}, views(y)), D == 16);
    EXPECT_EQ(hspmd::testing::emulatedReadsBf16("attention_grad", inputs, views(grads)), D == 16);
  }
}

// runKernel's dispatch (runtime/gpu/Dispatch.cuh) on bf16 tensors, for kernels that take them (elementwise,
// norms, moves, attention on heads of 16) and kernels it widens them around (softmax, sum, attention,
// cross-entropy, embedding): near the CPU's runKernel on the same tensors, which widens every kernel's.
TEST(KernelTable, DispatchOnBf16IsNearTheCpu) {
  std::mt19937 random(14);
  struct Case {
    std::string op;
    ir::AttrMap attrs;
    std::vector<Tensor> in, out;
  };
  const ir::AttrMap causal{{"causal", true}};
  const std::vector<Case> cases = {
      {"gelu", {}, {bf16Tensor({100}, random)}, {bf16Zeros({100})}},
      {"rmsnorm", {{"eps", 1e-5}}, {bf16Tensor({4, 32}, random), f32({32}, random)}, {bf16Zeros({4, 32})}},
      {"transpose", {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}}, {bf16Tensor({5, 7}, random)}, {bf16Zeros({7, 5})}},
      {"softmax", {{"dim", int64_t{1}}}, {bf16Tensor({3, 17}, random)}, {bf16Zeros({3, 17})}},
      {"sum",
       {{"dims", std::vector<ir::SymExpr>{ir::SymExpr(int64_t{0})}}},
       {bf16Tensor({6, 9}, random)},
       {bf16Zeros({9})}},
      {"attention",
       causal,
       {bf16Tensor({1, 20, 2, 8}, random), bf16Tensor({1, 20, 2, 8}, random), bf16Tensor({1, 20, 2, 8}, random)},
       {bf16Zeros({1, 20, 2, 8})}},
      // Heads of 16: taken as they are, on tensor cores (TensorCoreAttention.cuh); the gradient's dQ.
      {"attention",
       causal,
       {bf16Tensor({1, 20, 2, 16}, random), bf16Tensor({1, 20, 2, 16}, random), bf16Tensor({1, 20, 2, 16}, random)},
       {bf16Zeros({1, 20, 2, 16})}},
      {"attention_grad",
       causal,
       {bf16Tensor({1, 20, 2, 16}, random), bf16Tensor({1, 20, 2, 16}, random), bf16Tensor({1, 20, 2, 16}, random),
        bf16Tensor({1, 20, 2, 16}, random)},
       {bf16Zeros({1, 20, 2, 16}), bf16Zeros({1, 20, 2, 16}), bf16Zeros({1, 20, 2, 16})}},
      {"cross_entropy_grad",
       {{"tokens", int64_t{4}}},
       {bf16Tensor({4, 30}, random), i32({4}, {1, 29, 3, 0}), f32({}, random, 0.5f, 1.5f)},
       {bf16Zeros({4, 30})}},
      {"embedding", {}, {f32({30, 8}, random), i32({2, 3}, {1, 5, 29, 0, 7, 7})}, {bf16Zeros({2, 3, 8})}},
      {"matmul", {}, {bf16Tensor({6, 16}, random), bf16Tensor({16, 5}, random)}, {bf16Zeros({6, 5})}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.op);
    std::vector<Tensor> in = c.in, cpuOut = c.out, gpuOut = c.out;
    runtime::runKernel(c.op, c.attrs, views(in), views(cpuOut));
    gpu::GpuStream stream; // runtime/gpu/GpuKernels.h's runKernel: the dispatch on the emulated GPU
    gpu::runKernel(c.op, c.attrs, views(in), views(gpuOut), {}, stream);
    stream.synchronize();
    const auto *want = reinterpret_cast<const uint16_t *>(cpuOut[0].bytes.data());
    const auto *got = reinterpret_cast<const uint16_t *>(gpuOut[0].bytes.data());
    for (int64_t i = 0; i < cpuOut[0].numel(); ++i) {
      const float w = runtime::fromBf16(want[i]), g = runtime::fromBf16(got[i]);
      ASSERT_NEAR(g, w, 1e-2 * std::max(1.0f, std::fabs(w))) << "element " << i;
    }
  }
}
