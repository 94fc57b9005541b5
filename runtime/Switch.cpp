// Switch.cpp - planning and carrying out the move of a run's state between two plans'
// layouts (runtime/Switch.h).
#include "runtime/Switch.h"

#include "ir/AnnotationText.h"
#include "runtime/Executor.h"
#include "runtime/Regions.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <set>

namespace hspmd::runtime {

namespace {

constexpr int64_t kElementBytes = 4; // state is fp32 on every device

bool isState(const ir::Buffer &b) {
  return b.role == ir::BufferRole::Parameter || b.role == ir::BufferRole::State;
}

// The boxes each device holds of each tensor under one plan.
struct Holdings {
  std::map<std::string, std::map<int, std::vector<ir::Box>>> boxes; // tensor -> device -> boxes
  std::map<std::string, bool> parameter;
};

Holdings holdings(const std::map<int, ir::DeviceProgram> &programs) {
  Holdings out;
  for (const auto &[device, program] : programs)
    for (const ir::Buffer &b : program.buffers) {
      if (!isState(b))
        continue;
      const std::string name = ir::storeName(b);
      out.boxes[name][device].push_back(b.region());
      out.parameter[name] = b.role == ir::BufferRole::Parameter;
    }
  return out;
}

// `boxes` made disjoint: each later box less what the earlier ones cover.
std::vector<ir::Box> disjoint(const std::vector<ir::Box> &boxes) {
  std::vector<ir::Box> out;
  for (const ir::Box &box : boxes) {
    std::vector<ir::Box> rest = {box};
    for (const ir::Box &have : out)
      rest = ir::subtractBox(rest, have);
    for (ir::Box &piece : rest)
      if (!piece.empty())
        out.push_back(std::move(piece));
  }
  return out;
}

// The layer a tensor belongs to: "blocks[3]" of "blocks[3].wqkv.adam_m", else its parameter
// ("wte" of "wte.adam_m").
std::string layerOf(const std::string &name) {
  if (size_t bracket = name.find(']'); bracket != std::string::npos)
    return name.substr(0, bracket + 1);
  return name.substr(0, name.find('.'));
}

std::string listOf(const std::vector<std::string> &names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 3; ++i)
    out += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > 3)
    out += " and " + std::to_string(names.size() - 3) + " more";
  return out;
}

} // namespace

SwitchOption parseSwitchOption(const std::string &option, int64_t previousStep, int64_t steps, bool fromCheckpoint,
                               const std::string &target) {
  SwitchOption out;
  const size_t colon = option.find(':');
  const std::string stepText = option.substr(0, colon == std::string::npos ? 0 : colon);
  const char *begin = stepText.data(), *end = begin + stepText.size();
  if (stepText.size() > 1 && stepText[0] == '+' && stepText[1] != '-')
    ++begin; // +3, as --steps takes it
  const auto [at, error] = std::from_chars(begin, end, out.step);
  const bool pastAnyRun = error == std::errc::result_out_of_range && at == end && stepText[0] != '-';
  if (error != std::errc() || at != end)
    out.step = 0;
  const std::string what = "--switch " + option + ": ";
  if (pastAnyRun && colon + 1 < option.size())
    out.error = what + "step " + stepText + " is beyond " +
                (fromCheckpoint ? "any run (its steps end at 9223372036854775807)"
                                : "the run (--steps " + std::to_string(steps) + ")");
  else if (out.step < 1 || colon + 1 >= option.size())
    out.error = what + "expected STEP:" + (target == "a plan file" ? "PLAN" : "NAME") + ", a step from 1 and " + target;
  else if (out.step <= previousStep)
    out.error = what + "switches go in step order, one per step (the previous one is before step " +
                std::to_string(previousStep) + ")";
  else if (!fromCheckpoint && out.step > steps)
    out.error =
        what + "step " + std::to_string(out.step) + " is beyond the run (--steps " + std::to_string(steps) + ")";
  else
    out.target = option.substr(colon + 1);
  return out;
}

StateSwitch planSwitch(const std::map<int, ir::DeviceProgram> &from, const std::map<int, ir::DeviceProgram> &to,
                       const SwitchLinks &links, OwnerChoice choice, bool byLayer) {
  const auto start = std::chrono::steady_clock::now();
  const Holdings before = holdings(from), after = holdings(to);
  std::vector<std::string> onlyBefore, onlyAfter;
  for (const auto &[name, held] : before.boxes)
    if (!after.boxes.count(name))
      onlyBefore.push_back(name);
  for (const auto &[name, held] : after.boxes)
    if (!before.boxes.count(name))
      onlyAfter.push_back(name);
  if (!onlyBefore.empty() || !onlyAfter.empty())
    throw SwitchError(
        "the plans hold different state: " +
        (onlyBefore.empty() ? std::string() : listOf(onlyBefore) + " only in the plan switched from") +
        (!onlyBefore.empty() && !onlyAfter.empty() ? "; " : "") +
        (onlyAfter.empty() ? std::string() : listOf(onlyAfter) + " only in the plan switched to") +
        " (a switch moves every parameter and optimizer state: the plans need the same model and optimizer)");

  StateSwitch plan;
  plan.byLayer = byLayer;
  for (const auto &[device, program] : from)
    plan.fromDevices.push_back(device);
  for (const auto &[device, program] : to)
    plan.toDevices.push_back(device);
  std::map<std::tuple<int, int, int>, SwitchMessage> messages; // (bucket, from, to)
  std::map<std::string, int> bucketIndex;
  std::map<int, int64_t> sent, lacking;        // per device: bytes sent, bytes needed and not held
  std::map<int, int64_t> forced;               // per owner: bytes only it can send
  std::set<std::tuple<int, int, int>> unfused; // (tensor, from, to)
  for (const auto &[name, needers] : after.boxes) {
    const int tensor = static_cast<int>(plan.tensors.size());
    plan.tensors.push_back(name);
    plan.isParameter.push_back(after.parameter.at(name));
    const std::string bucket = byLayer ? layerOf(name) : "all";
    if (!bucketIndex.count(bucket)) {
      bucketIndex[bucket] = static_cast<int>(plan.buckets.size());
      plan.buckets.push_back(bucket);
    }
    plan.bucketOf.push_back(bucketIndex.at(bucket));
    const auto &owners = before.boxes.at(name);
    // The tensor's global extent, and every boundary an old box draws.
    std::vector<int64_t> extent;
    std::vector<std::vector<int64_t>> cuts;
    for (const auto &[device, boxes] : owners)
      for (const ir::Box &box : boxes) {
        extent.resize(box.hi.size(), 0);
        cuts.resize(box.hi.size());
        for (size_t d = 0; d < box.hi.size(); ++d) {
          extent[d] = std::max(extent[d], box.hi[d]);
          cuts[d].push_back(box.lo[d]);
          cuts[d].push_back(box.hi[d]);
        }
      }
    int64_t elements = 1;
    for (int64_t e : extent)
      elements *= e;
    plan.tensorBytes.push_back(elements * kElementBytes);
    for (auto &c : cuts) {
      std::sort(c.begin(), c.end());
      c.erase(std::unique(c.begin(), c.end()), c.end());
    }
    for (const auto &[device, boxes] : needers) {
      // What the device needs and does not hold, cut into cells of one owner set each.
      std::vector<ir::Box> needed = disjoint(boxes);
      if (auto own = owners.find(device); own != owners.end())
        for (const ir::Box &held : own->second)
          needed = ir::subtractBox(needed, held);
      std::vector<ir::Box> pieces;
      for (const ir::Box &box : needed)
        for (ir::Box &cell : ir::cutBox(box, cuts))
          pieces.push_back(std::move(cell));
      for (ir::Box &cell : pieces) {
        std::vector<int> candidates;
        for (const auto &[owner, held] : owners)
          if (std::any_of(held.begin(), held.end(), [&](const ir::Box &b) { return ir::containsBox(b, cell); }))
            candidates.push_back(owner);
        if (candidates.empty())
          throw SwitchError("no device of the plan switched from holds all of region " + ir::printBox(cell) + " of '" +
                            name + "'");
        const int64_t bytes = cell.numElements() * kElementBytes;
        const int needer = device;
        auto cost = [&](int owner) { return static_cast<double>(sent[owner]) / links.bandwidth(owner, needer); };
        int chosen = candidates.front();
        for (int owner : candidates) {
          if (choice == OwnerChoice::FirstOwner)
            break;
          if (choice == OwnerChoice::Volume) {
            if (sent[owner] < sent[chosen])
              chosen = owner;
            continue;
          }
          const bool near = links.sameNode(owner, needer), chosenNear = links.sameNode(chosen, needer);
          const double bw = links.bandwidth(owner, needer), chosenBw = links.bandwidth(chosen, needer);
          if (near != chosenNear ? near : bw != chosenBw ? bw > chosenBw : cost(owner) < cost(chosen))
            chosen = owner;
        }
        if (candidates.size() == 1)
          forced[chosen] += bytes;
        sent[chosen] += bytes;
        lacking[needer] += bytes;
        unfused.insert({tensor, chosen, needer});
        SwitchMessage &message = messages[{plan.bucketOf.back(), chosen, needer}];
        message.bucket = plan.bucketOf.back();
        message.from = chosen;
        message.to = needer;
        message.bytes += bytes;
        message.slices.push_back({tensor, std::move(cell)});
      }
      // What the device copies from itself.
      if (auto own = owners.find(device); own != owners.end())
        for (const ir::Box &box : disjoint(boxes))
          for (const ir::Box &held : disjoint(own->second))
            plan.kept[device] += ir::intersectBox(box, held).numElements() * kElementBytes;
    }
  }
  for (const auto &[device, bytes] : plan.kept)
    plan.localBytes += bytes;
  std::map<std::pair<int, int>, double> sendSeconds, recvSeconds; // (bucket, device): the buckets go in turn
  for (auto &[key, message] : messages) {
    plan.bytesMoved += message.bytes;
    const double seconds =
        links.alpha + static_cast<double>(message.bytes) / (links.bandwidth(message.from, message.to) * 1e9);
    sendSeconds[{message.bucket, message.from}] += seconds;
    recvSeconds[{message.bucket, message.to}] += seconds;
    plan.messages.push_back(std::move(message));
  }
  int64_t total = 0;
  for (const auto &[device, bytes] : lacking) {
    plan.bytesMin += bytes;
    total += bytes;
    double best = 0;
    for (int owner : plan.fromDevices)
      if (owner != device)
        best = std::max(best, links.bandwidth(owner, device));
    if (best > 0)
      plan.lowerSeconds = std::max(plan.lowerSeconds, static_cast<double>(bytes) / (best * 1e9));
  }
  for (const auto &[device, bytes] : sent)
    plan.maxSendBytes = std::max(plan.maxSendBytes, bytes);
  // A lower bound on the busiest sender: the bytes only one owner holds, and the total spread
  // evenly over every device that held state.
  plan.balancedSendBytes = plan.fromDevices.empty() ? 0
                                                    : (total + static_cast<int64_t>(plan.fromDevices.size()) - 1) /
                                                          static_cast<int64_t>(plan.fromDevices.size());
  for (const auto &[device, bytes] : forced)
    plan.balancedSendBytes = std::max(plan.balancedSendBytes, bytes);
  std::vector<double> bucketSeconds(plan.buckets.size(), 0.0);
  for (const auto *side : {&sendSeconds, &recvSeconds})
    for (const auto &[key, seconds] : *side)
      bucketSeconds[static_cast<size_t>(key.first)] = std::max(bucketSeconds[static_cast<size_t>(key.first)], seconds);
  for (double seconds : bucketSeconds)
    plan.seconds += seconds;
  plan.messagesUnfused = static_cast<int64_t>(unfused.size());
  plan.planSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return plan;
}

std::map<int, SwitchMemory> switchMemory(const StateSwitch &fused, const StateSwitch &byLayer,
                                         const std::map<int, ir::DeviceProgram> &from,
                                         const std::map<int, ir::DeviceProgram> &to) {
  std::map<int, SwitchMemory> out;
  for (const auto &[device, program] : from) {
    out[device].oldArena = program.peakBytes;
    for (const ir::Buffer &b : program.buffers)
      if (isState(b))
        out[device].oldState += b.bytes();
  }
  for (const auto &[device, program] : to)
    out[device].newArena = program.peakBytes;
  for (const SwitchMessage &m : fused.messages)
    for (int device : {m.from, m.to})
      out[device].messages += m.bytes;
  std::map<std::pair<int, int>, int64_t> perBucket; // (device, bucket)
  for (const SwitchMessage &m : byLayer.messages)
    for (int device : {m.from, m.to}) {
      int64_t &bytes = perBucket[{device, m.bucket}];
      bytes += m.bytes;
      out[device].bucketMessages = std::max(out[device].bucketMessages, bytes);
    }
  return out;
}

StateSwitch planSwitchToFit(const std::map<int, ir::DeviceProgram> &from, const std::map<int, ir::DeviceProgram> &to,
                            const SwitchLinks &links, const std::function<DeviceMemory(int)> &memory) {
  StateSwitch fused = planSwitch(from, to, links);
  auto fits = [&](int device, int64_t need) {
    const double has = memory(device).bytes;
    return has <= 0 || static_cast<double>(need) <= has;
  };
  std::map<int, SwitchMemory> need = switchMemory(fused, fused, from, to);
  if (std::all_of(need.begin(), need.end(), [&](const auto &d) { return fits(d.first, d.second.sideBySide()); }))
    return fused;
  StateSwitch byLayer = planSwitch(from, to, links, OwnerChoice::Links, true);
  byLayer.planSeconds += fused.planSeconds;
  need = switchMemory(fused, byLayer, from, to);
  for (const auto &[device, m] : need) {
    if (fits(device, m.inBuckets()))
      continue;
    const DeviceMemory has = memory(device);
    const bool packing = m.oldArena + m.oldState >= m.oldState + m.newArena + m.bucketMessages;
    throw SwitchError(
        "device " + std::to_string(device) + " needs " + ir::memoryText(static_cast<double>(m.inBuckets())) +
        " during the switch even moving in " + std::to_string(byLayer.buckets.size()) + " buckets by layer (" +
        (packing ? "its old arena, " + ir::memoryText(static_cast<double>(m.oldArena)) +
                       ", beside its state packed out of it, " + ir::memoryText(static_cast<double>(m.oldState))
                 : "its old state, " + ir::memoryText(static_cast<double>(m.oldState)) + ", beside the new arena, " +
                       ir::memoryText(static_cast<double>(m.newArena)) + ", and one bucket's messages, " +
                       ir::memoryText(static_cast<double>(m.bucketMessages))) +
        "), but a " + has.type + " has " + ir::memoryText(has.bytes));
  }
  return byLayer;
}

HeldState HeldState::of(const DeviceExecutor *executor) {
  if (!executor)
    return {};
  return {&executor->program(), [executor](int buffer) -> const char * { return executor->bufferData(buffer); }};
}

HeldState HeldState::packed(const ir::DeviceProgram &program, const std::vector<char> &state) {
  // packState's layout: the step count, then every state buffer in buffer order.
  auto offsets = std::make_shared<std::map<int, size_t>>();
  size_t at = sizeof(int64_t);
  for (const ir::Buffer &b : program.buffers)
    if (isState(b)) {
      (*offsets)[b.id] = at;
      at += static_cast<size_t>(b.bytes());
    }
  if (at > state.size())
    throw SwitchError("device " + std::to_string(program.device) + " packed less state than its program holds");
  return {&program, [offsets, &state](int buffer) { return state.data() + offsets->at(buffer); }};
}

void runSwitch(const StateSwitch &plan, int device, Communicator &comm, int64_t tag, const HeldState &before,
               DeviceExecutor *after) {
  // This device's state buffers by tensor, under each plan.
  auto byTensor = [&](const ir::DeviceProgram *program) {
    std::map<std::string, std::vector<const ir::Buffer *>> out;
    if (program)
      for (const ir::Buffer &b : program->buffers)
        if (isState(b))
          out[ir::storeName(b)].push_back(&b);
    return out;
  };
  const auto old = byTensor(before.program), fresh = byTensor(after ? &after->program() : nullptr);
  auto start = [](const ir::Buffer &b) { return b.region().lo; };
  std::map<std::string, int> tensorIndex;
  for (size_t t = 0; t < plan.tensors.size(); ++t)
    tensorIndex[plan.tensors[t]] = static_cast<int>(t);
  for (int bucket = 0; bucket < static_cast<int>(plan.buckets.size()); ++bucket) {
    // Sends first: none of them waits for its receiver.
    for (const SwitchMessage &message : plan.messages) {
      if (message.from != device || message.bucket != bucket)
        continue;
      std::vector<char> packed(static_cast<size_t>(message.bytes));
      size_t at = 0;
      for (const SwitchSlice &slice : message.slices) {
        const std::string &name = plan.tensors[static_cast<size_t>(slice.tensor)];
        const ir::Buffer *source = nullptr;
        if (auto held = old.find(name); held != old.end())
          for (const ir::Buffer *b : held->second)
            if (ir::containsBox(b->region(), slice.box))
              source = b;
        if (!source)
          throw SwitchError("device " + std::to_string(device) + " was to send part of '" + name +
                            "' it does not hold");
        const std::vector<int64_t> size = ir::boxExtent(slice.box);
        copyBox(kElementBytes, before.data(source->id), source->shape, ir::boxOffset(slice.box, start(*source)),
                packed.data() + at, size, std::vector<int64_t>(size.size(), 0), size);
        at += static_cast<size_t>(slice.box.numElements() * kElementBytes);
      }
      comm.send(message.to, tag, std::move(packed));
    }
    if (!after)
      continue;
    // What the device holds itself.
    for (const auto &[name, targets] : fresh) {
      auto sources = old.find(name);
      if (sources == old.end() || plan.bucketOf[static_cast<size_t>(tensorIndex.at(name))] != bucket)
        continue;
      for (const ir::Buffer *target : targets)
        for (const ir::Buffer *source : sources->second) {
          const ir::Box common = ir::intersectBox(target->region(), source->region());
          if (common.empty())
            continue;
          copyBox(kElementBytes, before.data(source->id), source->shape, ir::boxOffset(common, start(*source)),
                  after->bufferData(target->id), target->shape, ir::boxOffset(common, start(*target)),
                  ir::boxExtent(common));
        }
    }
    // Then what others send it, into every new buffer the slice falls in, in the order the
    // messages arrive. A fused plan has one message per pair and bucket; one that is not
    // (bench_switch's per-tensor transfer) sends a pair's messages in plan order.
    std::map<int, std::deque<const SwitchMessage *>> incoming;
    for (const SwitchMessage &message : plan.messages)
      if (message.to == device && message.bucket == bucket)
        incoming[message.from].push_back(&message);
    while (!incoming.empty()) {
      std::vector<int> senders;
      for (const auto &[from, queue] : incoming)
        senders.push_back(from);
      comm.recvEach(senders, tag, [&](int from, std::vector<char> packed) {
        const SwitchMessage &message = *incoming.at(from).front();
        incoming.at(from).pop_front();
        if (static_cast<int64_t>(packed.size()) != message.bytes)
          throw SwitchError("device " + std::to_string(device) + " received " + std::to_string(packed.size()) +
                            " bytes of the switch from device " + std::to_string(message.from) + ", not " +
                            std::to_string(message.bytes));
        size_t at = 0;
        for (const SwitchSlice &slice : message.slices) {
          const std::vector<int64_t> size = ir::boxExtent(slice.box);
          for (const ir::Buffer *target : fresh.at(plan.tensors[static_cast<size_t>(slice.tensor)])) {
            const ir::Box common = ir::intersectBox(target->region(), slice.box);
            if (common.empty())
              continue;
            copyBox(kElementBytes, packed.data() + at, size, ir::boxOffset(common, slice.box.lo),
                    after->bufferData(target->id), target->shape, ir::boxOffset(common, start(*target)),
                    ir::boxExtent(common));
          }
          at += static_cast<size_t>(slice.box.numElements() * kElementBytes);
        }
      });
      for (auto it = incoming.begin(); it != incoming.end();)
        it = it->second.empty() ? incoming.erase(it) : std::next(it);
    }
  }
}

} // namespace hspmd::runtime
