// The gate every command that compiles a plan passes (driver::lintBuild) checks a plan that
// compiles clean in one build, the training build with the plan's checks run on the forward
// part of its graph, and anything else in two, an inference build for the checks and then the
// training build (planner/driver/Driver.cpp). Both ways must say the same and hand over the
// same programs: HSPMD_GATE_TWO_BUILDS=1 takes the two builds always.
#include "planner/driver/Driver.h"

#include "../support/Corpus.h"
#include "frontend/Diagnostics.h"
#include "ir/DeviceProgram.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace fs = std::filesystem;
using namespace hspmd;

namespace {

struct Gated {
  std::string diagnostics; // rendered, notes included
  int builds = 0;          // elaborations the gate asked for
  bool compiled = false;
  std::string programs; // every device's training program, as text
};

Gated gate(const std::string &file, bool twoBuilds) {
  if (twoBuilds)
    setenv("HSPMD_GATE_TWO_BUILDS", "1", 1);
  else
    unsetenv("HSPMD_GATE_TWO_BUILDS");
  frontend::SourceManager sources;
  frontend::CollectingSink sink;
  frontend::DiagnosticEngine diags(sink);
  frontend::Compilation compilation(sources, diags, "stdlib");
  Gated out;
  std::optional<planner::Cluster> cluster;
  passes::PipelineResult training;
  if (auto first = driver::elaborateBuild(compilation, file, {file}, ""); first && !first->plans.empty()) {
    if (const std::string path = first->plans[0].clusterPath; !path.empty()) {
      std::vector<planner::ClusterError> errors;
      cluster = planner::loadCluster(path, compilation.stdlibDir() + "/devices.toml", errors);
    }
    driver::lintBuild(
        diags,
        [&]() -> std::optional<driver::Build> {
          ++out.builds;
          return out.builds == 1 ? std::move(first) : driver::elaborateBuild(compilation, file, {file}, "");
        },
        cluster ? &*cluster : nullptr, true, &training);
  }
  for (const auto &d : sink.diagnostics)
    out.diagnostics += frontend::renderDiagnostic(d, &sources);
  out.compiled = training.ok && !training.programs.empty();
  for (const auto &programs : training.programs)
    for (const auto &[device, program] : programs)
      out.programs += ir::printProgram(program);
  unsetenv("HSPMD_GATE_TWO_BUILDS");
  return out;
}

std::vector<std::string> plans() {
  std::vector<std::string> files;
  for (const std::string folder : {"examples/gpt/plans", "examples/llama/plans", "tests/lint"})
    for (const std::string &name : hspmd::testing::corpusFiles(folder))
      files.push_back(folder + "/" + name);
  return files;
}

class Gate : public ::testing::TestWithParam<std::string> {};

TEST_P(Gate, OneBuildSaysWhatTwoBuildsSay) {
  const std::string file = GetParam();
  const Gated one = gate(file, false), two = gate(file, true);
  EXPECT_EQ(one.diagnostics, two.diagnostics);
  EXPECT_EQ(one.compiled, two.compiled);
  EXPECT_TRUE(one.programs == two.programs) << "the programs differ";
  // A plan that compiles without an error takes the one build (the two ways elaborate twice);
  // one with an error that the checks or the passes find (all of tests/lint but HS111, which
  // the training programs' peaks decide, and those elaboration stops before the gate) tries it,
  // then takes the two ways.
  if (one.compiled && one.diagnostics.find("error:") == std::string::npos) {
    EXPECT_EQ(one.builds, 1) << one.diagnostics;
    EXPECT_EQ(two.builds, 2) << two.diagnostics;
  } else if (two.builds > 0 && one.diagnostics.find("[HS111]") == std::string::npos) {
    EXPECT_EQ(one.builds, two.builds + 1) << one.diagnostics;
  }
}

INSTANTIATE_TEST_SUITE_P(Plans, Gate, ::testing::ValuesIn(plans()), [](const auto &param) {
  std::string name =
      fs::path(param.param).parent_path().filename().string() + "_" + fs::path(param.param).stem().string();
  for (char &c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return name;
});

} // namespace
