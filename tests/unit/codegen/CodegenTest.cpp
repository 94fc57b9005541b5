// The C++ generator alone (tests/codegen/check_generated.sh builds and runs what it writes and
// compares the losses with `hspmc train`): the files it writes, each device's program as its
// text, which reads back with every field of the program, and every instruction called
// exactly once, from the function of its pass (recomputation from the backward pass's).
#include "codegen/Codegen.h"
#include "../support/ExampleBuild.h"
#include "passes/Pipeline.h"
#include "planner/driver/ModelInfo.h"
#include "runtime/Generated.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <tuple>

using namespace hspmd;

namespace {

int count(const std::string &text, const std::string &needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

// The bytes of the program literal a device source holds: its lines `    "..."` between
// `device_N_text[] =` and `;`, with the escapes quote() writes (\" \\ \? \n and three octal digits).
std::string programLiteral(const std::string &source) {
  std::istringstream lines(source.substr(source.find("_text[] =\n") + 10));
  std::string line, text;
  while (std::getline(lines, line) && line != "    ;") {
    EXPECT_EQ(line.substr(0, 5), "    \"") << line;
    EXPECT_EQ(line.back(), '"') << line;
    for (size_t i = 5; i + 1 < line.size(); ++i) {
      if (line[i] != '\\') {
        text += line[i];
      } else if (line[i + 1] == 'n') {
        text += '\n';
        ++i;
      } else if (std::isdigit(static_cast<unsigned char>(line[i + 1]))) {
        text += static_cast<char>(std::stoi(line.substr(i + 1, 3), nullptr, 8));
        i += 3;
      } else {
        text += line[++i];
      }
    }
  }
  return text;
}

// The first field in which two programs differ ("" where none does): every field the runtime
// reads, whether printProgram writes it or not.
std::string firstDifference(const ir::DeviceProgram &a, const ir::DeviceProgram &b) {
  if (std::tie(a.device, a.plan, a.peakBytes, a.stage, a.stages, a.microbatches, a.microbatchSize, a.scheduleName,
               a.lossBuffer, a.batchStart) != std::tie(b.device, b.plan, b.peakBytes, b.stage, b.stages, b.microbatches,
                                                       b.microbatchSize, b.scheduleName, b.lossBuffer, b.batchStart))
    return "the program's header";
  if (a.schedule != b.schedule)
    return "the schedule";
  if (a.buffers.size() != b.buffers.size() || a.body.size() != b.body.size())
    return "the number of buffers or instructions";
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    const ir::Buffer &x = a.buffers[i], &y = b.buffers[i];
    // (An origin of zeros reads back empty, which means the same: the regions are compared.)
    if (std::tie(x.id, x.value, x.dtype, x.shape, x.offset, x.slots, x.zeroed, x.role) !=
            std::tie(y.id, y.value, y.dtype, y.shape, y.offset, y.slots, y.zeroed, y.role) ||
        x.region() != y.region())
      return "buffer " + std::to_string(i) + " (" + x.value + ")";
  }
  for (size_t i = 0; i < a.body.size(); ++i) {
    const ir::Instruction &x = a.body[i], &y = b.body[i];
    if (std::tie(x.kind, x.op, x.inputs, x.outputs, x.peer, x.bytes, x.tag, x.slices, x.partial, x.phase) !=
            std::tie(y.kind, y.op, y.inputs, y.outputs, y.peer, y.bytes, y.tag, y.slices, y.partial, y.phase) ||
        x.attrs.map() != y.attrs.map() || x.group.members() != y.group.members() || x.loc.str() != y.loc.str())
      return "instruction " + std::to_string(i) + " (" + x.op + ")";
  }
  return "";
}

} // namespace

// What the generated binary runs is the program as printProgram wrote it and parseProgram
// read it: that must be the program itself, in every field, for every shipped plan of the two
// small models (in bf16 too: narrower buffers and messages).
TEST(Codegen, ProgramsKeepEveryFieldThroughTheirText) {
  std::vector<std::pair<std::string, std::string>> plans;
  for (const char *pattern : {"examples/gpt/plans/", "examples/llama/plans/tiny_llama_"})
    for (const auto &entry : std::filesystem::directory_iterator(std::filesystem::path(pattern).parent_path())) {
      const std::string path = entry.path().string();
      if (path.rfind(pattern, 0) == 0 && entry.path().extension() == ".hspmd")
        plans.emplace_back(std::string(pattern).find("gpt") != std::string::npos ? "examples/gpt/tiny_gpt.hspmd"
                                                                                 : "examples/llama/tiny_llama.hspmd",
                           path);
    }
  ASSERT_GE(plans.size(), 30u);
  int compared = 0;
  for (const auto &[model, plan] : plans)
    for (bool bf16 : {false, true}) {
      SCOPED_TRACE(plan + (bf16 ? " (bf16)" : ""));
      auto b = hspmd::testing::buildExample(model, {plan});
      ASSERT_TRUE(b->build);
      const auto result = hspmd::testing::compileForTraining(*b, bf16);
      ASSERT_TRUE(result.ok);
      for (const auto &[device, program] : result.programs[0]) {
        std::string error;
        auto parsed = ir::parseProgram(ir::printProgram(program), &error);
        ASSERT_TRUE(parsed) << "device " << device << ": " << error;
        EXPECT_EQ(firstDifference(program, *parsed), "") << "device " << device;
        ++compared;
      }
    }
  EXPECT_GT(compared, 100);
}

// A program text that does not read (a generated source edited by hand) is an error that names
// the device and the place (the binary prints it and exits 1), not a crash.
TEST(Codegen, AProgramThatDoesNotReadIsAnError) {
  const char text[] = "program device 3 plan 0 {\n  kernel matmul %0, %1 => %2 {}\n}\n";
  try {
    runtime::generated::program(text, sizeof text - 1, 3);
    ADD_FAILURE() << "the text was read";
  } catch (const std::runtime_error &e) {
    EXPECT_STREQ(e.what(), "the program of device 3 built into this binary does not read (2:24: expected '->', "
                           "found '='): rebuild it with hspmc build");
  }
}

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
    EXPECT_EQ(programLiteral(text), ir::printProgram(program)) << device;
    // It includes one small header (each device source compiles in a fraction of a second).
    EXPECT_EQ(count(text, "#include "), 1) << device;
    EXPECT_NE(text.find("\n#include \"runtime/GeneratedDevice.h\"\n"), std::string::npos) << device;
    // Which pass's function calls each instruction.
    std::map<size_t, std::vector<int>> calledFrom;
    std::istringstream lines(text);
    std::string line;
    int pass = -1;
    const std::regex call(R"(^  instruction\(x, (\d+), mb\);)");
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
  EXPECT_NE(files.at("device_0.cpp").find("_recompute(DeviceExecutor &x, int mb) {\n  (void)x;"), std::string::npos);
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
