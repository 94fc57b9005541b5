// The NCCL calls of a plan (runtime/gpu/NcclPlan.h), host-side logic of the NCCL backend
// tested without a GPU: which collectives run as NCCL's own, which become messages, the
// channels, staging where a receiver takes a channel's messages out of order, and the replay
// that finds deadlocks the CPU backends (buffered sends) do not have.
#include "runtime/gpu/NcclPlan.h"
#include "../support/ExampleBuild.h"
#include "../support/Heavy.h"
#include "passes/Pipeline.h"
#include "runtime/gpu/NcclRun.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

using namespace hspmd;
using runtime::gpu::NcclCallKind;

namespace {

std::map<int, ir::DeviceProgram> compile(const std::string &model, const std::string &plan, bool train = true) {
  auto b = hspmd::testing::buildExample(model, {plan});
  EXPECT_TRUE(b->build);
  if (!b->build)
    return {};
  passes::PipelineOptions options;
  options.train = train;
  auto result = passes::runPipeline(*b->build->graph, b->build->plans, options, [](const passes::Problem &p) {
    if (p.severity == passes::Severity::Error)
      ADD_FAILURE() << p.message;
  });
  EXPECT_TRUE(result.ok);
  return result.ok ? result.programs[0] : std::map<int, ir::DeviceProgram>{};
}

std::map<NcclCallKind, int> kinds(const runtime::gpu::NcclPlan &plan, int device) {
  std::map<NcclCallKind, int> count;
  for (const auto &call : plan.calls.at(device))
    ++count[call.kind];
  return count;
}

std::map<int, ir::DeviceProgram> parse(const std::vector<std::string> &texts) {
  std::map<int, ir::DeviceProgram> programs;
  for (const std::string &text : texts) {
    std::string error;
    auto program = ir::parseProgram(text, &error);
    EXPECT_TRUE(program) << error;
    if (program)
      programs[program->device] = *program;
  }
  return programs;
}

} // namespace

// Every example plan, for training and inference, runs on NCCL without a deadlock: the
// replay of its step with NCCL's rules ends with every call done.
TEST(NcclPlan, EveryExamplePlanReplaysWithoutDeadlock) {
  HSPMD_SKIP_IF_HEAVY_RUNS_ARE_OFF(); // 32 s under the sanitizers; the other NcclPlan tests run there
  int plans = 0;
  for (const char *dir : {"examples/gpt/plans", "examples/llama/plans"})
    for (const auto &entry : std::filesystem::directory_iterator(dir)) {
      const std::string path = entry.path().string();
      // The 13B and 32B plans take seconds each to compile; `hspmc dump-program --nccl`
      // checks them by hand (docs/gpu.md).
      if (entry.path().extension() != ".hspmd" || path.find("llama32b") != std::string::npos ||
          path.find("13b") != std::string::npos)
        continue;
      for (bool train : {true, false}) {
        const auto programs = compile(path, path, train);
        ASSERT_FALSE(programs.empty()) << path;
        std::string error;
        EXPECT_TRUE(runtime::gpu::planNcclCalls(programs, &error)) << path << ": " << error;
      }
      ++plans;
    }
  EXPECT_GE(plans, 30);
}

// Data parallelism reduces gradients with ncclAllReduce on one communicator (two pipelines'
// gradients meet in a split all-reduce, which for NCCL is an all-reduce); ZeRO reduces
// them with ncclReduceScatter and gathers the parameters with ncclAllGather.
TEST(NcclPlan, EvenCollectivesRunAsNcclsOwn) {
  const auto dpPrograms = compile("examples/gpt/plans/docs_dp2.hspmd", "examples/gpt/plans/docs_dp2.hspmd");
  auto dp = runtime::gpu::planNcclCalls(dpPrograms, nullptr); // pointing into dpPrograms
  ASSERT_TRUE(dp);
  EXPECT_EQ(dp->communicators, (std::vector<std::vector<int>>{{0, 1}}));
  EXPECT_TRUE(dp->channels.empty());
  EXPECT_GT(kinds(*dp, 0)[NcclCallKind::AllReduce], 0);
  EXPECT_EQ(kinds(*dp, 0).size(), 1u);

  std::string error;
  const auto zeroPrograms = compile("examples/gpt/plans/dp2_zero.hspmd", "examples/gpt/plans/dp2_zero.hspmd");
  auto zero = runtime::gpu::planNcclCalls(zeroPrograms, &error); // pointing into zeroPrograms
  ASSERT_TRUE(zero) << error;
  auto count = kinds(*zero, 1);
  EXPECT_GT(count[NcclCallKind::ReduceScatter], 0);
  EXPECT_EQ(count[NcclCallKind::ReduceScatter], count[NcclCallKind::AllGather]);
  EXPECT_EQ(count[NcclCallKind::Send] + count[NcclCallKind::Recv], 0);
}

// Uneven ZeRO shards (3 replicas of widths that 3 does not divide) have no NCCL collective:
// they move as messages between every pair of members.
TEST(NcclPlan, UnevenCollectivesBecomeMessages) {
  std::string error;
  const auto planPrograms =
      compile("examples/gpt/plans/dp3_zero_chunked.hspmd", "examples/gpt/plans/dp3_zero_chunked.hspmd");
  auto plan = runtime::gpu::planNcclCalls(planPrograms, &error); // pointing into planPrograms
  ASSERT_TRUE(plan) << error;
  EXPECT_EQ(plan->channels, (std::set<std::pair<int, int>>{{0, 1}, {0, 2}, {1, 0}, {1, 2}, {2, 0}, {2, 1}}));
  auto count = kinds(*plan, 0);
  EXPECT_GT(count[NcclCallKind::Send], 0);
  EXPECT_EQ(count[NcclCallKind::Send], count[NcclCallKind::Recv]);
}

// A pipeline's stages talk over one channel per direction; the printed calls list them.
TEST(NcclPlan, PipelineStagesTalkOverAChannelPerDirection) {
  const auto planPrograms = compile("examples/gpt/plans/pipeline2.hspmd", "examples/gpt/plans/pipeline2.hspmd");
  auto plan = runtime::gpu::planNcclCalls(planPrograms, nullptr); // pointing into planPrograms
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->channels, (std::set<std::pair<int, int>>{{0, 1}, {1, 0}}));
  const std::string text = runtime::gpu::printNcclCalls(*plan, 0);
  EXPECT_EQ(text.substr(0, text.find('\n', text.find('\n') + 1) + 1), "channel 0 -> 1\nchannel 1 -> 0\n");
  // 4 micro-batches: each forward's output goes to stage 1, each backward's gradient comes back
  EXPECT_GE(kinds(*plan, 0)[NcclCallKind::Send], 4);
  EXPECT_GE(kinds(*plan, 0)[NcclCallKind::Recv], 4);
}

// Head parallelism with ZeRO: device 2 takes device 0's messages in another order than
// device 0 sends them, so that channel's receives are staged in the sender's order.
TEST(NcclPlan, OutOfOrderChannelsAreStaged) {
  std::string error;
  const auto planPrograms = compile("examples/llama/plans/tiny_llama_hp_zero_heads.hspmd",
                                    "examples/llama/plans/tiny_llama_hp_zero_heads.hspmd");
  auto plan = runtime::gpu::planNcclCalls(planPrograms, &error); // pointing into planPrograms
  ASSERT_TRUE(plan) << error;
  std::vector<int64_t> staged;
  for (const auto &call : plan->calls.at(2))
    if (call.staged && call.peer == 0)
      staged.push_back(call.tag);
  std::vector<int64_t> sent;
  for (const auto &call : plan->calls.at(0))
    if (call.kind == NcclCallKind::Send && call.peer == 2)
      sent.push_back(call.tag);
  EXPECT_FALSE(staged.empty());
  EXPECT_EQ(staged, sent);
}

// Collectives of different groups may share a tag: in hp_tp2 each head group's pair [0, 2]
// and [1, 3] reduce-scatters one gradient with the same op's tag, and each pair exchanges its
// own messages (once, the second pair got the first's, which left it none: its devices
// summed only their own part; the training on the plan's calls found it).
TEST(NcclPlan, GroupsThatShareATagEachGetTheirMessages) {
  const auto programs = compile("examples/gpt/plans/hp_tp2.hspmd", "examples/gpt/plans/hp_tp2.hspmd");
  auto plan = runtime::gpu::planNcclCalls(programs, nullptr); // pointing into `programs`
  ASSERT_TRUE(plan);
  const int64_t tag = 38144 * 2048; // the backward reduce-scatter of op 596, micro-batch 0
  for (const auto &[device, peer] : std::vector<std::pair<int, int>>{{0, 2}, {2, 0}, {1, 3}, {3, 1}}) {
    std::set<std::pair<NcclCallKind, int>> calls;
    for (const auto &call : plan->calls.at(device))
      if (call.tag == tag)
        calls.insert({call.kind, call.peer});
    EXPECT_EQ(calls, (std::set<std::pair<NcclCallKind, int>>{{NcclCallKind::Send, peer}, {NcclCallKind::Recv, peer}}))
        << "device " << device;
  }
}

// Buffered sends let device 0 send a, overwrite a and join the all-reduce; on NCCL the
// overwrite waits for the send, the send for device 1's receive, which waits for device 1's
// all-reduce to have read c, which waits for device 0.
TEST(NcclPlan, ReportsADeadlockBufferedSendsDoNotHave) {
  const auto programs = parse({R"(program device 0 plan 0 peak 64 {
  buffer %0 "a" : f32[4] at 0
  buffer %1 "b" : f32[4] at 16
  send %0 to 1 bytes 16 tag 1 slices [0:4]
  zero %0
  all-reduce %0 -> %1 group [0, 1] bytes 16 tag 2
}
)",
                               R"(program device 1 plan 0 peak 64 {
  buffer %0 "c" : f32[4] at 0
  buffer %1 "b" : f32[4] at 16
  all-reduce %0 -> %1 group [0, 1] bytes 16 tag 2 partial 1
  recv %0 from 0 bytes 16 tag 1 slices [0:4]
}
)"});
  std::string error;
  EXPECT_FALSE(runtime::gpu::planNcclCalls(programs, &error));
  const std::string tag1 = std::to_string(ir::expandedTag(1, ir::Phase::Forward, 0)),
                    tag2 = std::to_string(ir::expandedTag(2, ir::Phase::Forward, 0));
  EXPECT_EQ(error, "deadlock on NCCL: device 0's send to 1 (tag " + tag1 + "); device 1's all-reduce (tag " + tag2 +
                       ") wait forever");
}

TEST(NcclPlan, ReportsMessagesTheTwoSidesDisagreeOn) {
  const auto programs = parse({R"(program device 0 plan 0 peak 64 {
  buffer %0 "a" : f32[4] at 0
  send %0 to 1 bytes 16 tag 1 slices [0:4]
  send %0 to 1 bytes 16 tag 2 slices [0:4]
}
)",
                               R"(program device 1 plan 0 peak 64 {
  buffer %0 "a" : f32[4] at 0
  recv %0 from 0 bytes 16 tag 1 slices [0:4]
  recv %0 from 0 bytes 16 tag 3 slices [0:4]
}
)"});
  std::string error;
  EXPECT_FALSE(runtime::gpu::planNcclCalls(programs, &error));
  EXPECT_EQ(error, "device 0 sends device 1 tag " + std::to_string(ir::expandedTag(2, ir::Phase::Forward, 0)) +
                       " as its message 1, but device 1 receives tag " +
                       std::to_string(ir::expandedTag(3, ir::Phase::Forward, 0)) +
                       " there: NCCL matches messages by their order, not their tags");
}

namespace {

bool reads(const ir::Instruction &in, int buffer) {
  return std::find(in.inputs.begin(), in.inputs.end(), buffer) != in.inputs.end();
}

bool writes(const ir::Instruction &in, int buffer) {
  return std::find(in.outputs.begin(), in.outputs.end(), buffer) != in.outputs.end();
}

bool waitsFor(const runtime::gpu::NcclStep &step, int other) {
  return std::find(step.after.begin(), step.after.end(), other) != step.after.end();
}

} // namespace

// The streams and events of a step (what the NCCL backend issues): a pipeline stage's receive
// waits for nothing on its compute stream, the kernel that reads what it received waits for it,
// and a send waits for the kernel that computed what it sends.
TEST(NcclPlan, EventsOrderEachCallAfterWhatItNeeds) {
  using runtime::gpu::NcclStreamKind;
  const auto programs = compile("examples/gpt/plans/pipeline2.hspmd", "examples/gpt/plans/pipeline2.hspmd");
  auto plan = runtime::gpu::planNcclCalls(programs, nullptr); // pointing into `programs`
  ASSERT_TRUE(plan);
  const auto &stage1 = plan->steps.at(1);
  size_t recv = 0;
  while (recv < stage1.size() && stage1[recv].stream.kind != NcclStreamKind::RecvFrom)
    ++recv;
  ASSERT_LT(recv, stage1.size());
  EXPECT_EQ(stage1[recv].stream.peer, 0);
  EXPECT_TRUE(stage1[recv].after.empty());
  const int received = stage1[recv].instruction->outputs.at(0);
  size_t reader = recv + 1;
  while (reader < stage1.size() && !(stage1[reader].call < 0 && stage1[reader].microbatch == stage1[recv].microbatch &&
                                     reads(*stage1[reader].instruction, received)))
    ++reader;
  ASSERT_LT(reader, stage1.size());
  EXPECT_EQ(stage1[reader].stream.kind, NcclStreamKind::Compute);
  EXPECT_TRUE(waitsFor(stage1[reader], static_cast<int>(recv)));

  const auto &stage0 = plan->steps.at(0);
  size_t send = 0;
  while (send < stage0.size() && stage0[send].stream.kind != NcclStreamKind::SendTo)
    ++send;
  ASSERT_LT(send, stage0.size());
  const int sent = stage0[send].instruction->inputs.at(0);
  int writer = -1;
  for (size_t i = 0; i < send; ++i)
    if (stage0[i].microbatch == stage0[send].microbatch && writes(*stage0[i].instruction, sent))
      writer = static_cast<int>(i);
  ASSERT_GE(writer, 0);
  EXPECT_EQ(stage0[static_cast<size_t>(writer)].stream.kind, NcclStreamKind::Compute);
  EXPECT_TRUE(waitsFor(stage0[send], writer));
}

// Data parallelism: each gradient's all-reduce runs on the collective stream after the kernel
// that computed the gradient, and the optimizer step after the all-reduce.
TEST(NcclPlan, OptimizerStepsWaitForTheirGradientsAllReduce) {
  using runtime::gpu::NcclStreamKind;
  const auto programs = compile("examples/gpt/plans/docs_dp2.hspmd", "examples/gpt/plans/docs_dp2.hspmd");
  auto plan = runtime::gpu::planNcclCalls(programs, nullptr); // pointing into `programs`
  ASSERT_TRUE(plan);
  const auto &steps = plan->steps.at(0);
  int checked = 0;
  for (size_t c = 0; c < steps.size(); ++c) {
    if (steps[c].stream.kind != NcclStreamKind::Collectives)
      continue;
    const int reduced = steps[c].instruction->outputs.at(0);
    for (size_t u = c + 1; u < steps.size(); ++u)
      if (steps[u].call < 0 && steps[u].instruction->op == "adamw" && reads(*steps[u].instruction, reduced)) {
        EXPECT_TRUE(waitsFor(steps[u], static_cast<int>(c))) << u;
        ++checked;
      }
    bool afterItsKernel = false;
    for (int a : steps[c].after)
      afterItsKernel =
          afterItsKernel || (steps[static_cast<size_t>(a)].stream.kind == NcclStreamKind::Compute &&
                             writes(*steps[static_cast<size_t>(a)].instruction, steps[c].instruction->inputs.at(0)));
    EXPECT_TRUE(afterItsKernel) << c;
  }
  EXPECT_GT(checked, 0);
}

// A collective that runs as messages moves each part of a member's output once: for the
// uneven ZeRO gathers, what a device receives and what it holds itself tile its output
// exactly; every message's boxes lie in the sender's input and the receiver's output, and its
// bytes are theirs.
TEST(NcclPlan, MessagesOfACollectiveTileEachOutputOnce) {
  const auto programs =
      compile("examples/gpt/plans/dp3_zero_chunked.hspmd", "examples/gpt/plans/dp3_zero_chunked.hspmd");
  std::string error;
  auto plan = runtime::gpu::planNcclCalls(programs, &error);
  ASSERT_TRUE(plan) << error;
  int gathers = 0;
  for (const auto &[device, calls] : plan->calls) {
    const ir::DeviceProgram &program = programs.at(device);
    std::map<const ir::Instruction *, std::vector<ir::Box>> received;
    for (const auto &call : calls) {
      if (call.kind != NcclCallKind::Send && call.kind != NcclCallKind::Recv)
        continue;
      const ir::Instruction &in = *call.instruction;
      if (in.kind != ir::InstrKind::Collective)
        continue;
      const ir::DeviceProgram &sender = programs.at(call.kind == NcclCallKind::Send ? device : call.peer);
      const ir::DeviceProgram &receiver = programs.at(call.kind == NcclCallKind::Send ? call.peer : device);
      auto memberOf = [&](const ir::DeviceProgram &p) -> const ir::Instruction & {
        for (const ir::Instruction &i : p.body)
          if (i.tag == in.tag && i.phase == in.phase && i.kind == ir::InstrKind::Collective)
            return i;
        ADD_FAILURE() << "no counterpart";
        return in;
      };
      const ir::Box from = sender.buffers[static_cast<size_t>(memberOf(sender).inputs.at(0))].region();
      const ir::Box to = receiver.buffers[static_cast<size_t>(memberOf(receiver).outputs.at(0))].region();
      int64_t elements = 0;
      for (const ir::Box &box : call.boxes) {
        EXPECT_TRUE(ir::containsBox(from, box));
        EXPECT_TRUE(ir::containsBox(to, box));
        elements += box.numElements();
      }
      EXPECT_EQ(call.bytes, elements * 4);
      if (call.kind == NcclCallKind::Recv)
        received[&in].insert(received[&in].end(), call.boxes.begin(), call.boxes.end());
    }
    for (auto &[in, boxes] : received) {
      if (ir::isReduction(in->collective().value()))
        continue;
      const ir::Box output = program.buffers[static_cast<size_t>(in->outputs.at(0))].region();
      boxes.push_back(ir::intersectBox(output, program.buffers[static_cast<size_t>(in->inputs.at(0))].region()));
      int64_t covered = 0;
      for (size_t a = 0; a < boxes.size(); ++a) {
        covered += boxes[a].numElements();
        for (size_t b = a + 1; b < boxes.size(); ++b)
          EXPECT_TRUE(ir::intersectBox(boxes[a], boxes[b]).empty());
      }
      EXPECT_EQ(covered, output.numElements()) << in->op;
      ++gathers;
    }
  }
  EXPECT_GT(gathers, 0);
}

// GpuNccl's communicators are nonblocking: creation and any call that returns ncclInProgress
// are waited for by awaitNccl, against the run's timeout, so that a member that died before
// it joined ends the wait with a message rather than a hang.
using runtime::gpu::NcclProgress;

TEST(AwaitNccl, PollsUntilTheCommunicatorIsDone) {
  int polls = 0;
  runtime::gpu::awaitNccl([&](std::string *) { return ++polls < 3 ? NcclProgress::InProgress : NcclProgress::Done; },
                          std::chrono::seconds(60), "device 0: creating the NCCL communicator of devices 0, 1");
  EXPECT_EQ(polls, 3);
}

TEST(AwaitNccl, AFailureEndsTheWaitWithNcclsReason) {
  int polls = 0;
  try {
    runtime::gpu::awaitNccl(
        [&](std::string *why) {
          *why = "remote process exited or there was a network error";
          return ++polls < 2 ? NcclProgress::InProgress : NcclProgress::Failed;
        },
        std::chrono::seconds(60), "device 0: ncclSend to device 1");
    FAIL() << "no error";
  } catch (const runtime::CommError &e) {
    EXPECT_STREQ(e.what(), "device 0: ncclSend to device 1: remote process exited or there was a network error");
  }
  EXPECT_EQ(polls, 2);
}

TEST(AwaitNccl, AMemberThatNeverComesEndsTheWaitAtTheTimeout) {
  int polls = 0;
  try {
    runtime::gpu::awaitNccl(
        [&](std::string *) {
          ++polls;
          return NcclProgress::InProgress;
        },
        std::chrono::milliseconds(500), "device 0: creating the NCCL communicator of devices 0, 1");
    FAIL() << "no error";
  } catch (const runtime::CommError &e) {
    EXPECT_STREQ(e.what(), "device 0: creating the NCCL communicator of devices 0, 1: not done after 0.5 s (a "
                           "member that died or never came?)");
  }
  EXPECT_GE(polls, 2); // polled until the deadline, not given up at once
}

// A failure elsewhere that the run's communicator reports (Communicator::stopped) ends the wait
// at once with its text, not at the timeout; a communicator that is done is done all the same.
TEST(AwaitNccl, AFailureElsewhereEndsTheWaitWithTheCommunicatorsText) {
  int polls = 0, asked = 0;
  try {
    runtime::gpu::awaitNccl(
        [&](std::string *) {
          ++polls;
          return NcclProgress::InProgress;
        },
        std::chrono::seconds(60), "device 0: creating the NCCL communicator of devices 0, 1",
        [&] { return ++asked < 3 ? std::string() : std::string("device 0 stopped: device 1 failed: out of memory"); });
    FAIL() << "no error";
  } catch (const runtime::CommError &e) {
    EXPECT_STREQ(e.what(), "device 0 stopped: device 1 failed: out of memory");
  }
  EXPECT_EQ(polls, 3);
  EXPECT_EQ(asked, 3);
  runtime::gpu::awaitNccl([&](std::string *) { return NcclProgress::Done; }, std::chrono::seconds(60),
                          "device 0: ncclRecv from device 1", [] { return std::string("device 0 stopped: why"); });
}

TEST(AwaitNccl, ACommunicatorAlreadyDoneIsPolledOnceEvenPastTheDeadline) {
  int polls = 0;
  runtime::gpu::awaitNccl(
      [&](std::string *) {
        ++polls;
        return NcclProgress::Done;
      },
      std::chrono::milliseconds(0), "device 0: ncclRecv from device 1");
  EXPECT_EQ(polls, 1);
}
