// The plan printer (ir/PlanText.h) round-trips: every plan of every shipped plan file, printed
// and parsed back, is the same PlanSpec, and elaborating that spec in memory
// (Compilation::elaborateSpec, what the planner's finalists compile through) gives the graph the
// plan file gives.
#include "ir/PlanText.h"

#include "TestSupport.h"
#include "frontend/Parser.h"
#include "ir/Graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>

using namespace hspmd;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> shippedPlanFiles() {
  std::vector<std::string> files;
  for (const auto &entry : fs::recursive_directory_iterator("examples"))
    if (entry.path().extension() == ".hspmd" && entry.path().parent_path().filename() == "plans")
      files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

} // namespace

TEST(PlanText, EveryShippedPlanRoundTrips) {
  int checked = 0;
  for (const std::string &file : shippedPlanFiles()) {
    hspmd::testing::Compiled original;
    const frontend::FileAst *ast = original.compilation.load(file);
    ASSERT_TRUE(ast) << file;
    for (const auto &decl : ast->plans) {
      auto elaborated = original.compilation.elaboratePlan(*decl);
      ASSERT_TRUE(elaborated) << file << ": " << ::testing::PrintToString(original.messages(file));
      const ir::PlanSpec &spec = elaborated->spec;
      // Printed into the plan's own folder (a file that is never written), importing the
      // model's file and naming the cluster as seen from there.
      const fs::path folder = fs::path(file).parent_path();
      const std::string modelFile = original.compilation.findModule(spec.model)->loc.file;
      ir::PlanTextOptions options{"printed", fs::relative(modelFile, folder).string(),
                                  spec.clusterPath.empty() ? "" : fs::relative(spec.clusterPath, folder).string()};
      const std::string text = ir::printPlan(spec, options);
      const std::string printedName = (folder / ("printed_" + decl->name + ".hspmd")).string();

      hspmd::testing::Compiled reread;
      const frontend::FileAst *printed = reread.compilation.loadText(printedName, text);
      ASSERT_TRUE(printed && printed->plans.size() == 1) << text << ::testing::PrintToString(reread.messages(""));
      auto again = reread.compilation.elaboratePlan(*printed->plans[0]);
      ASSERT_TRUE(again) << text << ::testing::PrintToString(reread.messages(printedName));
      EXPECT_TRUE(ir::samePlan(spec, again->spec)) << file << " printed as\n" << text;
      EXPECT_EQ(text, ir::printPlan(again->spec, options)) << file;

      // The spec, elaborated in memory, is the model the file elaborates.
      auto graph = original.compilation.elaborateSpec(spec);
      ASSERT_TRUE(graph) << file << ": " << ::testing::PrintToString(original.messages(file));
      EXPECT_EQ(ir::printGraph(*graph), ir::printGraph(*elaborated->graph)) << file;
      ++checked;
    }
  }
  EXPECT_GE(checked, 28);
}

// What the comparison sees: a change in any part of the plan makes another spec.
TEST(PlanText, SamePlanSeesEveryChange) {
  hspmd::testing::Compiled c;
  const frontend::FileAst *ast = c.compilation.load("examples/llama/plans/tiny_llama_hp_zero_heads.hspmd");
  ASSERT_TRUE(ast);
  auto base = c.compilation.elaboratePlan(*ast->plans.back());
  ASSERT_TRUE(base);
  const ir::PlanSpec &spec = base->spec;
  EXPECT_TRUE(ir::samePlan(spec, spec));
  std::vector<std::function<void(ir::PlanSpec &)>> changes = {
      [](ir::PlanSpec &s) { s.bindings["B"] = 8; },
      [](ir::PlanSpec &s) { s.optimizerArgs["lr"] = 2e-3; },
      [](ir::PlanSpec &s) { s.zero = false; },
      [](ir::PlanSpec &s) { s.bf16 = true; },
      [](ir::PlanSpec &s) { s.zeroReplicas = 2; },
      [](ir::PlanSpec &s) { s.pipelines[0].stages[0].zeroReplicas = 2; },
      [](ir::PlanSpec &s) { s.pipelines[0].microbatches = 4; },
      [](ir::PlanSpec &s) { s.pipelines[0].stages[0].cp[1].value = 25; },
      [](ir::PlanSpec &s) { s.pipelines[0].stages[0].hp[2].devices = {3}; },
      [](ir::PlanSpec &s) { s.pipelines[0].stages[0].layerEnd = 1; },
      [](ir::PlanSpec &s) {
        s.pipelines[0].stages[0].extraParams.pop_back();
        s.pipelines[0].stages[0].with.pop_back();
      },
      [](ir::PlanSpec &s) {
        s.modelArgs.push_back({"layers", int64_t{3}, {}});
      },
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    ir::PlanSpec changed = spec;
    changes[i](changed);
    EXPECT_FALSE(ir::samePlan(spec, changed)) << "change " << i;
    EXPECT_NE(ir::printPlan(spec), ir::printPlan(changed)) << "change " << i;
  }
}

// Numbers print as the shortest text that reads back the same, floats as floats.
TEST(PlanText, NumbersReadBackTheSame) {
  ir::PlanSpec spec;
  spec.name = "p";
  spec.model = "M";
  spec.modelArgs = {{"scale", 2.0, {}}, {"eps", 1e-5, {}}, {"", int64_t{-3}, {}}, {"causal", true, {}}};
  spec.optimizerArgs = {{"lr", 3e-4}, {"beta2", 0.95}, {"weight_decay", 0}};
  EXPECT_EQ(ir::printPlan(spec), "plan p for M(scale = 2.0, eps = 1e-05, -3, causal = true) {\n"
                                 "  optimizer adamw(beta2 = 0.95, lr = 0.0003, weight_decay = 0.0)\n"
                                 "  schedule 1f1b\n"
                                 "}\n");
}

// Strings read back as they were, whatever they hold: a file name may hold a quote, a
// backslash, a line break (written as \n; a string of the language is one line) or a
// carriage return, and a plan's comment a line break of either kind.
TEST(PlanText, StringsReadBackTheSame) {
  const std::string odd = "dir \"a\"\\b\nc\rd\te/f.hspmd";
  ir::PlanSpec spec;
  spec.name = "p";
  spec.model = "M";
  spec.clusterPath = odd + ".toml";
  spec.modelArgs = {{"tag", std::string(odd), {}}};
  const std::string text = ir::printPlan(spec, {"a comment\rof\nthree lines", odd, ""});
  frontend::CollectingSink sink;
  frontend::DiagnosticEngine diags(sink);
  auto ast = frontend::parseFile("p.hspmd", text, diags);
  ASSERT_TRUE(ast) << text << ::testing::PrintToString(sink.diagnostics.size());
  ASSERT_EQ(ast->imports.size(), 1u);
  EXPECT_EQ(ast->imports[0].path, odd);
  ASSERT_EQ(ast->plans.size(), 1u);
  EXPECT_EQ(ast->plans[0]->cluster, odd + ".toml");
  ASSERT_EQ(ast->plans[0]->modelArgs.size(), 1u);
  EXPECT_EQ(ast->plans[0]->modelArgs[0].value->text, odd);
}
