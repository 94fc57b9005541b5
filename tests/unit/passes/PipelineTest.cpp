// The pass pipeline on the example plans: idempotence, several plans in one build, dumps.
#include "passes/Pipeline.h"
#include "../support/ExampleBuild.h"
#include "ir/Tags.h"
#include "passes/DeduceAnnotations.h"
#include "passes/LowerPlan.h"
#include "passes/Parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>

using namespace hspmd;

namespace {

using hspmd::testing::buildExample;

passes::ReportFn failOnError() {
  return [](const passes::Problem &p) {
    if (p.severity == passes::Severity::Error)
      ADD_FAILURE() << p.code << " " << p.message;
  };
}

TEST(Pipeline, DeductionIsIdempotent) {
  for (const char *plan :
       {"single", "tp2", "dp2_tp2", "pipeline2", "hetero4", "cp_asym", "hp_asym", "raw_annotations"}) {
    auto b = buildExample("examples/gpt/tiny_gpt.hspmd", {std::string("examples/gpt/plans/") + plan + ".hspmd"});
    ASSERT_TRUE(b->build);
    ir::Graph &graph = *b->build->graph;
    auto first = passes::runPipeline(graph, b->build->plans, {}, failOnError());
    ASSERT_TRUE(first.ok) << plan;
    const std::string once = ir::printGraph(graph);
    auto lowered = passes::lowerPlan(graph, b->build->plans[0], 0, failOnError());
    ASSERT_TRUE(lowered);
    passes::deduceAnnotations(graph, *lowered, failOnError());
    EXPECT_TRUE(lowered->reshards.empty())
        << plan << ": a second run inserted " << lowered->reshards.size() << ", first on "
        << (lowered->reshards.empty()
                ? ""
                : lowered->reshards[0].value + " to " + ir::printAnnotation(lowered->reshards[0].to));
    EXPECT_EQ(ir::printGraph(graph), once) << plan;
  }
}

// The passes' work on several threads (PipelineOptions::threads) gives the programs one thread
// gives, byte for byte: resolve-communication's reshards planned in 3 or 4 ranges (hetero4 and
// cp_asym have about 90), specialize's and optimizer-step's devices split over
// 3 or 4 parts (each part's reshards and ZeRO gathers emitted only on its side), plans with
// recomputation (its rounds of agreement between devices), pipelines with micro-batches in
// flight (stash) and heterogeneous devices.
TEST(Pipeline, ProgramsDoNotDependOnTheThreadsThatBuildThem) {
  for (const char *plan : {"pipeline2_recompute", "hetero4", "dp2_zero", "cp_asym"}) {
    std::vector<std::string> printed;
    for (const int threads : {1, 3, 4}) {
      auto b = buildExample("examples/gpt/tiny_gpt.hspmd", {std::string("examples/gpt/plans/") + plan + ".hspmd"});
      ASSERT_TRUE(b->build);
      passes::PipelineOptions options;
      options.train = true;
      options.threads = threads;
      auto result = passes::runPipeline(*b->build->graph, b->build->plans, options, failOnError());
      ASSERT_TRUE(result.ok) << plan;
      std::string text;
      for (const auto &[device, program] : result.programs[0])
        text += ir::printProgram(program);
      printed.push_back(text);
    }
    EXPECT_GT(printed[0].size(), 1000u) << plan;
    EXPECT_EQ(printed[0], printed[1]) << plan;
    EXPECT_EQ(printed[0], printed[2]) << plan;
  }
}

TEST(Pipeline, ParallelForCallsEachIndexOnceAndRethrows) {
  for (const int threads : {0, 1, 3, 64}) {
    std::vector<std::atomic<int>> calls(1000);
    passes::parallelFor(calls.size(), threads, [&](size_t i) { ++calls[i]; });
    EXPECT_TRUE(std::all_of(calls.begin(), calls.end(), [](const std::atomic<int> &c) { return c == 1; }))
        << threads << " threads";
    std::atomic<int> done{0};
    EXPECT_THROW(passes::parallelFor(100, threads,
                                     [&](size_t i) {
                                       ++done;
                                       if (i == 17)
                                         throw std::runtime_error("17");
                                     }),
                 std::runtime_error);
    EXPECT_EQ(done, 100) << "the other calls still run";
  }
  passes::parallelFor(0, 4, [](size_t) { ADD_FAILURE() << "no index to call"; });
}

// checkPlans (lint's plan checks in a gate) sees every value's deduced annotation before any
// DeviceProgram exists; refusing stops the pipeline there.
TEST(Pipeline, PlanChecksRunBeforeTheProgramsAreBuilt) {
  for (const bool accept : {true, false}) {
    auto b = buildExample("examples/gpt/tiny_gpt.hspmd", {"examples/gpt/plans/dp2_tp2.hspmd"});
    ASSERT_TRUE(b->build);
    passes::PipelineOptions options;
    options.train = true;
    std::string seen;
    int calls = 0;
    options.checkPlans = [&](const ir::Graph &graph, const std::vector<passes::LoweredPlan> &plans) {
      ++calls;
      EXPECT_EQ(plans.size(), 1u);
      seen = ir::printAnnotation(*graph.findValue("blocks[0].wqkv")->annotations[0]);
      return accept;
    };
    auto result = passes::runPipeline(*b->build->graph, b->build->plans, options, failOnError());
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(seen, "{ [0, 1]: S1 | [2, 3]: S1 } dup");
    EXPECT_EQ(result.ok, accept);
    EXPECT_EQ(result.programs.size(), accept ? 1u : 0u);
  }
}

// Every command compiles a plan on its cluster's links, those lint checks on (a run trains
// what lint checked); `--cluster` overrides the plan's; a plan without one gets uniform links.
// The model outlives the cluster file it was read from.
TEST(Pipeline, PlansCompileOnTheirClustersLinks) {
  auto b =
      buildExample("examples/llama/plans/llama32b_hetero48.hspmd", {"examples/llama/plans/llama32b_hetero48.hspmd"});
  ASSERT_TRUE(b->build);
  ASSERT_EQ(b->build->plans[0].clusterPath.empty(), false);
  const std::vector<passes::LinkModel> own = driver::planLinks(b->compilation, b->build->plans);
  ASSERT_EQ(own.size(), 1u);
  // h800x16_h20x32: eight devices a node, NVLink inside a node, the network between nodes.
  EXPECT_TRUE(own[0].sameNode(0, 7));
  EXPECT_FALSE(own[0].sameNode(0, 8));
  EXPECT_GT(own[0].bandwidth(0, 7), own[0].bandwidth(0, 8));
  const auto other = driver::planLinks(b->compilation, b->build->plans, "examples/clusters/h20x32.toml");
  EXPECT_FALSE(other[0].sameNode(0, 8));
  EXPECT_NE(other[0].bandwidth(0, 7), own[0].bandwidth(0, 7)); // H20s, not H800s
  ir::PlanSpec none = b->build->plans[0];
  none.clusterPath.clear();
  const auto uniform = driver::planLinks(b->compilation, {none});
  EXPECT_TRUE(uniform[0].sameNode(0, 8));
  EXPECT_EQ(uniform[0].bandwidth(0, 8), uniform[0].bandwidth(0, 7));
}

TEST(Pipeline, SeveralPlansAnnotateOneGraph) {
  auto b = buildExample("examples/gpt/tiny_gpt.hspmd",
                        {"examples/gpt/plans/dp2_tp2.hspmd", "examples/gpt/plans/pipeline2.hspmd"});
  ASSERT_TRUE(b->build);
  ir::Graph &graph = *b->build->graph;
  auto result = passes::runPipeline(graph, b->build->plans, {}, failOnError());
  ASSERT_TRUE(result.ok);
  EXPECT_EQ(graph.numPlans, 2);
  EXPECT_EQ(ir::printAnnotation(*graph.findValue("blocks[0].wqkv")->annotations[0]), "{ [0, 1]: S1 | [2, 3]: S1 } dup");
  EXPECT_EQ(ir::printAnnotation(*graph.findValue("blocks[0].wqkv")->annotations[1]), "[0]: R");
  int reshards = 0;
  for (const auto &op : graph.ops()) {
    if (op->kind != ir::OpKind::Reshard)
      continue;
    ++reshards;
    // A reshard of one plan changes nothing in the other.
    int other = 1 - static_cast<int>(ir::intAttr(op->attrs, "plan"));
    EXPECT_EQ(op->result()->annotations[other], op->operands[0]->annotations[other]) << op->result()->name;
  }
  EXPECT_GT(reshards, 0);
  // The textual IR of a two-plan graph round-trips.
  const std::string text = ir::printGraph(graph);
  ir::ParseError error;
  auto reparsed = ir::parseGraph(text, &error);
  ASSERT_TRUE(reparsed) << error.str();
  EXPECT_EQ(ir::printGraph(*reparsed), text);
}

TEST(Pipeline, TrainingSynchronisesEveryGradientToItsParameter) {
  for (const char *plan : {"single", "tp2", "dp2_tp2", "pipeline2", "hetero4", "cp_asym", "hp_asym"}) {
    auto b = buildExample("examples/gpt/tiny_gpt.hspmd", {std::string("examples/gpt/plans/") + plan + ".hspmd"});
    ASSERT_TRUE(b->build);
    ir::Graph &graph = *b->build->graph;
    passes::PipelineOptions options;
    options.train = true;
    auto result = passes::runPipeline(graph, b->build->plans, options, failOnError());
    ASSERT_TRUE(result.ok) << plan;
    int gradients = 0;
    for (const ir::Value *param : graph.params()) {
      const ir::Value *grad = graph.findValue("grad." + param->name);
      ASSERT_TRUE(grad) << plan << ": no gradient for " << param->name;
      const ir::Value *synced = graph.findValue("grad." + param->name + ".synced");
      // After synchronisation the gradient has its parameter's layout.
      const ir::Value *final = synced ? synced : grad;
      EXPECT_EQ(ir::printAnnotation(*final->annotations[0]), ir::printAnnotation(*param->annotations[0]))
          << plan << ": " << param->name;
      ++gradients;
    }
    EXPECT_EQ(gradients, 8 * 6 + 2) << plan;
  }
}

// The tiny GPT under examples/gpt/plans/PLAN.hspmd, compiled for training.
std::pair<std::unique_ptr<hspmd::testing::ExampleBuild>, passes::PipelineResult>
trainingBuild(const std::string &plan) {
  auto b = buildExample("examples/gpt/tiny_gpt.hspmd", {"examples/gpt/plans/" + plan + ".hspmd"});
  passes::PipelineOptions options;
  options.train = true;
  passes::PipelineResult result;
  if (b->build)
    result = passes::runPipeline(*b->build->graph, b->build->plans, options, failOnError());
  return {std::move(b), std::move(result)};
}

// What `--after resolve-communication` prints on each reshard (`comm_steps`) is what the
// DevicePrograms do: each collective step is called by exactly its groups' members, with its
// kind and group; each message of a batched send/receive is one send and one receive between
// its two devices (a receive that adds for a partial sum), with its number of slices; and
// nothing else uses the reshard's tags.
TEST(Pipeline, DeviceProgramsDoTheCommunicationTheIrShows) {
  using Call = std::tuple<int, std::string, std::vector<int>, size_t>; // device, op, group or peer, slices
  int steps = 0, messages = 0;
  for (const char *plan : {"tp2", "dp2_tp2", "pipeline2", "hetero4", "hetero4_tied", "cp_asym", "hp_asym", "dp2_zero",
                           "raw_annotations"}) {
    auto [b, result] = trainingBuild(plan);
    ASSERT_TRUE(result.ok) << plan;
    std::map<int64_t, std::vector<Call>> byTag;
    for (const auto &[device, program] : result.programs[0])
      for (const ir::Instruction &in : program.body) {
        if (in.kind == ir::InstrKind::Collective)
          byTag[in.tag].emplace_back(device, in.op, in.group, 0);
        else if (in.kind == ir::InstrKind::Send || in.kind == ir::InstrKind::Recv)
          byTag[in.tag].emplace_back(device, in.op, std::vector<int>{in.peer}, in.slices.size());
      }
    for (const auto &op : b->build->graph->ops()) {
      auto text = op->attrs.find("comm_steps");
      if (op->kind != ir::OpKind::Reshard || text == op->attrs.end())
        continue;
      std::string error;
      auto parsed = passes::parseCommSteps(std::get<std::string>(text->second), &error);
      ASSERT_TRUE(parsed) << plan << ": " << error;
      for (size_t s = 0; s < parsed->size(); ++s) {
        const passes::CommStep &step = (*parsed)[s];
        std::vector<Call> expected;
        for (const auto &group : step.groups)
          for (int d : group)
            expected.emplace_back(d, std::string(ir::commKindName(step.kind)), group, 0);
        for (const passes::Message &m : step.messages) {
          expected.emplace_back(m.from, "send", std::vector<int>{m.to}, m.boxes.size());
          expected.emplace_back(m.to, m.add ? "recv-add" : "recv", std::vector<int>{m.from}, m.boxes.size());
          ++messages;
        }
        std::vector<Call> actual = byTag[ir::tags::reshardStep(op->id, s)];
        std::sort(expected.begin(), expected.end());
        std::sort(actual.begin(), actual.end());
        EXPECT_EQ(actual, expected) << plan << ": " << op->result()->name << " step " << s << ": "
                                    << std::get<std::string>(text->second);
        ++steps;
      }
    }
  }
  std::printf("%d communication steps (%d messages) lowered as printed\n", steps, messages);
  EXPECT_GT(steps, 100);
  EXPECT_GT(messages, 0);
}

// print -> parse -> print of every reshard's steps is the identity.
TEST(Pipeline, CommunicationStepsRoundTrip) {
  for (const char *plan : {"hetero4", "cp_asym", "hp_asym"}) {
    auto [b, result] = trainingBuild(plan);
    ASSERT_TRUE(result.ok) << plan;
    for (const auto &[op, comm] : result.plans[0].communication) {
      const std::string text = passes::printCommSteps(*comm);
      EXPECT_EQ(std::get<std::string>(op->attrs.at("comm_steps")), text);
      std::string error;
      auto parsed = passes::parseCommSteps(text, &error);
      ASSERT_TRUE(parsed) << error << "\n" << text;
      EXPECT_EQ(passes::printCommSteps(passes::CommPlan{*parsed, {}}), text);
    }
  }
  std::string error;
  EXPECT_FALSE(passes::parseCommSteps("all-reduce groups [0, 1]; frobnicate", &error));
  EXPECT_EQ(error, "at offset 26: unknown communication kind 'frobnicate'");
  EXPECT_FALSE(passes::parseCommSteps("bsr send 0 -> [0:4]", &error));
  EXPECT_EQ(error, "at offset 9: expected a message like '0 -> 2 [0:4, 0:64]'");
}

// --after every pass of the table: the graph passes print the graph (reshards only once
// deduction has placed them, gradients in a training build), the program passes print one
// DeviceProgram per device of tp2 (devices 0 and 1), optimizer-step adds the optimizer and
// plan-memory the offsets and peaks.
TEST(Pipeline, DumpAfterEveryPassAndTiming) {
  ASSERT_EQ(passes::passNames().size(), 11u);
  for (const passes::PassInfo &pass : passes::passTable()) {
    auto b = buildExample("examples/gpt/tiny_gpt.hspmd", {"examples/gpt/plans/tp2.hspmd"});
    ASSERT_TRUE(b->build);
    std::ostringstream dump, timing;
    passes::PipelineOptions options{pass.name, &dump, &timing};
    options.train = true;
    ASSERT_TRUE(passes::runPipeline(*b->build->graph, b->build->plans, options, failOnError()).ok);
    const std::string text = dump.str();
    if (pass.programs) {
      EXPECT_EQ(text.rfind("program device 0 plan 0", 0), 0u) << pass.name;
      EXPECT_NE(text.find("\nprogram device 1 plan 0"), std::string::npos) << pass.name;
      EXPECT_EQ(text.find("graph TinyGPT {"), std::string::npos) << pass.name;
      // Memory planning gives each program its peak and each buffer its offset ("at N").
      const bool planned = pass.name == "plan-memory" || pass.name == "verify-programs";
      EXPECT_EQ(text.find(" peak ") != std::string::npos, planned) << pass.name;
      // The optimizer comes with its pass; its ZeRO-free tp2 update reads the synchronised gradients.
      const bool updated = planned || pass.name == "optimizer-step" || pass.name == "schedule-pipeline";
      EXPECT_EQ(text.find("kernel adamw") != std::string::npos, updated) << pass.name;
      // What is printed reads back as programs (parseProgram takes one at a time).
      const std::string first = text.substr(0, text.find("\nprogram device 1"));
      std::string error;
      auto parsed = ir::parseProgram(first + "\n", &error);
      ASSERT_TRUE(parsed) << pass.name << ": " << error;
      EXPECT_EQ(ir::printProgram(*parsed), first + "\n") << pass.name;
    } else {
      EXPECT_EQ(text.rfind("graph TinyGPT {", 0), 0u) << pass.name;
      const bool deduced = pass.name != "lower-plan" && pass.name != "autodiff";
      EXPECT_EQ(text.find("= reshard") != std::string::npos, deduced) << pass.name;
      EXPECT_NE(text.find("%grad.wte"), std::string::npos) << pass.name;
    }
    EXPECT_NE(timing.str().find("pass " + pass.name + ": "), std::string::npos) << pass.name;
  }
}

// docs/cli.md lists the passes as `- \`name\`: summary` lines under "## hspmc passes": the
// same passes, in the same order, with the same summaries as the table.
TEST(Pipeline, CliDocListsThePassTable) {
  std::ifstream in("docs/cli.md");
  ASSERT_TRUE(in) << "run from the repository root";
  std::string line;
  bool inSection = false;
  std::vector<std::string> listed;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0)
      inSection = line == "## hspmc passes";
    else if (inSection && line.rfind("- `", 0) == 0)
      listed.push_back(line);
  }
  std::vector<std::string> expected;
  for (const passes::PassInfo &pass : passes::passTable())
    expected.push_back("- `" + pass.name + "`: " + pass.summary);
  EXPECT_EQ(listed, expected);
}

} // namespace
