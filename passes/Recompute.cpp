// Recompute.cpp - the recompute pass: stages with `recompute` keep, between the forward and
// the backward pass of a micro-batch, only their checkpoints, and run the rest of their
// forward pass again at the start of each backward pass.
#include "passes/ProgramBuilder.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>

namespace hspmd::passes {

// A recomputing stage keeps only what its forward pass received from other stages (and
// its inputs) and the input of each layer of its stack between the forward and the
// backward pass of a micro-batch: the backward pass runs again, into fresh buffers, the
// forward kernels, copies, collectives and messages inside the stage (context
// parallelism's keys and values) whose results it reads (transitively), each layer's just
// before its backward; a message is sent again where its data is next needed.
//
// Members of a collective must agree on repeating it: a collective that some member would
// not repeat (it needs none of its result) is repeated by none, its result kept from the
// forward pass instead. A message is received again only if its sender recomputes too.
void ProgramBuilder::addRecomputation() {
  std::set<int64_t> keptTags;             // collectives whose results are kept on every member
  Messages keptMessages;                  // messages inside a stage whose data the receiver keeps
  Messages repeatedSends;                 // messages inside a stage the sender sends again
  std::map<int, std::vector<bool>> again; // recomputing device -> which instructions it repeats
  for (const auto &[d, program] : programs_)
    if (recompute_.count(d))
      again[d]; // created here, filled by the threads below
  for (int round = 0;; ++round) {
    // Each device's choice, given what the others agreed so far, on threads of their own.
    forEachProgram([&](ir::DeviceProgram &program) {
      if (auto it = again.find(program.device); it != again.end())
        it->second = recomputed(program, keptTags, keptMessages, repeatedSends);
    });
    // (collective tag, group) -> devices repeating it; groups of one op (the tensor-parallel
    // groups of a layer) share its tag
    std::map<std::pair<int64_t, std::vector<int>>, std::set<int>> repeaters;
    Messages repeatedRecvs;
    for (const auto &[d, keep] : again) {
      const ir::DeviceProgram &program = programs_.at(d);
      for (size_t i = 0; i < program.body.size(); ++i) {
        if (!keep[i])
          continue;
        const ir::Instruction &in = program.body[i];
        if (!in.group.empty())
          repeaters[{in.tag, in.group}].insert(d);
        else if (in.kind == ir::InstrKind::Recv) {
          repeatedRecvs.insert({in.peer, d, in.tag});
        }
      }
    }
    bool changed = false;
    for (const auto &[key, devices] : repeaters)
      if (devices != std::set<int>(key.second.begin(), key.second.end()))
        changed = keptTags.insert(key.first).second || changed;
    // A message is received again only when its sender recomputes and sends it again.
    Messages sends;
    for (const auto &message : repeatedRecvs)
      if (recompute_.count(std::get<0>(message)))
        sends.insert(message);
      else
        changed = keptMessages.insert(message).second || changed;
    if (round >= 16) { // no agreement: every message's data is kept, as before
      for (const auto &message : repeatedRecvs)
        changed = keptMessages.insert(message).second || changed;
      sends.clear();
    }
    changed = changed || sends != repeatedSends;
    repeatedSends = std::move(sends);
    if (!changed)
      break;
  }
  // Room in each body for the optimizer's instructions, which schedule-pipeline appends.
  const std::map<int, size_t> room = optimizerBuffers();
  forEachProgram([&](ir::DeviceProgram &program) {
    if (auto it = again.find(program.device); it != again.end()) {
      const auto r = room.find(program.device);
      addRecompute(program, it->second, r != room.end() ? r->second : 0);
    }
  });
}

bool ProgramBuilder::sameStage(int a, int b) const {
  auto x = stageOf_.find(a), y = stageOf_.find(b);
  return x != stageOf_.end() && y != stageOf_.end() && x->second == y->second;
}

// Which forward instructions of `program` its backward passes repeat; the results of the
// collectives tagged `keptTags` are kept instead. Messages between devices of one stage
// (context parallelism's keys and values) are received again, unless `keptMessages` keeps
// their data; the sends of `repeatedSends` are sent again. Messages between stages are not
// repeated: what a stage receives is its checkpoint.
std::vector<bool> ProgramBuilder::recomputed(const ir::DeviceProgram &program, const std::set<int64_t> &keptTags,
                                             const Messages &keptMessages, const Messages &repeatedSends) {
  // By buffer id: kept from the forward pass (received, or a layer's checkpoint); read later.
  std::vector<char> received(program.buffers.size(), 0), needed(program.buffers.size(), 0);
  auto mark = [](std::vector<char> &set, const std::vector<int> &buffers) {
    for (int b : buffers)
      set[static_cast<size_t>(b)] = 1;
  };
  const int me = program.device;
  for (const ir::Instruction &in : program.body)
    if (in.phase == ir::Phase::Forward &&
        ((in.kind == ir::InstrKind::Recv && (!sameStage(in.peer, me) || keptMessages.count({in.peer, me, in.tag}))) ||
         (!in.group.empty() && keptTags.count(in.tag))))
      mark(received, in.outputs);
  // Layer checkpoints: a forward instruction belongs to the highest layer of the stack
  // whose parameters it reads, directly or through its inputs; a buffer one layer writes
  // and a later layer reads is kept.
  constexpr int kNoLayer = std::numeric_limits<int>::min();   // not written yet, not a stack's parameter
  std::vector<int> layerOf(program.buffers.size(), kNoLayer); // buffer -> layer of its writer (-1: before the stack)
  for (const ir::Buffer &b : program.buffers)
    if (b.role == ir::BufferRole::Parameter) // the role first: a name is parsed (a quarter of the pass, once for all)
      if (const auto position = ir::stackPosition(b.value))
        layerOf[static_cast<size_t>(b.id)] = static_cast<int>(position->layer);
  for (const ir::Instruction &in : program.body) {
    // What a device of the same stage sends belongs to the sender's layer, which this
    // program does not see: no layer (head parallelism's attention output, received by a
    // device that holds no heads, is received again rather than kept).
    if (in.phase != ir::Phase::Forward || (in.kind == ir::InstrKind::Recv && sameStage(in.peer, me)))
      continue;
    int layer = -1;
    for (int b : in.inputs)
      layer = std::max(layer, layerOf[static_cast<size_t>(b)]);
    for (int b : in.inputs)
      if (const int writer = layerOf[static_cast<size_t>(b)];
          writer != kNoLayer && writer < layer &&
          program.buffers[static_cast<size_t>(b)].role == ir::BufferRole::Temporary)
        received[static_cast<size_t>(b)] = 1;
    for (int b : in.outputs)
      if (layerOf[static_cast<size_t>(b)] == kNoLayer)
        layerOf[static_cast<size_t>(b)] = layer;
  }
  // A kept buffer that a collective makes from other kept buffers (the reduced form of a
  // residual stream kept as partial sums) is made again instead: one form per layer is kept.
  for (const ir::Instruction &in : program.body)
    if (in.phase == ir::Phase::Forward && in.kind == ir::InstrKind::Collective && !in.inputs.empty() &&
        !keptTags.count(in.tag) &&
        std::all_of(in.inputs.begin(), in.inputs.end(), [&](int b) { return received[static_cast<size_t>(b)]; }) &&
        std::all_of(in.outputs.begin(), in.outputs.end(), [&](int b) { return received[static_cast<size_t>(b)]; }))
      for (int b : in.outputs)
        received[static_cast<size_t>(b)] = 0;
  for (const ir::Instruction &in : program.body)
    if (in.phase == ir::Phase::Backward)
      mark(needed, in.inputs);
  std::vector<bool> keep(program.body.size(), false);
  for (size_t i = program.body.size(); i-- > 0;) {
    const ir::Instruction &in = program.body[i];
    if (in.phase != ir::Phase::Forward)
      continue;
    if (in.kind == ir::InstrKind::Send) {
      if (repeatedSends.count({me, in.peer, in.tag})) {
        keep[i] = true;
        mark(needed, in.inputs);
      }
      continue;
    }
    if (std::any_of(in.outputs.begin(), in.outputs.end(), [&](int b) { return received[static_cast<size_t>(b)]; }) ||
        std::none_of(in.outputs.begin(), in.outputs.end(), [&](int b) { return needed[static_cast<size_t>(b)]; }))
      continue;
    keep[i] = true;
    mark(needed, in.inputs);
  }
  return keep;
}

void ProgramBuilder::addRecompute(ir::DeviceProgram &program, const std::vector<bool> &keep, size_t room) {
  // Per buffer id (vectors: maps here were a quarter of the pass): a forward buffer's
  // recomputed copy (-1: none).
  const size_t originals = program.buffers.size();
  std::vector<int> fresh(originals, -1);
  auto freshOf = [&](int b) { return static_cast<size_t>(b) < originals ? fresh[static_cast<size_t>(b)] : -1; };
  std::vector<ir::Instruction> again;
  size_t kept = 0, written = 0; // room for them up front: both vectors grow by thousands
  for (size_t i = 0; i < program.body.size(); ++i)
    if (keep[i]) {
      ++kept;
      written += program.body[i].outputs.size();
    }
  again.reserve(kept);
  program.buffers.reserve(program.buffers.size() + written);
  for (size_t i = 0; i < program.body.size(); ++i) {
    if (!keep[i])
      continue;
    ir::Instruction in = program.body[i];
    for (int &b : in.inputs)
      if (const int copy = freshOf(b); copy >= 0)
        b = copy;
    for (int &b : in.outputs) {
      if (freshOf(b) < 0) {
        ir::Buffer copy = program.buffers[static_cast<size_t>(b)];
        copy.id = static_cast<int>(program.buffers.size());
        copy.value += ".recompute";
        if (std::vector<char> &batched = perMicrobatch_.at(program.device);
            static_cast<size_t>(b) < batched.size() && batched[static_cast<size_t>(b)])
          markBatched(batched, copy.id);
        fresh[static_cast<size_t>(b)] = copy.id;
        program.buffers.push_back(std::move(copy));
      }
      b = fresh[static_cast<size_t>(b)];
    }
    in.phase = ir::Phase::Recompute;
    again.push_back(std::move(in));
  }
  for (ir::Instruction &in : program.body)
    if (in.phase == ir::Phase::Backward)
      for (int &b : in.inputs)
        if (const int copy = freshOf(b); copy >= 0)
          b = copy;
  // Each recomputed instruction goes just before the first backward instruction that reads
  // it, directly or through later recomputed ones: a layer's forward runs again right
  // before its backward, and its buffers die with it.
  const size_t n = program.body.size();
  size_t firstBackward = n;
  constexpr size_t kNone = SIZE_MAX;
  std::vector<size_t> firstReader(program.buffers.size(), kNone); // buffer -> first backward reader
  for (size_t i = 0; i < n; ++i) {
    const ir::Instruction &in = program.body[i];
    if (in.phase != ir::Phase::Backward)
      continue;
    firstBackward = std::min(firstBackward, i);
    for (int b : in.inputs)
      if (firstReader[static_cast<size_t>(b)] == kNone)
        firstReader[static_cast<size_t>(b)] = i;
  }
  std::vector<size_t> deadline(again.size(), firstBackward);
  std::vector<size_t> needBy(program.buffers.size(), kNone); // buffer -> the earliest deadline of its readers
  for (size_t j = again.size(); j-- > 0;) {
    if (again[j].kind == ir::InstrKind::Send)
      continue; // below, once every other reader of its data is placed
    size_t due = n;
    for (int b : again[j].outputs) // kNone is above every position
      due = std::min({due, firstReader[static_cast<size_t>(b)], needBy[static_cast<size_t>(b)]});
    deadline[j] = due < n ? due : firstBackward;
    for (int b : again[j].inputs)
      needBy[static_cast<size_t>(b)] = std::min(needBy[static_cast<size_t>(b)], deadline[j]);
  }
  // A message is sent again where its data is next needed here (the sender's own use of
  // its keys and values): the receiver needs it at the same point of its own backward.
  for (size_t j = 0; j < again.size(); ++j)
    if (again[j].kind == ir::InstrKind::Send)
      for (int b : again[j].inputs)
        if (needBy[static_cast<size_t>(b)] != kNone)
          deadline[j] = needBy[static_cast<size_t>(b)];
  // Recomputed instructions in program order within each deadline (a stable counting sort:
  // looking up every deadline for every position was quadratic: 16 ms of a 32B x 48 compile).
  std::vector<size_t> placed(n + 2, 0); // deadline + 1 -> how many go before it, then where they start
  for (size_t due : deadline)
    ++placed[due + 1];
  for (size_t i = 1; i < placed.size(); ++i)
    placed[i] += placed[i - 1];
  std::vector<size_t> order(again.size());
  for (size_t j = 0; j < again.size(); ++j)
    order[placed[deadline[j]]++] = j;
  std::vector<ir::Instruction> body;
  body.reserve(n + again.size() + room);
  for (size_t i = 0, k = 0; i <= n; ++i) {
    for (; k < order.size() && deadline[order[k]] == i; ++k)
      body.push_back(std::move(again[order[k]]));
    if (i < n)
      body.push_back(std::move(program.body[i]));
  }
  program.body = std::move(body);
}

} // namespace hspmd::passes
