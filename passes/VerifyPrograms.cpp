// VerifyPrograms.cpp - the cross-device verifier. It replays the programs together:
// kernels and copies run at once, sends are posted eagerly, a receive waits for its send,
// a collective waits for every member of its group. When no device can move and some are
// not done, the programs deadlock, and the verifier says who waits for what.
#include "passes/Specialize.h"

#include <algorithm>
#include <set>

namespace hspmd::passes {

namespace {

std::string where(const ir::Instruction &in) {
  return in.loc.isKnown() ? " (" + in.loc.str() + ")" : "";
}

// One instruction as a device runs it: the tag that matches it with its peers (distinct per
// micro-batch and pass once the schedule is expanded) and the tag messages show.
struct Step {
  const ir::Instruction *in;
  int64_t key, tag;
};
using Streams = std::map<int, std::vector<Step>>;

std::string describe(int device, const Step &step) {
  const ir::Instruction &in = *step.in;
  std::string text = "device " + std::to_string(device) + "'s " + in.op;
  if (in.kind == ir::InstrKind::Send)
    text += " to " + std::to_string(in.peer);
  if (in.kind == ir::InstrKind::Recv)
    text += " from " + std::to_string(in.peer);
  return text + " (tag " + std::to_string(step.tag) + ")" + where(in);
}

std::string list(const std::vector<int> &devices) {
  std::string text;
  for (size_t i = 0; i < devices.size(); ++i)
    text += (i ? ", " : "") + std::to_string(devices[i]);
  return text;
}

// What matches an instruction with its peers' counterparts: the tag, and whether it is the
// recomputed copy of a forward instruction (which keeps the forward instruction's tag until
// ir::expandSchedule makes the tags of every pass distinct).
// Collectives, and kernels that exchange data inside with a group (vocabulary-parallel
// cross-entropy): every member must call them in the same order.
bool takesPart(const ir::Instruction &in) {
  return in.kind == ir::InstrKind::Collective || !in.group.empty();
}

int64_t key(const ir::Instruction &in) {
  return in.tag * 2 + (in.phase == ir::Phase::Recompute ? 1 : 0);
}

bool verifyStreams(const Streams &programs, const ReportFn &report) {
  bool ok = true;
  auto problem = [&](const ir::Location &loc, std::string message) {
    ok = false;
    report(Problem{Severity::Error, loc, "HS301", std::move(message), {}, {}});
  };
  // Static matching: collectives by tag, sends with receives.
  std::map<int64_t, std::vector<std::pair<int, const ir::Instruction *>>> collectives;
  std::map<std::tuple<int, int, int64_t>, std::vector<Step>> sends, recvs; // (from, to, tag)
  std::map<int64_t, int64_t> shown;                                        // key -> tag
  for (const auto &[device, program] : programs)
    for (const Step &step : program) {
      const ir::Instruction &in = *step.in;
      if (takesPart(in)) {
        collectives[step.key].push_back({device, &in});
        shown[step.key] = step.tag;
      } else if (in.kind == ir::InstrKind::Send) {
        sends[{device, in.peer, step.key}].push_back(step);
      } else if (in.kind == ir::InstrKind::Recv) {
        recvs[{in.peer, device, step.key}].push_back(step);
      }
    }
  for (const auto &[key, members] : collectives) {
    const int64_t tag = shown[key];
    // Members with the same group form one collective; each must be called by exactly them.
    std::map<std::vector<int>, std::vector<std::pair<int, const ir::Instruction *>>> byGroup;
    for (const auto &member : members)
      byGroup[member.second->group].push_back(member);
    for (const auto &[group, calls] : byGroup) {
      std::vector<int> callers;
      for (const auto &[device, in] : calls)
        callers.push_back(device);
      std::sort(callers.begin(), callers.end());
      std::vector<int> sorted = group;
      std::sort(sorted.begin(), sorted.end());
      const ir::Instruction &first = *calls.front().second;
      if (callers != sorted)
        problem(first.loc, first.op + " (tag " + std::to_string(tag) + ")" + where(first) + ": group [" + list(group) +
                               "] but devices " + list(callers) + " call it");
      for (const auto &[device, in] : calls)
        if (in->bytes != first.bytes && first.collective() != ir::CommKind::SplitAllGather &&
            first.collective() != ir::CommKind::SplitReduceScatter)
          problem(in->loc, first.op + " (tag " + std::to_string(tag) + ")" + where(*in) + ": device " +
                               std::to_string(device) + " contributes " + std::to_string(in->bytes) +
                               " bytes, device " + std::to_string(calls.front().first) + " " +
                               std::to_string(first.bytes));
    }
  }
  for (const auto &[key, list_] : sends) {
    const ir::Instruction &send = *list_.front().in;
    auto match = recvs.find(key);
    if (match == recvs.end() || match->second.size() != list_.size())
      problem(send.loc, describe(std::get<0>(key), list_.front()) + " has no matching receive on device " +
                            std::to_string(std::get<1>(key)));
    else if (match->second.front().in->bytes != send.bytes)
      problem(send.loc, describe(std::get<0>(key), list_.front()) + " sends " + std::to_string(send.bytes) +
                            " bytes but device " + std::to_string(std::get<1>(key)) + " receives " +
                            std::to_string(match->second.front().in->bytes));
    else if (match->second.front().in->slices != send.slices)
      problem(send.loc, describe(std::get<0>(key), list_.front()) + " sends other slices than device " +
                            std::to_string(std::get<1>(key)) + " receives");
  }
  for (const auto &[key, list_] : recvs)
    if (!sends.count(key))
      problem(list_.front().in->loc, describe(std::get<1>(key), list_.front()) + " has no matching send on device " +
                                         std::to_string(std::get<0>(key)));
  if (!ok)
    return false;

  // Dynamic replay for deadlocks.
  std::map<int, size_t> pc;
  for (const auto &[device, program] : programs)
    pc[device] = 0;
  std::set<std::tuple<int, int, int64_t>> posted; // sends issued: (from, to, tag)
  bool progress = true;
  while (progress) {
    progress = false;
    for (const auto &[device, program] : programs) {
      size_t &at = pc[device];
      while (at < program.size()) {
        const ir::Instruction &in = *program[at].in;
        const int64_t key = program[at].key;
        if (in.kind == ir::InstrKind::Send) {
          posted.insert({device, in.peer, key});
        } else if (in.kind == ir::InstrKind::Recv) {
          if (!posted.count({in.peer, device, key}))
            break;
        } else if (takesPart(in)) {
          bool all = true;
          for (int member : in.group) {
            const auto &other = programs.at(member);
            size_t oat = pc[member];
            all = all && oat < other.size() && takesPart(*other[oat].in) && other[oat].key == key;
          }
          if (!all)
            break;
          for (int member : in.group)
            if (member != device)
              ++pc[member];
        }
        ++at;
        progress = true;
      }
    }
  }
  for (const auto &[device, program] : programs) {
    if (pc[device] >= program.size())
      continue;
    const Step &step = program[pc[device]];
    const ir::Instruction &in = *step.in;
    std::string waits;
    if (takesPart(in)) {
      for (int member : in.group) {
        const auto &other = programs.at(member);
        if (pc[member] < other.size() && other[pc[member]].key != step.key)
          waits += (waits.empty() ? "" : "; ") + describe(member, other[pc[member]]);
      }
      waits = "; its group is busy elsewhere: " + waits;
    }
    problem(in.loc, "deadlock: " + describe(device, step) + " waits forever" + waits);
    break; // one report tells the story
  }
  return ok;
}

} // namespace

bool verifyPrograms(const std::map<int, ir::DeviceProgram> &programs, const ReportFn &report) {
  Streams streams;
  for (const auto &[device, program] : programs)
    for (const ir::Instruction &in : program.body)
      streams[device].push_back({&in, key(in), in.tag});
  return verifyStreams(streams, report);
}

bool verifyScheduledStep(const std::map<int, ir::DeviceProgram> &programs, const ReportFn &report) {
  Streams streams;
  for (const auto &entry : programs) {
    const ir::DeviceProgram &program = entry.second; // (a lambda may not capture a structured binding in C++20)
    std::vector<Step> &stream = streams[entry.first];
    auto append = [&](ir::Phase phase, int microbatch) {
      for (const ir::Instruction &in : program.body)
        if (ir::passOf(in.phase) == phase) {
          const int64_t tag = ir::expandedTag(in.tag, in.phase, microbatch);
          stream.push_back({&in, tag, tag});
        }
    };
    const auto slots = program.schedule.empty()
                           ? std::vector<ir::ScheduleSlot>{{ir::Phase::Forward, 0}, {ir::Phase::Backward, 0}}
                           : program.schedule;
    for (const ir::ScheduleSlot &slot : slots)
      append(slot.phase, slot.microbatch);
    append(ir::Phase::Update, 0);
  }
  return verifyStreams(streams, report);
}

} // namespace hspmd::passes
