// NcclPlan.cpp - lowering one step of a plan's DevicePrograms to NCCL calls, then replaying
// them under NCCL's rules (NcclPlan.h): messages matched by their order on a channel, a send
// and its receive meet once both are at the head of their streams, a collective once every
// member is, kernels on the compute stream, events for what each reads and writes.
#include "runtime/gpu/NcclPlan.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace hspmd::runtime::gpu {

namespace {

std::string where(const ir::Instruction &in) {
  return in.loc.isKnown() ? " (" + in.loc.str() + ")" : "";
}

std::string list(const std::vector<int64_t> &values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

// A member of one collective: its device, program and instruction.
struct Member {
  int device;
  const ir::DeviceProgram *program;
  const ir::Instruction *in;
  const ir::Buffer *input() const {
    return in->inputs.empty() ? nullptr : &program->buffers[static_cast<size_t>(in->inputs[0])];
  }
  const ir::Buffer *output() const {
    return in->outputs.empty() ? nullptr : &program->buffers[static_cast<size_t>(in->outputs[0])];
  }
};

// Whether the pieces tile `whole` along dimension 0, equal in size and in member order, each
// spanning every other dimension: what ncclAllGather's output and ncclReduceScatter's input are.
bool equalRowBlocks(const std::vector<ir::Box> &pieces, const ir::Box &whole) {
  if (whole.lo.empty())
    return false;
  const int64_t rows = (whole.hi[0] - whole.lo[0]) / static_cast<int64_t>(pieces.size());
  if (rows * static_cast<int64_t>(pieces.size()) != whole.hi[0] - whole.lo[0])
    return false;
  for (size_t i = 0; i < pieces.size(); ++i) {
    ir::Box expected = whole;
    expected.lo[0] = whole.lo[0] + static_cast<int64_t>(i) * rows;
    expected.hi[0] = expected.lo[0] + rows;
    if (pieces[i] != expected)
      return false;
  }
  return true;
}

bool distinctPartials(const std::vector<Member> &members) {
  std::set<int> partials;
  for (const Member &m : members)
    partials.insert(m.in->partial);
  return partials.size() == members.size();
}

// The NCCL collective that does what `members` do together, if one does (else messages).
std::optional<NcclCall> asCollective(const std::vector<Member> &members, ir::CommKind kind) {
  std::vector<ir::Box> in, out;
  for (const Member &m : members) {
    if (!m.input() || !m.output() || m.input()->dtype != m.output()->dtype)
      return std::nullopt;
    in.push_back(m.input()->region());
    out.push_back(m.output()->region());
  }
  auto allEqual = [](const std::vector<ir::Box> &boxes) {
    return std::all_of(boxes.begin(), boxes.end(), [&](const ir::Box &b) { return b == boxes[0]; });
  };
  // By the layout alone: a split all-reduce of equal regions is an all-reduce to NCCL.
  const bool reduction = ir::isReduction(kind);
  NcclCall call;
  if (reduction && allEqual(in) && allEqual(out) && in[0] == out[0] && distinctPartials(members)) {
    call.kind = NcclCallKind::AllReduce;
    call.count = out[0].numElements();
  } else if (!reduction && allEqual(out) && equalRowBlocks(in, out[0])) {
    call.kind = NcclCallKind::AllGather;
    call.count = in[0].numElements();
  } else if (reduction && allEqual(in) && equalRowBlocks(out, in[0]) && distinctPartials(members)) {
    call.kind = NcclCallKind::ReduceScatter;
    call.count = out[0].numElements();
  } else {
    return std::nullopt;
  }
  return call;
}

// What each member sends each other member when a collective runs as messages, as global
// boxes and bytes: every receiver takes each part of its output once, from itself where it
// holds it, else from the first member in group order that does (for reductions: once per
// partial sum).
struct Parts {
  std::vector<ir::Box> boxes;
  int64_t bytes = 0;
};
std::map<std::pair<int, int>, Parts> messagesOf(const std::vector<Member> &members, bool reduction) {
  std::map<std::pair<int, int>, Parts> sent; // (from, to)
  for (const Member &receiver : members) {
    const ir::Buffer *out = receiver.output();
    if (!out)
      continue;
    std::vector<const Member *> order{&receiver};
    for (const Member &m : members)
      if (m.device != receiver.device)
        order.push_back(&m);
    std::map<int, std::vector<ir::Box>> taken;
    for (const Member *m : order) {
      const ir::Buffer *input = m->input();
      if (!input)
        continue;
      const ir::Box overlap = ir::intersectBox(out->region(), input->region());
      if (overlap.empty())
        continue;
      std::vector<ir::Box> parts{overlap};
      std::vector<ir::Box> &done = taken[reduction ? m->in->partial : 0];
      for (const ir::Box &d : done)
        parts = ir::subtractBox(parts, d);
      std::erase_if(parts, [](const ir::Box &part) { return part.empty(); });
      if (m->device != receiver.device && !parts.empty()) {
        Parts &message = sent[{m->device, receiver.device}];
        for (const ir::Box &part : parts) {
          message.boxes.push_back(part);
          message.bytes += part.numElements() * ir::dtypeBytes(input->dtype);
        }
      }
      done.insert(done.end(), parts.begin(), parts.end());
    }
  }
  return sent;
}

// A buffer's copy for one micro-batch: what events order calls and kernels by.
using Slot = std::pair<int, int>;
Slot slotOf(const ir::DeviceProgram &program, int buffer, int microbatch) {
  const int slots = program.buffers[static_cast<size_t>(buffer)].slots;
  return {buffer, microbatch < 0 ? 0 : microbatch % std::max(slots, 1)};
}

// The events of one device: which ops last wrote, and have read since, each buffer copy.
class Hazards {
public:
  std::vector<int> before(const std::vector<Slot> &reads, const std::vector<Slot> &writes) const {
    std::vector<int> after;
    auto add = [&](const std::map<Slot, std::vector<int>> &ops, const Slot &slot) {
      if (auto it = ops.find(slot); it != ops.end())
        after.insert(after.end(), it->second.begin(), it->second.end());
    };
    for (const Slot &slot : reads)
      add(writers_, slot);
    for (const Slot &slot : writes) {
      add(writers_, slot);
      add(readers_, slot);
    }
    return after;
  }
  // `ops` (of one instruction) read `reads` and write `writes`.
  void record(const std::vector<int> &ops, const std::vector<Slot> &reads, const std::vector<Slot> &writes) {
    for (const Slot &slot : reads)
      readers_[slot].insert(readers_[slot].end(), ops.begin(), ops.end());
    for (const Slot &slot : writes) {
      writers_[slot] = ops;
      readers_.erase(slot);
    }
  }

private:
  std::map<Slot, std::vector<int>> writers_, readers_;
};

class Lowering {
public:
  explicit Lowering(const std::map<int, ir::DeviceProgram> &programs) : programs_(programs) {
    for (const auto &[device, program] : programs)
      for (const ir::ScheduledInstruction &s : ir::scheduledInstructions(program))
        if (s.instruction->kind == ir::InstrKind::Collective)
          collectives_[s.tag].push_back({device, &program, s.instruction});
  }

  NcclPlan plan;

  // Lowers every device; once more, with those channels staged, where a receiver takes a
  // channel's messages in another order than its sender sends them.
  void run() {
    for (const auto &[device, program] : programs_)
      lower(device, program);
    std::map<std::pair<int, int>, std::vector<int64_t>> sent, received;
    for (const auto &[device, calls] : plan.calls)
      for (const NcclCall &call : calls) {
        if (call.kind == NcclCallKind::Send)
          sent[{device, call.peer}].push_back(call.tag);
        if (call.kind == NcclCallKind::Recv)
          received[{call.peer, device}].push_back(call.tag);
      }
    for (const auto &[channel, tags] : sent)
      if (received[channel] != tags) {
        std::vector<int64_t> a = tags, b = received[channel];
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        if (a == b) // the same messages: staging reorders them (else matchMessages says what differs)
          staged_[channel] = tags;
      }
    if (staged_.empty())
      return;
    plan = NcclPlan{};
    communicatorOf_.clear();
    for (const auto &[device, program] : programs_)
      lower(device, program);
  }

private:
  const std::map<int, ir::DeviceProgram> &programs_;
  std::map<int64_t, std::vector<Member>> collectives_; // by expanded tag, in device order
  std::map<std::vector<int>, int> communicatorOf_;
  // Collectives as messages, by tag and group (groups apart may share a tag: the same op's
  // collective in each pair of a head-parallel split, say).
  std::map<std::pair<int64_t, std::vector<int>>, std::map<std::pair<int, int>, Parts>> messages_;
  std::map<std::pair<int, int>, std::vector<int64_t>> staged_; // channel -> the sender's order of tags

  int communicator(const std::vector<int> &group) {
    auto [it, added] = communicatorOf_.emplace(group, static_cast<int>(plan.communicators.size()));
    if (added)
      plan.communicators.push_back(group);
    return it->second;
  }

  // Members of the collective with expanded tag `tag`, in the group's order.
  std::vector<Member> membersOf(int64_t tag, const ir::Instruction &in) {
    std::vector<Member> members;
    for (int device : in.group)
      for (const Member &m : collectives_[tag])
        if (m.device == device)
          members.push_back(m);
    return members;
  }

  // The NCCL calls of one instruction (none for kernels and copies, and for a collective this
  // device has no part of).
  std::vector<NcclCall> callsOf(int device, const ir::DeviceProgram &program, const ir::ScheduledInstruction &s) {
    const ir::Instruction &in = *s.instruction;
    NcclCall call;
    call.tag = s.tag;
    call.instruction = &in;
    if (in.kind == ir::InstrKind::Send || in.kind == ir::InstrKind::Recv) {
      call.kind = in.kind == ir::InstrKind::Send ? NcclCallKind::Send : NcclCallKind::Recv;
      call.peer = in.peer;
      call.bytes = in.bytes;
      call.boxes = in.slices;
      return {call};
    }
    if (in.kind == ir::InstrKind::Collective) {
      const std::vector<Member> members = membersOf(s.tag, in);
      const ir::CommKind kind = in.collective().value_or(ir::CommKind::Bsr);
      if (members.size() == in.group.size())
        if (std::optional<NcclCall> c = asCollective(members, kind)) {
          c->communicator = communicator(in.group);
          c->tag = s.tag;
          c->instruction = &in;
          return {*c};
        }
      auto [cached, added] = messages_.try_emplace({s.tag, in.group});
      if (added) // the same for every member
        cached->second = messagesOf(members, ir::isReduction(kind));
      std::vector<NcclCall> messages; // sends first, so that no receive waits behind them
      for (bool send : {true, false})
        for (const auto &[pair, parts] : cached->second)
          if ((send ? pair.first : pair.second) == device) {
            call.kind = send ? NcclCallKind::Send : NcclCallKind::Recv;
            call.peer = send ? pair.second : pair.first;
            call.bytes = parts.bytes;
            call.boxes = parts.boxes;
            messages.push_back(call);
          }
      return messages;
    }
    if (!in.group.empty()) { // vocabulary-parallel cross-entropy: row maxima, then sums
      const ir::Buffer &logits = program.buffers[static_cast<size_t>(in.inputs.at(0))];
      const int64_t vocab = std::max<int64_t>(logits.shape.back(), 1);
      const int64_t rows = logits.bytes() / ir::dtypeBytes(logits.dtype) / vocab;
      call.kind = NcclCallKind::AllReduce;
      call.communicator = communicator(in.group);
      std::vector<NcclCall> rounds;
      for (int round = 0; round < 2; ++round) {
        call.count = round == 0 ? rows : 2 * rows;
        call.max = round == 0;
        call.tag = s.tag + (static_cast<int64_t>(round) << 37);
        rounds.push_back(call);
      }
      return rounds;
    }
    return {};
  }

  void lower(int device, const ir::DeviceProgram &program) {
    std::vector<NcclCall> &calls = plan.calls[device];
    std::vector<NcclStep> &mine = plan.steps[device];
    Hazards hazards;
    std::map<NcclStream, int> lastOnStream;
    const std::vector<ir::ScheduledInstruction> step = ir::scheduledInstructions(program);
    // Staged receives first, in their senders' order; each waits only for the one before.
    std::map<std::pair<int, int64_t>, NcclCall> toStage; // (sender, tag) -> the receive
    if (!staged_.empty())
      for (const ir::ScheduledInstruction &s : step)
        for (NcclCall &call : callsOf(device, program, s))
          if (call.kind == NcclCallKind::Recv && staged_.count({call.peer, device}))
            toStage[{call.peer, call.tag}] = call;
    std::map<std::pair<int, int64_t>, int> stagedOp; // (sender, tag) -> its receive's op; tag -1: the last
    for (const auto &[channel, tags] : staged_) {
      if (channel.second != device)
        continue;
      for (int64_t tag : tags) {
        NcclCall call = toStage.at({channel.first, tag});
        call.staged = true;
        NcclStep op{
            {NcclStreamKind::RecvFrom, channel.first}, static_cast<int>(calls.size()), call.instruction, -1, {}};
        if (auto last = stagedOp.find({channel.first, -1}); last != stagedOp.end())
          op.after.push_back(last->second);
        stagedOp[{channel.first, tag}] = stagedOp[{channel.first, -1}] = static_cast<int>(mine.size());
        plan.channels.insert(channel);
        calls.push_back(call);
        mine.push_back(op);
      }
    }
    for (const ir::ScheduledInstruction &s : step) {
      const ir::Instruction &in = *s.instruction;
      std::vector<Slot> reads, writes;
      for (int b : in.inputs)
        reads.push_back(slotOf(program, b, s.microbatch));
      for (int b : in.outputs)
        writes.push_back(slotOf(program, b, s.microbatch));
      const std::vector<int> after = hazards.before(reads, writes);
      std::vector<NcclCall> made = callsOf(device, program, s);
      std::vector<int> issued;
      auto issue = [&](int call, NcclStream stream) {
        NcclStep op{stream, call, &in, s.microbatch, after};
        if (auto it = lastOnStream.find(stream); it != lastOnStream.end())
          op.after.push_back(it->second);
        lastOnStream[stream] = static_cast<int>(mine.size());
        issued.push_back(static_cast<int>(mine.size()));
        mine.push_back(std::move(op));
      };
      if (made.empty() && in.kind != ir::InstrKind::Collective)
        issue(-1, {});
      for (NcclCall &call : made) {
        if (call.kind == NcclCallKind::Recv && staged_.count({call.peer, device})) {
          // the copy out of its staging buffer, on the compute stream, once it has come
          NcclStep copy{{}, -1, &in, s.microbatch, after};
          copy.after.push_back(stagedOp.at({call.peer, call.tag}));
          if (auto it = lastOnStream.find(NcclStream{}); it != lastOnStream.end())
            copy.after.push_back(it->second);
          lastOnStream[NcclStream{}] = static_cast<int>(mine.size());
          issued.push_back(static_cast<int>(mine.size()));
          mine.push_back(std::move(copy));
          continue;
        }
        const bool send = call.kind == NcclCallKind::Send, message = send || call.kind == NcclCallKind::Recv;
        if (message)
          plan.channels.insert(send ? std::pair{device, call.peer} : std::pair{call.peer, device});
        issue(static_cast<int>(calls.size()),
              message ? NcclStream{send ? NcclStreamKind::SendTo : NcclStreamKind::RecvFrom, call.peer}
                      : NcclStream{NcclStreamKind::Collectives, -1});
        calls.push_back(call);
      }
      hazards.record(issued, reads, writes);
    }
  }
};

std::string describe(int device, const NcclCall &call) {
  static const char *const names[] = {"all-reduce", "all-gather", "reduce-scatter", "send", "recv"};
  std::string text = "device " + std::to_string(device) + "'s " + names[static_cast<int>(call.kind)];
  if (call.kind == NcclCallKind::Send)
    text += " to " + std::to_string(call.peer);
  if (call.kind == NcclCallKind::Recv)
    text += " from " + std::to_string(call.peer);
  return text + " (tag " + std::to_string(call.tag) + ")" + where(*call.instruction);
}

// Each channel's k-th send meets its k-th receive: the tags and sizes must agree. Returns the
// counterpart of every message, as (device, call).
bool matchMessages(const NcclPlan &plan, std::map<std::pair<int, int>, std::pair<int, int>> &counterpart,
                   std::string *error) {
  std::map<std::pair<int, int>, std::vector<int>> sent, received; // channel -> calls, in order
  for (const auto &[device, calls] : plan.calls)
    for (size_t c = 0; c < calls.size(); ++c) {
      if (calls[c].kind == NcclCallKind::Send)
        sent[{device, calls[c].peer}].push_back(static_cast<int>(c));
      if (calls[c].kind == NcclCallKind::Recv)
        received[{calls[c].peer, device}].push_back(static_cast<int>(c));
    }
  for (const std::pair<int, int> &channel : plan.channels) {
    const auto &[from, to] = channel;
    const std::vector<int> &sends = sent[channel], &recvs = received[channel];
    std::vector<int64_t> sendTags, recvTags;
    for (int c : sends)
      sendTags.push_back(plan.calls.at(from)[static_cast<size_t>(c)].tag);
    for (int c : recvs)
      recvTags.push_back(plan.calls.at(to)[static_cast<size_t>(c)].tag);
    const std::string between = "device " + std::to_string(from) + " sends device " + std::to_string(to);
    for (size_t k = 0; k < std::max(sends.size(), recvs.size()); ++k) {
      if (k >= sends.size() || k >= recvs.size() || sendTags[k] != recvTags[k]) {
        auto at = [&](const std::vector<int64_t> &tags) {
          return k < tags.size() ? "tag " + std::to_string(tags[k]) : std::string("nothing");
        };
        *error = between + " " + at(sendTags) + " as its message " + std::to_string(k) + ", but device " +
                 std::to_string(to) + " receives " + at(recvTags) +
                 " there: NCCL matches messages by their order, not their tags";
        return false;
      }
      const NcclCall &send = plan.calls.at(from)[static_cast<size_t>(sends[k])];
      const NcclCall &recv = plan.calls.at(to)[static_cast<size_t>(recvs[k])];
      if (send.bytes != recv.bytes) {
        *error = between + " " + std::to_string(send.bytes) + " bytes with tag " + std::to_string(send.tag) +
                 ", but device " + std::to_string(to) + " receives " + std::to_string(recv.bytes);
        return false;
      }
      counterpart[{from, sends[k]}] = {to, recvs[k]};
      counterpart[{to, recvs[k]}] = {from, sends[k]};
    }
  }
  return true;
}

// Replays the step: an op starts once what it waits for has finished; a kernel then
// finishes, a message once its counterpart has started too, a collective once every member's
// has. What never finishes deadlocks.
bool replay(const NcclPlan &plan, std::string *error) {
  const std::map<int, std::vector<NcclStep>> &ops = plan.steps;
  std::map<std::pair<int, int>, std::pair<int, int>> counterpart;
  if (!matchMessages(plan, counterpart, error))
    return false;
  std::map<int, std::vector<int>> pending;                                     // per op: waits not yet over
  std::map<int, std::vector<std::vector<int>>> dependents;                     // per op: who waits for it
  std::map<int, std::vector<int>> opOfCall;                                    // per call: its op
  std::map<std::pair<int, int64_t>, std::vector<std::pair<int, int>>> arrived; // (communicator, tag) -> ops
  std::vector<std::pair<int, int>> ready;                                      // (device, op) that may start
  size_t total = 0, finished = 0;
  for (const auto &[device, list] : ops) {
    pending[device].resize(list.size());
    dependents[device].resize(list.size());
    opOfCall[device].resize(plan.calls.at(device).size());
    for (size_t i = 0; i < list.size(); ++i) {
      pending[device][i] = static_cast<int>(list[i].after.size());
      for (int a : list[i].after)
        dependents[device][static_cast<size_t>(a)].push_back(static_cast<int>(i));
      if (list[i].call >= 0)
        opOfCall[device][static_cast<size_t>(list[i].call)] = static_cast<int>(i);
      if (list[i].after.empty())
        ready.push_back({device, static_cast<int>(i)});
    }
    total += list.size();
  }
  std::map<int, std::vector<char>> started, over;
  for (const auto &[device, list] : ops) {
    started[device].assign(list.size(), 0);
    over[device].assign(list.size(), 0);
  }
  auto finish = [&](int device, int op) {
    ++finished;
    over[device][static_cast<size_t>(op)] = 1;
    for (int d : dependents[device][static_cast<size_t>(op)])
      if (--pending[device][static_cast<size_t>(d)] == 0)
        ready.push_back({device, d});
  };
  while (!ready.empty()) {
    const auto [device, op] = ready.back();
    ready.pop_back();
    started[device][static_cast<size_t>(op)] = 1;
    const int c = ops.at(device)[static_cast<size_t>(op)].call;
    if (c < 0) {
      finish(device, op);
      continue;
    }
    const NcclCall &call = plan.calls.at(device)[static_cast<size_t>(c)];
    if (call.kind == NcclCallKind::Send || call.kind == NcclCallKind::Recv) {
      const auto [peer, peerCall] = counterpart.at({device, c});
      const int peerOp = opOfCall[peer][static_cast<size_t>(peerCall)];
      if (started[peer][static_cast<size_t>(peerOp)]) {
        finish(device, op);
        finish(peer, peerOp);
      }
      continue;
    }
    std::vector<std::pair<int, int>> &there = arrived[{call.communicator, call.tag}];
    there.push_back({device, op});
    if (there.size() == plan.communicators[static_cast<size_t>(call.communicator)].size())
      for (const auto &[d, o] : there)
        finish(d, o);
  }
  if (finished == total)
    return true;
  std::string waits; // the first call of each device that started and never finished
  for (const auto &[device, list] : ops)
    for (size_t i = 0; i < list.size(); ++i)
      if (started[device][i] && !over[device][i]) {
        waits +=
            (waits.empty() ? "" : "; ") + describe(device, plan.calls.at(device)[static_cast<size_t>(list[i].call)]);
        break;
      }
  *error = "deadlock on NCCL: " + waits + " wait forever";
  return false;
}

} // namespace

std::optional<NcclPlan> planNcclCalls(const std::map<int, ir::DeviceProgram> &programs, std::string *error) {
  std::string ignored;
  if (!error)
    error = &ignored;
  Lowering lowering(programs);
  lowering.run();
  if (!replay(lowering.plan, error))
    return std::nullopt;
  return std::move(lowering.plan);
}

std::string printNcclCalls(const NcclPlan &plan, int device) {
  std::string text;
  for (size_t c = 0; c < plan.communicators.size(); ++c) {
    const std::vector<int> &group = plan.communicators[c];
    if (std::find(group.begin(), group.end(), device) != group.end())
      text += "communicator " + std::to_string(c) + " = " + list({group.begin(), group.end()}) + "\n";
  }
  for (const auto &[from, to] : plan.channels)
    if (from == device || to == device)
      text += "channel " + std::to_string(from) + " -> " + std::to_string(to) + "\n";
  auto it = plan.calls.find(device);
  if (it == plan.calls.end())
    return text;
  static const char *const names[] = {"all-reduce", "all-gather", "reduce-scatter", "send", "recv"};
  for (const NcclCall &call : it->second) {
    text += names[static_cast<int>(call.kind)];
    if (call.kind == NcclCallKind::Send || call.kind == NcclCallKind::Recv)
      text += " " + std::to_string(call.bytes) + (call.kind == NcclCallKind::Send ? " to " : " from ") +
              std::to_string(call.peer);
    else
      text += std::string(call.max ? " max" : "") + " on " + std::to_string(call.communicator) + " count " +
              std::to_string(call.count);
    text += " tag " + std::to_string(call.tag) + (call.staged ? " staged" : "") + "\n";
  }
  return text;
}

} // namespace hspmd::runtime::gpu
