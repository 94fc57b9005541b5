// Each op family's sharding rule on its own, in Shardy-like notation: factors are named
// i, j, k, ... in order of first appearance; "_" is a broadcast dimension.
#include "passes/ShardingRules.h"

#include <gtest/gtest.h>

using namespace hspmd;

namespace {

// The rule of the last op of a one-op graph written in the textual IR.
std::string ruleOf(const std::string &body) {
  ir::ParseError error;
  auto graph = ir::parseGraph("graph G {\n" + body + "\n}\n", &error);
  EXPECT_TRUE(graph) << error.str();
  if (!graph)
    return "";
  return passes::shardingRule(*graph->ops().back()).str();
}

TEST(ShardingRules, MatMul) {
  EXPECT_EQ(ruleOf("%a = input : f32[4, 8]\n%b = input : f32[8, 2]\n%c = matmul %a, %b : f32[4, 2]"),
            "([i, j], [j, k]) -> ([i, k]) j:contraction");
  // Batched, with the weight broadcast over the batch dimensions.
  EXPECT_EQ(ruleOf("%a = input : f32[3, 4, 8]\n%b = input : f32[8, 2]\n%c = matmul %a, %b : f32[3, 4, 2]"),
            "([i, j, k], [k, l]) -> ([i, j, l]) k:contraction");
  EXPECT_EQ(ruleOf("%a = input : f32[3, 4, 8]\n%b = input : f32[1, 8, 2]\n%c = matmul %a, %b : f32[3, 4, 2]"),
            "([i, j, k], [_, k, l]) -> ([i, j, l]) k:contraction");
}

TEST(ShardingRules, ElementwiseBroadcasts) {
  EXPECT_EQ(ruleOf("%a = input : f32[4, 8]\n%b = input : f32[8]\n%c = add %a, %b : f32[4, 8]"),
            "([i, j], [j]) -> ([i, j])");
  EXPECT_EQ(ruleOf("%a = input : f32[4, 8]\n%b = input : f32[4, 1]\n%c = mul %a, %b : f32[4, 8]"),
            "([i, j], [i, _]) -> ([i, j])");
  EXPECT_EQ(ruleOf("%a = input : f32[4, 8]\n%c = gelu %a : f32[4, 8]"), "([i, j]) -> ([i, j])");
}

TEST(ShardingRules, NormalizedDimensionsAreNeededWhole) {
  EXPECT_EQ(ruleOf("%a = input : f32[4, 8]\n%c = softmax %a {dim = 1} : f32[4, 8]"),
            "([i, j]) -> ([i, j]) j:need-whole");
  EXPECT_EQ(ruleOf("%a = input : f32[4, 8]\n%w = param : f32[8]\n%c = rmsnorm %a, %w {eps = 1e-05} : f32[4, 8]"),
            "([i, j], [j]) -> ([i, j]) j:need-whole");
  EXPECT_EQ(ruleOf("%a = input : f32[4, 8]\n%w = param : f32[8]\n%b = param : f32[8]\n"
                   "%c = layernorm %a, %w, %b {eps = 1e-05} : f32[4, 8]"),
            "([i, j], [j], [j]) -> ([i, j]) j:need-whole");
}

TEST(ShardingRules, ReshapeGroupsDimensions) {
  // [B, S, 3d] -> [B, S, H, 3, D]: the fused dimension is H*3*D, heads major.
  EXPECT_EQ(ruleOf("%a = input : f32[2, 5, 24]\n%c = reshape %a {shape = [2, 5, 4, 3, 2]} : f32[2, 5, 4, 3, 2]"),
            "([i, j, k*l*m]) -> ([i, j, k, l, m])");
  EXPECT_EQ(ruleOf("%a = input : f32[2, 4, 3]\n%c = reshape %a {shape = [2, 12]} : f32[2, 12]"),
            "([i, j, k]) -> ([i, j*k])");
  // [6, 4] -> [4, 6]: a common leading factor 2 (gcd of 6 and 4); the rest (3 x 4 on one side,
  // 2 x 6 on the other) has no common refinement and stays one indivisible block j.
  EXPECT_EQ(ruleOf("%a = input : f32[6, 4]\n%c = reshape %a {shape = [4, 6]} : f32[4, 6]"),
            "([i*j, j]) -> ([i*j, j]) j:need-whole");
  // Symbolic dimensions match when equal.
  EXPECT_EQ(ruleOf("symbols B\n%a = input : f32[B, 6]\n%c = reshape %a {shape = [B, 2, 3]} : f32[B, 2, 3]"),
            "([i, j*k]) -> ([i, j, k])");
}

TEST(ShardingRules, TransposeAndCuts) {
  EXPECT_EQ(ruleOf("%a = input : f32[4, 8, 2]\n%c = transpose %a {dim0 = 0, dim1 = 2} : f32[2, 8, 4]"),
            "([i, j, k]) -> ([k, j, i])");
  EXPECT_EQ(ruleOf("%a = input : f32[4, 3]\n%x, %y, %z = unbind %a {dim = 1} : f32[4], f32[4], f32[4]"),
            "([i, j]) -> ([i], [i], [i]) j:need-whole");
  EXPECT_EQ(ruleOf("%a = input : f32[4, 6]\n%x, %y = split %a {dim = 1, sizes = [2, 4]} : f32[4, 2], f32[4, 4]"),
            "([i, j]) -> ([i, k], [i, l]) j:need-whole k:need-whole l:need-whole");
  EXPECT_EQ(ruleOf("%a = input : f32[4, 2]\n%b = input : f32[4, 3]\n%c = concat %a, %b {dim = 1} : f32[4, 5]"),
            "([i, j], [i, k]) -> ([i, l]) j:need-whole k:need-whole l:need-whole");
  EXPECT_EQ(ruleOf("%a = input : f32[4, 6]\n%c = slice %a {dim = 1, end = 3, start = 1} : f32[4, 2]"),
            "([i, j]) -> ([i, k]) j:need-whole k:need-whole");
}

TEST(ShardingRules, ReductionsContract) {
  EXPECT_EQ(ruleOf("%a = input : f32[4, 8]\n%c = sum %a {dims = [1], keepdim = false} : f32[4]"),
            "([i, j]) -> ([i]) j:contraction");
  EXPECT_EQ(ruleOf("%a = input : f32[4, 8]\n%c = mean %a {dims = [0], keepdim = true} : f32[1, 8]"),
            "([i, j]) -> ([_, j]) i:contraction");
  EXPECT_EQ(ruleOf("%a = input : f32[4, 8]\n%c = sum %a {dims = [], keepdim = false} : f32[]"),
            "([i, j]) -> ([]) i:contraction j:contraction");
}

TEST(ShardingRules, EmbeddingVocabularySplitIsAContraction) {
  EXPECT_EQ(ruleOf("%w = param : f32[256, 8]\n%t = input : i32[2, 5]\n%c = embedding %w, %t : f32[2, 5, 8]"),
            "([i, j], [k, l]) -> ([k, l, j]) i:contraction");
}

TEST(ShardingRules, AttentionKeepsKeysWholeAndScalesKvHeads) {
  auto rule = ruleOf("%q = input : f32[2, 5, 4, 8]\n%k = input : f32[2, 7, 2, 8]\n%v = input : f32[2, 7, 2, 8]\n"
                     "%o = attention %q, %k, %v {causal = true, scale = 0.35} : f32[2, 5, 4, 8]");
  EXPECT_EQ(rule,
            "([i, j, l, m], [i, k, l, m], [i, k, l, n]) -> ([i, j, l, n]) k:need-whole m:need-whole n:need-whole");
  ir::ParseError error;
  auto graph =
      ir::parseGraph("graph G {\n%q = input : f32[2, 5, 4, 8]\n%k = input : f32[2, 7, 2, 8]\n"
                     "%v = input : f32[2, 7, 2, 8]\n%o = attention %q, %k, %v {causal = true} : f32[2, 5, 4, 8]\n}",
                     &error);
  ASSERT_TRUE(graph);
  auto full = passes::shardingRule(*graph->ops().back());
  EXPECT_EQ(full.scaleOf(1, 2), (std::pair<int64_t, int64_t>{2, 4})); // kv heads = heads * 2/4
  EXPECT_EQ(full.scaleOf(0, 2), (std::pair<int64_t, int64_t>{1, 1}));
}

TEST(ShardingRules, CrossEntropySplitsClassesInside) {
  EXPECT_EQ(ruleOf("%l = input : f32[2, 5, 16]\n%t = input : i32[2, 5]\n%c = cross_entropy %l, %t : f32[]"),
            "([i, j, k], [i, j]) -> ([]) i:contraction j:contraction k:internal");
}

TEST(ShardingRules, BackwardOps) {
  // Position factors pass through to dx and are summed out of dw (partial when split).
  EXPECT_EQ(ruleOf("%x = input : f32[4, 8]\n%w = param : f32[8]\n%g = input : f32[4, 8]\n"
                   "%dx, %dw = rmsnorm_grad %x, %w, %g {eps = 1e-05} : f32[4, 8], f32[8]"),
            "([i, j], [j], [i, j]) -> ([i, j], [j]) j:need-whole");
  EXPECT_EQ(
      ruleOf("%t = input : i32[2, 5]\n%g = input : f32[2, 5, 8]\n%d = embedding_grad %t, %g {vocab = 16} : f32[16, 8]"),
      "([i, j], [i, j, l]) -> ([k, l]) i:contraction j:contraction k:need-whole");
  EXPECT_EQ(ruleOf("%l = input : f32[2, 16]\n%t = input : i32[2]\n%g = input : f32[]\n"
                   "%d = cross_entropy_grad %l, %t, %g : f32[2, 16]"),
            "([i, j], [i], []) -> ([i, j]) j:internal");
  EXPECT_EQ(ruleOf("%x = input : f32[4]\n%b = broadcast %x {shape = [3, 4]} : f32[3, 4]"), "([j]) -> ([i, j])");
  EXPECT_EQ(ruleOf("%q = input : f32[2, 5, 4, 8]\n%k = input : f32[2, 5, 4, 8]\n%v = input : f32[2, 5, 4, 8]\n"
                   "%g = input : f32[2, 5, 4, 8]\n"
                   "%dq, %dk, %dv = attention_grad %q, %k, %v, %g {causal = true, scale = 0.35} : f32[2, 5, 4, 8], "
                   "f32[2, 5, 4, 8], f32[2, 5, 4, 8]"),
            "([i, j, l, m], [i, k, l, m], [i, k, l, n], [i, j, l, m]) -> ([i, j, l, m], [i, k, l, m], [i, k, l, n]) "
            "k:need-whole m:need-whole n:need-whole");
  EXPECT_EQ(ruleOf("%x = input : f32[4, 2]\n%g = input : f32[4, 2]\n%d = gelu_grad %x, %g : f32[4, 2]"),
            "([i, j], [i, j]) -> ([i, j])");
}

} // namespace

// The cache rules an op once per signature (kind, attributes, types): the ops of identical
// layers share a rule, and an op that differs in any of them gets its own.
TEST(ShardingRules, CacheSharesRulesOfEqualSignaturesOnly) {
  ir::ParseError error;
  auto graph = ir::parseGraph("graph G {\n%a = input : f32[4, 8]\n%b = input : f32[4, 8]\n"
                              "%s0 = softmax %a {dim = 1} : f32[4, 8]\n%s1 = softmax %b {dim = 1} : f32[4, 8]\n"
                              "%s2 = softmax %a {dim = 0} : f32[4, 8]\n%c = input : f32[8, 8]\n"
                              "%s3 = softmax %c {dim = 1} : f32[8, 8]\n%s4 = softmax %a {dim = 1} : bf16[4, 8]\n}\n",
                              &error);
  ASSERT_TRUE(graph) << error.str();
  auto op = [&](const std::string &name) { return graph->findValue(name)->def; };
  passes::ShardingRuleCache rules;
  const passes::OpShardingRule &first = rules.of(*op("s0"));
  EXPECT_EQ(&rules.of(*op("s1")), &first);
  for (const char *other : {"s2", "s3", "s4"})
    EXPECT_NE(&rules.of(*op(other)), &first) << other;
  EXPECT_EQ(rules.of(*op("s2")).str(), passes::shardingRule(*op("s2")).str());
  EXPECT_EQ(rules.of(*op("s3")).str(), passes::shardingRule(*op("s3")).str());
}
