// Simulator.cpp - replaying DevicePrograms with the cost model of ir/Cost.h (planner/Simulator.h).
#include "planner/Simulator.h"

#include "planner/Estimates.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace hspmd::planner {

CostModel costModel(const Cluster &cluster) {
  CostModel model;
  model.flops = [&cluster](int d) { return cluster.typeOf(d).bf16Tflops * 1e12; };
  model.memoryBandwidth = [&cluster](int d) { return cluster.typeOf(d).hbmGBps * 1e9; };
  model.links = linkModel(cluster);
  model.overlap = cluster.overlapCommunication;
  model.exchange = cluster.exchangeCollectives;
  return model;
}

namespace {

// Per device, by its id (small and non-negative): the simulator looks a device's state up at
// every event, so a vector rather than a map. ids() lists the devices present, in order.
template <class T> class ByDevice {
public:
  T &operator[](int device) {
    if (device < 0)
      throw std::out_of_range("device " + std::to_string(device));
    if (static_cast<size_t>(device) >= values_.size()) {
      values_.resize(static_cast<size_t>(device) + 1);
      present_.resize(values_.size(), false);
    }
    if (!present_[static_cast<size_t>(device)]) {
      present_[static_cast<size_t>(device)] = true;
      ids_.insert(std::upper_bound(ids_.begin(), ids_.end(), device), device);
    }
    return values_[static_cast<size_t>(device)];
  }
  T &at(int device) { return values_[index(device)]; }
  const T &at(int device) const { return values_[index(device)]; }
  bool contains(int device) const {
    return device >= 0 && static_cast<size_t>(device) < present_.size() && present_[static_cast<size_t>(device)];
  }
  const std::vector<int> &ids() const { return ids_; }

private:
  size_t index(int device) const {
    if (!contains(device))
      throw std::out_of_range("device " + std::to_string(device) + " has no program");
    return static_cast<size_t>(device);
  }
  std::vector<T> values_;
  std::vector<bool> present_;
  std::vector<int> ids_;
};

class Simulator {
public:
  Simulator(const std::map<int, ir::DeviceProgram> &programs, const CostModel &model, bool keep)
      : model_(model), keep_(keep),
        slowdown_(model.cores > 0 && programs.size() > static_cast<size_t>(model.cores) ? model.oversubscribed : 1.0) {
    for (const auto &[device, program] : programs) {
      original_[device] = &program;
      priced_[device].assign(program.body.size(), std::numeric_limits<double>::quiet_NaN());
      steps_[device] = ir::scheduledInstructions(program);
      if (auto skipped = model_.skipInstruction.find(device); skipped != model_.skipInstruction.end()) {
        const ir::Instruction *first = program.body.data();
        const std::vector<bool> &skip = skipped->second;
        std::erase_if(steps_[device], [first, &skip](const Step &s) {
          const auto at = static_cast<size_t>(s.instruction - first);
          return at < skip.size() && skip[at];
        });
      }
      if (!model_.skipMicrobatch.empty()) // documents: micro-batches of padding only (runtime/Run.h)
        std::erase_if(steps_[device], [&](const Step &s) {
          return s.microbatch >= 0 && static_cast<size_t>(s.microbatch) < model_.skipMicrobatch.size() &&
                 model_.skipMicrobatch[static_cast<size_t>(s.microbatch)];
        });
      at_[device] = 0;
      Streams &streams = streams_[device];
      streams.written.assign(program.buffers.size(), 0.0);
      streams.read.assign(program.buffers.size(), 0.0);
    }
  }

  Simulation run() {
    if (model_.cores > 0) {
      // Devices share cores: issue instructions in time order, the device that is furthest
      // behind first, so that cores go to work in the order it asks for them.
      coreFree_.assign(static_cast<size_t>(model_.cores), 0.0);
      for (;;) {
        std::vector<std::pair<double, int>> order;
        for (const int device : steps_.ids())
          if (at_[device] < steps_.at(device).size())
            order.push_back({stream(device, false), device});
        std::sort(order.begin(), order.end());
        bool progress = false;
        for (const auto &[t, device] : order)
          if (advance(device, steps_.at(device)[at_[device]])) {
            progress = true;
            break;
          }
        if (!progress)
          break;
      }
    } else {
      bool progress = true;
      while (progress) {
        progress = false;
        for (const int device : steps_.ids()) {
          const std::vector<Step> &step = steps_.at(device);
          size_t &at = at_.at(device);
          while (at < step.size() && advance(device, step[at]))
            progress = true;
        }
      }
    }
    for (const int device : steps_.ids())
      if (at_[device] < steps_.at(device).size())
        throw std::runtime_error("the programs deadlock at device " + std::to_string(device) +
                                 " (the verifier should have caught this)");
    Simulation result;
    for (const int device : streams_.ids())
      result.stepSeconds = std::max({result.stepSeconds, streams_.at(device).compute, streams_.at(device).comm});
    for (const int device : original_.ids()) { // every device, with what it did or not
      SimulatedDevice stats = stats_.contains(device) ? stats_.at(device) : SimulatedDevice{};
      stats.idle = std::max(0.0, result.stepSeconds - stats.busy - stats.communicating);
      stats.peakBytes = original_.at(device)->peakBytes;
      result.devices[device] = stats;
    }
    result.events = std::move(events_);
    return result;
  }

private:
  const CostModel &model_;
  bool keep_;
  double slowdown_; // CostModel::oversubscribed when it applies
  // A device's step as it runs (ir::scheduledInstructions: no instruction copied).
  using Step = ir::ScheduledInstruction;
  ByDevice<const ir::DeviceProgram *> original_;
  // Each body instruction's kernel seconds, priced once for all the micro-batches that run
  // it (NaN: not yet priced), per device.
  mutable ByDevice<std::vector<double>> priced_;
  ByDevice<std::vector<Step>> steps_;
  ByDevice<size_t> at_;
  // Per device: when its compute and communication streams are free (one stream without
  // overlap), when each buffer's last write ends and its last read ends.
  struct Streams {
    double compute = 0, comm = 0;
    std::vector<double> written, read; // by buffer id
  };
  ByDevice<Streams> streams_;
  std::vector<double> coreFree_; // when each core is free (CostModel::cores)
  ByDevice<SimulatedDevice> stats_;
  // (from, to, tag) -> when the message arrives; hashed: a step of many micro-batches sends
  // hundreds of thousands of messages.
  struct ChannelHash {
    size_t operator()(const std::tuple<int, int, int64_t> &k) const {
      const uint64_t a =
          (static_cast<uint64_t>(static_cast<uint32_t>(std::get<0>(k))) << 32) | static_cast<uint32_t>(std::get<1>(k));
      return std::hash<uint64_t>()(a * 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(std::get<2>(k)));
    }
  };
  std::unordered_map<std::tuple<int, int, int64_t>, double, ChannelHash> arrivals_;
  std::vector<SimulatedEvent> events_;

  void record(int device, const std::string &name, bool communication, double start, double seconds) {
    (communication ? stats_[device].communicating : stats_[device].busy) += seconds;
    if (keep_)
      events_.push_back({device, name, communication, start, seconds});
  }

  double bandwidth(int a, int b) const { return model_.links.bandwidth(a, b) * 1e9; }

  // With a core pool: `members` cores from `start` (or when they are free) for `seconds`;
  // returns the start. Without one: `start`.
  double onCores(double start, double seconds, size_t members = 1) {
    if (coreFree_.empty())
      return start;
    std::sort(coreFree_.begin(), coreFree_.end());
    const size_t n = std::min(members, coreFree_.size());
    start = std::max(start, coreFree_[n - 1]);
    const double busy = seconds * static_cast<double>(members) / static_cast<double>(n);
    for (size_t i = 0; i < n; ++i)
      coreFree_[i] = start + busy;
    return start;
  }

  double &stream(int device, bool communication) {
    Streams &s = streams_[device];
    return communication && model_.overlap ? s.comm : s.compute;
  }
  // The earliest an instruction may start on `device`: its inputs written, its outputs no
  // longer read or written by earlier instructions.
  double ready(int device, const ir::Instruction &in) {
    Streams &s = streams_[device];
    double t = 0;
    for (int b : in.inputs)
      t = std::max(t, s.written[static_cast<size_t>(b)]);
    for (int b : in.outputs)
      t = std::max({t, s.written[static_cast<size_t>(b)], s.read[static_cast<size_t>(b)]});
    return t;
  }
  void done(int device, const ir::Instruction &in, double readUntil, double writtenAt) {
    Streams &s = streams_[device];
    for (int b : in.inputs)
      s.read[static_cast<size_t>(b)] = std::max(s.read[static_cast<size_t>(b)], readUntil);
    for (int b : in.outputs)
      s.written[static_cast<size_t>(b)] = writtenAt;
  }

  // Runs the instruction if it can run now; returns false when it waits for a peer.
  bool advance(int device, const Step &step) {
    const ir::Instruction &in = *step.instruction;
    const ir::DeviceProgram &program = *original_.at(device);
    auto at = [&](int member) -> const ir::Instruction & { return *steps_.at(member)[at_[member]].instruction; };
    if (!in.group.empty() || in.kind == ir::InstrKind::Collective) {
      for (int member : in.group) {
        const auto &other = steps_.at(member);
        const size_t position = at_[member];
        if (position >= other.size() || other[position].tag != step.tag)
          return false;
      }
      const bool kernelToo = in.kind == ir::InstrKind::Kernel;
      double start = 0, first = std::numeric_limits<double>::infinity();
      double slowest = std::numeric_limits<double>::infinity();
      for (int member : in.group) {
        const ir::Instruction &mine = at(member);
        const double arrives =
            std::max({stream(member, true), kernelToo ? stream(member, false) : 0.0, ready(member, mine)});
        start = std::max(start, arrives);
        first = std::min(first, arrives);
        if (!model_.links.leastBandwidth)
          for (int other : in.group)
            if (other != member)
              slowest = std::min(slowest, bandwidth(member, other));
      }
      if (model_.links.leastBandwidth) // the same minimum, without asking every pair
        slowest = std::min(slowest, model_.links.leastBandwidth(in.group) * 1e9);
      const double woken = wakeup(start - first); // the first to arrive may have slept
      const double n = static_cast<double>(in.group.size());
      double seconds = 0, latency = 0; // the collective's time; of it, the alphas
      if (kernelToo) {                 // vocabulary-parallel cross-entropy: compute plus small exchanges
        seconds = latency = (model_.exchange ? 2 : 3 * (n - 1)) * model_.links.alpha;
      } else if (n > 1 && model_.exchange) {
        // Each member builds its output from every member's piece: a reduction zeroes it
        // (half a copy's traffic) and adds each piece into it (a copy-add, one and a half), a
        // gather copies each piece's part: copies of the output's bytes, at the group's
        // slowest link.
        const std::optional<ir::CommKind> kind = in.collective();
        const bool reduction = kind && ir::isReduction(*kind);
        double out = 0;
        for (int member : in.group) {
          const ir::DeviceProgram &theirs = *original_.at(member);
          const ir::Instruction &other = at(member);
          if (!other.outputs.empty())
            out = std::max(out, static_cast<double>(theirs.buffers[static_cast<size_t>(other.outputs[0])].bytes()));
        }
        latency = model_.links.alpha;
        seconds = (reduction ? 0.5 + 1.5 * n : 1.0) * out / slowest + latency;
      } else if (n > 1) {
        // `bytes` is what a member receives: for a ring all-reduce of a buffer of S bytes,
        // 2(n-1)/n S (specialize takes it from the communication plan), in 2(n-1) rounds.
        double bytes = 0;
        for (int member : in.group)
          bytes = std::max(bytes, static_cast<double>(at(member).bytes));
        const std::optional<ir::CommKind> kind = in.collective();
        const bool allReduce = kind == ir::CommKind::AllReduce || kind == ir::CommKind::SplitAllReduce;
        const int members = static_cast<int>(n);
        latency = (allReduce ? cost::allReduceRounds(members) : cost::gatherRounds(members)) * model_.links.alpha;
        seconds = cost::ringSeconds(bytes, allReduce ? cost::allReduceRounds(members) : cost::gatherRounds(members),
                                    slowest / 1e9, model_.links.alpha);
      }
      seconds += woken;
      latency += woken;
      // Without overlap the members' threads do the copying, on cores; waiting out the
      // latency (a wake-up) takes none.
      if (!model_.overlap)
        start = onCores(start, seconds - latency, in.group.size());
      for (int member : in.group) {
        const ir::Instruction &mine = at(member);
        double kernel = 0;
        if (kernelToo)
          kernel = kernelSeconds(member, mine, *original_.at(member));
        record(member, in.op, true, start, seconds);
        if (kernel > 0)
          record(member, in.op, false, start + seconds, kernel);
        const double end = start + seconds + kernel;
        stream(member, true) = end;
        if (kernelToo)
          stream(member, false) = end;
        done(member, mine, end, end);
        if (member != device)
          ++at_[member];
      }
      ++at_[device];
      return true;
    }
    switch (in.kind) {
    case ir::InstrKind::Send: {
      // The sender's stream is not held: the transfer proceeds while it goes on.
      const double start = std::max(stream(device, true), ready(device, in));
      const double seconds = model_.links.alpha + static_cast<double>(in.bytes) / bandwidth(device, in.peer);
      arrivals_[{device, in.peer, step.tag}] = start + seconds;
      stream(device, true) = start;
      record(device, "send", true, start, 0);
      done(device, in, start + seconds, start);
      break;
    }
    case ir::InstrKind::Recv: {
      auto it = arrivals_.find({in.peer, device, step.tag});
      if (it == arrivals_.end())
        return false;
      // Waiting for the sender to send is idle time; the transfer itself is communication.
      const double t = std::max(stream(device, true), ready(device, in));
      const double transfer = model_.links.alpha + static_cast<double>(in.bytes) / bandwidth(in.peer, device);
      const double arrival = std::max(t, it->second + wakeup(it->second - t));
      const double moving = std::min(arrival - t, transfer);
      record(device, in.op, true, arrival - moving, moving);
      stream(device, true) = arrival;
      done(device, in, arrival, arrival);
      arrivals_.erase(it);
      break;
    }
    default: {
      const double seconds = kernelSeconds(device, in, program);
      const double start = onCores(std::max(stream(device, false), ready(device, in)), seconds,
                                   static_cast<size_t>(std::max(1, model_.kernelCores)));
      record(device, in.op, false, start, seconds);
      stream(device, false) = start + seconds;
      done(device, in, start + seconds, start + seconds);
    }
    }
    ++at_[device];
    return true;
  }

  // What a device that waited `waited` seconds for a peer pays to be woken (CostModel::spin).
  double wakeup(double waited) const { return waited > model_.spin ? model_.wakeup : 0.0; }

  double kernelSeconds(int device, const ir::Instruction &in, const ir::DeviceProgram &program) const {
    std::vector<double> &priced = priced_.at(device);
    const std::less<const ir::Instruction *> before;
    if (before(&in, program.body.data()) || !before(&in, program.body.data() + priced.size()))
      return slowdown_ * unsharedKernelSeconds(device, in, program); // not an instruction of its body
    const auto index = static_cast<size_t>(&in - program.body.data());
    if (std::isnan(priced[index]))
      priced[index] = unsharedKernelSeconds(device, in, program);
    return slowdown_ * priced[index];
  }
  double unsharedKernelSeconds(int device, const ir::Instruction &in, const ir::DeviceProgram &program) const {
    if (in.kind == ir::InstrKind::Copy) {
      double bytes = 0;
      const int element =
          in.outputs.empty() ? 4 : ir::dtypeBytes(program.buffers[static_cast<size_t>(in.outputs[0])].dtype); // bf16: 2
      for (const ir::Box &box : in.slices)
        bytes += static_cast<double>(box.numElements()) * element;
      if (in.op == "zero" && !in.outputs.empty())
        bytes = static_cast<double>(program.buffers[static_cast<size_t>(in.outputs[0])].bytes());
      return 2 * bytes / model_.memoryBandwidth(device);
    }
    KernelCost cost = kernelCost(in, program);
    if (in.op == "attention" || in.op == "attention_grad")
      cost.flops *= model_.attentionDensity;
    auto it = model_.kernelEfficiency.find(in.op);
    const double efficiency = it != model_.kernelEfficiency.end() ? it->second : model_.efficiency;
    auto overhead = model_.kernelOverhead.find(in.op);
    return (overhead != model_.kernelOverhead.end() ? overhead->second : 0.0) +
           std::max(cost.flops / model_.flops(device), cost.bytes / model_.memoryBandwidth(device)) / efficiency;
  }
};

} // namespace

Simulation simulate(const std::map<int, ir::DeviceProgram> &programs, const CostModel &model, bool keepEvents) {
  return Simulator(programs, model, keepEvents).run();
}

} // namespace hspmd::planner
