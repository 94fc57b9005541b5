// Every file in tests/lint/ is a broken plan whose first lines state exactly what
// `hspmc lint` reports for it (`// expect: LINE:COL: SEVERITY: MESSAGE [CODE]`; a message
// ending in "..." is compared up to there).
#include "planner/driver/Driver.h"

#include "../support/Corpus.h"

#include <gtest/gtest.h>

#include <algorithm>
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
