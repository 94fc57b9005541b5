// The lower-plan pass alone: where each op of a heterogeneous plan runs, how the batch is
// split between pipelines, and the annotations it gives the leaves (deduction completes the
// rest, tests/unit/passes/DeduceTest.cpp).
#include "passes/LowerPlan.h"
#include "../support/ExampleBuild.h"
#include "ir/AnnotationText.h"

#include <gtest/gtest.h>

using namespace hspmd;
using hspmd::testing::buildExample;

namespace {

passes::ReportFn failOnError() {
  return [](const passes::Problem &p) {
    if (p.severity == passes::Severity::Error)
      ADD_FAILURE() << p.code << " " << p.message;
  };
}

} // namespace

// hetero4: a tensor-parallel pair [0, 1] running every layer, and the pipeline [2] -> [3]
// (layers 0-3, then 4-7); B = 8 shared 1:1.
TEST(LowerPlan, HeterogeneousPipelinesPlaceEachOpOnItsStages) {
  auto b = buildExample("examples/gpt/tiny_gpt.hspmd", {"examples/gpt/plans/hetero4.hspmd"});
  ASSERT_TRUE(b->build);
  const ir::Graph &graph = *b->build->graph;
  auto lowered = passes::lowerPlan(graph, b->build->plans[0], 0, failOnError());
  ASSERT_TRUE(lowered);
  EXPECT_TRUE(lowered->hasPipelines);
  EXPECT_EQ(lowered->batchPerPipeline, (std::vector<int64_t>{4, 4}));

  // An op of layer 2: on the pair (a mesh of 2: tensor parallel) and on device 2, the first
  // stage of the second pipeline (one device: a mesh of one axis of 1).
  const ir::Op *early = graph.findValue("blocks[2].forward.a")->def;
  const auto &earlyCells = lowered->placement.at(early);
  ASSERT_EQ(earlyCells.size(), 2u);
  EXPECT_EQ(earlyCells[0].devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(earlyCells[0].mesh, (std::vector<int>{2}));
  EXPECT_EQ(earlyCells[1].devices, (std::vector<int>{2}));
  EXPECT_EQ(earlyCells[1].mesh, (std::vector<int>{1})); // one axis of one device
  EXPECT_EQ(lowered->stageOf.at(early), (std::vector<int>{0, 0}));
  // An op of layer 6: device 3, the second pipeline's second stage.
  const ir::Op *late = graph.findValue("blocks[6].forward.a")->def;
  ASSERT_EQ(lowered->placement.at(late).size(), 2u);
  EXPECT_EQ(lowered->placement.at(late)[1].devices, (std::vector<int>{3}));
  EXPECT_EQ(lowered->stageOf.at(late), (std::vector<int>{0, 1}));

  // The tokens: rows split 4:4 between the pipelines, each piece on the stage that embeds
  // them; the targets on the stages that compute the loss.
  EXPECT_EQ(ir::printAnnotation(lowered->fixed.at(graph.findValue("tokens"))), "{ [0, 1]: R | [2]: R } split0 [4, 4]");
  EXPECT_EQ(ir::printAnnotation(lowered->fixed.at(graph.findValue("targets"))), "{ [0, 1]: R | [3]: R } split0 [4, 4]");
  // A layer's weight is left to deduction (which tensor-parallel axis splits it), on the cells
  // of the stages that hold its layer: one copy per pipeline.
  const auto flexible = lowered->flexible.find(graph.findValue("blocks[0].wqkv"));
  ASSERT_NE(flexible, lowered->flexible.end());
  EXPECT_EQ(flexible->second.skeleton.devices(), (std::vector<int>{0, 1, 2}));
}
