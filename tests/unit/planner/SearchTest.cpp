// The planner's search and local programs (planner/Search.h): each fast algorithm against
// CBC and against trying every answer; the model shape read from a graph; the structure of
// what the search proposes on a heterogeneous cluster.
#include "planner/Search.h"

#include "../support/ExampleBuild.h"
#include "ir/PlanText.h"
#include "planner/Cluster.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <set>

using namespace hspmd;
using namespace hspmd::planner;

namespace {

// Every composition of `total` into `parts` values within [lo[i], hi[i]].
void compositions(int64_t total, const std::vector<int64_t> &lo, const std::vector<int64_t> &hi,
                  const std::function<void(const std::vector<int64_t> &)> &visit) {
  std::vector<int64_t> x(lo.size());
  std::function<void(size_t, int64_t)> rec = [&](size_t i, int64_t left) {
    if (i + 1 == x.size()) {
      if (left >= lo[i] && left <= hi[i]) {
        x[i] = left;
        visit(x);
      }
      return;
    }
    for (int64_t v = lo[i]; v <= std::min(hi[i], left); ++v) {
      x[i] = v;
      rec(i + 1, left - v);
    }
  };
  rec(0, total);
}

// The shape of the model in an example file.
ModelShape exampleShape(const std::string &model) {
  hspmd::testing::ExampleBuild b;
  b.build = driver::elaborateBuild(b.compilation, model, {}, "");
  EXPECT_TRUE(b.build) << model;
  std::string error;
  const ModelShape shape = b.build ? modelShape(*b.build->graph, error) : ModelShape{};
  EXPECT_EQ(error, "") << model;
  return shape;
}

// The search on an example model and cluster: `tokens` per step of `sequence` positions.
struct ExampleSearch {
  ModelShape shape;
  SearchResult result;
};
ExampleSearch exampleSearch(const std::string &model, const std::string &cluster, int64_t sequence, int64_t tokens,
                            int finalists) {
  ExampleSearch s{exampleShape(model), {}};
  std::vector<ClusterError> errors;
  const auto loaded = loadCluster(cluster, "stdlib/devices.toml", errors);
  EXPECT_TRUE(loaded) << cluster;
  if (!loaded)
    return s;
  PlanRequest request;
  request.tokens = tokens;
  request.sequence = sequence;
  s.result = searchPlans(s.shape, *loaded, request, finalists);
  return s;
}

} // namespace

TEST(LocalPrograms, LayerSplitMatchesCbcAndExhaustiveSearch) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> speed(0.5, 4), fixed(0, 3);
  for (int trial = 0; trial < 30; ++trial) {
    const size_t stages = 2 + trial % 3;
    const int64_t layers = 6 + trial % 7;
    std::vector<double> per, extra;
    std::vector<int64_t> most, ones(stages, 1);
    for (size_t s = 0; s < stages; ++s) {
      per.push_back(1 / speed(rng));
      extra.push_back(fixed(rng));
      most.push_back(trial % 2 ? layers : 2 + static_cast<int64_t>(s) * 2); // memory caps on odd trials
    }
    double best = 1e300;
    compositions(layers, ones, most, [&](const std::vector<int64_t> &l) {
      double worst = 0;
      for (size_t s = 0; s < stages; ++s)
        worst = std::max(worst, static_cast<double>(l[s]) * per[s] + extra[s]);
      best = std::min(best, worst);
    });
    const LayerSplit fast = splitLayers(layers, per, extra, most);
    const LayerSplit exact = splitLayersExact(layers, per, extra, most);
    if (best == 1e300) {
      EXPECT_FALSE(fast.feasible) << "trial " << trial;
      EXPECT_FALSE(exact.feasible) << "trial " << trial;
      continue;
    }
    ASSERT_TRUE(fast.feasible && exact.feasible) << "trial " << trial;
    EXPECT_NEAR(fast.seconds, best, 1e-9 * best) << "trial " << trial;
    EXPECT_NEAR(exact.seconds, best, 1e-6 * best) << "trial " << trial;
    EXPECT_EQ(std::accumulate(fast.layers.begin(), fast.layers.end(), int64_t{0}), layers);
    for (size_t s = 0; s < stages; ++s)
      EXPECT_TRUE(fast.layers[s] >= 1 && fast.layers[s] <= most[s]) << "trial " << trial;
  }
}

TEST(LocalPrograms, BatchSplitMatchesCbcAndExhaustiveSearch) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> tau(0.2, 3), sync(0, 2);
  for (int trial = 0; trial < 30; ++trial) {
    const size_t pipelines = 2 + trial % 3;
    const int64_t sequences = 3 + trial % 9;
    std::vector<int> stages;
    std::vector<double> t, after;
    std::vector<int64_t> most, zeros(pipelines, 0);
    for (size_t i = 0; i < pipelines; ++i) {
      stages.push_back(1 + static_cast<int>(rng() % 4));
      t.push_back(tau(rng));
      after.push_back(sync(rng));
      most.push_back(sequences);
    }
    double best = 1e300;
    compositions(sequences, zeros, most, [&](const std::vector<int64_t> &b) {
      double worst = 0;
      for (size_t i = 0; i < pipelines; ++i)
        if (b[i] > 0)
          worst = std::max(worst, static_cast<double>(b[i] + stages[i] - 1) * t[i] + after[i]);
      best = std::min(best, worst);
    });
    const BatchSplit fast = splitBatch(sequences, stages, t, after, most);
    const BatchSplit exact = splitBatchExact(sequences, stages, t, after, most);
    ASSERT_TRUE(fast.feasible && exact.feasible) << "trial " << trial;
    EXPECT_NEAR(fast.seconds, best, 1e-9 * best) << "trial " << trial;
    EXPECT_NEAR(exact.seconds, best, 1e-6 * best) << "trial " << trial;
    EXPECT_EQ(std::accumulate(fast.sequences.begin(), fast.sequences.end(), int64_t{0}), sequences);
  }
  // A pipeline whose fill alone costs more than the others' whole work is left unused.
  const BatchSplit split = splitBatch(4, {1, 8}, {1.0, 1.0}, {0, 0}, {4, 4});
  EXPECT_EQ(split.sequences, (std::vector<int64_t>{4, 0}));
  EXPECT_DOUBLE_EQ(split.seconds, 4.0);
}

TEST(LocalPrograms, HeadSplitAgainstCbcAndExhaustiveSearch) {
  // Three groups of speeds 1, 2, 3; 8 heads in units of 2 (at least one unit each), 12 blocks
  // of positions.
  const std::vector<double> headSeconds = {1.0, 0.5, 1.0 / 3}, blockSeconds = {0.5, 0.25, 0.5 / 3};
  double best = 1e300;
  compositions(4, {1, 1, 1}, {4, 4, 4}, [&](const std::vector<int64_t> &units) {
    compositions(12, {0, 0, 0}, {12, 12, 12}, [&](const std::vector<int64_t> &blocks) {
      double worst = 0;
      for (size_t g = 0; g < 3; ++g)
        worst = std::max(worst, static_cast<double>(2 * units[g]) * headSeconds[g] +
                                    static_cast<double>(blocks[g]) * blockSeconds[g]);
      best = std::min(best, worst);
    });
  });
  const HeadSplit exact = splitHeadsExact(8, 2, 12, headSeconds, blockSeconds);
  ASSERT_TRUE(exact.feasible);
  EXPECT_TRUE(exact.optimal);
  EXPECT_NEAR(exact.seconds, best, 1e-6 * best);
  const HeadSplit fast = splitHeads(8, 2, 12, headSeconds, blockSeconds);
  ASSERT_TRUE(fast.feasible);
  EXPECT_GE(fast.seconds, best * (1 - 1e-9));
  EXPECT_LE(fast.seconds, best * 1.10) << "the greedy head split is within 10% here";
  EXPECT_EQ(std::accumulate(fast.heads.begin(), fast.heads.end(), int64_t{0}), 8);
  EXPECT_EQ(std::accumulate(fast.blocks.begin(), fast.blocks.end(), int64_t{0}), 12);
  for (int64_t h : fast.heads) {
    EXPECT_EQ(h % 2, 0);
    EXPECT_GE(h, 2) << "every group takes a head unit";
  }
  for (int64_t h : exact.heads)
    EXPECT_GE(h, 2) << "every group takes a head unit";
}

TEST(Search, ReadsTheModelShape) {
  const ModelShape shape = exampleShape("examples/llama/tiny_llama.hspmd");
  EXPECT_EQ(shape.stack, "blocks");
  EXPECT_EQ(shape.layers, 4);
  EXPECT_EQ(shape.first, (std::vector<std::string>{"embed"}));
  EXPECT_EQ(shape.last, (std::vector<std::string>{"head", "norm"}));
  // d 64, 4 heads (2 key/value heads) of 16, ffn 172: norms 2 x 64, wq and wo 64 x 64, wk and
  // wv 64 x 32, w1, w3 and w2 64 x 172.
  EXPECT_EQ(shape.layerParams, 2 * 64 + 2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 172);
  EXPECT_EQ(shape.heads, 4);
  EXPECT_EQ(shape.kvHeads, 2);
  EXPECT_EQ(shape.hidden, 64);
  EXPECT_EQ(shape.kvDim, 32);
  EXPECT_EQ(shape.headFlopsPerToken, 2 * 64 * 256);
  EXPECT_EQ(shape.attentionFlopsPerPair, 4 * 64);
  // Memory-bound ops of the first layer, elements read and written per token (4 bytes each).
  // The residual stream: two rmsnorms (64 in, 64 out) and two adds (2 x 64 in, 64 out). Split
  // under TP: the reshapes of q (64 + 64), k and v (32 + 32 each) and of attention's output
  // into a row (64 + 64), silu (172 + 172) and the gate's mul (2 x 172 + 172).
  EXPECT_EQ(shape.streamBytes, 4 * (2 * 128 + 2 * 192));
  EXPECT_EQ(shape.splitBytes, 4 * (128 + 64 + 64 + 128 + 344 + 516));
}

// Head-parallel groups exchange over the link between each pair: on 8 H100 + 8 A100 at 32K,
// eight groups of tp 2 send most of their all-to-alls over NVLink (4 of the 7 other groups
// are across the network), two of tp 8 all of them. The simulator measured 6391 and 9426 ms;
// pricing every pair at the group's narrowest link had ranked the second first.
TEST(Search, HeadGroupsInOneNodeExchangeOverItsLinks) {
  const SearchResult result =
      exampleSearch("examples/llama/llama2_7b.hspmd", "examples/clusters/h100x8_a100x8.toml", 32768, 262144, 100)
          .result;
  double eight = 0, two = 0;
  for (const Candidate &c : result.planned) {
    if (c.strategy == "head-parallel group of 8 x tp 2 (all devices), shares from the local program")
      eight = c.seconds;
    if (c.strategy == "head-parallel group of 2 x tp 8 (all devices), shares from the local program")
      two = c.seconds;
  }
  ASSERT_GT(eight, 0);
  ASSERT_GT(two, 0);
  EXPECT_LT(eight, two);
}

TEST(Search, ProposesWholePlansOnAMixedCluster) {
  const auto [shape, result] =
      exampleSearch("examples/llama/llama32b.hspmd", "examples/clusters/h800x16_h20x32.toml", 4096, 36 * 4096, 5);
  ASSERT_FALSE(result.planned.empty());
  ASSERT_FALSE(result.symmetric.empty());
  EXPECT_GT(result.considered, 10);
  for (const auto *list : {&result.planned, &result.symmetric})
    for (const Candidate &c : *list) {
      // Every pipeline runs every layer once, in order; devices serve one stage; the batch
      // adds up.
      std::set<int> used;
      int64_t sequences = 0;
      for (const PipelinePlan &pipeline : c.pipelines) {
        int64_t at = 0;
        for (const StagePlan &stage : pipeline.stages) {
          EXPECT_EQ(stage.layerBegin, at) << c.strategy;
          at = stage.layerEnd;
          EXPECT_EQ(stage.devices.size() % static_cast<size_t>(stage.tp), 0u) << c.strategy;
          for (int d : stage.devices)
            EXPECT_TRUE(used.insert(d).second) << c.strategy << ": device " << d << " twice";
        }
        EXPECT_EQ(at, shape.layers) << c.strategy;
        EXPECT_EQ(pipeline.sequences % pipeline.microbatches, 0) << c.strategy;
        sequences += pipeline.sequences;
      }
      EXPECT_EQ(sequences, 36) << c.strategy;
      EXPECT_GT(c.seconds, 0) << c.strategy;
    }
  // On 16 H800s and 32 H20s (6.7x slower each), sizing parts by speed beats equal parts.
  EXPECT_LT(result.planned.front().seconds, result.symmetric.front().seconds);
}

// `--precision bf16`: the same candidate priced with 2-byte activations and messages holds less
// and runs no slower; its parameters' state is unchanged, so it holds more than half; its plan
// says `precision bf16`.
TEST(Search, Bf16PricesActivationsAndMessagesAtTwoBytes) {
  const ModelShape shape = exampleShape("examples/llama/llama32b.hspmd");
  std::vector<ClusterError> errors;
  const auto cluster = loadCluster("examples/clusters/h800x16_h20x32.toml", "stdlib/devices.toml", errors);
  ASSERT_TRUE(cluster);
  PlanRequest fp32;
  fp32.tokens = 36 * 4096;
  fp32.sequence = 4096;
  PlanRequest bf16 = fp32;
  bf16.bf16 = true;
  const SearchResult result = searchPlans(shape, *cluster, fp32, 3);
  ASSERT_FALSE(result.planned.empty());
  int compared = 0;
  for (const auto *list : {&result.planned, &result.symmetric})
    for (Candidate c : *list) {
      const double seconds = c.seconds, peak = c.peakBytes;
      estimate(c, shape, *cluster, bf16);
      EXPECT_LT(c.peakBytes, peak) << c.strategy;
      EXPECT_GT(c.peakBytes, peak / 2) << c.strategy;
      EXPECT_LT(c.seconds, seconds) << c.strategy; // memory-bound ops and TP all-reduces move half
      EXPECT_FALSE(planSpec(c, shape, fp32, "p").bf16);
      EXPECT_TRUE(planSpec(c, shape, bf16, "p").bf16);
      EXPECT_NE(planText(c, shape, bf16, "p", "m.hspmd", "c.toml").find("\n  precision bf16\n"), std::string::npos);
      ++compared;
    }
  EXPECT_GE(compared, 4);
}

// A cluster far larger than the batch: 4 sequences on 512 CPU devices. Pipelines the batch
// leaves without sequences are not in the plan, and the strategy says how many run ("4 of 128
// pipelines"); each type's options are ranked by the pipelines that work (before, 128
// pipelines of one stage counted as 32 times the throughput of 4 and crowded out the options
// of more stages).
TEST(Search, MorePipelinesThanSequencesRunOnlyThoseWithSequences) {
  const std::string cluster = hspmd::testing::writeTemp(
      "hspmd_cpu512.toml", "name = \"cpu512\"\ninter_node_gbps = 5.0\n[[nodes]]\ntype = \"cpu\"\ndevices = "
                           "512\n");
  const auto [shape, result] = exampleSearch("examples/gpt/tiny_gpt.hspmd", cluster, 64, 256, 20);
  int perType = 0;
  bool severalStages = false;
  for (const Candidate &c : result.planned) {
    if (c.family != "pipelines per type")
      continue;
    ++perType;
    EXPECT_LE(c.pipelines.size(), 4u) << c.strategy;
    const std::string prefix = "pipelines per type: cpu: " + std::to_string(c.pipelines.size()) + " of ";
    EXPECT_EQ(c.strategy.rfind(prefix, 0), 0u) << c.strategy;
    severalStages = severalStages || c.pipelines.front().stages.size() > 1;
  }
  EXPECT_GT(perType, 0);
  EXPECT_TRUE(severalStages);
}

TEST(Search, HeadSplitsAreCbcOptimalAndABadSplitIsRefinedByCbc) {
  // LLaMA-2-7B at 32K positions on 8 H100 + 8 A100: every head-parallel candidate's head
  // split, after refinement, is CBC's proven optimum of the head program. Then the same
  // candidates with heads moved from one group to another: refinement replaces the worse
  // split with CBC's optimum.
  const ModelShape shape = exampleShape("examples/llama/llama2_7b.hspmd");
  std::vector<ClusterError> errors;
  const auto loaded = loadCluster("examples/clusters/h100x8_a100x8.toml", "stdlib/devices.toml", errors);
  ASSERT_TRUE(loaded);
  const Cluster &cluster = *loaded;
  PlanRequest request;
  request.sequence = 32768;
  request.tokens = 262144;
  int checked = 0, refined = 0;
  for (Candidate c : searchPlans(shape, cluster, request).planned) {
    if (c.family != "head")
      continue;
    const double before = c.seconds;
    refineLocalPrograms(c, shape, cluster, request);
    EXPECT_LE(c.seconds, before * (1 + 1e-12)) << c.strategy; // never worse
    const LocalCheck check = checkLocalPrograms(c, shape, cluster, request);
    ASSERT_TRUE(check.optimal) << check.text;
    EXPECT_NEAR(check.planned, check.exact, 1e-9 * check.exact) << check.text;
    ++checked;

    // Move one head unit (tp x query heads per key/value head) from one share to another:
    // where that makes the split worse, refinement brings back CBC's optimum, unless CBC's
    // answer does not fit memory (its program has no memory constraint).
    const Candidate best = c;
    const int64_t unit = static_cast<int64_t>(c.pipelines[0].stages[0].tp) * (shape.heads / shape.kvHeads);
    const size_t groups = best.pipelines[0].stages[0].hp.size();
    for (size_t from = 0; from < groups; ++from)
      for (size_t to = 0; to < groups; ++to) {
        Candidate moved = best;
        std::vector<int64_t> &hp = moved.pipelines[0].stages[0].hp;
        if (from == to || hp[from] < 2 * unit)
          continue;
        hp[from] -= unit;
        hp[to] += unit;
        const LocalCheck worse = checkLocalPrograms(moved, shape, cluster, request);
        if (worse.planned <= worse.exact * (1 + 1e-9))
          continue;
        estimate(moved, shape, cluster, request);
        const double unbalanced = moved.seconds;
        const bool fitted = moved.fits;
        const bool changed = refineLocalPrograms(moved, shape, cluster, request);
        if (!changed)
          continue;
        EXPECT_LE(moved.seconds, unbalanced);
        EXPECT_TRUE(moved.fits || !fitted);
        const LocalCheck after = checkLocalPrograms(moved, shape, cluster, request);
        EXPECT_NEAR(after.planned, after.exact, 1e-9 * after.exact) << after.text;
        ++refined;
      }
  }
  EXPECT_GT(checked, 0);
  EXPECT_GT(refined, 0);
  std::printf("head-parallel candidates: %d; unbalanced splits refined to CBC's optimum: %d\n", checked, refined);
}

// The planner speaks PlanSpec: each finalist becomes a spec that compiles in memory through the
// gate (driver::checkSpec, lint's checks and the verifier on its training programs), and that
// printed as the plan file `hspmc plan` writes parses back to the same spec.
TEST(Search, FinalistsArePlanSpecsThatPassTheGateAndPrintAsTheirPlan) {
  const std::string model = "examples/llama/tiny_llama.hspmd", clusterFile = "examples/clusters/cpu_mixed4.toml";
  hspmd::testing::ExampleBuild b;
  b.build = driver::elaborateBuild(b.compilation, model, {}, "");
  ASSERT_TRUE(b.build);
  std::string error;
  const ModelShape shape = modelShape(*b.build->graph, error);
  ASSERT_EQ(error, "");
  std::vector<ClusterError> errors;
  const auto cluster = loadCluster(clusterFile, "stdlib/devices.toml", errors);
  ASSERT_TRUE(cluster);
  PlanRequest request;
  request.tokens = 8 * 64;
  request.sequence = 64;
  const SearchResult result = searchPlans(shape, *cluster, request, 3);
  int checked = 0;
  for (const auto *list : {&result.planned, &result.symmetric})
    for (const Candidate &c : *list) {
      ir::PlanSpec spec = planSpec(c, shape, request, "finalist");
      spec.clusterPath = clusterFile;
      passes::PipelineResult training;
      EXPECT_TRUE(driver::checkSpec(b.compilation, spec, *cluster, &training))
          << c.strategy << ": " << ::testing::PrintToString(b.messages(""));
      EXPECT_TRUE(training.ok && !training.programs.empty()) << c.strategy;

      // The plan file, as if written to examples/llama/plans/ (never written).
      const std::string text =
          planText(c, shape, request, "finalist", "../tiny_llama.hspmd", "../../clusters/cpu_mixed4.toml");
      hspmd::testing::Compiled reread;
      const frontend::FileAst *ast = reread.compilation.loadText("examples/llama/plans/finalist.hspmd", text);
      ASSERT_TRUE(ast && ast->plans.size() == 1) << text;
      auto elaborated = reread.compilation.elaboratePlan(*ast->plans[0]);
      ASSERT_TRUE(elaborated) << text << ::testing::PrintToString(reread.messages(""));
      EXPECT_TRUE(ir::samePlan(spec, elaborated->spec)) << text;
      ++checked;
    }
  EXPECT_GE(checked, 3);
}
