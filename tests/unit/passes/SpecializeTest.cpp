// specialize and the cross-device verifier on the example plans, and on programs broken on
// purpose.
#include "passes/Specialize.h"
#include "../support/ExampleBuild.h"
#include "../support/Heavy.h"
#include "passes/Pipeline.h"
#include "passes/PlanMemory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <random>
#include <set>

using namespace hspmd;

namespace {

struct Programs : hspmd::testing::ExampleBuild {
  passes::PipelineResult result;
};

std::unique_ptr<Programs> compile(const std::string &plan, bool train = false,
                                  const std::function<void(ir::PlanSpec &)> &edit = {},
                                  const std::string &model = "examples/gpt/tiny_gpt.hspmd", bool bf16 = false,
                                  int threads = 0) {
  auto p = std::make_unique<Programs>();
  const std::string dir = model.substr(0, model.rfind('/') + 1);
  p->build = driver::elaborateBuild(p->compilation, model, {dir + "plans/" + plan + ".hspmd"}, "");
  EXPECT_TRUE(p->build);
  if (edit)
    edit(p->build->plans[0]);
  passes::PipelineOptions options;
  options.train = train;
  options.bf16 = bf16;
  options.threads = threads;
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
  for (const char *plan : {"single", "tp2", "dp2_tp2", "dp2_zero", "pipeline2", "pipeline2_recompute", "hetero4",
                           "cp_asym", "hp_asym", "hp_tp2", "raw_annotations"})
    for (bool train : {false, true}) {
      auto p = compile(plan, train);
      ASSERT_FALSE(p->result.programs.empty()) << plan;
      EXPECT_EQ(verify(p->result.programs[0]), std::vector<std::string>{}) << plan << (train ? " (train)" : "");
    }
}

// Specialize stamps an op from the first op that emits alike (identical layers) instead of
// emitting it, and optimizer-step a parameter's update from the first update alike: the
// programs are those emitting every op and update gives, for every example plan, training and
// inference, one thread and the machine's (renamed buffers, renumbered ids and tags, each
// instruction at its own op's location). Most are stamped (more than 9 in 10 of the 32B model's
// ops and updates on 48 devices). Builds of two plans (a value annotated per plan, each
// plan's programs its own) too.
TEST(Specialize, StampedOpsGiveTheProgramsEmittingGives) {
  HSPMD_SKIP_IF_HEAVY_RUNS_ARE_OFF(); // every shipped plan 6 times: two minutes under the sanitizers
  std::vector<std::vector<std::string>> plans;
  for (const char *dir : {"examples/gpt/plans", "examples/llama/plans"})
    for (const auto &entry : std::filesystem::directory_iterator(dir))
      if (entry.path().extension() == ".hspmd")
        plans.push_back({entry.path().string()});
  std::sort(plans.begin(), plans.end());
  ASSERT_GE(plans.size(), 40u);
  plans.push_back({"examples/gpt/plans/pipeline2.hspmd", "examples/gpt/plans/dp2_zero.hspmd"});
  plans.push_back({"examples/gpt/plans/hetero4.hspmd", "examples/gpt/plans/tp2.hspmd"});
  auto compiled = [](const std::vector<std::string> &plan, bool train, bool stamp, int threads, std::string &text) {
    auto b = hspmd::testing::buildExample(plan[0], plan);
    EXPECT_EQ(b->build->plans.size(), plan.size()) << plan[0];
    passes::PipelineOptions options;
    options.train = train;
    options.stamp = stamp;
    options.threads = threads;
    auto result = passes::runPipeline(*b->build->graph, b->build->plans, options, [](const passes::Problem &) {});
    EXPECT_TRUE(result.ok) << plan[0];
    text = result.ok ? "" : "failed\n";
    for (const auto &programs : result.programs)
      for (const auto &[device, program] : programs)
        text += ir::printProgram(program);
    return result;
  };
  size_t stamped = 0, stampable = 0;
  for (const auto &files : plans)
    for (bool train : {false, true}) {
      const std::string plan = files.size() == 1 ? files[0] : files[0] + " and " + files[1];
      std::string emitted, stampedText;
      const auto reference = compiled(files, train, false, 1, emitted);
      EXPECT_EQ(reference.stampedOps + reference.stampedUpdates, 0u) << plan;
      for (int threads : {1, 0}) {
        const auto result = compiled(files, train, true, threads, stampedText);
        EXPECT_TRUE(stampedText == emitted) << plan << (train ? " (train)" : "") << " threads " << threads;
        if (threads == 1) {
          stamped += result.stampedOps;
          stampable += result.stampableOps;
        }
        if (plan.find("llama32b_hetero48.") != std::string::npos && train && threads == 1) {
          EXPECT_GT(result.stampedOps * 10, result.stampableOps * 9)
              << result.stampedOps << " of " << result.stampableOps;
          EXPECT_GT(result.stampedUpdates * 10, result.stampableUpdates * 9)
              << result.stampedUpdates << " of " << result.stampableUpdates;
        }
      }
    }
  EXPECT_GT(stamped * 2, stampable) << stamped << " of " << stampable;
}

// Under context parallelism with tensor parallelism inside each group, a weight's gradient
// (x^T dy over the group's own positions) is a partial sum, accumulated over the micro-batches
// and reduce-scattered once a step: the backward pass gathers nothing over the sequence.
// (Charged a reduction per micro-batch, it was made by gathering x and dy over all 32
// positions on every device, 22 gathers a micro-batch on device 0, and computing the same
// gradient in both groups.)
TEST(Specialize, ContextParallelWeightGradientsAreReducedOnceAStep) {
  auto p = compile("tiny_llama_cp_tp2", true, {}, "examples/llama/tiny_llama.hspmd");
  ASSERT_FALSE(p->result.programs.empty());
  for (const auto &[device, program] : p->result.programs[0]) {
    int backwardGathers = 0, updateReductions = 0;
    for (const ir::Instruction &i : program.body) {
      const auto kind = i.collective();
      backwardGathers += i.phase == ir::Phase::Backward && kind == ir::CommKind::SplitAllGather;
      updateReductions += i.phase == ir::Phase::Update && kind == ir::CommKind::SplitReduceScatter;
    }
    EXPECT_EQ(backwardGathers, 0) << "device " << device;
    EXPECT_GT(updateReductions, 0) << "device " << device;
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

// Mixed precision (PipelineOptions::bf16) changes element types, not programs: the same
// buffers and instructions, each f32 activation (and what carries it) now bf16 at half the
// bytes, parameters, optimizer state and the loss still f32. The programs round-trip through
// text.
TEST(Specialize, Bf16StoresActivationsAndTheirMessagesNarrow) {
  for (const char *plan : {"tp2", "hetero4", "dp2_zero"}) {
    auto full = compile(plan, true), half = compile(plan, true, {}, "examples/gpt/tiny_gpt.hspmd", true);
    for (const auto &[device, program] : half->result.programs[0]) {
      const ir::DeviceProgram &reference = full->result.programs[0].at(device);
      ASSERT_EQ(program.buffers.size(), reference.buffers.size()) << plan << " device " << device;
      ASSERT_EQ(program.body.size(), reference.body.size()) << plan << " device " << device;
      int narrowed = 0;
      for (size_t b = 0; b < program.buffers.size(); ++b) {
        const ir::Buffer &x = program.buffers[b], &y = reference.buffers[b];
        EXPECT_EQ(x.value, y.value);
        if (x.dtype == y.dtype)
          continue;
        ++narrowed;
        EXPECT_EQ(y.dtype, ir::DType::F32) << x.value;
        EXPECT_EQ(x.dtype, ir::DType::BF16) << x.value;
        EXPECT_EQ(2 * x.bytes(), y.bytes()) << x.value;
        EXPECT_EQ(x.role, ir::BufferRole::Temporary) << plan << " device " << device << ": " << x.value;
        EXPECT_NE(static_cast<int>(b), program.lossBuffer) << plan << " device " << device;
      }
      EXPECT_GT(narrowed, 0) << plan << " device " << device;
      for (size_t i = 0; i < program.body.size(); ++i) {
        const ir::Instruction &x = program.body[i], &y = reference.body[i];
        EXPECT_EQ(x.op, y.op);
        EXPECT_TRUE(x.bytes == y.bytes || 2 * x.bytes == y.bytes) << plan << " device " << device << ": " << x.op;
      }
      const std::string text = ir::printProgram(program);
      std::string error;
      auto parsed = ir::parseProgram(text, &error);
      ASSERT_TRUE(parsed) << error;
      EXPECT_EQ(ir::printProgram(*parsed), text);
    }
  }
  // tp2's first all-reduce: 8 x 64 x 64 activations, bf16, 65536 bytes (131072 in f32).
  auto tp2 = compile("tp2", true, {}, "examples/gpt/tiny_gpt.hspmd", true);
  const std::string text = ir::printProgram(tp2->result.programs[0].at(0));
  EXPECT_NE(text.find("\n  all-reduce %52 -> %53 group [0, 1] bytes 65536 tag 3392 loc(\"stdlib/nn.hspmd\":76:23)\n"),
            std::string::npos)
      << text.substr(0, 3000);
  EXPECT_NE(text.find("\n  buffer %2 \"blocks[0].wqkv\" : f32[64, 96] at 33024 param\n"), std::string::npos);
}

// Runs the scheduled step of a program over its arena, remembering for every 4 bytes which
// buffer copy wrote them last; every read must find its own bytes intact. Buffer copies read
// before anything writes them (parameters, inputs, optimizer state) hold their value from
// the start of the step.
void expectNoClobbering(const ir::DeviceProgram &program, const std::string &what) {
  std::vector<int64_t> owner(static_cast<size_t>(program.peakBytes / 4 + 1), -1);
  auto region = [&](int b, int microbatch) {
    const ir::Buffer &buffer = program.buffers[static_cast<size_t>(b)];
    const int64_t begin = buffer.offset + (microbatch % buffer.slots) * buffer.bytes();
    return std::make_pair(begin / 4, (begin + buffer.bytes() + 3) / 4);
  };
  auto id = [&](int b, int microbatch) {
    return static_cast<int64_t>(b) * 4096 + microbatch % program.buffers[static_cast<size_t>(b)].slots;
  };
  auto own = [&](int b, int microbatch) {
    auto [lo, hi] = region(b, microbatch);
    for (int64_t i = lo; i < hi; ++i)
      owner[static_cast<size_t>(i)] = id(b, microbatch);
  };
  // The step as (instruction, micro-batch) pairs in execution order.
  std::vector<std::pair<const ir::Instruction *, int>> step;
  auto append = [&](ir::Phase phase, int microbatch) {
    for (const auto &in : program.body)
      if (ir::passOf(in.phase) == phase)
        step.push_back({&in, microbatch});
  };
  for (const ir::ScheduleSlot &slot : program.schedule)
    append(slot.phase, slot.microbatch);
  append(ir::Phase::Update, 0);
  std::set<int64_t> seen;
  for (const auto &[in, microbatch] : step) {
    for (int b : in->inputs)
      if (seen.insert(id(b, microbatch)).second)
        own(b, microbatch);
    for (int b : in->outputs)
      seen.insert(id(b, microbatch));
  }
  for (const auto &[in, microbatch] : step) {
    for (int b : in->inputs) {
      auto [lo, hi] = region(b, microbatch);
      for (int64_t i = lo; i < hi; ++i)
        ASSERT_EQ(owner[static_cast<size_t>(i)], id(b, microbatch))
            << what << ": " << program.buffers[static_cast<size_t>(b)].value << " of micro-batch " << microbatch
            << " was overwritten before " << in->op << " read it";
    }
    for (int b : in->outputs)
      own(b, microbatch);
  }
}

TEST(Specialize, MemoryPlanReusesDeadBuffers) {
  for (const char *plan : {"tp2", "pipeline2", "pipeline2_recompute", "hetero4", "dp2_zero", "cp_asym"}) {
    auto p = compile(plan, true);
    for (const auto &[device, program] : p->result.programs[0]) {
      int64_t sum = 0;
      for (const auto &b : program.buffers) {
        ASSERT_GE(b.offset, 0);
        EXPECT_LE(b.offset + b.arenaBytes(), program.peakBytes);
        sum += b.arenaBytes();
      }
      // Activations die during the backward pass: the arena is smaller than the sum (much
      // smaller without pipelining, where nothing is stashed).
      EXPECT_LT(program.peakBytes, std::string(plan) == "tp2" ? sum / 2 : sum) << plan << " device " << device;
      expectNoClobbering(program, std::string(plan) + " device " + std::to_string(device));
    }
  }
  // Two buffers live at the same time never overlap.
  ir::DeviceProgram program;
  for (int b = 0; b < 4; ++b) {
    ir::Buffer buffer;
    buffer.id = b;
    buffer.value = std::string(1, static_cast<char>('a' + b));
    buffer.shape = {16};
    program.buffers.push_back(buffer);
  }
  auto kernel = [](std::vector<int> in, std::vector<int> out) {
    ir::Instruction i;
    i.op = "k";
    i.inputs = std::move(in);
    i.outputs = std::move(out);
    return i;
  };
  program.body = {kernel({0}, {1}), kernel({1}, {2}), kernel({2}, {3})};
  // a lives throughout; the third kernel needs a, c and d at once: 3 x 64 bytes, the least
  // possible, which d only reaches by reusing b's bytes (b is dead by then).
  EXPECT_EQ(passes::planMemory(program), 192);
  EXPECT_EQ(program.buffers[3].offset, program.buffers[1].offset);
  EXPECT_EQ(program.buffers[1].offset + 64 <= program.buffers[2].offset ||
                program.buffers[2].offset + 64 <= program.buffers[1].offset,
            true); // b and c meet at the second kernel
  EXPECT_EQ(program.buffers[0].offset + 64 <= program.buffers[3].offset ||
                program.buffers[3].offset + 64 <= program.buffers[0].offset,
            true);
  // Buffers of 4 bytes still start at cache lines (the kernels' vector loads): 64 bytes apart.
  for (ir::Buffer &buffer : program.buffers)
    buffer.shape = {1};
  EXPECT_EQ(passes::planMemory(program), 192);
  for (const ir::Buffer &buffer : program.buffers)
    EXPECT_EQ(buffer.offset % 64, 0) << buffer.value;
}

// Programs alike in what a memory plan reads share one plan; each program's is still the one
// planMemory gives it alone, also where two programs are the same size but not alike.
TEST(Specialize, ProgramsAlikeShareAMemoryPlan) {
  // (plan, how many devices have the size of an earlier one)
  for (const auto &[plan, twins] : {std::pair{"dp2_tp2", 2}, {"dp2_zero", 1}, {"hetero4", 0}}) {
    auto p = compile(plan, true);
    auto programs = p->result.programs[0];
    auto alone = programs;
    std::vector<ir::DeviceProgram *> all;
    for (auto &[device, program] : programs) {
      for (ir::Buffer &buffer : program.buffers)
        buffer.offset = -1;
      program.peakBytes = -1;
      all.push_back(&program);
    }
    // Programs the same size as an earlier one but not alike: in one, a buffer grown; in
    // another, the last instruction reads the first kernel's result (which then lives longer).
    std::map<std::tuple<size_t, size_t, int>, int> firstOfSize;
    int changes = 0;
    for (auto &[device, program] : programs) {
      const auto size = std::tuple{program.buffers.size(), program.body.size(), program.lossBuffer};
      if (firstOfSize.emplace(size, device).second || changes == 2)
        continue;
      for (ir::DeviceProgram *changed : {&program, &alone.at(device)})
        if (changes == 0)
          changed->buffers.back().shape.back() += 1;
        else {
          const auto first = std::find_if(changed->body.begin(), changed->body.end(), [](const ir::Instruction &in) {
            return in.kind == ir::InstrKind::Kernel && !in.outputs.empty();
          });
          const auto last = std::find_if(changed->body.rbegin(), changed->body.rend(),
                                         [](const ir::Instruction &in) { return !in.inputs.empty(); });
          last->inputs[0] = first->outputs[0];
        }
      ++changes;
    }
    EXPECT_EQ(changes, twins) << plan;
    passes::planMemories(all, 2);
    for (auto &[device, program] : alone) {
      passes::planMemory(program);
      const ir::DeviceProgram &shared = programs.at(device);
      EXPECT_EQ(shared.peakBytes, program.peakBytes) << plan << " device " << device;
      for (size_t b = 0; b < program.buffers.size(); ++b)
        EXPECT_EQ(shared.buffers[b].offset, program.buffers[b].offset) << plan << " device " << device << " %" << b;
    }
  }
}

// A recomputing stage keeps only its inputs between the passes of a micro-batch and runs its
// forward kernels and tensor-parallel all-reduces again (never its sends and receives); it
// needs less memory than the same stage keeping its activations.
TEST(Specialize, RecomputeKeepsTheStageAndLayerInputs) {
  auto recompute = compile("pipeline2_recompute", true);
  auto keep = compile("pipeline2_recompute", true, [](ir::PlanSpec &plan) {
    for (auto &stage : plan.pipelines[0].stages)
      stage.recompute = false;
  });
  for (int device : {0, 1}) {
    const ir::DeviceProgram &program = recompute->result.programs[0].at(device);
    int kernels = 0, allReduces = 0, forwardAllReduces = 0;
    std::set<int> readByRecompute;
    for (const auto &in : program.body)
      forwardAllReduces += in.phase == ir::Phase::Forward && in.op == "all-reduce";
    for (const auto &in : program.body)
      if (in.phase == ir::Phase::Recompute) {
        EXPECT_TRUE(in.kind != ir::InstrKind::Send && in.kind != ir::InstrKind::Recv);
        kernels += in.kind == ir::InstrKind::Kernel;
        allReduces += in.op == "all-reduce";
        readByRecompute.insert(in.inputs.begin(), in.inputs.end());
        for (int b : in.outputs)
          EXPECT_NE(program.buffers[static_cast<size_t>(b)].value.find(".recompute"), std::string::npos);
      }
    EXPECT_GT(kernels, 0);
    EXPECT_EQ(forwardAllReduces, 8); // partial sums are reduced before each of the 2 norms of 4 layers
    // The all-reduce ending each layer makes the next layer's reduced input; that one is made
    // again from the kept partial sums, like the all-reduce inside each layer.
    EXPECT_EQ(allReduces, forwardAllReduces);
    // Kept from the forward pass: the tokens, and each of the 4 layers' input as partial sums
    // (one form per layer), all read by recomputation.
    std::vector<std::string> stashed;
    for (const auto &b : program.buffers)
      if (b.slots > 1) {
        stashed.push_back(b.value);
        EXPECT_TRUE(readByRecompute.count(b.id) || b.value == "tokens") << b.value;
      }
    ASSERT_EQ(stashed.size(), 1u + 4) << "device " << device;
    EXPECT_EQ(stashed[0], "tokens");
    EXPECT_LT(program.peakBytes, keep->result.programs[0].at(device).peakBytes) << "device " << device;
    // Each layer's recomputation runs inside the backward pass, just before that layer's
    // backward instructions (not all of it before the first one).
    size_t lastRecompute = 0, firstBackward = program.body.size();
    for (size_t i = 0; i < program.body.size(); ++i) {
      if (program.body[i].phase == ir::Phase::Recompute)
        lastRecompute = i;
      if (program.body[i].phase == ir::Phase::Backward)
        firstBackward = std::min(firstBackward, i);
    }
    EXPECT_GT(lastRecompute, firstBackward) << "recomputation is interleaved with the backward pass";
  }
  // The last stage does not recompute.
  for (const auto &in : recompute->result.programs[0].at(2).body)
    EXPECT_NE(in.phase, ir::Phase::Recompute);
}

// Recomputation inside a stage repeats what the stage's devices exchanged: context
// parallelism's keys and values are sent and received again (each message pairs with one on
// its peer) instead of being kept per layer, and the tensor-parallel groups of a layer,
// which share its collectives' tags, all repeat their all-reduces.
TEST(Specialize, RecomputationRepeatsExchangesInsideTheStage) {
  auto recomputing = [](ir::PlanSpec &plan) {
    for (auto &pipeline : plan.pipelines)
      for (auto &stage : pipeline.stages)
        stage.recompute = true;
  };
  // Unequal heads and sequence shares over tensor-parallel pairs: keys and values move by
  // messages.
  hspmd::testing::ExampleBuild cp;
  const std::string plan = "examples/llama/plans/tiny_llama_hp_zero_heads.hspmd";
  cp.build = driver::elaborateBuild(cp.compilation, plan, {plan}, "");
  ASSERT_TRUE(cp.build);
  passes::PipelineOptions options;
  options.train = true;
  const auto result = passes::runPipeline(*cp.build->graph, cp.build->plans, options, [](const passes::Problem &p) {
    ADD_FAILURE() << p.code << " " << p.message;
  });
  ASSERT_TRUE(result.ok);
  std::multiset<std::tuple<int, int, int64_t>> sent, received;
  std::set<int> keptReceived; // forward buffers a receive wrote, read by a later pass
  for (const auto &[device, program] : result.programs[0]) {
    std::set<int> receivedBuffers;
    for (const auto &in : program.body) {
      if (in.phase == ir::Phase::Forward && in.kind == ir::InstrKind::Recv)
        receivedBuffers.insert(in.outputs.begin(), in.outputs.end());
      if (in.phase != ir::Phase::Forward)
        for (int b : in.inputs)
          if (receivedBuffers.count(b))
            keptReceived.insert(b);
      if (in.phase != ir::Phase::Recompute)
        continue;
      if (in.kind == ir::InstrKind::Send)
        sent.insert({device, in.peer, in.tag});
      if (in.kind == ir::InstrKind::Recv)
        received.insert({in.peer, device, in.tag});
    }
  }
  EXPECT_FALSE(sent.empty());
  EXPECT_EQ(sent, received);
  EXPECT_TRUE(keptReceived.empty()) << keptReceived.size() << " received buffers kept for the backward pass";

  auto tp = compile("dp2_tp2", true, recomputing);
  EXPECT_EQ(verify(tp->result.programs[0]), std::vector<std::string>{});
  for (const auto &[device, program] : tp->result.programs[0]) {
    size_t repeated = 0;
    for (const auto &in : program.body)
      repeated += in.phase == ir::Phase::Recompute && in.op == "all-reduce";
    EXPECT_GT(repeated, 0u) << "device " << device;
  }
}

TEST(Specialize, RecomputationBoundsLongContextMemory) {
  // LLaMA-2-7B with 64K positions over 8 devices (examples/llama/plans/llama2_7b_cp_hetero):
  // with recomputation each layer's activations live only while its backward runs, so
  // device 0's program fits an 80 GiB H100; keeping every layer's activations does not.
  auto peak = [](bool recompute) {
    hspmd::testing::ExampleBuild b;
    b.build = driver::elaborateBuild(b.compilation, "examples/llama/plans/llama2_7b_cp_hetero.hspmd",
                                     {"examples/llama/plans/llama2_7b_cp_hetero.hspmd"}, "");
    EXPECT_TRUE(b.build);
    for (auto &stage : b.build->plans[0].pipelines[0].stages)
      stage.recompute = recompute;
    passes::PipelineOptions options;
    options.train = true;
    auto result = passes::runPipeline(*b.build->graph, b.build->plans, options, [](const passes::Problem &) {});
    EXPECT_TRUE(result.ok);
    return static_cast<double>(result.programs[0].at(0).peakBytes) / (1ull << 30);
  };
  const double with = peak(true), without = peak(false);
  std::printf("LLaMA-2-7B at 64K, device 0: %.1f GiB with recomputation, %.1f GiB without\n", with, without);
  EXPECT_LT(with, 80.0);
  EXPECT_GT(without, 80.0);
}

TEST(Specialize, LocalShapesDifferUnderUnequalPlans) {
  auto hetero = compile("hetero4");
  const auto &programs = hetero->result.programs[0];
  EXPECT_EQ(bufferOf(programs.at(0), "blocks[0].wqkv").shape, (std::vector<int64_t>{64, 96})); // TP pair
  EXPECT_EQ(bufferOf(programs.at(2), "blocks[0].wqkv").shape, (std::vector<int64_t>{64, 192}));
  // Pipeline 0 holds samples [0, 4) of B = 8 in 2 micro-batches of 2; pipeline 1 holds
  // [4, 8) in 4 micro-batches of 1, whose regions start at sample 4.
  EXPECT_EQ(bufferOf(programs.at(0), "tokens").shape, (std::vector<int64_t>{2, 64}));
  EXPECT_EQ(bufferOf(programs.at(2), "tokens").shape, (std::vector<int64_t>{1, 64}));
  EXPECT_EQ(bufferOf(programs.at(2), "tokens").origin, (std::vector<int64_t>{4, 0}));
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

// A collective's members are held once for all the devices that run it (an all-reduce over
// 2000 devices named in 2000 programs held 2000 copies of its group), here on one thread.
TEST(Specialize, DevicesOfACollectiveShareItsGroup) {
  auto dp = compile("dp2_tp2", true, {}, "examples/gpt/tiny_gpt.hspmd", false, 1);
  const auto &programs = dp->result.programs[0];
  auto collectives = [&](int device) {
    std::vector<const ir::Instruction *> found;
    for (const auto &in : programs.at(device).body)
      if (in.kind == ir::InstrKind::Collective)
        found.push_back(&in);
    return found;
  };
  // Devices 2 and 3 form a tensor-parallel pair; each reduces its gradients with its replica.
  const auto two = collectives(2), three = collectives(3);
  ASSERT_EQ(two.size(), three.size());
  int together = 0;
  for (size_t k = 0; k < two.size(); ++k)
    if (two[k]->group == std::vector<int>{2, 3}) {
      EXPECT_EQ(three[k]->group, (std::vector<int>{2, 3}));
      EXPECT_EQ(&two[k]->group.members(), &three[k]->group.members()) << "collective " << k << " holds two copies";
      ++together;
    }
  EXPECT_GE(together, 17);
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
  // A receive that unpacks other slices than were packed.
  auto slices = pipeline->result.programs[0];
  auto moved = std::find_if(slices.at(1).body.begin(), slices.at(1).body.end(),
                            [](const ir::Instruction &in) { return in.kind == ir::InstrKind::Recv; });
  ASSERT_FALSE(moved->slices.empty());
  moved->slices[0].lo[0] += 1;
  moved->slices[0].hi[0] += 1;
  problems = verify(slices);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("sends other slices than device 1 receives"), std::string::npos) << problems[0];
  // A send that another size arrives for; a receive whose send is gone.
  auto bytes = pipeline->result.programs[0];
  std::find_if(bytes.at(1).body.begin(), bytes.at(1).body.end(), [](const ir::Instruction &in) {
    return in.kind == ir::InstrKind::Recv;
  })->bytes += 4;
  problems = verify(bytes);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find(" bytes but device 1 receives "), std::string::npos) << problems[0];
  auto noSend = pipeline->result.programs[0];
  auto send = std::find_if(noSend.at(0).body.begin(), noSend.at(0).body.end(),
                           [](const ir::Instruction &in) { return in.kind == ir::InstrKind::Send; });
  ASSERT_NE(send, noSend.at(0).body.end());
  noSend.at(0).body.erase(send);
  problems = verify(noSend);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind("device 1's recv from 0 (tag ", 0), 0u) << problems[0];
  EXPECT_NE(problems[0].find(" has no matching send on device 0"), std::string::npos) << problems[0];
}

// Sends are posted eagerly and a receive waits for its send: two devices that each receive
// before they send deadlock; one that sends first does not.
TEST(Specialize, VerifierReplaysSendsAndReceives) {
  auto message = [](ir::InstrKind kind, int peer, int64_t tag) {
    ir::Instruction in;
    in.kind = kind;
    in.op = kind == ir::InstrKind::Send ? "send" : "recv";
    in.peer = peer;
    in.tag = tag;
    in.bytes = 64;
    return in;
  };
  std::map<int, ir::DeviceProgram> programs;
  programs[0].body = {message(ir::InstrKind::Recv, 5, 1), message(ir::InstrKind::Send, 5, 2)};
  programs[5].body = {message(ir::InstrKind::Recv, 0, 2), message(ir::InstrKind::Send, 0, 1)};
  auto problems = verify(programs);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "deadlock: device 0's recv from 5 (tag 1) waits forever");
  std::swap(programs[5].body[0], programs[5].body[1]); // device 5 sends first
  EXPECT_EQ(verify(programs), std::vector<std::string>{});
  // Two sends on one channel need two receives.
  programs[0].body.push_back(message(ir::InstrKind::Send, 5, 2));
  problems = verify(programs);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "device 0's send to 5 (tag 2) has no matching receive on device 5");
  programs[5].body.push_back(message(ir::InstrKind::Recv, 0, 2));
  EXPECT_EQ(verify(programs), std::vector<std::string>{});
}

} // namespace

// Properties of a schedule, checked without the formula that made it: every micro-batch
// runs forward once and backward once, backward after forward, and 1F1B keeps at most
// (stages - stage) micro-batches in flight where GPipe keeps all of them.
int maxInFlight(const std::vector<ir::ScheduleSlot> &slots, int microbatches) {
  std::vector<int> forward(static_cast<size_t>(microbatches), -1), backward(forward);
  int inFlight = 0, most = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    auto &seen = slots[i].phase == ir::Phase::Forward ? forward : backward;
    EXPECT_EQ(seen.at(static_cast<size_t>(slots[i].microbatch)), -1) << "micro-batch runs twice";
    seen[static_cast<size_t>(slots[i].microbatch)] = static_cast<int>(i);
    inFlight += slots[i].phase == ir::Phase::Forward ? 1 : -1;
    most = std::max(most, inFlight);
  }
  for (int m = 0; m < microbatches; ++m) {
    EXPECT_GE(forward[static_cast<size_t>(m)], 0);
    EXPECT_GT(backward[static_cast<size_t>(m)], forward[static_cast<size_t>(m)]);
  }
  return most;
}

TEST(Specialize, PipelineSchedulesOrderEveryMicrobatch) {
  for (int stages = 1; stages <= 5; ++stages)
    for (int stage = 0; stage < stages; ++stage)
      for (int m = 1; m <= 9; ++m) {
        EXPECT_EQ(maxInFlight(ir::pipelineSchedule("1f1b", stage, stages, m), m), std::min(m, stages - stage))
            << "1f1b stage " << stage << " of " << stages << ", " << m << " micro-batches";
        EXPECT_EQ(maxInFlight(ir::pipelineSchedule("gpipe", stage, stages, m), m), m);
      }
  // The 1F1B order for the first of two stages, written out by hand.
  using S = ir::ScheduleSlot;
  const auto F = ir::Phase::Forward, B = ir::Phase::Backward;
  EXPECT_EQ(ir::pipelineSchedule("1f1b", 0, 2, 3), (std::vector<S>{{F, 0}, {F, 1}, {B, 0}, {F, 2}, {B, 1}, {B, 2}}));
}

TEST(Specialize, ProgramsCarryTheirStageAndScheduleInTraining) {
  auto p = compile("pipeline2", true);
  const auto &programs = p->result.programs[0];
  for (int device : {0, 1}) {
    const ir::DeviceProgram &program = programs.at(device);
    EXPECT_EQ(program.stage, device);
    EXPECT_EQ(program.stages, 2);
    EXPECT_EQ(program.microbatches, 4);
    EXPECT_EQ(program.microbatchSize, 2); // B = 8 over 4 micro-batches
    size_t counts[4] = {0, 0, 0, 0};      // forward, recompute, backward, update
    for (const ir::Instruction &in : program.body)
      ++counts[static_cast<int>(in.phase)];
    EXPECT_GT(counts[0], 0u);
    EXPECT_EQ(counts[1], 0u) << "no recompute in this plan";
    EXPECT_GT(counts[2], 0u);
    EXPECT_GT(counts[3], 0u) << "wte is tied across the stages: its gradient is synchronised once per step";
    for (const ir::Instruction &in : program.body) {
      if (in.phase != ir::Phase::Update || in.op == "adamw") // the optimizer step
        continue;
      for (int out : in.outputs) // else: gradient synchronisation
        EXPECT_NE(program.buffers[static_cast<size_t>(out)].value.find(".synced"), std::string::npos);
    }
    const ir::DeviceProgram step = ir::expandSchedule(program);
    EXPECT_EQ(step.body.size(), 4 * (counts[0] + counts[2]) + counts[3]);
  }
  std::map<int, ir::DeviceProgram> step;
  for (const auto &[device, program] : programs)
    step[device] = ir::expandSchedule(program);
  EXPECT_EQ(verify(step), std::vector<std::string>{});
}

TEST(Specialize, VerifierCatchesTensorParallelPairsOnDifferentSchedules) {
  // Devices 0 and 1 are one tensor-parallel stage: their all-reduces must run in the same
  // micro-batch order. Reversing one device's order leaves both waiting on different calls.
  auto p = compile("hetero4", true);
  auto programs = p->result.programs[0];
  std::reverse(programs.at(1).schedule.begin(), programs.at(1).schedule.end());
  std::map<int, ir::DeviceProgram> step;
  for (const auto &[device, program] : programs)
    step[device] = ir::expandSchedule(program);
  auto problems = verify(step);
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems[0].rfind("deadlock: device ", 0), 0u) << problems[0];
}

std::vector<std::string> verifyStep(const std::map<int, ir::DeviceProgram> &programs) {
  std::vector<std::string> problems;
  passes::verifyScheduledStep(programs, [&](const passes::Problem &p) { problems.push_back(p.message); });
  return problems;
}

// One stage, every device on the same schedule: one pass of each kind stands for all the
// micro-batches. A deadlock inside a pass is still found, and so is a device whose schedule
// differs (then every slot is replayed).
TEST(Specialize, ScheduledStepVerifierReplaysOnePassOfEachKindWhereSchedulesAgree) {
  auto p = compile("tiny_llama_cp_tp2", true, {}, "examples/llama/tiny_llama.hspmd");
  const auto programs = p->result.programs[0];
  ASSERT_EQ(programs.at(1).microbatches, 2);
  EXPECT_EQ(verifyStep(programs), std::vector<std::string>{});

  auto swapped = programs; // device 1 runs two of its backward all-reduces in the other order
  std::vector<size_t> allReduces;
  for (size_t i = 0; i < swapped.at(1).body.size(); ++i)
    if (swapped.at(1).body[i].phase == ir::Phase::Backward && swapped.at(1).body[i].op == "all-reduce")
      allReduces.push_back(i);
  ASSERT_GE(allReduces.size(), 2u);
  std::swap(swapped.at(1).body[allReduces[0]], swapped.at(1).body[allReduces[1]]);
  auto problems = verifyStep(swapped);
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems[0].rfind("deadlock: device ", 0), 0u) << problems[0];

  auto reordered = programs; // device 1 runs its micro-batches' passes in the reverse order
  std::reverse(reordered.at(1).schedule.begin(), reordered.at(1).schedule.end());
  problems = verifyStep(reordered);
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems[0].rfind("deadlock: device ", 0), 0u) << problems[0];
}

// The scheduled step is checked through its bodies where that is the same check (every
// message and collective joins passes that run for the same micro-batches): what it reports
// must be what matching the expanded step itself reports, deadlocks and mismatches alike.
TEST(Specialize, ScheduledStepVerifierSaysWhatTheExpandedStepSays) {
  auto expanded = [](const std::map<int, ir::DeviceProgram> &programs) {
    std::map<int, ir::DeviceProgram> step;
    for (const auto &[device, program] : programs)
      step[device] = ir::expandSchedule(program);
    return verify(step);
  };
  auto hetero = compile("hetero4", true); // two pipelines, unequal micro-batches, tensor parallelism
  auto cp = compile("tiny_llama_cp_tp2", true, {}, "examples/llama/tiny_llama.hspmd");
  for (const auto *compiled : {hetero.get(), cp.get()}) {
    const auto programs = compiled->result.programs[0];
    EXPECT_EQ(verifyStep(programs), std::vector<std::string>{});
    EXPECT_EQ(expanded(programs), std::vector<std::string>{});

    auto reordered = programs; // one device runs its passes in the reverse order: a deadlock
    std::reverse(reordered.begin()->second.schedule.begin(), reordered.begin()->second.schedule.end());
    const auto deadlock = verifyStep(reordered);
    ASSERT_FALSE(deadlock.empty());
    EXPECT_EQ(deadlock[0].rfind("deadlock: device ", 0), 0u) << deadlock[0];
    EXPECT_EQ(deadlock, expanded(reordered));

    auto lost = reordered; // and a receive or a collective's call is missing: no longer a matching body
    std::vector<ir::Instruction> &body = std::prev(lost.end())->second.body;
    const auto missing = std::find_if(body.begin(), body.end(), [](const ir::Instruction &in) {
      return in.kind == ir::InstrKind::Recv || in.kind == ir::InstrKind::Collective;
    });
    ASSERT_NE(missing, body.end());
    body.erase(missing);
    const auto mismatch = verifyStep(lost);
    ASSERT_FALSE(mismatch.empty());
    EXPECT_EQ(mismatch, expanded(lost));

    // Two communicating instructions of one pass swapped on one device, at random: each a
    // matching body, some of them deadlocks (a receive moved before the send it waits on).
    std::mt19937 random(7);
    int deadlocks = 0;
    for (int trial = 0; trial < 40; ++trial) {
      auto swapped = programs;
      auto device = swapped.begin();
      std::advance(device, static_cast<long>(random() % swapped.size()));
      std::vector<ir::Instruction> &instructions = device->second.body;
      std::vector<size_t> communicating;
      const ir::Phase pass = random() % 2 ? ir::Phase::Forward : ir::Phase::Backward;
      for (size_t i = 0; i < instructions.size(); ++i)
        if (instructions[i].kind != ir::InstrKind::Kernel && instructions[i].kind != ir::InstrKind::Copy &&
            ir::passOf(instructions[i].phase) == pass)
          communicating.push_back(i);
      if (communicating.size() < 2)
        continue;
      std::swap(instructions[communicating[random() % communicating.size()]],
                instructions[communicating[random() % communicating.size()]]);
      const auto problems = verifyStep(swapped);
      deadlocks += !problems.empty();
      EXPECT_EQ(problems, expanded(swapped)) << "trial " << trial;
    }
    EXPECT_GT(deadlocks, 0);
  }
  // A stage that runs one micro-batch fewer than the stage sending to it: the sends of that
  // micro-batch have no receive, though every body matches (forward passes only, so that no
  // message goes the other way).
  auto pipeline = compile("pipeline2", false);
  auto fewer = pipeline->result.programs[0];
  std::vector<ir::ScheduleSlot> &slots = fewer.at(1).schedule;
  std::erase_if(slots, [](const ir::ScheduleSlot &slot) { return slot.microbatch == 3; });
  const auto unmatched = verifyStep(fewer);
  ASSERT_FALSE(unmatched.empty());
  EXPECT_NE(unmatched[0].find("has no matching receive on device 1"), std::string::npos) << unmatched[0];
  EXPECT_EQ(unmatched, expanded(fewer));
  // Likewise a tensor-parallel pair whose second device runs no pass: its group's collectives
  // are called by the first alone.
  auto tp = compile("tp2", false);
  auto alone = tp->result.programs[0];
  alone.at(1).schedule.clear();
  alone.at(1).schedule.push_back({ir::Phase::Backward, 0}); // a slot of no instructions
  const auto partial = verifyStep(alone);
  ASSERT_FALSE(partial.empty());
  EXPECT_NE(partial[0].find("but devices 0 call it"), std::string::npos) << partial[0];
  EXPECT_EQ(partial, expanded(alone));
}

TEST(Specialize, OptimizerStepUpdatesEveryParameterOnce) {
  // Without `zero`: every parameter a device holds gets one AdamW step, in place, after the
  // gradient synchronisation, reading the synchronised gradient and two moment buffers.
  auto p = compile("dp2_tp2", true);
  for (const auto &[device, program] : p->result.programs[0]) {
    std::map<std::string, int> steps;
    for (const ir::Instruction &in : program.body)
      if (in.op == "adamw") {
        EXPECT_EQ(in.phase, ir::Phase::Update);
        ASSERT_EQ(in.inputs.size(), 4u);
        EXPECT_EQ(in.outputs, std::vector<int>{in.inputs[0]});
        const std::string &param = program.buffers[static_cast<size_t>(in.inputs[0])].value;
        EXPECT_EQ(program.buffers[static_cast<size_t>(in.inputs[1])].value, "grad." + param + ".synced");
        EXPECT_EQ(program.buffers[static_cast<size_t>(in.inputs[2])].value, param + ".adam_m");
        EXPECT_EQ(std::get<double>(in.attrs.at("lr")), 1e-3);
        ++steps[param];
      }
    EXPECT_EQ(steps.size(), p->build->graph->params().size()) << "device " << device;
    for (const auto &[param, count] : steps)
      EXPECT_EQ(count, 1) << param;
  }
  // With `zero`: the gradient is reduce-scattered to half of each parameter, each device
  // updates its half (half the moment buffers too), and an all-gather rebuilds the whole.
  auto z = compile("dp2_zero", true);
  const ir::DeviceProgram &program = z->result.programs[0].at(1);
  EXPECT_EQ(bufferOf(program, "wte").shape, (std::vector<int64_t>{256, 64}));
  EXPECT_EQ(bufferOf(program, "wte.shard").shape, (std::vector<int64_t>{128, 64}));
  EXPECT_EQ(bufferOf(program, "wte.adam_v").shape, (std::vector<int64_t>{128, 64}));
  std::vector<std::string> order;
  for (const ir::Instruction &in : program.body)
    if (in.phase == ir::Phase::Update && in.kind != ir::InstrKind::Copy &&
        (in.outputs.empty() ? false
                            : program.buffers[static_cast<size_t>(in.outputs[0])].value.rfind("wte", 0) == 0 ||
                                  program.buffers[static_cast<size_t>(in.outputs[0])].value == "grad.wte.synced"))
      order.push_back(in.op);
  EXPECT_EQ(order, (std::vector<std::string>{"reduce-scatter", "adamw", "all-gather"}));
}

TEST(Specialize, LossKernelsDivideByTheGlobalTokenCount) {
  // cp_asym splits S = 66 as 30:18:18 over three devices; each holds a different number of
  // the 4 x 66 = 264 tokens, and each divides by 264 (forward and backward).
  auto p = compile("cp_asym", true);
  std::set<int64_t> localTokens;
  for (const auto &[device, program] : p->result.programs[0])
    for (const ir::Instruction &in : program.body)
      if (in.op == "cross_entropy" || in.op == "cross_entropy_grad") {
        EXPECT_EQ(ir::intAttr(in.attrs, "tokens", -1), 264) << "device " << device;
        const auto &shape = program.buffers[static_cast<size_t>(in.inputs[0])].shape;
        localTokens.insert(shape[0] * shape[1]);
      }
  EXPECT_EQ(localTokens, (std::set<int64_t>{4 * 30, 4 * 18}));
}
