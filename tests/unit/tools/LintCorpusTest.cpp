// Every file in tests/lint/ is a broken plan whose first lines state exactly what
// `hspmc lint` reports for it (`// expect: LINE:COL: SEVERITY: MESSAGE [CODE]`; a message
// ending in "..." is compared up to there).
#include "planner/driver/Driver.h"

#include "../support/Corpus.h"
#include "frontend/Diagnostics.h"
#include "ir/DeviceProgram.h"
#include "runtime/Fusion.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace hspmd;

namespace {

using hspmd::testing::expectations;

std::vector<std::string> lint(const std::string &file) {
  frontend::SourceManager sources;
  frontend::CollectingSink sink;
  frontend::DiagnosticEngine diags(sink);
  frontend::Compilation compilation(sources, diags, "stdlib");
  driver::lintFile(compilation, file, "", "");
  std::vector<std::string> out;
  auto add = [&](const frontend::Diagnostic &d) {
    std::string header = frontend::diagnosticHeader(d);
    out.push_back(header.rfind(file + ":", 0) == 0 ? header.substr(file.size() + 1) : header);
  };
  for (const auto &d : sink.diagnostics) {
    add(d);
    for (const auto &note : d.notes)
      add(note);
  }
  return out;
}

bool matches(const std::string &actual, const std::string &expected) {
  if (expected.size() > 3 && expected.compare(expected.size() - 3, 3, "...") == 0)
    return actual.rfind(expected.substr(0, expected.size() - 3), 0) == 0;
  return actual == expected;
}

class LintCorpus : public ::testing::TestWithParam<std::string> {};

TEST_P(LintCorpus, ReportsExactlyTheExpectedProblems) {
  const std::string file = "tests/lint/" + GetParam();
  std::vector<std::string> expected = expectations(file), actual = lint(file);
  ASSERT_FALSE(expected.empty()) << file;
  ASSERT_EQ(actual.size(), expected.size()) << ::testing::PrintToString(actual);
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_TRUE(matches(actual[i], expected[i])) << "got      " << actual[i] << "\nexpected " << expected[i];
}

std::vector<std::string> corpus() {
  return hspmd::testing::corpusFiles("tests/lint");
}

INSTANTIATE_TEST_SUITE_P(Plans, LintCorpus, ::testing::ValuesIn(corpus()),
                         [](const ::testing::TestParamInfo<std::string> &param) {
                           return fs::path(param.param).stem().string();
                         });

TEST(LintCorpusSize, HasAtLeastThirtyPlans) {
  EXPECT_GE(corpus().size(), 30u);
}

// The heterogeneous 32B plan on 16 x H800 + 32 x H20 lints clean; so does every tiny-GPT
// plan whose devices are alike.
TEST(LintExamples, HeterogeneousPlansLintClean) {
  for (const char *plan :
       {"examples/llama/plans/llama32b_hetero48.hspmd", "examples/llama/plans/llama2_7b_hetero16.hspmd",
        "examples/llama/plans/llama2_13b_hetero16.hspmd", "examples/gpt/plans/hetero4.hspmd",
        "examples/gpt/plans/dp2_tp2.hspmd", "examples/gpt/plans/pipeline2.hspmd", "examples/gpt/plans/single.hspmd"})
    EXPECT_EQ(lint(plan), std::vector<std::string>{}) << plan;
}

TEST(LintExamples, ChunkedSilencesUnevenSplits) {
  std::ofstream("tests/lint/chunked.tmp")
      << "import \"nn\"\nplan p for GPT {\n  cluster \"../../examples/clusters/cpu4.toml\"\n"
         "  bind B = 8, S = 64\n  chunked\n  annotate wte = [0, 1, 2]: S0\n}\n";
  auto problems = lint("tests/lint/chunked.tmp");
  fs::remove("tests/lint/chunked.tmp");
  for (const auto &problem : problems)
    EXPECT_EQ(problem.find("HS104"), std::string::npos) << problem;
}

} // namespace

// HS206 (docs/lint.md): lint weighs the bf16 copies of parameters that a GPU keeps beside a
// bf16 program's memory plan as the GPU allocates them (runtime/gpu/GpuOffload.cpp): in buffer
// order, each while kParameterCopyReserve stays free. A GPU exactly big enough holds them all;
// one byte less leaves the last out; a "cpu" device of the same size has none.
TEST(LintExamples, Bf16CopiesAreWeighedAsAGpuAllocatesThem) {
  const std::string plan = "build/lint_bf16_copies.hspmd", clusterFile = "build/lint_bf16_copies.toml";
  std::ofstream(plan)
      << "import \"nn\"\nplan p for GPT {\n  cluster \"lint_bf16_copies.toml\"\n  bind B = 8, S = 64\n"
         "  precision bf16\n  pipeline a {\n    stage devices [0] layers blocks with wte, lnf\n  }\n}\n";
  // Lints the plan on one device of `type` with `bytes` of memory: the warnings (header lines).
  auto lintOn = [&](const std::string &type, double bytes, passes::PipelineResult *training = nullptr) {
    char gib[64];
    std::snprintf(gib, sizeof gib, "%.17g", bytes / (1024.0 * 1024.0 * 1024.0));
    std::ofstream(clusterFile) << "name = \"one\"\ninter_node_gbps = 1.0\n[[nodes]]\ntype = \"" << type
                               << "\"\ndevices = 1\n[types." << type << "]\nbf16_tflops = 1.0\nmemory_gib = " << gib
                               << "\nhbm_gbps = 100.0\nintra_node_gbps = 10.0\n";
    std::vector<planner::ClusterError> errors;
    auto cluster = planner::loadCluster(clusterFile, "stdlib/devices.toml", errors);
    EXPECT_TRUE(cluster && cluster->typeOf(0).memoryGiB * 1024 * 1024 * 1024 == bytes); // (an inline "cpu" too)
    frontend::SourceManager sources;
    frontend::CollectingSink sink;
    frontend::DiagnosticEngine diags(sink);
    frontend::Compilation compilation(sources, diags, "stdlib");
    driver::lintFile(compilation, plan, "", "", true, true, training);
    std::string out;
    for (const auto &d : sink.diagnostics)
      out += frontend::diagnosticHeader(d) + "\n";
    return out;
  };
  passes::PipelineResult training;
  EXPECT_EQ(lintOn("gpuish", 64.0 * (1 << 30), &training), "");
  ASSERT_TRUE(training.ok && training.programs.size() == 1 && training.programs[0].count(0));
  const ir::DeviceProgram &program = training.programs[0].at(0);
  // The copies: the weights of the 4 blocks' products (wqkv [128, 384], wo [128, 128], w1 [128,
  // 512], w2 [512, 128]), halved; the head reads wte through its transpose, a buffer of its own.
  const std::vector<int> copies = runtime::bf16ParameterCopies(program, runtime::fusionFor(program, true));
  ASSERT_EQ(copies.size(), 16u);
  int64_t all = 0;
  for (int id : copies)
    all += program.buffers[static_cast<size_t>(id)].bytes() / 2;
  EXPECT_EQ(all, 4 * (128 * 384 + 128 * 128 + 2 * 128 * 512) * 2);
  const int64_t last = program.buffers[static_cast<size_t>(copies.back())].bytes() / 2;
  const double exact = static_cast<double>(program.peakBytes + runtime::kParameterCopyReserve + all);
  EXPECT_EQ(lintOn("gpuish", exact), "");
  EXPECT_EQ(lintOn("gpuish", exact - 1),
            plan + ":7:19: warning: device 0's bf16 copies of 1 of the 16 parameters its bf16 products read (" +
                ir::memoryText(static_cast<double>(last)) + ") do not fit on a gpuish (" + ir::memoryText(exact - 1) +
                ") beside the memory plan of its training program (" +
                ir::memoryText(static_cast<double>(program.peakBytes)) +
                ") and the 1.00 GiB a GPU run keeps free: on a GPU those products round the parameter each time they "
                "read it (slower, the same results) [HS206]\n");
  EXPECT_EQ(lintOn("cpu", exact - 1), "");
  std::filesystem::remove(plan);
  std::filesystem::remove(clusterFile);
}
