// The C++ generator alone (tests/codegen/check_generated.sh builds and runs what it writes and
// compares the losses with `hspmc train`): the files it writes, one buffer(...) and one
// instruction(...) line per buffer and instruction of each device's program, and every
// instruction called exactly once, from the function of its pass (recomputation from the
// backward pass's).
#include "codegen/Codegen.h"
#include "../support/ExampleBuild.h"
#include "passes/Pipeline.h"
#include "planner/driver/ModelInfo.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

using namespace hspmd;

namespace {

int count(const std::string &text, const std::string &needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

} // namespace

TEST(Codegen, EveryInstructionIsEmittedAndCalledOnceFromItsPass) {
  auto b =
      hspmd::testing::buildExample("examples/gpt/tiny_gpt.hspmd", {"examples/gpt/plans/pipeline2_recompute.hspmd"});
  ASSERT_TRUE(b->build);
  passes::PipelineOptions options;
  options.train = true;
  auto result = passes::runPipeline(*b->build->graph, b->build->plans, options, [](const passes::Problem &p) {
    if (p.severity == passes::Severity::Error)
      ADD_FAILURE() << p.message;
  });
  ASSERT_TRUE(result.ok);
  const auto &programs = result.programs[0];
  const auto files = codegen::generate(programs, driver::modelInfo(*b->build->graph), b->build->plans[0], "p",
                                       codegen::Toolchain{"/src", "/bin"});
  std::set<std::string> names;
  for (const auto &[name, text] : files)
    names.insert(name);
  EXPECT_EQ(names,
            (std::set<std::string>{"CMakeLists.txt", "main.cpp", "device_0.cpp", "device_1.cpp", "device_2.cpp"}));
  static const char *const passNames[] = {"forward", "recompute", "backward", "update"};
  for (const auto &[device, program] : programs) {
    const std::string &text = files.at("device_" + std::to_string(device) + ".cpp");
    EXPECT_EQ(count(text, "  buffer(p, "), static_cast<int>(program.buffers.size())) << device;
    EXPECT_EQ(count(text, "  instruction(p, "), static_cast<int>(program.body.size())) << device;
    // Which pass's function calls each instruction.
    std::map<size_t, std::vector<int>> calledFrom;
    std::istringstream lines(text);
    std::string line;
    int pass = -1;
    const std::regex call(R"(^  x\.instruction\((\d+), mb\);)");
    while (std::getline(lines, line)) {
      for (int p = 0; p < 4; ++p)
        if (line.rfind("void device_" + std::to_string(device) + "_" + passNames[p] + "(", 0) == 0)
          pass = p;
      std::smatch m;
      if (std::regex_search(line, m, call))
        calledFrom[std::stoul(m[1])].push_back(pass);
    }
    ASSERT_EQ(calledFrom.size(), program.body.size()) << device;
    for (size_t i = 0; i < program.body.size(); ++i) {
      ASSERT_EQ(calledFrom[i].size(), 1u) << device << ": instruction " << i;
      EXPECT_EQ(calledFrom[i][0], static_cast<int>(ir::passOf(program.body[i].phase))) << device << ": " << i;
    }
  }
  // Stage 0 recomputes: its recompute instructions run at the start of each backward pass,
  // called from the backward function (ir::passOf), which leaves the recompute one empty.
  int recomputed = 0;
  for (const ir::Instruction &in : programs.at(0).body)
    recomputed += in.phase == ir::Phase::Recompute;
  EXPECT_GT(recomputed, 0);
  EXPECT_NE(files.at("device_0.cpp").find("_recompute(runtime::DeviceExecutor &x, int mb) {\n  (void)x;"),
            std::string::npos);
  EXPECT_NE(files.at("CMakeLists.txt").find("/src"), std::string::npos);
}

// A name from the user's files may hold any byte (a cluster's device type, which a --target
// cuda binary carries): the literal the generator writes is one C++ line that a compiler reads
// back to the same bytes, and the toolchain's folders are CMake arguments that expand nothing.
TEST(Codegen, NamesOfAnyBytesAreLiterals) {
  auto b = hspmd::testing::buildExample("examples/gpt/tiny_gpt.hspmd", {"examples/gpt/plans/single.hspmd"});
  ASSERT_TRUE(b->build);
  passes::PipelineOptions options;
  options.train = true;
  auto result = passes::runPipeline(*b->build->graph, b->build->plans, options, [](const passes::Problem &) {});
  ASSERT_TRUE(result.ok);
  std::string type;
  for (int byte = 1; byte < 256; ++byte)
    type += static_cast<char>(byte);
  type += "?\?=0"; // a trigraph, then a digit after the last escape
  codegen::PlanToBuild plan{&result.programs[0], &b->build->plans[0], {{0, type}}};
  const auto files = codegen::generate({plan}, driver::modelInfo(*b->build->graph), "p",
                                       codegen::Toolchain{"/src ${HOME};x\"", "/bin"}, codegen::Target::Cuda, {type});
  const std::string &main = files.at("main.cpp");
  const std::string prefix = "  plans[0].deviceTypes[0] = ";
  const size_t at = main.find(prefix);
  ASSERT_NE(at, std::string::npos) << main;
  const std::string literal = main.substr(at + prefix.size(), main.find(";\n", at) - at - prefix.size());
  const std::string source = "build/codegen_literal.cpp", binary = "build/codegen_literal";
  std::ofstream(source) << "#include <cstdio>\nstatic const char s[] = " << literal
                        << ";\nint main() { std::fwrite(s, 1, sizeof s - 1, stdout); }\n";
  ASSERT_EQ(std::system(("c++ -std=c++17 -o " + binary + " " + source).c_str()), 0) << literal;
  std::FILE *pipe = popen(binary.c_str(), "r");
  ASSERT_TRUE(pipe);
  std::string back;
  char buffer[512];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    back.append(buffer, n);
  pclose(pipe);
  EXPECT_EQ(back, type);
  EXPECT_NE(files.at("CMakeLists.txt").find("PRIVATE \"/src \\${HOME}\\;x\\\"\")"), std::string::npos)
      << files.at("CMakeLists.txt");
}
