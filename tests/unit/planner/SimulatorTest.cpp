// The simulator on programs whose step time can be worked out by hand.
#include "planner/Simulator.h"

#include <gtest/gtest.h>

using namespace hspmd;

namespace {

// A cost model where a kernel of N output elements of an unnamed op takes N microseconds
// (1 FLOP per element at 1 MFLOP/s), memory is free and links are ideal unless set.
planner::CostModel unitModel() {
  planner::CostModel model;
  model.flops = [](int) { return 1e6; };
  model.memoryBandwidth = [](int) { return 1e30; };
  model.efficiency = 1.0;
  model.links.alpha = 0;
  model.links.bandwidth = [](int, int) { return 1e12; };
  return model;
}

int addBuffer(ir::DeviceProgram &p, int64_t elements) {
  ir::Buffer b;
  b.id = static_cast<int>(p.buffers.size());
  b.value = "b" + std::to_string(b.id);
  b.shape = {elements};
  b.offset = 0;
  p.buffers.push_back(b);
  return b.id;
}

// A kernel of `microseconds`, reading `input` (if any); returns the buffer it writes.
int work(ir::DeviceProgram &p, ir::Phase phase, int64_t microseconds, int input = -1) {
  ir::Instruction in;
  in.op = "work";
  if (input >= 0)
    in.inputs = {input};
  in.outputs = {addBuffer(p, microseconds)};
  in.phase = phase;
  p.body.push_back(in);
  return in.outputs[0];
}

// `devices` devices, each running one forward kernel of `microseconds`.
std::map<int, ir::DeviceProgram> oneKernelEach(int devices, int64_t microseconds) {
  std::map<int, ir::DeviceProgram> programs;
  for (int d = 0; d < devices; ++d) {
    ir::DeviceProgram &p = programs[d];
    p.device = d;
    p.schedule = {{ir::Phase::Forward, 0}};
    work(p, ir::Phase::Forward, microseconds);
  }
  return programs;
}

// A collective of `group` reading `input` (a fresh buffer if -1) with `bytes` received by
// each member; returns the buffer of `outElements` floats it writes.
int collective(ir::DeviceProgram &p, const std::string &op, std::vector<int> group, int64_t tag, int64_t bytes,
               int input = -1, int64_t outElements = 1) {
  ir::Instruction in;
  in.kind = ir::InstrKind::Collective;
  in.op = op;
  in.group = std::move(group);
  in.tag = tag;
  in.bytes = bytes;
  in.inputs = {input >= 0 ? input : addBuffer(p, 1)};
  in.outputs = {addBuffer(p, outElements)};
  p.body.push_back(in);
  return in.outputs[0];
}

// A send of `buffer` (a fresh one if -1) or a receive; returns the buffer sent or received.
int message(ir::DeviceProgram &p, ir::InstrKind kind, int peer, int64_t tag, ir::Phase phase, int buffer = -1) {
  ir::Instruction in;
  in.kind = kind;
  in.op = kind == ir::InstrKind::Send ? "send" : "recv";
  in.peer = peer;
  in.tag = tag;
  in.bytes = 4;
  (kind == ir::InstrKind::Send ? in.inputs : in.outputs).push_back(buffer >= 0 ? buffer : addBuffer(p, 1));
  in.phase = phase;
  p.body.push_back(in);
  return kind == ir::InstrKind::Send ? in.inputs[0] : in.outputs[0];
}

} // namespace

// Two stages of equal forward time f and backward time b, m micro-batches under 1F1B: the
// step takes (m + stages - 1)(f + b), the bubble (stages - 1)(f + b).
TEST(Simulator, PipelineBubbleMatchesTheFormula) {
  const int64_t f = 10, b = 20;
  for (int m : {1, 2, 4, 8}) {
    std::map<int, ir::DeviceProgram> programs;
    for (int stage = 0; stage < 2; ++stage) {
      ir::DeviceProgram &p = programs[stage];
      p.device = stage;
      p.stage = stage;
      p.stages = 2;
      p.microbatches = m;
      p.schedule = ir::pipelineSchedule("1f1b", stage, 2, m);
      // Stage 1's forward needs stage 0's activation; stage 0's backward its gradient.
      const int received = stage == 1 ? message(p, ir::InstrKind::Recv, 0, 1, ir::Phase::Forward) : -1;
      const int activation = work(p, ir::Phase::Forward, f, received);
      if (stage == 0)
        message(p, ir::InstrKind::Send, 1, 1, ir::Phase::Forward, activation);
      const int gradient = stage == 0 ? message(p, ir::InstrKind::Recv, 1, 2, ir::Phase::Backward) : activation;
      const int out = work(p, ir::Phase::Backward, b, gradient);
      if (stage == 1)
        message(p, ir::InstrKind::Send, 0, 2, ir::Phase::Backward, out);
    }
    const auto sim = planner::simulate(programs, unitModel());
    EXPECT_NEAR(sim.stepSeconds, (m + 1) * (f + b) * 1e-6, 1e-12) << m << " micro-batches";
    EXPECT_NEAR(sim.devices.at(0).busy, m * (f + b) * 1e-6, 1e-12);
    EXPECT_NEAR(sim.devices.at(0).idle, (f + b) * 1e-6, 1e-12) << "the bubble";
  }
}

// A ring all-reduce of S bytes over n devices: 2(n-1)/n S / B + 2(n-1) alpha. As one
// exchange (the CPU runtimes), each member zeroes its output (half a copy of S) and adds the
// n pieces into it (a copy and a half each): (0.5 + 1.5 n) S / B + alpha.
TEST(Simulator, RingAllReduceMatchesTheFormula) {
  const double S = 64e6, B = 10e9, alpha = 5e-6;
  for (bool exchange : {false, true})
    for (int n : {2, 4, 8}) {
      std::map<int, ir::DeviceProgram> programs;
      std::vector<int> group;
      for (int d = 0; d < n; ++d)
        group.push_back(d);
      for (int d = 0; d < n; ++d) {
        ir::DeviceProgram &p = programs[d];
        p.device = d;
        p.schedule = {{ir::Phase::Forward, 0}};
        collective(p, "all-reduce", group, 9, static_cast<int64_t>(2.0 * (n - 1) / n * S), // what each receives
                   -1, static_cast<int64_t>(S / 4));
      }
      planner::CostModel model = unitModel();
      model.links.alpha = alpha;
      model.links.bandwidth = [&](int, int) { return B / 1e9; };
      model.exchange = exchange;
      const auto sim = planner::simulate(programs, model);
      const double expected =
          exchange ? (0.5 + 1.5 * n) * S / B + alpha : 2.0 * (n - 1) / n * S / B + 2 * (n - 1) * alpha;
      EXPECT_NEAR(sim.stepSeconds, expected, 1e-9) << n << " devices" << (exchange ? ", one exchange" : ", ring");
    }
}

// A straggler delays exactly its collectives: work after the all-reduce on the others starts
// late by the straggler's extra time; work before it does not.
TEST(Simulator, AStragglerDelaysExactlyItsCollectives) {
  std::map<int, ir::DeviceProgram> programs;
  for (int d = 0; d < 3; ++d) {
    ir::DeviceProgram &p = programs[d];
    p.device = d;
    p.schedule = {{ir::Phase::Forward, 0}};
    const int x = work(p, ir::Phase::Forward, d == 1 ? 50 : 10); // device 1 is slow
    const int y =
        collective(p, "all-reduce", d < 2 ? std::vector<int>{0, 1} : std::vector<int>{2}, d < 2 ? 3 : 4, 0, x);
    work(p, ir::Phase::Forward, 5, y);
  }
  const auto sim = planner::simulate(programs, unitModel(), true);
  // Devices 0 and 1 leave the all-reduce at 50 us and finish at 55; device 2, in no group
  // with device 1, finishes at 15.
  EXPECT_NEAR(sim.stepSeconds, 55e-6, 1e-12);
  EXPECT_NEAR(sim.devices.at(0).idle, 40e-6, 1e-12);
  EXPECT_NEAR(sim.devices.at(2).busy, 15e-6, 1e-12);
  EXPECT_NEAR(sim.devices.at(2).idle, 40e-6, 1e-12); // the rest of the step
  for (const auto &e : sim.events) {
    if (e.device == 0 && e.name == "all-reduce") {
      EXPECT_NEAR(e.start, 50e-6, 1e-12);
    }
  }
}

// Communication runs on its own stream: a kernel that does not need an all-reduce's result
// runs while it is in flight; one that does waits for it. Without overlap (the CPU threads
// backend), everything runs in order on one stream.
TEST(Simulator, CommunicationOverlapsIndependentComputation) {
  for (bool overlap : {true, false}) {
    std::map<int, ir::DeviceProgram> programs;
    for (int d = 0; d < 2; ++d) {
      ir::DeviceProgram &p = programs[d];
      p.device = d;
      p.schedule = {{ir::Phase::Forward, 0}};
      const int x = work(p, ir::Phase::Forward, 10);
      const int y = collective(p, "all-reduce", {0, 1}, 1, 20'000, x); // 20 us at 1 GB/s
      work(p, ir::Phase::Forward, 10);                                 // independent of the all-reduce
      work(p, ir::Phase::Forward, 1, y);                               // needs its result
    }
    const auto sim = planner::simulate(programs, [&] {
      auto model = unitModel();
      model.overlap = overlap;
      model.links.bandwidth = [](int, int) { return 1.0; };
      return model;
    }());
    EXPECT_NEAR(sim.stepSeconds, overlap ? 31e-6 : 41e-6, 1e-12) << (overlap ? "overlap" : "one stream");
  }
}

// Devices sharing a pool of cores (the CPU threads backend): three devices' 10 us kernels on
// two cores take 20 us, and with an oversubscription factor of 1.5, 30 us; with a core each,
// 10 us, whatever the factor.
TEST(Simulator, DevicesShareAPoolOfCores) {
  for (int cores : {0, 2, 3}) {
    const auto programs = oneKernelEach(3, 10);
    auto model = unitModel();
    model.cores = cores;
    EXPECT_NEAR(planner::simulate(programs, model).stepSeconds, cores == 2 ? 20e-6 : 10e-6, 1e-12) << cores << " cores";
    model.oversubscribed = 1.5;
    EXPECT_NEAR(planner::simulate(programs, model).stepSeconds, cores == 2 ? 30e-6 : 10e-6, 1e-12)
        << cores << " cores, oversubscribed";
  }
}

// A kernel on several threads occupies as many cores (CostModel::kernelCores): two devices'
// 10 us kernels on two cores run side by side at a core each (10 us), one after the other at
// two cores each (20 us).
TEST(Simulator, KernelsOccupyTheirThreadsCores) {
  const auto programs = oneKernelEach(2, 10);
  auto model = unitModel();
  model.cores = 2;
  for (int kernelCores : {1, 2}) {
    model.kernelCores = kernelCores;
    EXPECT_NEAR(planner::simulate(programs, model).stepSeconds, kernelCores * 10e-6, 1e-12) << kernelCores;
  }
}

// Waiting out a collective's latency takes no core: without overlap, on one shared core, two
// pairs' exchanges of 0 bytes (alpha 10 us) run at once; a 10 us kernel on a fifth device
// takes the core meanwhile: 10 us in all. Copying does take the core: with 10 us of bytes
// for each member, the kernel and the two exchanges' four copies queue for it: 10 + 4 x 10 =
// 50 us.
TEST(Simulator, CollectiveLatencyTakesNoCore) {
  for (double copyUs : {0.0, 10.0}) {
    std::map<int, ir::DeviceProgram> programs;
    for (int d = 0; d < 4; ++d) {
      ir::DeviceProgram &p = programs[d];
      p.device = d;
      p.schedule = {{ir::Phase::Forward, 0}};
      // An output of copyUs x 1000 bytes: at 1 GB/s, copyUs microseconds to gather.
      collective(p, "all-gather", d < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3}, d < 2 ? 1 : 2,
                 static_cast<int64_t>(copyUs * 1e3), -1, static_cast<int64_t>(copyUs * 1e3 / 4));
    }
    ir::DeviceProgram &lone = programs[4];
    lone.device = 4;
    lone.schedule = {{ir::Phase::Forward, 0}};
    work(lone, ir::Phase::Forward, 10);
    auto model = unitModel();
    model.cores = 1;
    model.overlap = false;
    model.exchange = true;
    model.links.alpha = 10e-6;
    model.links.bandwidth = [](int, int) { return 1.0; };
    EXPECT_NEAR(planner::simulate(programs, model).stepSeconds, copyUs == 0 ? 10e-6 : 50e-6, 1e-12)
        << copyUs << " us of copying";
  }
}

// A kernel takes its fixed cost per call (by name) plus its roofline time over its
// efficiency: three 10 us "work" kernels at efficiency 0.5 with 3 us per call take 69 us.
TEST(Simulator, KernelsPayTheirFixedCostPerCall) {
  std::map<int, ir::DeviceProgram> programs;
  ir::DeviceProgram &p = programs[0];
  p.schedule = {{ir::Phase::Forward, 0}};
  work(p, ir::Phase::Forward, 10, work(p, ir::Phase::Forward, 10, work(p, ir::Phase::Forward, 10)));
  planner::CostModel model = unitModel();
  EXPECT_NEAR(planner::simulate(programs, model).stepSeconds, 30e-6, 1e-12);
  model.kernelEfficiency["work"] = 0.5;
  model.kernelOverhead["work"] = 3e-6;
  model.kernelOverhead["other"] = 1.0; // another kernel's cost does not apply
  EXPECT_NEAR(planner::simulate(programs, model).stepSeconds, 69e-6, 1e-12);
}

// A device that waits longer than CostModel::spin for its peer sleeps and is woken `wakeup`
// later: device 0 arrives at the all-reduce (and device 2 at its receive) after 10 us, device
// 1 (and the sender 3) after `late` us. Waiting 5 us costs nothing; waiting 30 us costs the
// wake-up, and the all-reduce holds both members until the sleeper is awake.
TEST(Simulator, ASleepingWaiterPaysTheWakeUp) {
  for (int64_t late : {15, 40}) {
    std::map<int, ir::DeviceProgram> programs;
    for (int d = 0; d < 4; ++d) {
      ir::DeviceProgram &p = programs[d];
      p.device = d;
      p.schedule = {{ir::Phase::Forward, 0}};
      const int x = work(p, ir::Phase::Forward, d == 1 || d == 3 ? late : 10);
      if (d < 2)
        work(p, ir::Phase::Forward, 5, collective(p, "all-reduce", {0, 1}, 1, 0, x));
      else if (d == 3)
        message(p, ir::InstrKind::Send, 2, 2, ir::Phase::Forward, x);
      else
        work(p, ir::Phase::Forward, 5, message(p, ir::InstrKind::Recv, 3, 2, ir::Phase::Forward));
    }
    auto model = unitModel();
    model.spin = 20e-6;
    model.wakeup = 7e-6;
    const auto sim = planner::simulate(programs, model, true);
    const double slept = late - 10 > 20 ? 7e-6 : 0;
    for (int d : {0, 1, 2})
      for (const auto &e : sim.events)
        if (e.device == d && e.name == "work" && e.seconds == 5e-6) {
          EXPECT_NEAR(e.start, late * 1e-6 + slept, 1e-12) << "device " << d << ", peer " << late << " us late";
        }
  }
}

// Instructions the executor folds into another (CostModel::skipInstruction) take no time and
// leave no event: one forward pass of kernels of 10, 20 and 40 us without the second.
TEST(Simulator, SkippedInstructionsTakeNoTime) {
  ir::DeviceProgram p;
  const int a = work(p, ir::Phase::Forward, 10);
  const int b = work(p, ir::Phase::Forward, 20, a);
  work(p, ir::Phase::Forward, 40, b);
  planner::CostModel model = unitModel();
  const std::map<int, ir::DeviceProgram> programs{{0, p}};
  EXPECT_NEAR(planner::simulate(programs, model).stepSeconds, 70e-6, 1e-12);
  model.skipInstruction[0] = {false, true, false};
  const planner::Simulation skipped = planner::simulate(programs, model, true);
  EXPECT_NEAR(skipped.stepSeconds, 50e-6, 1e-12);
  EXPECT_EQ(skipped.events.size(), 2u);
}

// A copy reads and writes its slices at the memory's bandwidth, at its buffers' element size:
// 1000 floats are 8000 bytes moved (8 us at 1 GB/s), 1000 bf16 values half of that.
TEST(Simulator, CopiesMoveTheirElementTypesBytes) {
  for (const ir::DType dtype : {ir::DType::F32, ir::DType::BF16}) {
    std::map<int, ir::DeviceProgram> programs;
    ir::DeviceProgram &p = programs[0];
    p.schedule = {{ir::Phase::Forward, 0}};
    const int from = addBuffer(p, 1000), to = addBuffer(p, 1000);
    p.buffers[static_cast<size_t>(from)].dtype = p.buffers[static_cast<size_t>(to)].dtype = dtype;
    ir::Instruction copy;
    copy.kind = ir::InstrKind::Copy;
    copy.op = "copy";
    copy.inputs = {from};
    copy.outputs = {to};
    copy.slices = {ir::Box{{0}, {1000}}};
    p.body.push_back(copy);
    planner::CostModel model = unitModel();
    model.memoryBandwidth = [](int) { return 1e9; };
    EXPECT_NEAR(planner::simulate(programs, model).stepSeconds, dtype == ir::DType::F32 ? 8e-6 : 4e-6, 1e-12);
  }
}
