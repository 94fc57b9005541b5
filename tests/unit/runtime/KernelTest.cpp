// The CPU kernels against a naive reference: every op of a tiny GPT and a tiny LLaMA (grouped
// key/value heads), forward and backward, run once through runKernel on the reference
// evaluator's inputs (tests/unit/support/ReferenceEvaluator: one plain loop nest per op, in
// double precision) and compared with the reference's outputs. The optimizer kernels against
// the AdamW and SGD formulas written out here.
#include "runtime/Bf16.h"
#include "runtime/Kernels.h"
#include "runtime/Regions.h"

#include "../support/ReferenceEvaluator.h"
#include "../support/TinyModels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <set>

using namespace hspmd;
using hspmd::testing::Tensor;

namespace {

using hspmd::testing::trainingGraph;

// Float (or int32) storage for one value, with a view of it.
struct Storage {
  std::vector<float> f32;
  std::vector<int32_t> i32;
  runtime::TensorView view;
};

Storage store(const ir::Value &value, const Tensor &t) {
  Storage s;
  s.view.dtype = value.type.dtype;
  s.view.shape = t.shape;
  if (ir::isFloat(value.type.dtype)) {
    s.f32.assign(t.data.begin(), t.data.end());
    s.view.data = s.f32.data();
  } else {
    for (double x : t.data)
      s.i32.push_back(static_cast<int32_t>(x));
    s.view.data = s.i32.data();
  }
  return s;
}

using Values = std::map<const ir::Value *, Tensor>;

// Calls `check(op, kernel name, the reference's values)` for every op of `graph` but its
// leaves (random leaves from `seed`), until it returns false; returns the kernel names it
// returned true for.
std::set<std::string> forEachOp(const ir::Graph &graph, int64_t vocab, unsigned seed,
                                const std::function<bool(const ir::Op &, const std::string &, const Values &)> &check) {
  std::mt19937 rng(seed);
  const Values values = hspmd::testing::evaluate(graph, hspmd::testing::randomLeaves(graph, rng, vocab));
  std::set<std::string> checked;
  for (const auto &op : graph.ops()) {
    if (op->kind == ir::OpKind::Param || op->kind == ir::OpKind::Input || op->kind == ir::OpKind::Constant)
      continue;
    const std::string name(ir::opInfo(op->kind).name);
    if (!check(*op, name, values))
      break;
    checked.insert(name);
  }
  return checked;
}

// Runs every op of `graph` (but its leaves) as a kernel on the reference's inputs; returns the
// op kinds checked.
std::set<std::string> checkEveryOp(const ir::Graph &graph, int64_t vocab) {
  return forEachOp(graph, vocab, 11, [](const ir::Op &op, const std::string &name, const Values &values) {
    std::vector<Storage> in, out;
    for (const ir::Value *operand : op.operands)
      in.push_back(store(*operand, values.at(operand)));
    for (const ir::Value *result : op.results) {
      Tensor zeros{values.at(result).shape, std::vector<double>(static_cast<size_t>(values.at(result).size()), 0.0)};
      out.push_back(store(*result, zeros));
    }
    std::vector<runtime::TensorView> inViews, outViews;
    for (const Storage &s : in)
      inViews.push_back(s.view);
    for (const Storage &s : out)
      outViews.push_back(s.view);
    runtime::runKernel(name, op.attrs, inViews, outViews);
    for (size_t r = 0; r < op.results.size(); ++r) {
      const Tensor &expected = values.at(op.results[r]);
      for (int64_t i = 0; i < expected.size(); ++i) {
        const double want = expected.data[static_cast<size_t>(i)];
        const double got = ir::isFloat(op.results[r]->type.dtype) ? out[r].f32[static_cast<size_t>(i)]
                                                                  : out[r].i32[static_cast<size_t>(i)];
        if (std::abs(got - want) > 1e-5 + 2e-4 * std::abs(want)) {
          ADD_FAILURE() << name << " -> " << op.results[r]->name << "[" << i << "]: " << got << ", reference " << want;
          return false; // one mismatch says enough
        }
      }
    }
    return true;
  });
}

// Runs every op of `graph` (but its leaves) with its float operands and results stored in bf16
// and again in f32 on the same (widened) values; each bf16 result must be the f32 one rounded,
// bit for bit. Returns the op kinds checked.
std::set<std::string> checkEveryOpInBf16(const ir::Graph &graph, int64_t vocab) {
  return forEachOp(graph, vocab, 13, [](const ir::Op &op, const std::string &name, const Values &values) {
    // Each float tensor twice: bf16 storage, and its values widened to f32.
    std::vector<std::vector<uint16_t>> narrow;
    std::vector<Storage> wide;
    std::vector<runtime::TensorView> in16, in32, out16, out32;
    narrow.reserve(op.operands.size() + op.results.size());
    wide.reserve(op.operands.size() + op.results.size());
    auto add = [&](const ir::Value &value, const Tensor &t, std::vector<runtime::TensorView> &v16,
                   std::vector<runtime::TensorView> &v32) {
      wide.push_back(store(value, t));
      Storage &s = wide.back();
      if (!ir::isFloat(value.type.dtype)) {
        v16.push_back(s.view);
        v32.push_back(s.view);
        return;
      }
      narrow.emplace_back(s.f32.size());
      runtime::narrowToBf16(s.f32.data(), narrow.back().data(), static_cast<int64_t>(s.f32.size()));
      runtime::widenBf16(narrow.back().data(), s.f32.data(), static_cast<int64_t>(s.f32.size()));
      v16.push_back(runtime::TensorView{narrow.back().data(), ir::DType::BF16, t.shape});
      v32.push_back(s.view);
    };
    for (const ir::Value *operand : op.operands)
      add(*operand, values.at(operand), in16, in32);
    for (const ir::Value *result : op.results) {
      const Tensor &t = values.at(result);
      add(*result, Tensor{t.shape, std::vector<double>(static_cast<size_t>(t.size()), 0.0)}, out16, out32);
    }
    runtime::runKernel(name, op.attrs, in16, out16);
    runtime::runKernel(name, op.attrs, in32, out32);
    for (size_t r = 0; r < op.results.size(); ++r) {
      if (out16[r].dtype != ir::DType::BF16)
        continue;
      const auto *got = static_cast<const uint16_t *>(out16[r].data);
      for (int64_t i = 0; i < out32[r].numel(); ++i)
        if (got[i] != runtime::toBf16(out32[r].f32()[i])) {
          ADD_FAILURE() << name << " -> " << op.results[r]->name << "[" << i << "]: bf16 " << runtime::fromBf16(got[i])
                        << ", f32 " << out32[r].f32()[i];
          return false;
        }
    }
    return true;
  });
}

} // namespace

TEST(Kernels, EveryOpOfATinyGptMatchesTheReference) {
  hspmd::testing::Compiled c;
  auto graph = trainingGraph(c, hspmd::testing::kTinyGpt);
  ASSERT_TRUE(graph);
  const auto checked = checkEveryOp(*graph, 11);
  for (const char *kind : {"matmul", "attention", "attention_grad", "rmsnorm", "rmsnorm_grad", "gelu", "gelu_grad",
                           "embedding", "embedding_grad", "cross_entropy", "cross_entropy_grad", "transpose"})
    EXPECT_TRUE(checked.count(kind)) << kind << " was not checked";
  std::printf("%zu kernels checked against the reference\n", checked.size());
}

TEST(Kernels, EveryOpOfATinyLlamaMatchesTheReference) {
  hspmd::testing::Compiled c;
  auto graph = trainingGraph(c, hspmd::testing::kTinyLlama);
  ASSERT_TRUE(graph);
  const auto checked = checkEveryOp(*graph, 7);
  for (const char *kind : {"silu", "silu_grad", "attention", "attention_grad", "mul"})
    EXPECT_TRUE(checked.count(kind)) << kind << " was not checked";
}

// The ops neither model uses: layer norm, ReLU, softmax, sums and means, split, concat and
// slice, division and negation, with their gradients.
TEST(Kernels, TheOtherOpsMatchTheReference) {
  hspmd::testing::Compiled c;
  auto graph = trainingGraph(c, hspmd::testing::kOtherOps);
  ASSERT_TRUE(graph);
  const auto checked = checkEveryOp(*graph, 1);
  for (const char *kind : {"layernorm", "layernorm_grad", "relu", "relu_grad", "softmax", "split", "concat", "slice",
                           "div", "neg", "sum", "mean", "sub"})
    EXPECT_TRUE(checked.count(kind)) << kind << " was not checked";
}

// Every op kind but the leaves and reshards (which the compiler lowers to communication) has a
// CPU kernel under its name.
TEST(Kernels, EveryOpKindHasAKernel) {
  const std::vector<std::string> names = runtime::kernelNames();
  const std::set<std::string> known(names.begin(), names.end());
  for (const ir::OpInfo &info : ir::allOps()) {
    if (info.kind == ir::OpKind::Param || info.kind == ir::OpKind::Input || info.kind == ir::OpKind::Constant ||
        info.kind == ir::OpKind::Reshard)
      continue;
    EXPECT_TRUE(known.count(std::string(info.name))) << info.name << " has no CPU kernel";
  }
}

// AdamW (decoupled weight decay, bias-corrected moments) and SGD with momentum at step 3,
// written out element by element.
TEST(Kernels, OptimizersFollowTheirFormulas) {
  const std::vector<float> w0 = {0.5f, -1.0f, 2.0f}, g = {0.1f, -0.3f, 0.05f}, m0 = {0.01f, 0.02f, -0.03f},
                           v0 = {0.001f, 0.002f, 0.0005f};
  std::vector<float> w = w0, m = m0, v = v0;
  auto view = [](std::vector<float> &data) {
    return runtime::TensorView{data.data(), ir::DType::F32, {static_cast<int64_t>(data.size())}};
  };
  std::vector<float> grad = g;
  const double lr = 1e-2, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
  const ir::AttrMap attrs = {{"lr", lr}, {"beta1", b1}, {"beta2", b2}, {"eps", eps}, {"weight_decay", wd}};
  std::vector<runtime::TensorView> in = {view(w), view(grad), view(m), view(v)}, out = {view(w)};
  runtime::runKernel("adamw", attrs, in, out, runtime::KernelContext{3});
  for (size_t i = 0; i < w0.size(); ++i) {
    const double mi = b1 * m0[i] + (1 - b1) * g[i], vi = b2 * v0[i] + (1 - b2) * g[i] * g[i];
    const double mhat = mi / (1 - std::pow(b1, 3)), vhat = vi / (1 - std::pow(b2, 3));
    const double want = w0[i] - lr * (mhat / (std::sqrt(vhat) + eps) + wd * w0[i]);
    EXPECT_NEAR(m[i], mi, 1e-7);
    EXPECT_NEAR(v[i], vi, 1e-7);
    EXPECT_NEAR(w[i], want, 1e-6) << i;
  }
  // SGD with momentum 0.9 and weight decay at step 3: the momentum buffer accumulates the
  // decayed gradient, the weight moves against it.
  std::vector<float> p = w0, mom = m0;
  std::vector<runtime::TensorView> sgdIn = {view(p), view(grad), view(mom)}, sgdOut = {view(p)};
  runtime::runKernel("sgd", {{"lr", lr}, {"momentum", 0.9}, {"weight_decay", wd}}, sgdIn, sgdOut,
                     runtime::KernelContext{3});
  for (size_t i = 0; i < w0.size(); ++i) {
    const double momentum = 0.9 * m0[i] + (g[i] + wd * w0[i]);
    EXPECT_NEAR(mom[i], momentum, 1e-7);
    EXPECT_NEAR(p[i], w0[i] - lr * momentum, 1e-7) << i;
  }
}

// bf16 storage (--precision bf16): rounding to the nearest, ties to even, as CUDA's
// __float2bfloat16; every op of a tiny GPT and LLaMA computes on bf16 tensors what it computes
// in f32 on their values, rounded; bf16 messages add in float, rounded at each addition.
TEST(Kernels, Bf16RoundsToNearestEven) {
  auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  auto of = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  EXPECT_EQ(runtime::toBf16(1.0f), 0x3F80);
  EXPECT_EQ(runtime::toBf16(of(0x3F808000)), 0x3F80); // a tie: down to the even 0x3F80
  EXPECT_EQ(runtime::toBf16(of(0x3F818000)), 0x3F82); // a tie: up to the even 0x3F82
  EXPECT_EQ(runtime::toBf16(of(0x3F808001)), 0x3F81); // above the tie: up
  EXPECT_EQ(runtime::toBf16(-2.0f), 0xC000);
  EXPECT_EQ(runtime::toBf16(of(0x7F7FFFFF)), 0x7F80); // the largest float rounds to infinity
  EXPECT_EQ(runtime::toBf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_TRUE(std::isnan(runtime::fromBf16(runtime::toBf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(runtime::fromBf16(runtime::toBf16(of(0x7F800001))))); // a NaN that would round to inf
  EXPECT_EQ(bits(runtime::fromBf16(0x3F82)), 0x3F820000u);
}

TEST(Kernels, EveryOpOnBf16IsItsF32ResultRounded) {
  hspmd::testing::Compiled gpt, llama;
  auto gptGraph = trainingGraph(gpt, hspmd::testing::kTinyGpt),
       llamaGraph = trainingGraph(llama, hspmd::testing::kTinyLlama);
  ASSERT_TRUE(gptGraph && llamaGraph);
  auto checked = checkEveryOpInBf16(*gptGraph, 11);
  checked.merge(checkEveryOpInBf16(*llamaGraph, 7));
  for (const char *kind : {"matmul", "attention", "attention_grad", "rmsnorm", "rmsnorm_grad", "embedding_grad",
                           "cross_entropy", "cross_entropy_grad", "transpose", "gelu_grad", "silu", "mul"})
    EXPECT_TRUE(checked.count(kind)) << kind << " was not checked";
}

TEST(Kernels, Bf16BoxesAddInFloatAndRound) {
  const std::vector<float> a = {1.0f, 3.0f, 1e-3f, -2.5f}, b = {1.0f / 256, 5.0f, 1000.0f, 2.5f};
  std::vector<uint16_t> x(4), y(4);
  runtime::narrowToBf16(a.data(), x.data(), 4);
  runtime::narrowToBf16(b.data(), y.data(), 4);
  runtime::copyBox(2, x.data(), {2, 2}, {0, 0}, y.data(), {2, 2}, {0, 0}, {2, 2}, true);
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(y[i],
              runtime::toBf16(runtime::fromBf16(runtime::toBf16(a[i])) + runtime::fromBf16(runtime::toBf16(b[i]))))
        << i;
  EXPECT_EQ(runtime::fromBf16(y[0]), 1.0f); // 1 + 1/256 is not a bf16: the tie rounds to even, 1
  EXPECT_EQ(runtime::fromBf16(y[1]), 8.0f);
  EXPECT_EQ(runtime::fromBf16(y[3]), 0.0f);
}
