// Lint's first-order estimates (planner/Estimates.h) on hetero4, worked out by hand: the
// tiny GPT (d 64, vocabulary 256, 8 layers, FFN 256) on a tensor-parallel pair [0, 1] and the
// pipeline [2] -> [3], the batch of 8 shared 4:4.
#include "planner/Estimates.h"
#include "../support/ExampleBuild.h"
#include "passes/Pipeline.h"

#include <gtest/gtest.h>

using namespace hspmd;

TEST(Estimates, WorkSharesAndParameterMemoryOfHetero4) {
  auto b = hspmd::testing::buildExample("examples/gpt/tiny_gpt.hspmd", {"examples/gpt/plans/hetero4.hspmd"});
  ASSERT_TRUE(b->build);
  const ir::Graph &graph = *b->build->graph;
  auto result = passes::runPipeline(*b->build->graph, b->build->plans, {}, [](const passes::Problem &p) {
    if (p.severity == passes::Severity::Error)
      ADD_FAILURE() << p.message;
  });
  ASSERT_TRUE(result.ok);
  const passes::LoweredPlan &plan = result.plans[0];

  // Attention of layer 0: half the batch to each pipeline; the pair splits its half by heads.
  const ir::Op &attention = *graph.findValue("blocks[0].forward.a")->def;
  EXPECT_DOUBLE_EQ(planner::workShare(attention, 0, 0), 0.25);
  EXPECT_DOUBLE_EQ(planner::workShare(attention, 0, 1), 0.25);
  EXPECT_DOUBLE_EQ(planner::workShare(attention, 0, 2), 0.5);
  EXPECT_DOUBLE_EQ(planner::workShare(attention, 0, 3), 0.0); // layer 0 is not on the second stage

  // Device 2 holds layers 0-3 whole and the tied embedding: per layer 64 (ln1) + 64 x 192
  // (wqkv) + 64 x 64 (wo) + 64 (ln2) + 64 x 256 (w1) + 256 x 64 (w2) = 49280 floats, and
  // 256 x 64 for wte: (4 x 49280 + 16384) x 4 bytes, as much again in gradients, and AdamW's two
  // moments twice that.
  const auto memory = planner::estimateMemory(graph, plan);
  const double params = (4 * 49280.0 + 16384) * 4;
  EXPECT_DOUBLE_EQ(memory.at(2).params, params);
  EXPECT_DOUBLE_EQ(memory.at(2).grads, params);
  EXPECT_DOUBLE_EQ(memory.at(2).optimizer, 2 * params);
  // The pair splits every matrix in two and keeps the norms whole: 8 layers of
  // (12288 + 4096 + 16384 + 16384) / 2 + 128 floats, half of wte, and lnf (64).
  EXPECT_DOUBLE_EQ(memory.at(0).params, (8 * (49152.0 / 2 + 128) + 8192 + 64) * 4);
}
