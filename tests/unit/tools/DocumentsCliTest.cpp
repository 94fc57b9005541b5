// hspmc train --documents as a user runs it (docs/mixed-lengths.md): the example of the
// docs, packed and padded runs of the same documents, and bad options and files.
#include "CliSupport.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace hspmd::testing;

nlohmann::json readJson(const std::string &path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// "in 2.5 of 4 rows" of the documents line: the rows a step fills, on average.
double rowsUsed(const std::string &output) {
  const size_t at = output.find(" real tokens in ");
  return at == std::string::npos ? -1 : std::stod(output.substr(at + 16));
}

} // namespace

// The ```documents example of docs/mixed-lengths.md runs as shown.
TEST(CliDocuments, TheExampleOfTheDocsRuns) {
  const std::string args = docsCommand("mixed-lengths.md", "documents");
  ASSERT_FALSE(args.empty());
  CliRun run = hspmc(args);
  ASSERT_EQ(run.code, 0) << run.output;
  const std::string docs = readText("docs/mixed-lengths.md");
  for (const std::string line :
       {"documents: 122 documents, 34906 tokens; lengths: min 14, median 242, p90 591, max 940; "
        "packed, up to 320 tokens per step: a step takes 2.8 documents (pieces of at most "
        "128), 266 real tokens in 2.8 of 4 rows (52% of the batch), the longest 128\n",
        "step 4/4  loss 5.1052 "}) {
    EXPECT_NE(docs.find(line), std::string::npos) << "the docs no longer show: " << line;
    EXPECT_NE(run.output.find(line), std::string::npos) << run.output;
  }
}

// The same documents packed (several to a row) and padded (one to a row) give the same
// losses: attention sees only a token's own document and only real tokens are scored. The
// packed run must really pack (fewer rows; in corpus order, where the scheduler does not
// spread the rows over the pipelines), or the test would show nothing; the scheduler's
// layout (other rows, the same documents) gives the same losses again.
TEST(CliDocuments, PackedAndPaddedRunsHaveTheSameLosses) {
  HSPMD_SKIP_IF_HEAVY_RUNS_ARE_OFF(); // 67 s under the sanitizers; the other document runs run there
  const std::string common =
      "train examples/gpt/plans/docs_medium.hspmd --data examples/data/gpl-3.txt --documents --tokens 320 --steps 20";
  CliRun packed = hspmc(common + " --schedule in-order --losses build/documents_packed.json");
  ASSERT_EQ(packed.code, 0) << packed.output;
  CliRun padded = hspmc(common + " --schedule in-order --layout padded --losses build/documents_padded.json");
  ASSERT_EQ(padded.code, 0) << padded.output;
  EXPECT_LT(rowsUsed(packed.output), rowsUsed(padded.output) - 0.1) << packed.output << padded.output;
  const nlohmann::json a = readJson("build/documents_packed.json"), b = readJson("build/documents_padded.json");
  EXPECT_EQ(a["documents"], b["documents"]);
  EXPECT_EQ(a["real_tokens"], b["real_tokens"]);
  expectSameLosses("build/documents_packed.json", "build/documents_padded.json", 20, "packed vs padded");
  CliRun balanced = hspmc(common + " --losses build/documents_balanced.json");
  ASSERT_EQ(balanced.code, 0) << balanced.output;
  expectSameLosses("build/documents_balanced.json", "build/documents_packed.json", 20, "balanced vs in order");
  // On MPI too, one process per device: the losses of the threads.
  if (std::system("command -v mpirun > /dev/null") != 0)
    return;
  CliRun mpi = hspmcStartingMpirun(common + " --backend mpi --losses build/documents_mpi.json");
  ASSERT_EQ(mpi.code, 0) << mpi.output;
  expectSameLosses("build/documents_mpi.json", "build/documents_packed.json", 20, "MPI vs threads");
}

TEST(CliDocuments, BadOptionsAndFilesAreClearErrors) {
  const std::string plan = "train examples/gpt/plans/docs_medium.hspmd --steps 1 ";
  CliRun tokens = hspmc(plan + "--data examples/data/gpl-3.txt --tokens 100");
  EXPECT_EQ(tokens.code, 2);
  EXPECT_NE(tokens.output.find("--tokens requires --documents"), std::string::npos) << tokens.output;
  CliRun eod = hspmc(plan + "--data examples/data/gpl-3.txt --documents --eod 999");
  EXPECT_EQ(eod.code, 1);
  EXPECT_NE(
      eod.output.find("hspmc train: error: the end-of-document token 999 is outside the model's vocabulary of 256\n"),
      std::string::npos)
      << eod.output;
  {
    std::ofstream("build/documents_nul.txt", std::ios::binary)
        << std::string("a doc\n\nanother\nwith a \0 in it\n", 30);
  }
  CliRun nul = hspmc(plan + "--data build/documents_nul.txt --documents");
  EXPECT_EQ(nul.code, 1);
  EXPECT_NE(nul.output.find("hspmc train: error: build/documents_nul.txt:3: the text holds byte 0, the "
                            "end-of-document token; choose another with --eod\n"),
            std::string::npos)
      << nul.output;
  { std::ofstream("build/documents_blank.txt") << "\n   \n\n"; }
  CliRun blank = hspmc(plan + "--data build/documents_blank.txt --documents");
  EXPECT_EQ(blank.code, 1);
  EXPECT_NE(blank.output.find("hspmc train: error: build/documents_blank.txt: no documents (a document has at least "
                              "one token before its end)\n"),
            std::string::npos)
      << blank.output;
  CliRun layout = hspmc(plan + "--data examples/data/gpl-3.txt --documents --layout diagonal");
  EXPECT_EQ(layout.code, 2);
  EXPECT_NE(layout.output.find("--layout: diagonal not in {packed,padded}"), std::string::npos) << layout.output;
  for (const std::string bad : {"--tokens 0", "--tokens -5", "--eod -1"}) {
    CliRun run = hspmc(plan + "--data examples/data/gpl-3.txt --documents " + bad);
    EXPECT_EQ(run.code, 2) << bad << ": " << run.output;
    EXPECT_NE(run.output.find("not in range"), std::string::npos) << bad << ": " << run.output;
  }
}

// The ```planset example of docs/mixed-lengths.md runs as shown: each step under the plan of
// its longest document, a switch where the plan changes, moving nothing between plans that
// hold the state alike.
TEST(CliDocuments, ThePlanSetExampleOfTheDocsRuns) {
  const std::string args = docsCommand("mixed-lengths.md", "planset");
  ASSERT_FALSE(args.empty());
  CliRun run = hspmc(args);
  ASSERT_EQ(run.code, 0) << run.output;
  const std::string docs = readText("docs/mixed-lengths.md");
  for (const std::string line :
       {"steps by plan: docs_short (8 x 64) 1, docs_medium (4 x 128) 2, docs_long (2 x 256) 5\n",
        "\nstep 1 under plan 'docs_medium' (1 document, the longest 93 of 128 positions)\nstep 1/8  loss 5.4500 ",
        "\nstep 2 under plan 'docs_long' (2 documents, the longest 190 of 256 positions): transfer planned in ",
        " ms, moved 9.38 MiB in ", "\nstep 2/8  loss 5.3661 ",
        "\nstep 3 under plan 'docs_medium' (1 document, the longest 99 of 128 positions): transfer planned in "}) {
    EXPECT_NE(docs.find(line), std::string::npos) << "the docs no longer show: " << line;
    EXPECT_NE(run.output.find(line), std::string::npos) << run.output;
  }
  EXPECT_NE(run.output.find(" ms, moved 0.00 MiB in "), std::string::npos) << run.output;
}

// A plan set's steps are those of one plan where its documents hold one plan's shape: a set
// of one plan trains as that plan does.
TEST(CliDocuments, APlanSetOfOnePlanTrainsAsThePlan) {
  std::ofstream("build/documents_one.planset.toml") << "plans = [\"../examples/gpt/plans/docs_medium.hspmd\"]\n";
  const std::string common = " --data examples/data/gpl-3.txt --documents --tokens 320 --steps 6 --losses ";
  CliRun set = hspmc("train build/documents_one.planset.toml" + common + "build/documents_one_set.json");
  ASSERT_EQ(set.code, 0) << set.output;
  CliRun plan = hspmc("train examples/gpt/plans/docs_medium.hspmd" + common + "build/documents_one_plan.json");
  ASSERT_EQ(plan.code, 0) << plan.output;
  EXPECT_EQ(lossesOf("build/documents_one_set.json"), lossesOf("build/documents_one_plan.json"));
}

TEST(CliDocuments, BadPlanSetsAreClearErrors) {
  const std::string data = " --data examples/data/gpl-3.txt --documents --steps 1";
  auto trainSet = [&](const std::string &name, const std::string &text, const std::string &extra = "") {
    const std::string path = "build/documents_" + name + ".planset.toml";
    std::ofstream(path) << text;
    return hspmc("train " + path + data + extra);
  };
  const std::string gpt = "../examples/gpt/plans/";
  const std::vector<std::pair<CliRun, std::string>> cases = {
      {trainSet("syntax", "plans = [\"a.hspmd\",\n"),
       "build/documents_syntax.planset.toml:1:21: error: Error while parsing array: encountered end-of-file\n"},
      {trainSet("nokey", "plan = [\"x\"]\n"),
       "build/documents_nokey.planset.toml:1:8: error: unknown key 'plan' in a plan set (it has 'plans')\n"
       "build/documents_nokey.planset.toml:1:1: error: a plan set needs `plans = [\"PLAN.hspmd\", ...]`, a plan per "
       "length bucket\n"},
      {trainSet("empty", "plans = []\n"),
       "build/documents_empty.planset.toml:1:9: error: a plan set needs at least one plan\n"},
      {trainSet("self", "plans = [\"documents_self.planset.toml\"]\n"),
       "build/documents_self.planset.toml:1:10: error: a plan set names plans (.hspmd files), not plan sets\n"},
      {trainSet("number", "plans = [3]\n"),
       "build/documents_number.planset.toml:1:10: error: a plan of a plan set is a file name in quotes\n"},
      {trainSet("missing", "plans = [\"nowhere.hspmd\"]\n"),
       "build/documents_missing.planset.toml:1:10: error: cannot read plan 'build/nowhere.hspmd'\n"},
      {trainSet("folder", "plans = [\".\"]\n"),
       "build/documents_folder.planset.toml:1:10: error: cannot read plan 'build/': it is a directory\n"},
      {trainSet("twice", "plans = [\"" + gpt + "docs_short.hspmd\", \"" + gpt + "docs_short.hspmd\"]\n"),
       "build/documents_twice.planset.toml:1:52: error: plan '../examples/gpt/plans/docs_short.hspmd' is named "
       "twice\n"},
      {trainSet("sameS", "plans = [\"" + gpt + "docs_short.hspmd\", \"" + gpt + "dp2_tp2.hspmd\"]\n"),
       "hspmc train: error: build/documents_sameS.planset.toml: plans 'docs_short' and 'dp2_tp2' both take "
       "sequences of 64: a length bucket has one plan\n"},
      {trainSet("model",
                "plans = [\"" + gpt + "docs_short.hspmd\", \"../examples/llama/plans/tiny_llama_docs_long.hspmd\"]\n"),
       "hspmc train: error: build/documents_model.planset.toml: plan 'tiny_docs_long' cannot be in a plan set with "
       "'docs_short': it trains TinyLLaMA with other parameters than TinyGPT under plan 'docs_short'\n"},
      {trainSet("switch", "plans = [\"" + gpt + "docs_short.hspmd\"]\n", " --switch 2:examples/gpt/plans/single.hspmd"),
       "hspmc train: error: build/documents_switch.planset.toml is a plan set, whose run switches plans by the "
       "documents' lengths: --switch, --fail, --fault-trace, --recover and --stragglers do not combine with it yet\n"},
  };
  for (const auto &[run, expected] : cases) {
    EXPECT_EQ(run.code, 1) << run.output;
    EXPECT_EQ(run.output, expected);
  }
  CliRun noDocuments = hspmc("train examples/gpt/plans/docs.planset.toml --data examples/data/gpl-3.txt --steps 1");
  EXPECT_EQ(noDocuments.code, 1);
  EXPECT_EQ(noDocuments.output, "hspmc train: error: examples/gpt/plans/docs.planset.toml is a plan set: it trains on "
                                "documents (add --documents; docs/mixed-lengths.md)\n");
}

namespace {
// A row of hspmc simulate --documents: steps, real tokens per step, tokens/s.
struct StrategyRow {
  long long steps = 0;
  double tokensPerStep = 0, tokensPerSecond = 0;
};
StrategyRow strategyRow(const std::string &output, const std::string &name) {
  StrategyRow row;
  const size_t at = output.find("\n" + name);
  if (at == std::string::npos)
    return row;
  const size_t end = output.find('\n', at + 1);
  std::istringstream fields(output.substr(output.find(')', at) + 1, end - output.find(')', at) - 1));
  std::string ms;
  double step = 0;
  fields >> row.steps >> row.tokensPerStep >> step >> ms >> row.tokensPerSecond;
  return row;
}
} // namespace

// One pass over 200 documents of 8 to 64 tokens (3688 in all) under the tiny GPT's plan set:
// padded, the 2 x 256 plan takes two documents a step; packed, it takes as many as fit;
// both pass over every token once.
TEST(CliDocuments, SimulatingDocumentsPricesEachStrategy) {
  CliRun run = hspmc("simulate examples/gpt/plans/docs.planset.toml --documents examples/data/lengths_tiny.txt");
  ASSERT_EQ(run.code, 0) << run.output;
  const StrategyRow padded = strategyRow(run.output, "padded, one plan (docs_long, 2 x 256)");
  const StrategyRow packed = strategyRow(run.output, "packed, one plan (docs_long, 2 x 256)");
  const StrategyRow perStep = strategyRow(run.output, "per step, 3 plans (Hetu)");
  EXPECT_EQ(padded.steps, 100) << run.output;
  for (const StrategyRow &row : {padded, packed, perStep}) {
    EXPECT_GE(row.tokensPerStep * static_cast<double>(row.steps), 3688 - 0.5) << run.output;
    EXPECT_LT(row.tokensPerStep * static_cast<double>(row.steps - 1), 3688) << run.output;
  }
  EXPECT_GT(packed.tokensPerSecond, 5 * padded.tokensPerSecond) << run.output;
  EXPECT_NE(run.output.find("\nper micro-batch: not possible with these plans ('docs_short' and 'docs_medium' do "
                            "not hold the state alike: 'wte' lies otherwise on device 0)\n"),
            std::string::npos)
      << run.output;
  // Plans that hold the state alike: per micro-batch too, over the same tokens.
  CliRun alike =
      hspmc("simulate examples/gpt/plans/docs_replicated.planset.toml --documents examples/data/lengths_tiny.txt");
  ASSERT_EQ(alike.code, 0) << alike.output;
  const StrategyRow perMicroBatch = strategyRow(alike.output, "per micro-batch, 3 plans (hspmd)");
  EXPECT_GE(perMicroBatch.tokensPerStep * static_cast<double>(perMicroBatch.steps), 3688 - 0.5) << alike.output;
  EXPECT_GT(perMicroBatch.tokensPerSecond, 0) << alike.output;
  // Bad input.
  std::ofstream("build/documents_lengths_bad.txt") << "12\n# ok\nabc\n";
  CliRun bad = hspmc("simulate examples/gpt/plans/docs_long.hspmd --documents build/documents_lengths_bad.txt");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.output.find("build/documents_lengths_bad.txt:3: error: 'abc' is not a sequence length\n"),
            std::string::npos)
      << bad.output;
  // A document too long to cut into pieces; INT64_MAX used to end in "vector::reserve".
  for (const auto &[name, length] :
       {std::pair<std::string, std::string>{"huge", "999999999999"}, {"edge", "9223372036854775807"}}) {
    const std::string file = "build/documents_lengths_" + name + ".txt";
    std::ofstream(file) << length << "\n";
    CliRun tooLong = hspmc("simulate examples/gpt/plans/docs_long.hspmd --documents " + file);
    EXPECT_EQ(tooLong.code, 1);
    EXPECT_NE(
        tooLong.output.find("hspmc simulate: error: " + file +
                            ": the documents make more than 100000000 pieces of at most 256 positions (a document "
                            "of " +
                            length + " positions among them); use fewer or shorter documents\n"),
        std::string::npos)
        << tooLong.output;
  }
  CliRun set = hspmc("simulate examples/gpt/plans/docs.planset.toml");
  EXPECT_EQ(set.code, 2);
  EXPECT_EQ(set.output, "hspmc simulate: error: examples/gpt/plans/docs.planset.toml is a plan set: simulate it "
                        "over documents (--documents LENGTHS)\n");
  CliRun json = hspmc("simulate examples/gpt/plans/docs_long.hspmd --documents examples/data/lengths_tiny.txt "
                      "--format json");
  EXPECT_EQ(json.code, 2);
  EXPECT_EQ(json.output, "hspmc simulate: error: --documents FILE (with --tokens, --schedule) takes a plan or a plan "
                         "set and --cluster, without --plan, --trace, --fault-trace or --format json\n");
  // A set whose plans name other clusters is simulated on one: --cluster, else the first's.
  std::filesystem::create_directories("build/documents_clusters");
  {
    std::ifstream in("examples/gpt/plans/docs_long.hspmd");
    std::stringstream text;
    text << in.rdbuf();
    std::string plan = text.str();
    for (const auto &[from, to] : std::vector<std::pair<std::string, std::string>>{
             {"../tiny_gpt.hspmd", "../../examples/gpt/tiny_gpt.hspmd"},
             {"../../clusters/cpu4.toml", "../../examples/clusters/a100x16.toml"},
             {"devices [0, 1, 2, 3] cp [0: 1, 1: 1, 2: 1, 3: 1]",
              "devices [12, 13, 14, 15] cp [12: 1, 13: 1, 14: 1, 15: 1]"}})
      plan.replace(plan.find(from), from.size(), to);
    std::ofstream("build/documents_clusters/big.hspmd") << plan;
    std::ofstream("build/documents_clusters/set.planset.toml")
        << "plans = [\"../../examples/gpt/plans/docs_short.hspmd\", \"big.hspmd\"]\n";
  }
  CliRun clusters = hspmc("simulate build/documents_clusters/set.planset.toml --documents "
                          "examples/data/lengths_tiny.txt");
  EXPECT_EQ(clusters.code, 1);
  EXPECT_NE(
      clusters.output.find("build/documents_clusters/big.hspmd:5:6: error: the plan names cluster "
                           "'examples/clusters/a100x16.toml', the set's first plan 'examples/clusters/cpu4.toml': "
                           "a plan set is simulated on one cluster (pass --cluster FILE)\n"),
      std::string::npos)
      << clusters.output;
  CliRun small = hspmc("simulate build/documents_clusters/set.planset.toml --documents "
                       "examples/data/lengths_tiny.txt --cluster examples/clusters/cpu4.toml");
  EXPECT_EQ(small.code, 1);
  EXPECT_NE(small.output.find("build/documents_clusters/big.hspmd:10:19: error: device 12 is not in the cluster"),
            std::string::npos)
      << small.output;
  CliRun schedule = hspmc("simulate examples/gpt/plans/docs_long.hspmd --schedule in-order");
  EXPECT_EQ(schedule.code, 2);
  EXPECT_EQ(schedule.output, json.output);
}

// The ```microbatch example of docs/mixed-lengths.md runs as shown: a step's documents under
// the plans of their lengths.
TEST(CliDocuments, TheMicroBatchExampleOfTheDocsRuns) {
  const std::string args = docsCommand("mixed-lengths.md", "microbatch");
  ASSERT_FALSE(args.empty());
  CliRun run = hspmc(args);
  ASSERT_EQ(run.code, 0) << run.output;
  const std::string docs = readText("docs/mixed-lengths.md");
  for (const std::string line :
       {"steps using each plan: docs_short (8 x 64) 2, docs_medium_dp (4 x 128) 1, docs_long (2 x 256) 3\n",
        "; 2.0 of 3 micro-batches run (balanced); ",
        "\nstep 1: docs_short 1 document (36 tokens in 1 of 2 micro-batches), docs_medium_dp 2 documents (192 tokens), "
        "docs_long 1 document (190 tokens)\nstep 1/3  loss 5.4938 ",
        "\nstep 2: docs_long 2 documents (512 tokens)\nstep 2/3  loss 5.3330 ", "\nstep 3/3  loss 5.1547 "}) {
    EXPECT_NE(docs.find(line), std::string::npos) << "the docs no longer show: " << line;
    EXPECT_NE(run.output.find(line), std::string::npos) << run.output;
  }
}

// "2.0 of 4 micro-batches run" of the documents line: micro-batch indices a step runs.
double microbatchesRun(const std::string &output) {
  const size_t at = output.find(" micro-batches run (");
  if (at == std::string::npos)
    return -1;
  const size_t from = output.rfind("; ", at);
  return std::stod(output.substr(from + 2));
}

// The ```scheduler example of docs/mixed-lengths.md runs as shown, and in corpus order the
// same steps give the same losses but run more micro-batches: the scheduler spreads a step's
// documents over docs_dp2's two pipelines in the fewest micro-batches.
TEST(CliDocuments, TheSchedulerExampleOfTheDocsRuns) {
  const std::string args = docsCommand("mixed-lengths.md", "scheduler");
  ASSERT_FALSE(args.empty());
  CliRun balanced = hspmc(args + " --losses build/documents_scheduler_balanced.json");
  ASSERT_EQ(balanced.code, 0) << balanced.output;
  const std::string docs = readText("docs/mixed-lengths.md");
  for (const std::string line :
       {"406 real tokens in 3.8 of 8 rows (40% of the batch), the longest 128; 2.0 of 4 micro-batches run (balanced)\n",
        "step 4/4  loss 5.0841 "}) {
    EXPECT_NE(docs.find(line), std::string::npos) << "the docs no longer show: " << line;
    EXPECT_NE(balanced.output.find(line), std::string::npos) << balanced.output;
  }
  CliRun inOrder = hspmc(args + " --schedule in-order --losses build/documents_scheduler_in_order.json");
  ASSERT_EQ(inOrder.code, 0) << inOrder.output;
  EXPECT_NE(inOrder.output.find("; 3.8 of 4 micro-batches run (in corpus order)\n"), std::string::npos)
      << inOrder.output;
  EXPECT_LT(microbatchesRun(balanced.output), microbatchesRun(inOrder.output) - 1) << balanced.output;
  expectSameLosses("build/documents_scheduler_balanced.json", "build/documents_scheduler_in_order.json", 4,
                   "balanced vs in corpus order");
  const nlohmann::json a = readJson("build/documents_scheduler_balanced.json"),
                       b = readJson("build/documents_scheduler_in_order.json");
  EXPECT_EQ(a["documents"], b["documents"]);
  CliRun bad = hspmc(args + " --schedule random");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.output.find("--schedule: random not in {balanced,in-order}"), std::string::npos) << bad.output;
  CliRun noDocuments = hspmc("train examples/gpt/plans/docs_dp2.hspmd --data examples/data/gpl-3.txt --schedule "
                             "in-order --steps 1");
  EXPECT_EQ(noDocuments.code, 2);
  EXPECT_NE(noDocuments.output.find("--schedule requires --documents"), std::string::npos) << noDocuments.output;
}

TEST(CliDocuments, MicroBatchGranularityNeedsPlansThatHoldTheStateAlike) {
  const std::string data = " --data examples/data/gpl-3.txt --documents --steps 1 --granularity micro-batch";
  CliRun unlike = hspmc("train examples/gpt/plans/docs.planset.toml" + data);
  EXPECT_EQ(unlike.code, 1);
  EXPECT_EQ(unlike.output,
            "hspmc train: error: examples/gpt/plans/docs.planset.toml: --granularity micro-batch runs plans within a "
            "step, which needs them to hold the state alike; 'docs_short' and 'docs_medium' do not: 'wte' lies "
            "otherwise on device 0\n");
  CliRun plan = hspmc("train examples/gpt/plans/docs_long.hspmd" + data);
  EXPECT_EQ(plan.code, 2);
  EXPECT_EQ(plan.output, "hspmc train: error: --granularity micro-batch runs the plans of a plan set within a step: "
                         "FILE must be a plan set (docs/mixed-lengths.md)\n");
  CliRun noDocuments = hspmc("train examples/gpt/plans/docs_replicated.planset.toml --data examples/data/gpl-3.txt "
                             "--granularity micro-batch");
  EXPECT_EQ(noDocuments.code, 2);
  EXPECT_NE(noDocuments.output.find("--granularity requires --documents"), std::string::npos) << noDocuments.output;
}
