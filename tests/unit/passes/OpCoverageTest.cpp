// Every op kind has a sharding rule, a gradient, a kernel and a cost. The switches that give
// them have no default, so a new kind is a compile error (-Wswitch -Werror) until each is
// written; these tests check that what is written is sound on the tiny models of
// tests/unit/support/TinyModels.h, which between them use every kind (checked first: a kind
// no model uses would be checked by nothing). Kernels are compared with a reference in
// tests/unit/runtime/KernelTest.cpp.
#include "../support/TinyModels.h"
#include "passes/ShardingRules.h"
#include "planner/Estimates.h"

#include <gtest/gtest.h>

#include <set>

using namespace hspmd;

namespace {

struct Models {
  hspmd::testing::Compiled c1, c2, c3;
  std::vector<std::unique_ptr<ir::Graph>> graphs;
  std::vector<passes::Gradients> gradients{3};
  Models() {
    graphs.push_back(hspmd::testing::trainingGraph(c1, hspmd::testing::kTinyGpt, &gradients[0]));
    graphs.push_back(hspmd::testing::trainingGraph(c2, hspmd::testing::kTinyLlama, &gradients[1]));
    graphs.push_back(hspmd::testing::trainingGraph(c3, hspmd::testing::kOtherOps, &gradients[2]));
  }
};

bool isLeaf(ir::OpKind kind) {
  return kind == ir::OpKind::Param || kind == ir::OpKind::Input || kind == ir::OpKind::Constant;
}

// Kinds that only move or cut data: no arithmetic.
bool movesOnly(ir::OpKind kind) {
  using K = ir::OpKind;
  return isLeaf(kind) || kind == K::Reshape || kind == K::Transpose || kind == K::Unbind || kind == K::Split ||
         kind == K::Concat || kind == K::Slice || kind == K::Reshard;
}

} // namespace

// Reshards are made by deduce-annotations, not by models (DeduceTest covers them).
TEST(OpCoverage, TheTinyModelsUseEveryOpKind) {
  Models m;
  std::set<ir::OpKind> used;
  for (const auto &graph : m.graphs) {
    ASSERT_TRUE(graph);
    for (const auto &op : graph->ops())
      used.insert(op->kind);
  }
  for (const ir::OpInfo &info : ir::allOps())
    if (info.kind != ir::OpKind::Reshard) {
      EXPECT_TRUE(used.count(info.kind)) << info.name << " is used by none of the tiny models";
    }
}

// A rule names a factor list for each dimension of each operand and result, and every factor
// it names exists.
TEST(OpCoverage, EveryOpHasAShardingRuleOfItsShape) {
  Models m;
  for (const auto &graph : m.graphs) {
    ASSERT_TRUE(graph);
    for (const auto &op : graph->ops()) {
      const std::string name(ir::opInfo(op->kind).name);
      const passes::OpShardingRule rule = passes::shardingRule(*op);
      ASSERT_EQ(rule.operands.size(), op->operands.size()) << name;
      ASSERT_EQ(rule.results.size(), op->results.size()) << name;
      for (size_t o = 0; o < op->operands.size(); ++o)
        EXPECT_EQ(static_cast<int64_t>(rule.operands[o].size()), op->operands[o]->type.rank())
            << name << " operand " << o;
      for (size_t r = 0; r < op->results.size(); ++r)
        EXPECT_EQ(static_cast<int64_t>(rule.results[r].size()), op->results[r]->type.rank()) << name << " result " << r;
      for (const auto *tensors : {&rule.operands, &rule.results})
        for (const auto &dims : *tensors)
          for (const auto &factors : dims)
            for (int f : factors)
              EXPECT_TRUE(f >= 0 && f < static_cast<int>(rule.factors.size())) << name << " names factor " << f;
    }
  }
}

// Every forward op kind between a parameter and the loss has a gradient rule: autodiff made a
// backward op from it, and every parameter got a gradient.
TEST(OpCoverage, EveryForwardOpKindHasAGradient) {
  Models m;
  std::set<ir::OpKind> forward, differentiated;
  for (size_t g = 0; g < m.graphs.size(); ++g) {
    ASSERT_TRUE(m.graphs[g]);
    std::set<const ir::Op *> backward;
    for (const auto &[made, from] : m.gradients[g].origin) {
      backward.insert(made);
      differentiated.insert(from->kind);
    }
    for (const auto &op : m.graphs[g]->ops())
      if (!isLeaf(op->kind) && !backward.count(op.get()) && !op->results[0]->name.starts_with("grad."))
        forward.insert(op->kind);
    for (const ir::Value *param : m.graphs[g]->params())
      EXPECT_TRUE(m.gradients[g].params.count(param->name)) << param->name << " has no gradient";
  }
  EXPECT_GE(forward.size(), 20u);
  for (ir::OpKind kind : forward)
    EXPECT_TRUE(differentiated.count(kind)) << ir::opInfo(kind).name << " made no backward op";
}

// Every op that computes costs FLOPs in the cost library; ops that only move data cost none.
TEST(OpCoverage, EveryComputingOpHasACost) {
  Models m;
  for (const auto &graph : m.graphs) {
    ASSERT_TRUE(graph);
    for (const auto &op : graph->ops()) {
      const double flops = planner::forwardFlops(*op);
      if (movesOnly(op->kind))
        EXPECT_EQ(flops, 0) << ir::opInfo(op->kind).name;
      else
        EXPECT_GT(flops, 0) << ir::opInfo(op->kind).name;
    }
  }
}
