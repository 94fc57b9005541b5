// Plan switches (runtime/Switch.h): the slice table, the owner choice and fusion, on programs
// written by hand, and the move carried out on threads.
#include "runtime/Switch.h"
#include "runtime/Executor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

namespace hspmd::runtime {
namespace {

// A state buffer of `name` holding [lo, hi) of a 1-D tensor, laid out after the others.
ir::Buffer state(ir::DeviceProgram &program, const std::string &name, int64_t lo, int64_t hi,
                 ir::BufferRole role = ir::BufferRole::Parameter) {
  ir::Buffer b;
  b.id = static_cast<int>(program.buffers.size());
  b.value = name;
  b.shape = {hi - lo};
  b.origin = {lo};
  b.role = role;
  b.offset = std::max<int64_t>(program.peakBytes, 0);
  program.peakBytes = b.offset + b.bytes();
  program.buffers.push_back(b);
  return b;
}

ir::DeviceProgram device(int id) {
  ir::DeviceProgram program;
  program.device = id;
  program.peakBytes = 0;
  return program;
}

// Two devices each hold all of w and its moment (16 elements); three devices then hold a third
// each (5, 5, 6). Devices 0 and 1 keep what they held; device 2 needs its 6 elements of each.
TEST(Switch, EachCellComesFromOneOwnerAndEachPairSendsOneMessage) {
  std::map<int, ir::DeviceProgram> from, to;
  for (int d : {0, 1}) {
    from[d] = device(d);
    state(from[d], "w", 0, 16);
    state(from[d], "w.adam_m", 0, 16, ir::BufferRole::State);
  }
  const int64_t cuts[] = {0, 5, 10, 16};
  for (int d : {0, 1, 2}) {
    to[d] = device(d);
    state(to[d], "w", cuts[d], cuts[d + 1]);
    state(to[d], "w.adam_m", cuts[d], cuts[d + 1], ir::BufferRole::State);
  }
  const StateSwitch plan = planSwitch(from, to);
  EXPECT_EQ(plan.tensors, (std::vector<std::string>{"w", "w.adam_m"}));
  EXPECT_EQ(plan.isParameter, (std::vector<bool>{true, false}));
  // Device 2 lacks 6 elements of each tensor: 48 bytes, moved once.
  EXPECT_EQ(plan.bytesMin, 48);
  EXPECT_EQ(plan.bytesMoved, 48);
  EXPECT_EQ(plan.localBytes, (5 + 5) * 4 * 2);
  // The load spreads: w from device 0 (by id: no owner has sent anything yet), then w.adam_m
  // from device 1, the least loaded. One message per pair, each of one slice.
  ASSERT_EQ(plan.messages.size(), 2u);
  EXPECT_EQ(plan.messagesUnfused, 2);
  EXPECT_EQ(plan.maxSendBytes, 24);
  for (int owner : {0, 1}) {
    const SwitchMessage &message = plan.messages[static_cast<size_t>(owner)];
    EXPECT_EQ(message.from, owner);
    EXPECT_EQ(message.to, 2);
    ASSERT_EQ(message.slices.size(), 1u);
    EXPECT_EQ(message.slices[0].tensor, owner);
    EXPECT_EQ(message.slices[0].box.lo, std::vector<int64_t>{10});
    EXPECT_EQ(message.slices[0].box.hi, std::vector<int64_t>{16});
  }
  // Under the naive choice both come from device 0, in one fused message.
  const StateSwitch naive = planSwitch(from, to, {}, OwnerChoice::FirstOwner);
  ASSERT_EQ(naive.messages.size(), 1u);
  EXPECT_EQ(naive.messages[0].slices.size(), 2u);
  EXPECT_EQ(naive.messagesUnfused, 2);
}

// Where several owners hold a cell, the load spreads: four needers of disjoint quarters, two
// owners of everything, a fast link to neither: each owner sends two quarters.
TEST(Switch, TheLoadSpreadsOverOwners) {
  std::map<int, ir::DeviceProgram> from, to;
  for (int d : {0, 1}) {
    from[d] = device(d);
    state(from[d], "w", 0, 16);
  }
  for (int d : {2, 3, 4, 5}) {
    to[d] = device(d);
    state(to[d], "w", (d - 2) * 4, (d - 1) * 4);
  }
  const StateSwitch balanced = planSwitch(from, to);
  EXPECT_EQ(balanced.maxSendBytes, 32);
  EXPECT_EQ(balanced.balancedSendBytes, 32);
  const StateSwitch naive = planSwitch(from, to, {}, OwnerChoice::FirstOwner);
  EXPECT_EQ(naive.maxSendBytes, 64);
  // A faster link to device 1 wins over the load.
  SwitchLinks links;
  links.bandwidth = [](int a, int) { return a == 1 ? 10.0 : 1.0; };
  EXPECT_EQ(planSwitch(from, to, links).maxSendBytes, 64);
}

TEST(Switch, StateInOnlyOnePlanIsAnErrorBeforeAnythingMoves) {
  std::map<int, ir::DeviceProgram> from, to;
  from[0] = device(0);
  state(from[0], "w", 0, 4);
  state(from[0], "w.adam_m", 0, 4, ir::BufferRole::State);
  to[0] = device(0);
  state(to[0], "w", 0, 4);
  state(to[0], "v", 0, 4);
  try {
    planSwitch(from, to);
    FAIL() << "no error";
  } catch (const SwitchError &e) {
    EXPECT_STREQ(e.what(), "the plans hold different state: 'w.adam_m' only in the plan switched from; 'v' only in "
                           "the plan switched to (a switch moves every parameter and optimizer state: the plans need "
                           "the same model and optimizer)");
  }
}

// The move on threads: device 0 held w whole; devices 0 and 1 then hold halves, device 1's
// arriving in a message.
TEST(Switch, RunSwitchMovesTheBytes) {
  std::map<int, ir::DeviceProgram> from, to;
  from[0] = device(0);
  state(from[0], "w", 0, 8);
  from[1] = device(1); // holds nothing before
  to[0] = device(0);
  state(to[0], "w", 0, 4);
  to[1] = device(1);
  state(to[1], "w", 4, 8);
  const StateSwitch plan = planSwitch(from, to);
  ThreadsWorld world({0, 1}, std::chrono::seconds(10));
  std::vector<float> got[2];
  std::vector<std::thread> threads;
  for (int d : {0, 1})
    threads.emplace_back([&, d] {
      DeviceExecutor before(from.at(d), world.communicator(d)), after(to.at(d), world.communicator(d));
      if (d == 0)
        for (int i = 0; i < 8; ++i)
          reinterpret_cast<float *>(before.bufferData(0))[i] = static_cast<float>(i + 1);
      runSwitch(plan, d, world.communicator(d), -16, HeldState::of(&before), &after);
      const float *data = reinterpret_cast<const float *>(after.bufferData(0));
      got[d].assign(data, data + 4);
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(got[0], (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(got[1], (std::vector<float>{5, 6, 7, 8}));
}

} // namespace
} // namespace hspmd::runtime
