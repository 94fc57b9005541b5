// The CUDA kernels against the CPU kernels, op by op (label `gpu`): the same random inputs
// through runtime::runKernel and gpu::runKernel, every output (and every input an op updates in
// place) within 1e-5 relative. Without a GPU each test reports that it was skipped and why.
#include "runtime/Bf16.h"
#include "runtime/Kernels.h"
#include "runtime/Regions.h"
#include "runtime/gpu/GpuKernels.h"
#include "tests/unit/support/GpuFaults.h"
#include "tests/unit/support/KernelCases.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>

using namespace hspmd;
using runtime::TensorView;

namespace {

#define SKIP_WITHOUT_GPU()                                                                                             \
  do {                                                                                                                 \
    std::string why;                                                                                                   \
    if (!runtime::gpu::gpuAvailable(&why))                                                                             \
      GTEST_SKIP() << "no GPU here (" << why << "): scripts/gpu-check.sh runs these on a GPU";                         \
  } while (0)

using Tensor = hspmd::testing::KernelTensor;
using hspmd::testing::f32;
using hspmd::testing::i32;
using hspmd::testing::zeros;

// `op` run on the CPU and on the GPU from the same inputs: the CPU's tensors after it, and the
// GPU's memory (the inputs', then the outputs').
struct RanOnBoth {
  std::vector<Tensor> cpuIn, cpuOut;
  std::vector<std::unique_ptr<runtime::gpu::DeviceBuffer>> memory;
};

RanOnBoth runOnBoth(const std::string &op, const ir::AttrMap &attrs, std::vector<Tensor> inputs,
                    std::vector<Tensor> outputs, const runtime::KernelContext &context = {}) {
  RanOnBoth ran{inputs, outputs, {}};
  auto views = [](std::vector<Tensor> &ts) {
    std::vector<TensorView> v;
    for (Tensor &t : ts)
      v.push_back(TensorView{t.bytes.data(), t.dtype, t.shape});
    return v;
  };
  runtime::runKernel(op, attrs, views(ran.cpuIn), views(ran.cpuOut), context);
  runtime::gpu::GpuStream stream;
  auto upload = [&](std::vector<Tensor> &ts) {
    std::vector<TensorView> v;
    for (Tensor &t : ts) {
      ran.memory.push_back(std::make_unique<runtime::gpu::DeviceBuffer>(static_cast<int64_t>(t.bytes.size())));
      ran.memory.back()->upload(t.bytes.data(), static_cast<int64_t>(t.bytes.size()));
      v.push_back(TensorView{ran.memory.back()->data(), t.dtype, t.shape});
    }
    return v;
  };
  const std::vector<TensorView> gpuIn = upload(inputs), gpuOut = upload(outputs);
  runtime::gpu::runKernel(op, attrs, gpuIn, gpuOut, context, stream);
  stream.synchronize();
  return ran;
}

// Runs `op` on the CPU and on the GPU from the same inputs and compares outputs and inputs.
void compare(const std::string &op, const ir::AttrMap &attrs, std::vector<Tensor> inputs, std::vector<Tensor> outputs,
             const runtime::KernelContext &context = {}, double bound = 1e-5) {
  RanOnBoth ran = runOnBoth(op, attrs, inputs, outputs, context);
  auto check = [&](std::vector<Tensor> &cpu, size_t first, const char *what) {
    for (size_t k = 0; k < cpu.size(); ++k) {
      if (cpu[k].dtype != ir::DType::F32)
        continue;
      std::vector<float> got(static_cast<size_t>(cpu[k].numel()));
      ran.memory[first + k]->download(got.data(), static_cast<int64_t>(got.size() * 4));
      for (int64_t i = 0; i < cpu[k].numel(); ++i) {
        const float want = cpu[k].f32()[i];
        ASSERT_NEAR(got[static_cast<size_t>(i)], want, bound * std::max(1.0f, std::fabs(want)))
            << op << " " << what << " " << k << " element " << i;
      }
    }
  };
  check(ran.cpuIn, 0, "input");
  check(ran.cpuOut, inputs.size(), "output");
}

} // namespace

// Not a GPU test (it runs in CI): the GPU kernels are the CPU kernels' ops, every one of them.
TEST(GpuKernels, EveryCpuKernelHasAGpuKernel) {
  const auto cpu = runtime::kernelNames(), gpu = runtime::gpu::gpuKernelNames();
  EXPECT_EQ(std::set<std::string>(gpu.begin(), gpu.end()), std::set<std::string>(cpu.begin(), cpu.end()));
  EXPECT_EQ(gpu.size(), cpu.size()); // each named once
}

// Not a GPU test either: cuBLAS is not linked but loaded by the first stream (linked, its
// initializers cost every process 60 ms at start); loading it needs the toolkit, not a GPU.
TEST(GpuKernels, CublasLoadsWithoutBeingLinked) {
  std::string why;
  EXPECT_TRUE(runtime::gpu::loadBlas(&why)) << why;
  EXPECT_TRUE(runtime::gpu::loadBlas(&why)) << why; // once loaded, it stays
}

TEST(GpuKernels, Elementwise) {
  SKIP_WITHOUT_GPU();
  hspmd::testing::kernelcases::elementwise(compare);
}

TEST(GpuKernels, NormsAndSoftmax) {
  SKIP_WITHOUT_GPU();
  hspmd::testing::kernelcases::normsAndSoftmax(compare);
}

TEST(GpuKernels, EmbeddingAndCrossEntropy) {
  SKIP_WITHOUT_GPU();
  hspmd::testing::kernelcases::embeddingAndCrossEntropy(compare);
}

// The embedding's gradient in each row's order, bit for bit the CPU's: on a GPU the ids take their
// places in any order, which its ordering step undoes (KernelCases.h).
TEST(GpuKernels, ABadTargetFailsAtTheStreamsNextSynchronize) {
  SKIP_WITHOUT_GPU();
  hspmd::testing::badTargetsFailAtTheNextSynchronize();
}

TEST(GpuKernels, EmbeddingGradientIsTheCpusBitForBit) {
  SKIP_WITHOUT_GPU();
  hspmd::testing::kernelcases::embeddingGradientInOrder(compare);
}

// The vocabulary-parallel cross-entropy's steps, on a piece of 50 columns from vocabulary offset
// 25 (tests/unit/support/KernelCases.h).
TEST(GpuKernels, VocabularyParallelCrossEntropySteps) {
  SKIP_WITHOUT_GPU();
  hspmd::testing::kernelcases::vocabularyParallelCrossEntropy(compare);
}

TEST(GpuKernels, OptimizerSteps) {
  SKIP_WITHOUT_GPU();
  hspmd::testing::kernelcases::optimizerSteps(compare);
}

TEST(GpuKernels, MatrixProducts) {
  SKIP_WITHOUT_GPU();
  std::mt19937 random(5);
  compare("matmul", {}, {f32({5, 7}, random), f32({7, 3}, random)}, {zeros({5, 3})});
  compare("matmul", {}, {f32({2, 5, 7}, random), f32({7, 3}, random)}, {zeros({2, 5, 3})});
  compare("matmul", {}, {f32({2, 5, 7}, random), f32({2, 7, 3}, random)}, {zeros({2, 5, 3})});
  compare("matmul", {}, {f32({1, 5, 7}, random), f32({3, 7, 4}, random)}, {zeros({3, 5, 4})});
  // 256 terms a sum: float sums in another order differ by more than 1e-5 of a small result
  // (MatmulKernels.ProductsAsTheCpuMakesThem saw 1.3e-5 against a sum in double).
  compare("matmul", {}, {f32({64, 256}, random), f32({256, 96}, random)}, {zeros({64, 96})}, {}, 1e-4);
}

// Fused products (GpuKernels.h's fusedMatmul, the offload's dX = dY W^T and weight gradients) on
// cuBLAS with each operand transposed or not, in fp32 against the CPU's sgemm (1e-4: 64 terms a
// sum), and the weight-gradient shape: x [B, S, d] read as [B S, d] transposed.
TEST(GpuKernels, FusedProductsTakeTransposedOperands) {
  SKIP_WITHOUT_GPU();
  std::mt19937 random(22);
  const int64_t M = 33, N = 17, K = 64;
  runtime::gpu::GpuStream stream;
  for (bool transA : {false, true})
    for (bool transB : {false, true}) {
      SCOPED_TRACE(std::string(transA ? "a^T" : "a") + (transB ? " b^T" : " b"));
      Tensor a = f32(transA ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}, random),
             b = f32(transB ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, random);
      std::vector<float> want(static_cast<size_t>(M * N)), got(want.size());
      runtime::kernels::sgemm(transA, transB, M, N, K, 1.0f, a.f32(), transA ? M : K, b.f32(), transB ? K : N, 0.0f,
                              want.data(), N);
      runtime::gpu::DeviceBuffer da(static_cast<int64_t>(a.bytes.size())), db(static_cast<int64_t>(b.bytes.size())),
          dy(M * N * 4);
      da.upload(a.bytes.data(), static_cast<int64_t>(a.bytes.size()));
      db.upload(b.bytes.data(), static_cast<int64_t>(b.bytes.size()));
      runtime::gpu::fusedMatmul(runtime::gpu::FusedProduct{TensorView{da.data(), ir::DType::F32, a.shape},
                                                           TensorView{db.data(), ir::DType::F32, b.shape},
                                                           TensorView{dy.data(), ir::DType::F32, {M, N}}, transA,
                                                           transB, M, N, K, false, false},
                                stream);
      stream.synchronize();
      dy.download(got.data(), M * N * 4);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-4 * std::max(1.0f, std::fabs(want[i]))) << "element " << i;
    }
}

TEST(GpuKernels, Layout) {
  SKIP_WITHOUT_GPU();
  hspmd::testing::kernelcases::layout(compare);
}

// Causal attention with grouped KV heads on a sequence piece (query and key offsets), forward
// and backward, over more keys than one chunk; heads of 8 and 128 values in tiles
// (runtime/gpu/TiledAttention.cuh; 128 needs more than 48 KiB of shared memory a block), heads
// of 160 in the row kernels.
TEST(GpuKernels, Attention) {
  SKIP_WITHOUT_GPU();
  std::mt19937 random(7);
  for (int64_t D : {8, 128, 160})
    for (int64_t T : {16, 300}) {
      const int64_t S = T / 2;
      const ir::AttrMap attrs{{"causal", true}, {"query_offset", T - S}, {"key_offset", int64_t{0}}};
      const Tensor q = f32({2, S, 4, D}, random), k = f32({2, T, 2, D}, random), v = f32({2, T, 2, D}, random);
      compare("attention", attrs, {q, k, v}, {zeros({2, S, 4, D})});
      compare("attention_grad", attrs, {q, k, v, f32({2, S, 4, D}, random)},
              {zeros({2, S, 4, D}), zeros({2, T, 2, D}), zeros({2, T, 2, D})});
    }
}

// --precision bf16: the GPU widens bf16 tensors around a kernel and rounds what it wrote, as
// the CPU does (the two agree to a bf16 rounding of their f32 results), or, in the elementwise
// kernels and element moves, reads and writes bf16 as it is with the same result; bf16 boxes add in
// float and round, bit for bit the CPU's. Products run on tensor cores instead, the f32
// parameter rounded to bf16 (here one whose values are bf16 numbers: within 1e-2 of the CPU's,
// which multiplies by the f32 one), an f32 result (a weight gradient of bf16 activations)
// written as f32. Attention on bf16 runs on tensor cores too, forward (P rounded to bf16 for its
// product with V: within 1e-2 as well) and backward (below).
TEST(GpuKernels, Bf16TensorsWidenAroundEachKernel) {
  SKIP_WITHOUT_GPU();
  std::mt19937 random(9);
  auto bf16 = [&](std::vector<int64_t> shape) {
    Tensor wide = f32(shape, random), t{ir::DType::BF16, std::move(shape), {}};
    t.bytes.resize(static_cast<size_t>(t.numel()) * 2);
    runtime::narrowToBf16(wide.f32(), t.bytes.data(), t.numel());
    return t;
  };
  // An f32 parameter whose values are bf16 numbers: the GPU rounds a product's f32 operand to
  // bf16 where the CPU multiplies by it as it is, so that with any other values the two products
  // differ by the rounding of every term (MatmulKernels.ProductsAsTheCpuMakesThem saw 0.02 on
  // a result of 0.38 with 64 terms), not only by their sums' order.
  auto bf16Valued = [&](std::vector<int64_t> shape) {
    Tensor t = f32(std::move(shape), random);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.f32()[i] = runtime::fromBf16(runtime::toBf16(t.f32()[i]));
    return t;
  };
  auto zero16 = [](std::vector<int64_t> shape) {
    Tensor t{ir::DType::BF16, std::move(shape), {}};
    t.bytes.assign(static_cast<size_t>(t.numel()) * 2, 0);
    return t;
  };
  struct Case {
    std::string op;
    ir::AttrMap attrs;
    std::vector<Tensor> in, out;
  };
  const std::vector<Case> cases = {
      {"gelu", {}, {bf16({1000})}, {zero16({1000})}},
      {"add", {}, {bf16({4, 33}), f32({33}, random)}, {zero16({4, 33})}}, // an f32 parameter with a bf16 activation
      {"matmul", {}, {bf16({8, 64}), bf16Valued({64, 48})}, {zero16({8, 48})}},
      {"matmul", {}, {bf16({2, 3, 8, 64}), bf16({3, 64, 16})}, {zero16({2, 3, 8, 16})}}, // batched, broadcast
      {"rmsnorm", {{"eps", 1e-5}}, {bf16({6, 100}), f32({100}, random)}, {zero16({6, 100})}},
      {"transpose", {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}}, {bf16({5, 7})}, {zero16({7, 5})}},
      // Read and written as bf16 (rowKernelTakes): softmax, the loss's gradient, the embedding.
      {"softmax", {{"dim", int64_t{1}}}, {bf16({3, 17})}, {zero16({3, 17})}},
      {"cross_entropy_grad",
       {{"tokens", int64_t{4}}},
       {bf16({4, 30}), i32({4}, {1, 29, 3, 0}), f32({}, random)},
       {zero16({4, 30})}},
      {"embedding", {}, {f32({30, 8}, random), i32({2, 3}, {1, 5, 29, 0, 7, 7})}, {zero16({2, 3, 8})}},
      // On tensor cores (TensorCoreAttention.cuh): GQA, 3 key tiles; heads of 128.
      {"attention",
       {{"causal", true}},
       {bf16({2, 150, 4, 64}), bf16({2, 150, 2, 64}), bf16({2, 150, 2, 64})},
       {zero16({2, 150, 4, 64})}},
      {"attention",
       {{"causal", true}},
       {bf16({1, 100, 2, 128}), bf16({1, 100, 2, 128}), bf16({1, 100, 2, 128})},
       {zero16({1, 100, 2, 128})}}};
  for (const Case &c : cases) {
    RanOnBoth ran = runOnBoth(c.op, c.attrs, c.in, c.out);
    std::vector<uint16_t> got(static_cast<size_t>(ran.cpuOut[0].numel()));
    ran.memory[c.in.size()]->download(got.data(), static_cast<int64_t>(got.size() * 2));
    const auto *want = reinterpret_cast<const uint16_t *>(ran.cpuOut[0].bytes.data());
    for (size_t i = 0; i < got.size(); ++i) {
      const float g = runtime::fromBf16(got[i]), w = runtime::fromBf16(want[i]);
      ASSERT_NEAR(g, w, 1e-2 * std::max(1.0f, std::fabs(w))) << c.op << " element " << i;
    }
  }
  { // attention's gradient on tensor cores: dQ, dK and dV, each within 1e-2 of its largest value
    // (P and dS are rounded to bf16 for their products; 3.9e-3 at most on CPU threads,
    // TensorCoreAttention.MatchesTheCpuKernelInBf16)
    RanOnBoth ran =
        runOnBoth("attention_grad", {{"causal", true}},
                  {bf16({2, 150, 4, 64}), bf16({2, 150, 2, 64}), bf16({2, 150, 2, 64}), bf16({2, 150, 4, 64})},
                  {zero16({2, 150, 4, 64}), zero16({2, 150, 2, 64}), zero16({2, 150, 2, 64})});
    for (size_t o = 0; o < 3; ++o) {
      std::vector<uint16_t> got(static_cast<size_t>(ran.cpuOut[o].numel()));
      ran.memory[4 + o]->download(got.data(), static_cast<int64_t>(got.size() * 2));
      const auto *want = reinterpret_cast<const uint16_t *>(ran.cpuOut[o].bytes.data());
      float largest = 1;
      for (size_t i = 0; i < got.size(); ++i)
        largest = std::max(largest, std::fabs(runtime::fromBf16(want[i])));
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(runtime::fromBf16(got[i]), runtime::fromBf16(want[i]), 1e-2 * largest)
            << "attention_grad output " << o << " element " << i;
    }
  }
  { // two bf16 activations' product into an f32 weight gradient
    RanOnBoth ran = runOnBoth("matmul", {}, {bf16({16, 32}), bf16({32, 24})}, {zeros({16, 24})});
    std::vector<float> got(16 * 24);
    ran.memory[2]->download(got.data(), static_cast<int64_t>(got.size() * 4));
    for (size_t i = 0; i < got.size(); ++i) {
      const float w = ran.cpuOut[0].f32()[i];
      ASSERT_NEAR(got[i], w, 1e-3 * std::max(1.0f, std::fabs(w))) << "f32 product, element " << i;
    }
  }
  // A bf16 box added into another.
  Tensor x = bf16({3, 8}), y = bf16({3, 8});
  Tensor cpu = y;
  runtime::copyBox(2, x.bytes.data(), {3, 8}, {0, 2}, cpu.bytes.data(), {3, 8}, {1, 0}, {2, 5}, true);
  runtime::gpu::GpuStream stream;
  runtime::gpu::DeviceBuffer from(48), to(48);
  from.upload(x.bytes.data(), 48);
  to.upload(y.bytes.data(), 48);
  runtime::gpu::copyBox(2, from.data(), {3, 8}, {0, 2}, to.data(), {3, 8}, {1, 0}, {2, 5}, true, stream);
  stream.synchronize();
  std::vector<char> got(48);
  to.download(got.data(), 48);
  EXPECT_EQ(got, cpu.bytes);
}
