// Every file in tests/diagnostics/ is a malformed input whose first lines state the exact
// diagnostics it must produce (`// expect: LINE:COL: SEVERITY: MESSAGE`).
#include "TestSupport.h"

#include "../support/Corpus.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace {

using hspmd::testing::expectations;

class DiagnosticCorpus : public ::testing::TestWithParam<std::string> {};

TEST_P(DiagnosticCorpus, ProducesExactlyTheExpectedDiagnostics) {
  const std::string file = "tests/diagnostics/" + GetParam();
  hspmd::testing::Compiled compiled;
  if (const auto *ast = compiled.compilation.load(file))
    compiled.compilation.checkFile(*ast);
  std::vector<std::string> expected = expectations(file);
  ASSERT_FALSE(expected.empty()) << file << " states no expectation";
  EXPECT_EQ(compiled.messages(file), expected);
  EXPECT_GT(compiled.diags.errorCount(), 0);
}

std::vector<std::string> corpus() {
  return hspmd::testing::corpusFiles("tests/diagnostics");
}

INSTANTIATE_TEST_SUITE_P(Files, DiagnosticCorpus, ::testing::ValuesIn(corpus()),
                         [](const ::testing::TestParamInfo<std::string> &param) {
                           return fs::path(param.param).stem().string();
                         });

TEST(DiagnosticCorpusSize, HasAtLeastFortyCases) {
  EXPECT_GE(corpus().size(), 40u);
}

} // namespace
