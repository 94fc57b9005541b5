// VerifyPrograms.cpp - the cross-device verifier. It replays the programs together:
// kernels and copies run at once, sends are posted eagerly, a receive waits for its send,
// a collective waits for every member of its group. When no device can move and some are
// not done, the programs deadlock, and the verifier says who waits for what.
#include "passes/Specialize.h"

#include "ir/Tags.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

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

// A send or receive of one device's stream: its channel (from, to, key) and where it is.
struct Message {
  int from, to;
  int64_t key;
  uint32_t device, at; // index of the device of the stream, position in it
  bool operator<(const Message &o) const {
    return std::tie(from, to, key, device, at) < std::tie(o.from, o.to, o.key, o.device, o.at);
  }
  bool sameChannel(const Message &o) const { return from == o.from && to == o.to && key == o.key; }
};

using ProblemFn = std::function<void(const ir::Location &, std::string)>;

// Devices by index, in increasing order; streams can hold tens of millions of steps (a
// schedule of many micro-batches expanded), so everything below is sorted vectors, not maps.
struct Indexed {
  std::vector<int> ids;
  std::vector<const std::vector<Step> *> streams;
  explicit Indexed(const Streams &programs) {
    for (const auto &[device, program] : programs) {
      ids.push_back(device);
      streams.push_back(&program);
    }
  }
  std::optional<size_t> indexOf(int device) const {
    const auto it = std::lower_bound(ids.begin(), ids.end(), device);
    return it != ids.end() && *it == device ? std::optional<size_t>(static_cast<size_t>(it - ids.begin()))
                                            : std::nullopt;
  }
};

// Each receive's send, by device index and position: (device index, position).
using SendOf = std::vector<std::vector<std::pair<uint32_t, uint32_t>>>;

// Static matching: collectives by key, sends with receives by channel. Fills `sendOf` with
// the send each receive waits for (the first of its channel); `repeated`, where given, says
// whether some channel carries more than one message. Returns whether nothing was wrong.
bool matchStreams(const Indexed &indexed, const ProblemFn &report, SendOf &sendOf, bool *repeated = nullptr) {
  bool ok = true;
  auto problem = [&](const ir::Location &loc, std::string message) {
    ok = false;
    report(loc, std::move(message));
  };
  const std::vector<int> &ids = indexed.ids;
  const std::vector<const std::vector<Step> *> &streams = indexed.streams;
  struct Call {
    int64_t key;
    size_t device, at;
    bool operator<(const Call &o) const { return std::tie(key, device, at) < std::tie(o.key, o.device, o.at); }
  };
  std::vector<Call> calls;
  std::vector<Message> sends, recvs;
  size_t callCount = 0, sendCount = 0, recvCount = 0;
  for (const auto *stream : streams)
    for (const Step &step : *stream) {
      callCount += takesPart(*step.in);
      sendCount += !takesPart(*step.in) && step.in->kind == ir::InstrKind::Send;
      recvCount += !takesPart(*step.in) && step.in->kind == ir::InstrKind::Recv;
    }
  calls.reserve(callCount);
  sends.reserve(sendCount);
  recvs.reserve(recvCount);
  for (size_t d = 0; d < streams.size(); ++d)
    for (size_t at = 0; at < streams[d]->size(); ++at) {
      const Step &step = (*streams[d])[at];
      const ir::Instruction &in = *step.in;
      if (takesPart(in))
        calls.push_back({step.key, d, at});
      else if (in.kind == ir::InstrKind::Send)
        sends.push_back({ids[d], in.peer, step.key, static_cast<uint32_t>(d), static_cast<uint32_t>(at)});
      else if (in.kind == ir::InstrKind::Recv)
        recvs.push_back({in.peer, ids[d], step.key, static_cast<uint32_t>(d), static_cast<uint32_t>(at)});
    }
  std::sort(calls.begin(), calls.end());
  std::sort(sends.begin(), sends.end());
  std::sort(recvs.begin(), recvs.end());
  auto stepOf = [&](size_t device, size_t at) -> const Step & { return (*streams[device])[at]; };
  std::vector<int> sortedGroup, callers;
  std::vector<std::pair<int, const ir::Instruction *>> byGroup; // (device, its call)
  for (size_t begin = 0, end = 0; begin < calls.size(); begin = end) {
    while (end < calls.size() && calls[end].key == calls[begin].key)
      ++end;
    const int64_t tag = stepOf(calls[end - 1].device, calls[end - 1].at).tag;
    // The common case first: every caller names one group, whose members are exactly the
    // callers (in increasing device order, as `calls` is sorted), with the same bytes.
    const ir::Instruction &lead = *stepOf(calls[begin].device, calls[begin].at).in;
    if (lead.group.size() == end - begin) {
      sortedGroup.assign(lead.group.begin(), lead.group.end());
      std::sort(sortedGroup.begin(), sortedGroup.end());
      bool plain = true;
      for (size_t c = begin; c < end && plain; ++c) {
        const ir::Instruction &in = *stepOf(calls[c].device, calls[c].at).in;
        plain = in.group == lead.group && in.bytes == lead.bytes && ids[calls[c].device] == sortedGroup[c - begin];
      }
      if (plain)
        continue;
    }
    // Members with the same group form one collective; each must be called by exactly them.
    // The calls by group, in the order of their groups and then of their devices (a sorted
    // vector: a map of groups here was most of this loop, tensor-parallel groups of one op
    // sharing its tag).
    byGroup.clear();
    for (size_t c = begin; c < end; ++c)
      byGroup.push_back({ids[calls[c].device], stepOf(calls[c].device, calls[c].at).in});
    std::stable_sort(byGroup.begin(), byGroup.end(),
                     [](const auto &a, const auto &b) { return a.second->group < b.second->group; });
    for (size_t g = 0, h = 0; g < byGroup.size(); g = h) {
      const std::vector<int> &group = byGroup[g].second->group;
      callers.clear();
      for (h = g; h < byGroup.size() && byGroup[h].second->group == group; ++h)
        callers.push_back(byGroup[h].first); // in device order, as `calls` is sorted
      sortedGroup.assign(group.begin(), group.end());
      std::sort(sortedGroup.begin(), sortedGroup.end());
      const ir::Instruction &first = *byGroup[g].second;
      if (callers != sortedGroup)
        problem(first.loc, first.op + " (tag " + std::to_string(tag) + ")" + where(first) + ": group [" + list(group) +
                               "] but devices " + list(callers) + " call it");
      for (size_t k = g; k < h; ++k)
        if (const auto &[device, in] = byGroup[k]; in->bytes != first.bytes &&
                                                   first.collective() != ir::CommKind::SplitAllGather &&
                                                   first.collective() != ir::CommKind::SplitReduceScatter)
          problem(in->loc, first.op + " (tag " + std::to_string(tag) + ")" + where(*in) + ": device " +
                               std::to_string(device) + " contributes " + std::to_string(in->bytes) +
                               " bytes, device " + std::to_string(byGroup[g].first) + " " +
                               std::to_string(first.bytes));
    }
  }
  // Each receive's send: the first of its channel (a receive waits until it is posted).
  sendOf.assign(streams.size(), {});
  for (size_t d = 0; d < streams.size(); ++d)
    sendOf[d].assign(streams[d]->size(), {0, 0});
  size_t r = 0;
  std::vector<size_t> lone; // receives (the first of their channel) that no send matches
  for (size_t begin = 0, end = 0; begin < sends.size(); begin = end) {
    while (end < sends.size() && sends[end].sameChannel(sends[begin]))
      ++end;
    if (repeated && end - begin > 1)
      *repeated = true;
    const Message &first = sends[begin];
    const Step &sendStep = stepOf(first.device, first.at);
    const ir::Instruction &send = *sendStep.in;
    for (; r < recvs.size() && recvs[r] < first && !recvs[r].sameChannel(first); ++r) {
      lone.push_back(r);
      while (r + 1 < recvs.size() && recvs[r + 1].sameChannel(recvs[r]))
        ++r;
    }
    size_t matched = 0;
    const size_t firstRecv = r;
    for (; r < recvs.size() && recvs[r].sameChannel(first); ++r) {
      sendOf[recvs[r].device][recvs[r].at] = {first.device, first.at};
      ++matched;
    }
    if (matched != end - begin) {
      problem(send.loc,
              describe(first.from, sendStep) + " has no matching receive on device " + std::to_string(first.to));
      continue;
    }
    const ir::Instruction &recv = *stepOf(recvs[firstRecv].device, recvs[firstRecv].at).in;
    if (recv.bytes != send.bytes)
      problem(send.loc, describe(first.from, sendStep) + " sends " + std::to_string(send.bytes) + " bytes but device " +
                            std::to_string(first.to) + " receives " + std::to_string(recv.bytes));
    else if (recv.slices != send.slices)
      problem(send.loc, describe(first.from, sendStep) + " sends other slices than device " + std::to_string(first.to) +
                            " receives");
  }
  for (; r < recvs.size(); ++r) {
    lone.push_back(r);
    while (r + 1 < recvs.size() && recvs[r + 1].sameChannel(recvs[r]))
      ++r;
  }
  for (const size_t k : lone) { // after the sends' problems, as a receive's channel orders them
    const Step &step = stepOf(recvs[k].device, recvs[k].at);
    problem(step.in->loc,
            describe(recvs[k].to, step) + " has no matching send on device " + std::to_string(recvs[k].from));
  }
  return ok;
}

// Dynamic replay for deadlocks: a send is posted once its device has passed it, so a receive
// may run once its sender has passed the send it matches (`sendOf`, matchStreams's).
void replayStreams(const Indexed &indexed, const SendOf &sendOf, const ProblemFn &problem) {
  const std::vector<int> &ids = indexed.ids;
  const std::vector<const std::vector<Step> *> &streams = indexed.streams;
  auto indexOf = [&](int device) { return indexed.indexOf(device); };
  std::vector<size_t> pc(streams.size(), 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t d = 0; d < streams.size(); ++d) {
      const std::vector<Step> &program = *streams[d];
      size_t &at = pc[d];
      while (at < program.size()) {
        const ir::Instruction &in = *program[at].in;
        const int64_t key = program[at].key;
        if (in.kind == ir::InstrKind::Recv) {
          const auto [sender, sendAt] = sendOf[d][at];
          if (pc[sender] <= sendAt)
            break;
        } else if (takesPart(in)) {
          bool all = true;
          for (int member : in.group) {
            const size_t m = *indexOf(member);
            const std::vector<Step> &other = *streams[m];
            all = all && pc[m] < other.size() && takesPart(*other[pc[m]].in) && other[pc[m]].key == key;
          }
          if (!all)
            break;
          for (int member : in.group)
            if (member != ids[d])
              ++pc[*indexOf(member)];
        }
        ++at;
        progress = true;
      }
    }
  }
  for (size_t d = 0; d < streams.size(); ++d) {
    const std::vector<Step> &program = *streams[d];
    if (pc[d] >= program.size())
      continue;
    const Step &step = program[pc[d]];
    const ir::Instruction &in = *step.in;
    std::string waits;
    if (takesPart(in)) {
      for (int member : in.group) {
        const size_t m = *indexOf(member);
        const std::vector<Step> &other = *streams[m];
        if (pc[m] < other.size() && other[pc[m]].key != step.key)
          waits += (waits.empty() ? "" : "; ") + describe(member, other[pc[m]]);
      }
      waits = "; its group is busy elsewhere: " + waits;
    }
    problem(in.loc, "deadlock: " + describe(ids[d], step) + " waits forever" + waits);
    break; // one report tells the story
  }
}

bool verifyStreams(const Streams &programs, const ReportFn &report) {
  bool ok = true;
  const ProblemFn problem = [&](const ir::Location &loc, std::string message) {
    ok = false;
    report(Problem{Severity::Error, loc, "HS301", std::move(message), {}, {}});
  };
  const Indexed indexed(programs);
  SendOf sendOf;
  if (!matchStreams(indexed, problem, sendOf))
    return false;
  replayStreams(indexed, sendOf, problem);
  return ok;
}

// Whether the verifier looks at `in`: kernels and copies run at once, so a stream is its
// sends, receives and group calls alone (a step expanded over many micro-batches is mostly
// kernels).
bool communicates(const ir::Instruction &in) {
  return takesPart(in) || in.kind == ir::InstrKind::Send || in.kind == ir::InstrKind::Recv;
}

} // namespace

bool verifyPrograms(const std::map<int, ir::DeviceProgram> &programs, const ReportFn &report) {
  Streams streams;
  for (const auto &[device, program] : programs) {
    std::vector<Step> &stream = streams[device];
    for (const ir::Instruction &in : program.body)
      if (communicates(in))
        stream.push_back({&in, key(in), in.tag});
  }
  return verifyStreams(streams, report);
}

// The passes whose streams stand for the whole step (update excluded). Where every device runs
// the same passes in the same order (one stage: data, tensor, context or head parallelism), the
// first pass of each kind stands for all: tags are distinct per micro-batch, so a pass's
// messages and collectives match only within that pass, and once every device has finished
// the passes before it, the pass runs as it would alone. Otherwise (pipelines) every slot.
std::map<int, std::vector<ir::ScheduleSlot>> representativeSlots(const std::map<int, ir::DeviceProgram> &programs) {
  std::map<int, std::vector<ir::ScheduleSlot>> slots;
  bool same = true;
  for (const auto &[device, program] : programs) {
    slots[device] = ir::scheduleSlots(program);
    same = same && slots[device] == slots.begin()->second;
  }
  if (same)
    for (auto &[device, list] : slots) {
      std::vector<ir::ScheduleSlot> once;
      for (const ir::ScheduleSlot &slot : list)
        if (std::none_of(once.begin(), once.end(), [&](const ir::ScheduleSlot &o) { return o.phase == slot.phase; }))
          once.push_back(slot);
      list = std::move(once);
    }
  return slots;
}

namespace {

// A device's step: its communicating instructions by pass (forward, backward, update: passIndex;
// a slot of any other phase runs none) and its slots, the update last.
struct DeviceStep {
  std::array<std::vector<const ir::Instruction *>, 4> byPass;
  std::vector<ir::ScheduleSlot> slots;
};

size_t passIndex(ir::Phase pass) {
  return pass == ir::Phase::Forward ? 0 : pass == ir::Phase::Backward ? 1 : pass == ir::Phase::Update ? 2 : 3;
}

// The expanded step's matching derived from the body's, where it is the same: each device's
// communicating instructions, grouped by pass, are matched once (matchStreams). Where every
// message and every collective (each group of it) joins passes that run for the same
// micro-batches on each of its devices, each micro-batch once, and no channel carries two
// messages, the step matches slot by slot as the body does (ir::expandedTag keeps the tags of
// every pass and micro-batch apart). Then only the deadlock replay runs on the expanded step:
// sorting its calls and messages, several times the body's, was most of the pass. Nothing
// where that does not hold (the caller matches the expanded step itself, and reports what it
// finds).
std::optional<bool> replayThroughTheBody(const std::map<int, DeviceStep> &steps, const Streams &expanded,
                                         const ReportFn &report) {
  // The bodies, grouped by pass, and where each pass begins in them.
  Streams body;
  std::vector<std::array<size_t, 4>> passStart;
  for (const auto &[device, step] : steps) {
    std::vector<Step> &stream = body[device];
    std::array<size_t, 4> &start = passStart.emplace_back();
    for (size_t p = 0; p < 3; ++p) {
      start[p] = stream.size();
      for (const ir::Instruction *in : step.byPass[p])
        stream.push_back({in, key(*in), in->tag});
    }
    start[3] = stream.size();
  }
  const Indexed bodies(body);
  SendOf bodySendOf;
  bool repeated = false;
  if (!matchStreams(
          bodies, [](const ir::Location &, std::string) {}, bodySendOf, &repeated) ||
      repeated)
    return std::nullopt;
  auto passAt = [&](size_t d, size_t at) {
    size_t p = 0;
    while (at >= passStart[d][p + 1])
      ++p;
    return p;
  };
  // Each device's micro-batches per pass, as an id per distinct list (-1: the update, once).
  std::map<std::vector<int>, int> lists;
  std::vector<std::array<int, 3>> runs;
  for (const auto &[device, step] : steps) {
    std::array<int, 3> &run = runs.emplace_back();
    for (size_t p = 0; p < 2; ++p) {
      std::vector<int> microbatches;
      for (size_t i = 0; i + 1 < step.slots.size(); ++i) // the update last, once
        if (const ir::ScheduleSlot &slot = step.slots[i];
            slot.phase != ir::Phase::Forward && slot.phase != ir::Phase::Backward)
          return std::nullopt;
        else if (passIndex(slot.phase) == p)
          microbatches.push_back(slot.microbatch);
      std::sort(microbatches.begin(), microbatches.end());
      if (std::adjacent_find(microbatches.begin(), microbatches.end()) != microbatches.end() ||
          (!microbatches.empty() && (microbatches.front() < 0 || microbatches.back() >= ir::tags::kMaxMicrobatches)))
        return std::nullopt;
      run[p] = lists.emplace(std::move(microbatches), static_cast<int>(lists.size())).first->second;
    }
    run[2] = -1;
  }
  // Every call of a collective (a key and a group: the tensor-parallel groups of one op share
  // its tag, and pipelines of other micro-batch counts hold them) from passes that run for the
  // same micro-batches, and both ends of every message.
  std::unordered_map<int64_t, std::vector<std::pair<const std::vector<int> *, int>>> runOfCall;
  for (size_t d = 0; d < bodies.streams.size(); ++d)
    for (size_t at = 0; at < bodies.streams[d]->size(); ++at) {
      const Step &step = (*bodies.streams[d])[at];
      const int run = runs[d][passAt(d, at)];
      if (takesPart(*step.in)) {
        auto &calls = runOfCall[step.key];
        const auto same =
            std::find_if(calls.begin(), calls.end(), [&](const auto &call) { return *call.first == step.in->group; });
        if (same == calls.end())
          calls.push_back({&step.in->group.members(), run});
        else if (same->second != run)
          return std::nullopt;
      } else if (step.in->kind == ir::InstrKind::Recv) {
        const auto [e, sendAt] = bodySendOf[d][at];
        if (runs[e][passAt(e, sendAt)] != run)
          return std::nullopt;
      }
    }
  // The expanded step's sends, slot by slot: where each slot begins in each device's stream.
  const Indexed indexed(expanded);
  std::vector<std::map<std::pair<size_t, int>, size_t>> slotAt(steps.size());
  size_t d = 0;
  for (const auto &[device, step] : steps) {
    size_t at = 0;
    for (const ir::ScheduleSlot &slot : step.slots) {
      const size_t p = passIndex(slot.phase);
      slotAt[d][{p, p == 2 ? 0 : slot.microbatch}] = at;
      at += step.byPass[p].size();
    }
    ++d;
  }
  SendOf sendOf(steps.size());
  d = 0;
  for (const auto &[device, step] : steps) {
    sendOf[d].assign(indexed.streams[d]->size(), {0, 0});
    size_t at = 0;
    for (const ir::ScheduleSlot &slot : step.slots) {
      const size_t p = passIndex(slot.phase);
      for (size_t i = 0; i < step.byPass[p].size(); ++i) {
        const ir::Instruction &in = *step.byPass[p][i];
        if (takesPart(in) || in.kind != ir::InstrKind::Recv)
          continue;
        const auto [e, sendAt] = bodySendOf[d][passStart[d][p] + i];
        const size_t q = passAt(e, sendAt);
        const auto found = slotAt[e].find({q, q == 2 ? 0 : slot.microbatch});
        if (found == slotAt[e].end())
          return std::nullopt;
        sendOf[d][at + i] = {e, static_cast<uint32_t>(found->second + sendAt - passStart[e][q])};
      }
      at += step.byPass[p].size();
    }
    ++d;
  }
  bool ok = true;
  replayStreams(indexed, sendOf, [&](const ir::Location &loc, std::string message) {
    ok = false;
    report(Problem{Severity::Error, loc, "HS301", std::move(message), {}, {}});
  });
  return ok;
}

} // namespace

bool verifyScheduledStep(const std::map<int, ir::DeviceProgram> &programs, const ReportFn &report) {
  Streams streams;
  std::map<int, DeviceStep> steps;
  std::map<int, std::vector<ir::ScheduleSlot>> representatives = representativeSlots(programs);
  for (const auto &[device, program] : programs) {
    // The step as ir::scheduledInstructions expands it, its communication only: each pass's
    // communicating instructions are picked out once, then laid out per slot.
    DeviceStep &step = steps[device];
    for (const ir::Instruction &in : program.body)
      if (communicates(in))
        step.byPass[passIndex(ir::passOf(in.phase))].push_back(&in);
    step.slots = std::move(representatives[device]);
    step.slots.push_back({ir::Phase::Update, 0});
    size_t total = 0;
    for (const ir::ScheduleSlot &slot : step.slots)
      total += step.byPass[passIndex(slot.phase)].size();
    std::vector<Step> &stream = streams[device];
    stream.reserve(total);
    for (const ir::ScheduleSlot &slot : step.slots)
      for (const ir::Instruction *in : step.byPass[passIndex(slot.phase)]) {
        const int64_t tag = ir::expandedTag(in->tag, in->phase, slot.microbatch);
        stream.push_back({in, tag, tag});
      }
  }
  if (const std::optional<bool> replayed = replayThroughTheBody(steps, streams, report))
    return *replayed;
  return verifyStreams(streams, report);
}

} // namespace hspmd::passes
