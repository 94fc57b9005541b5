// Every file in tests/diagnostics/ is a malformed input whose first lines state the exact
// diagnostics it must produce (`// expect: LINE:COL: SEVERITY: MESSAGE`).
#include "TestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace {

std::vector<std::string> expectations(const fs::path &file) {
  std::ifstream in(file);
  std::vector<std::string> expected;
  for (std::string line; std::getline(in, line) && line.rfind("// expect: ", 0) == 0;)
    expected.push_back(line.substr(11));
  return expected;
}

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
  std::vector<std::string> names;
  // Listed from the source tree: test discovery may run in another folder.
  for (const auto &entry : fs::directory_iterator(fs::path(HSPMD_SOURCE_DIR) / "tests/diagnostics"))
    if (entry.path().extension() == ".hspmd")
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Files, DiagnosticCorpus, ::testing::ValuesIn(corpus()),
                         [](const ::testing::TestParamInfo<std::string> &param) {
                           return fs::path(param.param).stem().string();
                         });

TEST(DiagnosticCorpusSize, HasAtLeastFortyCases) {
  EXPECT_GE(corpus().size(), 40u);
}

} // namespace
