// TinyModels.h - three tiny models that between them use every op kind (the kernel and op
// coverage tests run them): a GPT, a LLaMA with grouped key/value heads, and a model of the
// remaining ops (layer norm, ReLU, softmax, sums and means, split, concat and slice, division
// and negation). Each is elaborated with B = 2, S = 5 and differentiated.
#pragma once

#include "../frontend/TestSupport.h"
#include "passes/Autodiff.h"

#include <gtest/gtest.h>

namespace hspmd::testing {

inline const char *const kTinyGpt = "GPT(vocab = 11, d = 8, heads = 2, layers = 2, ffn = 12)";
inline const char *const kTinyLlama = "LLaMA(vocab = 7, d = 8, heads = 4, kv_heads = 2, layers = 1, ffn = 6)";
inline const char *const kOtherOps = R"(model T(d: int = 6) {
  param w = normal[d, d](std = 0.5)
  param g = ones[d]
  param b = zeros[d]
  fn forward(x: f32[B, S, d], y: f32[B, S, d]) -> f32[] {
    let h = relu(layernorm(x @ w, g, b))
    let lo, hi = split(h, [d / 2, d / 2], dim = -1)
    let z = concat([hi, -lo], dim = 2) / 3.0
    let p = softmax(z, dim = -1)
    let s = slice(p, 1, 1, 4)
    return mean((s - slice(y, 1, 1, 4)) * (s - slice(y, 1, 1, 4))) + sum(p) * 0.01
  }
}
)";

/// `model` (a stdlib call such as kTinyGpt, or a whole `model T ...` source) elaborated with
/// B = 2, S = 5, with its backward graph appended (`gradients`, when given, receives what
/// autodiff made). Null after a test failure.
inline std::unique_ptr<ir::Graph> trainingGraph(Compiled &c, const std::string &model,
                                                passes::Gradients *gradients = nullptr) {
  const std::string text = model.rfind("model", 0) == 0 ? model : "import \"nn\"\nmodel T = " + model + "\n";
  const frontend::FileAst *ast = c.compilation.loadText("t.hspmd", text);
  EXPECT_TRUE(ast) << ::testing::PrintToString(c.messages("t.hspmd"));
  auto graph = ast ? c.compilation.elaborate(*c.compilation.findModule("T"), {}, {{"B", 2}, {"S", 5}}) : nullptr;
  EXPECT_TRUE(graph) << ::testing::PrintToString(c.messages("t.hspmd"));
  if (graph) {
    passes::Gradients made = passes::buildGradients(*graph, graph->outputs.at(0));
    if (gradients)
      *gradients = std::move(made);
  }
  return graph;
}

} // namespace hspmd::testing
