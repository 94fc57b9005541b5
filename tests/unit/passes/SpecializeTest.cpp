// specialize and the cross-device verifier on the example plans, and on programs broken on
// purpose.
#include "passes/Specialize.h"
#include "passes/Pipeline.h"
#include "passes/PlanMemory.h"
#include "tools/hspmc/Driver.h"

#include <gtest/gtest.h>

using namespace hspmd;

namespace {

struct Programs {
  frontend::SourceManager sources;
  frontend::CollectingSink sink;
  frontend::DiagnosticEngine diags{sink};
  frontend::Compilation compilation{sources, diags, "stdlib"};
  std::optional<driver::Build> build;
  passes::PipelineResult result;
};

std::unique_ptr<Programs> compile(const std::string &plan, bool train = false) {
  auto p = std::make_unique<Programs>();
  p->build = driver::elaborateBuild(p->compilation, "examples/gpt/tiny_gpt.hspmd",
                                    {"examples/gpt/plans/" + plan + ".hspmd"}, "");
  EXPECT_TRUE(p->build);
  passes::PipelineOptions options;
  options.train = train;
  p->result = passes::runPipeline(*p->build->graph, p->build->plans, options, [](const passes::Problem &problem) {
    ADD_FAILURE() << problem.code << " " << problem.message;
  });
  EXPECT_TRUE(p->result.ok) << plan;
  return p;
}

const ir::Buffer &bufferOf(const ir::DeviceProgram &program, const std::string &value) {
  for (const auto &b : program.buffers)
    if (b.value == value)
      return b;
  static ir::Buffer none;
  ADD_FAILURE() << "device " << program.device << " has no buffer for " << value;
  return none;
}

std::vector<std::string> verify(const std::map<int, ir::DeviceProgram> &programs) {
  std::vector<std::string> problems;
  passes::verifyPrograms(programs, [&](const passes::Problem &p) { problems.push_back(p.message); });
  return problems;
}

TEST(Specialize, EveryExamplePlanGivesVerifiedPrograms) {
  for (const char *plan : {"single", "tp2", "dp2_tp2", "pipeline2", "hetero4", "cp_asym", "hp_asym", "raw_annotations"})
    for (bool train : {false, true}) {
      auto p = compile(plan, train);
      ASSERT_FALSE(p->result.programs.empty()) << plan;
      EXPECT_EQ(verify(p->result.programs[0]), std::vector<std::string>{}) << plan << (train ? " (train)" : "");
    }
}

TEST(Specialize, ProgramsRoundTripThroughText) {
  for (const char *plan : {"dp2_tp2", "hetero4", "cp_asym", "hp_asym"}) {
    auto p = compile(plan, true);
    for (const auto &[device, program] : p->result.programs[0]) {
      const std::string text = ir::printProgram(program);
      std::string error;
      auto parsed = ir::parseProgram(text, &error);
      ASSERT_TRUE(parsed) << plan << " device " << device << ": " << error;
      EXPECT_EQ(ir::printProgram(*parsed), text) << plan << " device " << device;
    }
  }
  std::string error;
  EXPECT_FALSE(ir::parseProgram("program device 0 plan 0 {\n  buffer %x \"a\" : f32[2]\n}\n", &error));
  EXPECT_EQ(error, "2:10: expected a buffer like %3, found '%x'");
  EXPECT_FALSE(ir::parseProgram("program device 0 plan 0 {\n  all-reduce %0 -> %1 group [0, 1] bytes 8\n}\n", &error));
  EXPECT_EQ(error, "3:1: expected 'tag', found '}'");
}

TEST(Specialize, MemoryPlanReusesDeadBuffers) {
  auto p = compile("tp2", true);
  for (const auto &[device, program] : p->result.programs[0]) {
    int64_t sum = 0;
    for (const auto &b : program.buffers) {
      ASSERT_GE(b.offset, 0);
      EXPECT_LE(b.offset + b.bytes(), program.peakBytes);
      sum += b.bytes();
    }
    // Forward activations die during the backward pass: the arena is much smaller than the sum.
    EXPECT_LT(program.peakBytes, sum / 2) << "device " << device;
  }
  // Two buffers live at the same time never overlap.
  ir::DeviceProgram program;
  program.buffers = {{0, "a", ir::DType::F32, {4}},
                     {1, "b", ir::DType::F32, {4}},
                     {2, "c", ir::DType::F32, {4}},
                     {3, "d", ir::DType::F32, {8}}};
  auto kernel = [](std::vector<int> in, std::vector<int> out) {
    ir::Instruction i;
    i.op = "k";
    i.inputs = std::move(in);
    i.outputs = std::move(out);
    return i;
  };
  program.body = {kernel({0}, {1}), kernel({1}, {2}), kernel({2}, {3})};
  // a lives throughout; the third kernel needs a, c and d at once: 16 + 16 + 32 bytes. b's
  // space is reused.
  EXPECT_EQ(passes::planMemory(program), 64);
  EXPECT_EQ(program.buffers[1].offset + 16 <= program.buffers[2].offset ||
                program.buffers[2].offset + 16 <= program.buffers[1].offset,
            true); // b and c meet at the second kernel
  EXPECT_EQ(program.buffers[0].offset + 16 <= program.buffers[3].offset ||
                program.buffers[3].offset + 32 <= program.buffers[0].offset,
            true);
}

TEST(Specialize, LocalShapesDifferUnderUnequalPlans) {
  auto hetero = compile("hetero4");
  const auto &programs = hetero->result.programs[0];
  EXPECT_EQ(bufferOf(programs.at(0), "blocks[0].wqkv").shape, (std::vector<int64_t>{64, 96})); // TP pair
  EXPECT_EQ(bufferOf(programs.at(2), "blocks[0].wqkv").shape, (std::vector<int64_t>{64, 192}));
  EXPECT_EQ(bufferOf(programs.at(0), "tokens").shape, (std::vector<int64_t>{4, 64}));
  EXPECT_FALSE(programs.count(3) && !programs.at(3).buffers.empty() &&
               std::any_of(programs.at(3).buffers.begin(), programs.at(3).buffers.end(),
                           [](const ir::Buffer &b) { return b.value == "blocks[0].wqkv"; }))
      << "device 3 runs layers 4-7 only";

  // Asymmetric context parallelism: 30, 18 and 18 positions, and the causal mask's offsets.
  auto cp = compile("cp_asym");
  const auto &cpPrograms = cp->result.programs[0];
  EXPECT_EQ(bufferOf(cpPrograms.at(0), "tokens").shape, (std::vector<int64_t>{4, 30}));
  EXPECT_EQ(bufferOf(cpPrograms.at(2), "tokens").shape, (std::vector<int64_t>{4, 18}));
  for (int device : {0, 1, 2}) {
    const ir::Instruction *attention = nullptr;
    for (const auto &in : cpPrograms.at(device).body)
      if (in.op == "attention" && !attention)
        attention = &in;
    ASSERT_TRUE(attention);
    EXPECT_EQ(ir::intAttr(attention->attrs, "query_offset"), (std::vector<int64_t>{0, 30, 48})[device]);
    EXPECT_EQ(ir::intAttr(attention->attrs, "key_offset"), 0); // keys and values were gathered whole
  }
}

TEST(Specialize, CollectivesCarryTheirGroups) {
  auto dp = compile("dp2_tp2");
  const auto &programs = dp->result.programs[0];
  int reduces = 0;
  for (const auto &in : programs.at(3).body)
    if (in.kind == ir::InstrKind::Collective && in.op == "all-reduce") {
      EXPECT_EQ(in.group, (std::vector<int>{2, 3}));
      ++reduces;
    }
  EXPECT_EQ(reduces, 17); // after the embedding and after each of 16 row-parallel projections
}

// Programs broken on purpose: the verifier names what is wrong.
TEST(Specialize, VerifierCatchesBrokenPrograms) {
  auto tp = compile("tp2");
  auto programs = tp->result.programs[0];
  auto firstCollective = [](ir::DeviceProgram &program) {
    return std::find_if(program.body.begin(), program.body.end(),
                        [](const ir::Instruction &in) { return in.kind == ir::InstrKind::Collective; });
  };
  {
    auto missing = programs;
    missing.at(1).body.erase(firstCollective(missing.at(1)));
    auto problems = verify(missing);
    ASSERT_FALSE(problems.empty());
    EXPECT_NE(problems[0].find("group [0, 1] but devices 0 call it"), std::string::npos) << problems[0];
  }
  {
    auto swapped = programs;
    auto &body = swapped.at(0).body;
    auto a = firstCollective(swapped.at(0));
    auto b =
        std::find_if(a + 1, body.end(), [](const ir::Instruction &in) { return in.kind == ir::InstrKind::Collective; });
    std::iter_swap(a, b);
    auto problems = verify(swapped);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_EQ(problems[0].rfind("deadlock: device ", 0), 0u) << problems[0];
    EXPECT_NE(problems[0].find("its group is busy elsewhere"), std::string::npos) << problems[0];
  }
  {
    auto sizes = programs;
    firstCollective(sizes.at(1))->bytes += 4;
    auto problems = verify(sizes);
    ASSERT_FALSE(problems.empty());
    EXPECT_NE(problems[0].find("contributes"), std::string::npos) << problems[0];
  }
  auto pipeline = compile("pipeline2");
  auto hop = pipeline->result.programs[0];
  auto recv = std::find_if(hop.at(1).body.begin(), hop.at(1).body.end(),
                           [](const ir::Instruction &in) { return in.kind == ir::InstrKind::Recv; });
  ASSERT_NE(recv, hop.at(1).body.end());
  hop.at(1).body.erase(recv);
  auto problems = verify(hop);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("has no matching receive on device 1"), std::string::npos) << problems[0];
}

} // namespace
