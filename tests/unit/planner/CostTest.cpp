// The one cost library (ir/Cost.h): what communication planning, the simulator, the search and
// lint's estimates charge for one collective or one op is the same number, because each of
// them calls it. Each test prices one thing through two or three of them.
#include "ir/Cost.h"
#include "ir/AnnotationText.h"
#include "ir/Graph.h"
#include "passes/Communication.h"
#include "planner/Estimates.h"
#include "planner/Simulator.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace hspmd;

namespace {

ir::Annotation parse(const std::string &text) {
  ir::TextError error;
  auto annotation = ir::parseAnnotation(text, &error);
  EXPECT_TRUE(annotation) << error.message;
  return *annotation;
}

} // namespace

// A partial sum of a [256, 1024] f32 tensor over 4 devices, all-reduced: communication
// planning prices its step, the simulator replays the all-reduce instruction specialize makes
// of it (each member receives the step's bytes), and the search prices it with
// cost::allReduceSeconds: the same seconds, 2(n-1)/n S / B + 2(n-1) alpha.
TEST(Cost, AnAllReduceCostsTheSameInPlanningSimulationAndSearch) {
  const std::vector<int64_t> shape = {256, 1024};
  const double buffer = 256.0 * 1024 * 4, gbps = 50;
  passes::LinkModel links;
  links.bandwidth = [&](int, int) { return gbps; };
  const passes::CommPlan plan = passes::planReshard(shape, 4, parse("[0..4]: P"), parse("[0..4]: R"), links);
  ASSERT_EQ(plan.steps.size(), 1u);
  ASSERT_EQ(plan.steps[0].kind, ir::CommKind::AllReduce);
  const double expected = 2.0 * 3 / 4 * buffer / (gbps * 1e9) + 2 * 3 * cost::kMessageLatency;
  EXPECT_DOUBLE_EQ(plan.steps[0].seconds, expected);
  EXPECT_DOUBLE_EQ(cost::allReduceSeconds(buffer, 4, gbps), expected); // the search's price

  std::map<int, ir::DeviceProgram> programs;
  for (int d = 0; d < 4; ++d) {
    ir::DeviceProgram &p = programs[d];
    p.device = d;
    p.schedule = {{ir::Phase::Forward, 0}};
    for (int b = 0; b < 2; ++b) {
      ir::Buffer buf;
      buf.id = b;
      buf.value = b ? "out" : "in";
      buf.shape = shape;
      buf.offset = b * static_cast<int64_t>(buffer);
      p.buffers.push_back(buf);
    }
    ir::Instruction in;
    in.kind = ir::InstrKind::Collective;
    in.op = "all-reduce";
    in.group = {0, 1, 2, 3};
    in.bytes = plan.steps[0].bytesReceived.at(d);
    in.inputs = {0};
    in.outputs = {1};
    p.body.push_back(in);
  }
  planner::CostModel model;
  model.links = links;
  const planner::Simulation sim = planner::simulate(programs, model);
  EXPECT_NEAR(sim.stepSeconds, expected, 1e-12);
}

// One matrix product [2, 8, 16] x [16, 32] and one GELU: lint's estimate of the op at its
// global shapes and the simulator's price of the kernel at the same (local) shapes count the
// same FLOPs.
TEST(Cost, AnOpHasTheSameFlopsInEstimatesAndTheSimulator) {
  ir::ParseError error;
  auto graph = ir::parseGraph(R"(graph G {
  %x = input : f32[2, 8, 16]
  %w = param {init = "ones"} : f32[16, 32]
  %y = matmul %x, %w : f32[2, 8, 32]
  %z = gelu %y : f32[2, 8, 32]
  return %z
}
)",
                              &error);
  ASSERT_TRUE(graph) << error.str();
  ir::DeviceProgram program;
  for (const auto &[name, shape] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"x", {2, 8, 16}}, {"w", {16, 32}}, {"y", {2, 8, 32}}, {"z", {2, 8, 32}}}) {
    ir::Buffer b;
    b.id = static_cast<int>(program.buffers.size());
    b.value = name;
    b.shape = shape;
    program.buffers.push_back(b);
  }
  ir::Instruction matmul, gelu;
  matmul.op = "matmul";
  matmul.inputs = {0, 1};
  matmul.outputs = {2};
  gelu.op = "gelu";
  gelu.inputs = {2};
  gelu.outputs = {3};
  const ir::Op &matmulOp = *graph->findValue("y")->def, &geluOp = *graph->findValue("z")->def;
  EXPECT_DOUBLE_EQ(planner::forwardFlops(matmulOp), 2.0 * (2 * 8 * 32) * 16);
  EXPECT_DOUBLE_EQ(planner::kernelCost(matmul, program).flops, planner::forwardFlops(matmulOp));
  EXPECT_DOUBLE_EQ(planner::forwardFlops(geluOp), cost::kActivationFlops * 2 * 8 * 32);
  EXPECT_DOUBLE_EQ(planner::kernelCost(gelu, program).flops, planner::forwardFlops(geluOp));
}

// Causal attention over S positions sees S(S+1)/2 (query, key) pairs: the simulator's count for
// a whole sequence and for its two halves (context parallelism's shares) add up to it.
TEST(Cost, CausalPairsOfSharesAddUpToTheWhole) {
  const double S = 64;
  EXPECT_DOUBLE_EQ(cost::causalPairs(S, S, 0), S * (S + 1) / 2);
  // Queries [0, 32) see keys from 0; queries [32, 64) over all 64 keys start 32 in.
  EXPECT_DOUBLE_EQ(cost::causalPairs(32, 64, 0) + cost::causalPairs(32, 64, 32), S * (S + 1) / 2);
  // The closed form against the sum it stands for (a loop over S, which took 40 s of lint at
  // S = 2^32 + 1), at every small offset, including before and past the keys.
  for (double queries = 0; queries <= 9; ++queries)
    for (double keys = 0; keys <= 9; ++keys)
      for (double offset = -12; offset <= 12; ++offset) {
        double pairs = 0;
        for (double q = 0; q < queries; ++q)
          pairs += std::clamp(offset + q + 1, 0.0, keys);
        EXPECT_DOUBLE_EQ(cost::causalPairs(queries, keys, offset), pairs) << queries << " " << keys << " " << offset;
      }
}
