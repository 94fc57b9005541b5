// The CPU kernels against a naive reference: every op of a tiny GPT and a tiny LLaMA (grouped
// key/value heads), forward and backward, run once through runKernel on the reference
// evaluator's inputs (tests/unit/support/ReferenceEvaluator: one plain loop nest per op, in
// double precision) and compared with the reference's outputs. The optimizer kernels against
// the AdamW and SGD formulas written out here.
#include "runtime/Kernels.h"

#include "../support/ReferenceEvaluator.h"
#include "../support/TinyModels.h"

#include <gtest/gtest.h>

#include <cmath>
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

// Runs every op of `graph` (but its leaves) as a kernel on the reference's inputs; returns the
// op kinds checked.
std::set<std::string> checkEveryOp(const ir::Graph &graph, int64_t vocab) {
  std::mt19937 rng(11);
  const auto leaves = hspmd::testing::randomLeaves(graph, rng, vocab);
  const auto values = hspmd::testing::evaluate(graph, leaves);
  std::set<std::string> checked;
  for (const auto &op : graph.ops()) {
    if (op->kind == ir::OpKind::Param || op->kind == ir::OpKind::Input || op->kind == ir::OpKind::Constant)
      continue;
    const std::string name(ir::opInfo(op->kind).name);
    std::vector<Storage> in, out;
    for (const ir::Value *operand : op->operands)
      in.push_back(store(*operand, values.at(operand)));
    for (const ir::Value *result : op->results) {
      Tensor zeros{values.at(result).shape, std::vector<double>(static_cast<size_t>(values.at(result).size()), 0.0)};
      out.push_back(store(*result, zeros));
    }
    std::vector<runtime::TensorView> inViews, outViews;
    for (const Storage &s : in)
      inViews.push_back(s.view);
    for (const Storage &s : out)
      outViews.push_back(s.view);
    runtime::runKernel(name, op->attrs, inViews, outViews);
    for (size_t r = 0; r < op->results.size(); ++r) {
      const Tensor &expected = values.at(op->results[r]);
      for (int64_t i = 0; i < expected.size(); ++i) {
        const double want = expected.data[static_cast<size_t>(i)];
        const double got = ir::isFloat(op->results[r]->type.dtype) ? out[r].f32[static_cast<size_t>(i)]
                                                                   : out[r].i32[static_cast<size_t>(i)];
        if (std::abs(got - want) > 1e-5 + 2e-4 * std::abs(want)) {
          ADD_FAILURE() << name << " -> " << op->results[r]->name << "[" << i << "]: " << got << ", reference " << want;
          return checked; // one mismatch says enough
        }
      }
    }
    checked.insert(name);
  }
  return checked;
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
