// Elaboration: models into graphs with the right parameters, shapes and names; plans into
// PlanSpecs; and every elaborated graph survives a trip through the textual IR.
#include "TestSupport.h"

#include <gtest/gtest.h>

#include <filesystem>

using hspmd::testing::Compiled;
using namespace hspmd;

namespace {

std::unique_ptr<ir::Graph> elaborateFile(Compiled &c, const std::string &file, const std::string &model) {
  const frontend::FileAst *ast = c.compilation.load(file);
  EXPECT_TRUE(ast) << ::testing::PrintToString(c.messages(file));
  const frontend::ModuleDecl *decl = c.compilation.findModule(model);
  EXPECT_TRUE(decl);
  if (!ast || !decl)
    return nullptr;
  auto graph = c.compilation.elaborate(*decl);
  EXPECT_TRUE(graph) << ::testing::PrintToString(c.messages(file));
  return graph;
}

std::unique_ptr<ir::Graph> elaborateText(Compiled &c, const std::string &text, const std::string &model) {
  const frontend::FileAst *ast = c.compilation.loadText("t.hspmd", text);
  EXPECT_TRUE(ast) << ::testing::PrintToString(c.messages("t.hspmd"));
  const frontend::ModuleDecl *decl = c.compilation.findModule(model);
  if (!ast || !decl)
    return nullptr;
  auto graph = c.compilation.elaborate(*decl);
  EXPECT_TRUE(graph) << ::testing::PrintToString(c.messages("t.hspmd"));
  return graph;
}

std::string typeOf(const ir::Graph &graph, const std::string &name) {
  const ir::Value *value = graph.findValue(name);
  return value ? value->type.str() : "missing " + name;
}

TEST(Elaboration, The32BModelHas64BlocksWithTheRightShapes) {
  Compiled c;
  auto graph = elaborateFile(c, "examples/llama/llama32b.hspmd", "Llama32B");
  ASSERT_TRUE(graph);
  EXPECT_EQ(typeOf(*graph, "embed"), "f32[152064, 5120]");
  EXPECT_EQ(typeOf(*graph, "head"), "f32[5120, 152064]");
  EXPECT_EQ(typeOf(*graph, "blocks[0].attn.wq"), "f32[5120, 5120]");
  EXPECT_EQ(typeOf(*graph, "blocks[63].attn.wk"), "f32[5120, 1024]"); // 8 KV heads of 128
  EXPECT_EQ(typeOf(*graph, "blocks[63].mlp.w1"), "f32[5120, 27648]");
  EXPECT_EQ(typeOf(*graph, "blocks[63].mlp.w2"), "f32[27648, 5120]");
  EXPECT_EQ(typeOf(*graph, "blocks[31].attn_norm.weight"), "f32[5120]");
  EXPECT_EQ(graph->findValue("blocks[64].attn.wq"), nullptr);
  // Parameter count, computed by hand: per block 2*5120^2 + 2*5120*1024 + 3*5120*27648 + 2*5120.
  int64_t total = 0;
  for (const ir::Value *param : graph->params())
    total += *param->type.numElements().constant();
  const int64_t perBlock = 2LL * 5120 * 5120 + 2LL * 5120 * 1024 + 3LL * 5120 * 27648 + 2 * 5120;
  EXPECT_EQ(total, 64 * perBlock + 2LL * 152064 * 5120 + 5120);
  EXPECT_EQ(graph->params().size(), 64u * 9 + 3);
  EXPECT_EQ(graph->symbols, (std::vector<std::string>{"B", "S"}));
  EXPECT_EQ(typeOf(*graph, "tokens"), "i32[B, S]");
  ASSERT_EQ(graph->outputs.size(), 1u);
  EXPECT_EQ(graph->outputs[0]->type.str(), "f32[]");
  EXPECT_EQ(typeOf(*graph, "blocks[5].attn.forward.q"), "f32[B, S, 40, 128]");
  EXPECT_EQ(typeOf(*graph, "blocks[5].attn.forward.k"), "f32[B, S, 8, 128]");
}

TEST(Elaboration, LlamaSizes) {
  Compiled c;
  auto seven = elaborateFile(c, "examples/llama/llama2_7b.hspmd", "Llama2_7B");
  ASSERT_TRUE(seven);
  EXPECT_EQ(typeOf(*seven, "blocks[31].mlp.w3"), "f32[4096, 11008]");
  EXPECT_EQ(seven->findValue("blocks[32].mlp.w3"), nullptr);
  Compiled d;
  auto thirteen = elaborateFile(d, "examples/llama/llama2_13b.hspmd", "Llama2_13B");
  ASSERT_TRUE(thirteen);
  EXPECT_EQ(typeOf(*thirteen, "blocks[39].attn.wv"), "f32[5120, 5120]");
  EXPECT_EQ(typeOf(*thirteen, "embed"), "f32[32000, 5120]");
}

TEST(Elaboration, NamesFollowInstancePathsAndLets) {
  Compiled c;
  auto graph = elaborateFile(c, "examples/gpt/tiny_gpt.hspmd", "TinyGPT");
  ASSERT_TRUE(graph);
  EXPECT_EQ(typeOf(*graph, "blocks[2].forward.h"), "f32[B, S, 64]");
  EXPECT_EQ(typeOf(*graph, "blocks[2].forward.qkv"), "f32[B, S, 4, 3, 16]");
  EXPECT_EQ(typeOf(*graph, "blocks[0].forward.v"), "f32[B, S, 4, 16]");
  EXPECT_EQ(typeOf(*graph, "forward.x"), "f32[B, S, 64]");
  // Every op carries a source location.
  for (const auto &op : graph->ops())
    EXPECT_TRUE(op->loc.isKnown()) << ir::printOp(*op);
}

TEST(Elaboration, StacksSlicesShadowingAndScalars) {
  Compiled c;
  auto graph = elaborateText(c, R"(
layer Scale(d: int, by: float) {
  param w = ones[d]
  fn forward(x: f32[B, d]) -> f32[B, d] {
    let y = x * w
    let y = y * by
    return y
  }
}
model M(d: int = 4, n: int = 2 + 2) {
  layer layers = Scale(d, 0.5) * n
  fn forward(x: f32[B, d]) -> f32[B, d] {
    let a = layers[1:3](x)
    return layers[0](a) - 1
  }
})",
                             "M");
  ASSERT_TRUE(graph);
  EXPECT_EQ(graph->params().size(), 4u);
  EXPECT_TRUE(graph->findValue("layers[1].forward.y"));
  EXPECT_TRUE(graph->findValue("layers[1].forward.y.1")); // the shadowing let
  EXPECT_TRUE(graph->findValue("layers[2].forward.y.1"));
  EXPECT_FALSE(graph->findValue("layers[3].forward.y")); // sliced out
  EXPECT_TRUE(graph->findValue("layers[0].forward.y.1"));
  const ir::Op &last = *graph->outputs[0]->def;
  EXPECT_EQ(last.kind, ir::OpKind::Sub);
  EXPECT_EQ(last.operands[1]->def->kind, ir::OpKind::Constant);
  EXPECT_EQ(ir::floatAttr(last.operands[1]->def->attrs, "value"), 1.0);
}

TEST(Elaboration, BuiltinsAndShapes) {
  Compiled c;
  auto graph = elaborateText(c, R"(
model M(d: int = 6) {
  param w = normal[d, 2 * d](std = 0.1, mean = 0)
  fn forward(x: f32[B, S, d], ids: i32[B, S]) -> f32[] {
    let y = x @ w
    let a, b = split(y, [d, d], dim = -1)
    let c = concat([a, b, a], dim = 2)
    let r = reshape(c, [B, -1, d])
    let t = transpose(r)
    let s = slice(t, dim = 2, start = 1, end = 3)
    let m = mean(softmax(s), dim = [0, 1], keepdim = true)
    let z = sum(relu(r) + silu(r) / gelu(r))
    return cross_entropy(c, ids) + sum(m) + z
  }
})",
                             "M");
  ASSERT_TRUE(graph);
  EXPECT_EQ(typeOf(*graph, "forward.a"), "f32[B, S, 6]");
  EXPECT_EQ(typeOf(*graph, "forward.c"), "f32[B, S, 18]");
  EXPECT_EQ(typeOf(*graph, "forward.r"), "f32[B, 3*S, 6]");
  EXPECT_EQ(typeOf(*graph, "forward.t"), "f32[B, 6, 3*S]");
  EXPECT_EQ(typeOf(*graph, "forward.s"), "f32[B, 6, 2]");
  EXPECT_EQ(typeOf(*graph, "forward.m"), "f32[1, 1, 2]");
  EXPECT_EQ(typeOf(*graph, "forward.z"), "f32[]");
  EXPECT_EQ(ir::floatAttr(graph->findValue("w")->def->attrs, "std"), 0.1);
}

// docs/language.md: cross_entropy is a mean -> f32[] whatever its logits' type (it used to
// take the logits' type, and a bf16 model's loss was bf16).
TEST(Elaboration, CrossEntropyOfBf16LogitsIsAnF32Loss) {
  Compiled c;
  auto graph = elaborateText(c, R"(
model M(d: int = 4) {
  fn forward(x: bf16[B, S, d], ids: i32[B, S]) -> f32[] {
    let loss = cross_entropy(x, ids)
    return loss
  }
})",
                             "M");
  ASSERT_TRUE(graph);
  EXPECT_EQ(typeOf(*graph, "forward.loss"), "f32[]");
}

TEST(Elaboration, PlanBindsArgumentsSymbolsAndAnnotations) {
  Compiled c;
  const frontend::FileAst *plan = c.compilation.load("examples/gpt/plans/raw_annotations.hspmd");
  ASSERT_TRUE(plan);
  auto elaborated = c.compilation.elaboratePlan(*plan->plans.at(0));
  ASSERT_TRUE(elaborated) << ::testing::PrintToString(c.messages(""));
  const ir::Graph &graph = *elaborated->graph;
  EXPECT_TRUE(graph.symbols.empty());
  EXPECT_EQ(typeOf(graph, "tokens"), "i32[8, 64]");
  EXPECT_EQ(elaborated->spec.bindings, (std::map<std::string, int64_t>{{"B", 8}, {"S", 64}}));
  // blocks[*].wqkv on 8 blocks, blocks[*].wo on 8, tokens, targets.
  EXPECT_EQ(elaborated->spec.annotations.size(), 18u);
  EXPECT_EQ(ir::printAnnotation(*graph.findValue("blocks[3].wqkv")->annotations.at(0)),
            "{ [0, 1]: S1 | [2, 3]: S1 } dup");
  EXPECT_FALSE(graph.findValue("blocks[3].w1")->annotations.at(0).has_value());
  ASSERT_EQ(elaborated->spec.reshards.size(), 1u);
  EXPECT_EQ(elaborated->spec.reshards[0].value, "blocks[2].forward.h");
  EXPECT_EQ(elaborated->spec.clusterPath, "examples/clusters/cpu4.toml");
}

TEST(Elaboration, PlanSugarIsResolved) {
  Compiled c;
  const frontend::FileAst *plan = c.compilation.load("examples/gpt/plans/hetero4.hspmd");
  ASSERT_TRUE(plan);
  auto elaborated = c.compilation.elaboratePlan(*plan->plans.at(0));
  ASSERT_TRUE(elaborated);
  const ir::PlanSpec &spec = elaborated->spec;
  ASSERT_EQ(spec.pipelines.size(), 2u);
  EXPECT_EQ(spec.pipelines[0].name, "tensor");
  EXPECT_EQ(spec.pipelines[0].share, 1);
  EXPECT_EQ(spec.pipelines[0].microbatches, 2);
  const ir::StageSpec &fast = spec.pipelines[0].stages.at(0);
  EXPECT_EQ(fast.devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(fast.tp, 2);
  EXPECT_EQ(fast.stack, "blocks");
  EXPECT_EQ(fast.layerBegin, 0);
  EXPECT_EQ(fast.layerEnd, 8);
  EXPECT_EQ(fast.extraParams, (std::vector<std::string>{"wte", "lnf"}));
  ASSERT_EQ(spec.pipelines[1].stages.size(), 2u);
  EXPECT_EQ(spec.pipelines[1].stages[1].layerBegin, 4);
  EXPECT_EQ(spec.optimizer, "adamw");
  EXPECT_EQ(spec.optimizerArgs.at("lr"), 1e-3);
  EXPECT_EQ(spec.schedule, "1f1b");
}

TEST(Elaboration, AliasArgumentsAreOverriddenByPlans) {
  Compiled c;
  // Imports resolve against the importing file's folder, here the working folder.
  const frontend::FileAst *ast = c.compilation.loadText(
      "t.hspmd",
      "import \"examples/gpt/tiny_gpt.hspmd\"\nplan p for TinyGPT(layers = 2, d = 32) {\n  bind B = 4, S = 16\n}\n");
  ASSERT_TRUE(ast);
  auto elaborated = c.compilation.elaboratePlan(*ast->plans.at(0));
  ASSERT_TRUE(elaborated) << ::testing::PrintToString(c.messages("t.hspmd"));
  const ir::Graph &graph = *elaborated->graph;
  EXPECT_EQ(typeOf(graph, "wte"), "f32[256, 32]");          // d overridden, vocab from the alias
  EXPECT_EQ(typeOf(graph, "blocks[0].w1"), "f32[32, 256]"); // ffn = 256 from the alias
  EXPECT_TRUE(graph.findValue("blocks[1].wqkv"));
  EXPECT_FALSE(graph.findValue("blocks[2].wqkv"));
  EXPECT_EQ(typeOf(graph, "tokens"), "i32[4, 16]");
  EXPECT_TRUE(graph.symbols.empty());
}

// Every model and plan of the examples survives print -> parse -> print unchanged.
TEST(Elaboration, EveryExampleGraphRoundTripsThroughText) {
  namespace fs = std::filesystem;
  int graphs = 0;
  for (const auto &entry : fs::recursive_directory_iterator("examples")) {
    if (entry.path().extension() != ".hspmd")
      continue;
    Compiled c;
    const frontend::FileAst *ast = c.compilation.load(entry.path().string());
    ASSERT_TRUE(ast) << entry.path();
    std::vector<std::unique_ptr<ir::Graph>> built;
    for (const auto &module : ast->modules)
      if (module->isModel)
        built.push_back(c.compilation.elaborate(*module));
    for (const auto &plan : ast->plans)
      if (auto elaborated = c.compilation.elaboratePlan(*plan))
        built.push_back(std::move(elaborated->graph));
    for (const auto &graph : built) {
      ASSERT_TRUE(graph) << entry.path() << ::testing::PrintToString(c.messages(""));
      std::string text = ir::printGraph(*graph);
      ir::ParseError error;
      auto reparsed = ir::parseGraph(text, &error);
      ASSERT_TRUE(reparsed) << entry.path() << ": " << error.str();
      EXPECT_EQ(ir::printGraph(*reparsed), text) << entry.path();
      ++graphs;
    }
  }
  EXPECT_GE(graphs, 15);
}

} // namespace
