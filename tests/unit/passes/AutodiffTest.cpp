// The autodiff pass, checked numerically: gradients evaluated by the reference evaluator
// against central finite differences of the loss, on small shapes, in double precision.
#include "passes/Autodiff.h"

#include "../frontend/TestSupport.h"
#include "../support/ReferenceEvaluator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace hspmd;
using hspmd::testing::Tensor;

namespace {

// Differentiates graph.outputs[0] and compares every parameter's gradient, at up to
// `samples` elements each, with finite differences. Returns the number of elements checked.
int checkGradients(ir::Graph &graph, int64_t vocab, int samples = 6) {
  std::mt19937 rng(5);
  auto leaves = hspmd::testing::randomLeaves(graph, rng, vocab);
  ir::Value *loss = graph.outputs.at(0);
  auto grads = passes::buildGradients(graph, loss);
  EXPECT_TRUE(ir::verifyGraph(graph, [](const ir::Location &, const std::string &m) { ADD_FAILURE() << m; }));
  auto values = hspmd::testing::evaluate(graph, leaves);
  int checked = 0;
  for (const ir::Value *param : graph.params()) {
    auto found = grads.params.find(param->name);
    if (found == grads.params.end()) {
      ADD_FAILURE() << "no gradient for " << param->name;
      continue;
    }
    const Tensor &analytic = values.at(found->second);
    EXPECT_EQ(analytic.shape, leaves.at(param->name).shape) << param->name;
    const int64_t n = analytic.size();
    for (int s = 0; s < samples && s < n; ++s) {
      const int64_t at = (s * 7919) % n;
      const double h = 1e-6;
      auto plus = leaves, minus = leaves;
      plus[param->name].data[at] += h;
      minus[param->name].data[at] -= h;
      const double numeric = (hspmd::testing::evaluate(graph, plus).at(loss).data[0] -
                              hspmd::testing::evaluate(graph, minus).at(loss).data[0]) /
                             (2 * h);
      const double got = analytic.data[at];
      EXPECT_NEAR(got, numeric, 1e-6 * std::max(1.0, std::abs(numeric))) << param->name << "[" << at << "]";
      ++checked;
    }
  }
  return checked;
}

std::unique_ptr<ir::Graph> elaborate(hspmd::testing::Compiled &c, const std::string &text, const std::string &model,
                                     const std::map<std::string, int64_t> &bindings) {
  const frontend::FileAst *ast = c.compilation.loadText("t.hspmd", text);
  EXPECT_TRUE(ast) << ::testing::PrintToString(c.messages("t.hspmd"));
  auto graph = ast ? c.compilation.elaborate(*c.compilation.findModule(model), {}, bindings) : nullptr;
  EXPECT_TRUE(graph) << ::testing::PrintToString(c.messages("t.hspmd"));
  return graph;
}

TEST(Autodiff, TinyGptMatchesFiniteDifferences) {
  hspmd::testing::Compiled c;
  auto graph = elaborate(c, "import \"nn\"\nmodel T = GPT(vocab = 11, d = 8, heads = 2, layers = 2, ffn = 12)\n", "T",
                         {{"B", 2}, {"S", 3}});
  ASSERT_TRUE(graph);
  EXPECT_GE(checkGradients(*graph, 11), 60);
  // The tied embedding gets one gradient, summed from the lookup and the output projection.
  EXPECT_TRUE(graph->findValue("grad.wte"));
  // The backward graph round-trips through the textual IR.
  const std::string text = ir::printGraph(*graph);
  ir::ParseError error;
  auto reparsed = ir::parseGraph(text, &error);
  ASSERT_TRUE(reparsed) << error.str();
  EXPECT_EQ(ir::printGraph(*reparsed), text);
}

TEST(Autodiff, TinyLlamaWithGroupedQueryAttention) {
  hspmd::testing::Compiled c;
  auto graph =
      elaborate(c, "import \"nn\"\nmodel T = LLaMA(vocab = 7, d = 8, heads = 4, kv_heads = 2, layers = 1, ffn = 6)\n",
                "T", {{"B", 2}, {"S", 3}});
  ASSERT_TRUE(graph);
  EXPECT_GE(checkGradients(*graph, 7), 40);
}

// Op families the models above do not use, each behind a scalar loss sum(y * r).
TEST(Autodiff, EveryOpFamily) {
  const char *bodies[] = {
      // layernorm, softmax, division and subtraction with broadcasting
      ("%x = param : f32[3, 4]\n%w = param : f32[4]\n%b = param : f32[4]\n"
       "%y0 = layernorm %x, %w, %b {eps = 1e-05} : f32[3, 4]\n%y1 = softmax %y0 {dim = 0} : f32[3, 4]\n"
       "%d = param : f32[4]\n%y2 = div %y1, %d : f32[3, 4]\n%y = sub %y2, %x : f32[3, 4]"),
      // relu, silu, neg, transpose, broadcast multiply
      ("%x = param : f32[3, 4]\n%a = relu %x : f32[3, 4]\n%b = silu %a : f32[3, 4]\n%c = neg %b : f32[3, 4]\n"
       "%s = param : f32[3, 1]\n%m = mul %c, %s : f32[3, 4]\n%t = transpose %m {dim0 = 0, dim1 = 1} : f32[4, 3]\n"
       "%y = transpose %t {dim0 = 0, dim1 = 1} : f32[3, 4]"),
      // split, concat, slice, unbind, sums and means
      ("%x = param : f32[3, 6]\n%p, %q = split %x {dim = 1, sizes = [2, 4]} : f32[3, 2], f32[3, 4]\n"
       "%c = concat %q, %p {dim = 1} : f32[3, 6]\n%s = slice %c {dim = 1, end = 5, start = 1} : f32[3, 4]\n"
       "%u0, %u1, %u2 = unbind %s {dim = 0} : f32[4], f32[4], f32[4]\n%m = mean %x {dims = [1], keepdim = true} : "
       "f32[3, 1]\n"
       "%z = add %s, %m : f32[3, 4]\n%w = mul %z, %u1 : f32[3, 4]\n%y = sum %w {dims = [], keepdim = true} : f32[1, "
       "1]"),
      // batched matmul with a broadcast weight, and a reshape
      ("%a = param : f32[2, 3, 4]\n%b = param : f32[4, 5]\n%c = matmul %a, %b : f32[2, 3, 5]\n"
       "%y = reshape %c {shape = [6, 5]} : f32[6, 5]"),
  };
  for (const char *body : bodies) {
    ir::ParseError error;
    auto graph = ir::parseGraph(std::string("graph G {\n") + body + "\n}\n", &error);
    ASSERT_TRUE(graph) << error.str() << body;
    // loss = sum(y * r) with a fixed random r
    ir::Value *y = graph->ops().back()->result();
    ir::Op *r = graph->createOp(ir::OpKind::Param, {}, {y->type}, {}, {}, {"r"});
    ir::Op *prod = graph->createOp(ir::OpKind::Mul, {y, r->result()}, {y->type}, {}, {});
    ir::Op *loss = graph->createOp(ir::OpKind::Sum, {prod->result()}, {ir::TensorType{ir::DType::F32, {}}},
                                   {{"dims", std::vector<ir::SymExpr>{}}, {"keepdim", false}}, {});
    graph->outputs = {loss->result()};
    EXPECT_GT(checkGradients(*graph, 1), 0) << body;
  }
}

TEST(Autodiff, UnusedParametersGetNoGradient) {
  ir::ParseError error;
  auto graph = ir::parseGraph("graph G {\n%a = param : f32[2]\n%b = param : f32[2]\n"
                              "%l = sum %a {dims = [], keepdim = false} : f32[]\nreturn %l\n}\n",
                              &error);
  ASSERT_TRUE(graph);
  auto grads = passes::buildGradients(*graph, graph->outputs[0]);
  EXPECT_TRUE(grads.params.count("a"));
  EXPECT_FALSE(grads.params.count("b"));
}

} // namespace

// The loss is token-weighted: a device's cross_entropy divides its local sum by the global
// token count (the `tokens` attribute specialize sets), so the pieces of pipelines holding
// unequal numbers of tokens (here 6 and 2 of 8) add up to the exact global mean, for the
// loss and its gradient. Dividing by the local count would not.
TEST(Autodiff, TokenWeightedLossPiecesAddUpToTheMean) {
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  Tensor logits{{8, 5}, {}}, targets{{8}, {}}, one{{}, {1.0}};
  for (int i = 0; i < 40; ++i)
    logits.data.push_back(normal(rng));
  for (int i = 0; i < 8; ++i)
    targets.data.push_back(static_cast<double>((i * 3) % 5));
  auto run = [&](int64_t rows, int64_t from, const std::string &attrs) {
    const std::string n = std::to_string(rows);
    ir::ParseError error;
    auto graph = ir::parseGraph("graph G {\n%l = param : f32[" + n + ", 5]\n%t = input : i32[" + n +
                                    "]\n%d = param : f32[]\n%y = cross_entropy %l, %t " + attrs +
                                    ": f32[]\n%g = cross_entropy_grad %l, %t, %d " + attrs + ": f32[" + n + ", 5]\n}\n",
                                &error);
    EXPECT_TRUE(graph) << error.str();
    Tensor l{{rows, 5}, {}}, t{{rows}, {}};
    l.data.assign(logits.data.begin() + from * 5, logits.data.begin() + (from + rows) * 5);
    t.data.assign(targets.data.begin() + from, targets.data.begin() + from + rows);
    auto values = hspmd::testing::evaluate(*graph, {{"l", l}, {"t", t}, {"d", one}});
    const auto &ops = graph->ops();
    return std::make_pair(values.at(ops[ops.size() - 2]->result()), values.at(ops.back()->result()));
  };
  const auto [loss, grad] = run(8, 0, "");
  const auto [loss6, grad6] = run(6, 0, "{tokens = 8} ");
  const auto [loss2, grad2] = run(2, 6, "{tokens = 8} ");
  EXPECT_NEAR(loss6.data[0] + loss2.data[0], loss.data[0], 1e-12);
  for (int i = 0; i < 40; ++i)
    EXPECT_NEAR(i < 30 ? grad6.data[static_cast<size_t>(i)] : grad2.data[static_cast<size_t>(i - 30)],
                grad.data[static_cast<size_t>(i)], 1e-12);
  const auto [local6, g6] = run(6, 0, "");
  const auto [local2, g2] = run(2, 6, "");
  EXPECT_GT(std::abs(local6.data[0] + local2.data[0] - loss.data[0]), 1e-3) << "local means do not add up";
}
