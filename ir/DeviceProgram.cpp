// DeviceProgram.cpp - DevicePrograms: instruction kinds, collectives and their printed form
// (ir/DeviceProgram.h).
#include "ir/DeviceProgram.h"

#include "ir/AnnotationText.h"
#include "ir/Tags.h"
#include <map>

#include "ir/TextLexer.h"

#include <algorithm>
#include <cstdio>

namespace hspmd::ir {

namespace {
constexpr std::string_view kCommKindNames[] = {
    "identity",  "local-slice",      "all-reduce",           "reduce-scatter",   "all-gather", "all-to-all",
    "send-recv", "split-all-reduce", "split-reduce-scatter", "split-all-gather", "bsr"};
} // namespace

std::string_view commKindName(CommKind kind) {
  return kCommKindNames[static_cast<size_t>(kind)];
}

std::optional<CommKind> parseCommKind(std::string_view name) {
  for (size_t i = 0; i < std::size(kCommKindNames); ++i)
    if (kCommKindNames[i] == name)
      return static_cast<CommKind>(i);
  return std::nullopt;
}

bool isReduction(CommKind kind) {
  return kind == CommKind::AllReduce || kind == CommKind::ReduceScatter || kind == CommKind::SplitAllReduce ||
         kind == CommKind::SplitReduceScatter;
}

bool isCollective(CommKind kind) {
  return kind != CommKind::Bsr && kind != CommKind::SendRecv && kind != CommKind::Identity &&
         kind != CommKind::LocalSlice;
}

int64_t Buffer::bytes() const {
  int64_t n = dtypeBytes(dtype);
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string memoryText(double bytes) {
  char text[32];
  if (bytes < 1024.0 * 1024)
    std::snprintf(text, sizeof text, "%.1f KiB", bytes / 1024.0);
  else if (bytes < 1024.0 * 1024 * 1024)
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1024.0 * 1024));
  else
    std::snprintf(text, sizeof text, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  return text;
}

std::string storeName(const Buffer &buffer) {
  const std::string suffix = ".shard";
  if (buffer.value.size() > suffix.size() &&
      buffer.value.compare(buffer.value.size() - suffix.size(), suffix.size(), suffix) == 0)
    return buffer.value.substr(0, buffer.value.size() - suffix.size());
  return buffer.value;
}

Box Buffer::region() const {
  Box box;
  for (size_t d = 0; d < shape.size(); ++d) {
    box.lo.push_back(d < origin.size() ? origin[d] : 0);
    box.hi.push_back(box.lo.back() + shape[d]);
  }
  return box;
}

std::vector<ScheduleSlot> pipelineSchedule(const std::string &name, int stage, int stages, int microbatches) {
  std::vector<ScheduleSlot> slots;
  if (name == "gpipe") {
    for (int i = 0; i < microbatches; ++i)
      slots.push_back({Phase::Forward, i});
    for (int i = 0; i < microbatches; ++i)
      slots.push_back({Phase::Backward, i});
    return slots;
  }
  const int warmup = std::min(microbatches, stages - stage - 1);
  int forward = 0, backward = 0;
  for (; forward < warmup; ++forward)
    slots.push_back({Phase::Forward, forward});
  while (forward < microbatches) {
    slots.push_back({Phase::Forward, forward++});
    slots.push_back({Phase::Backward, backward++});
  }
  while (backward < microbatches)
    slots.push_back({Phase::Backward, backward++});
  return slots;
}

int64_t expandedTag(int64_t tag, Phase phase, int microbatch) {
  if (phase == Phase::Update)
    return tag * tags::kPerBase + tags::kPerBase - 1;
  return tag * tags::kPerBase + microbatch * 2 + (phase == Phase::Recompute ? 1 : 0);
}

int maxInFlight(const std::vector<ScheduleSlot> &schedule) {
  int now = 0, most = 0;
  for (const ScheduleSlot &slot : schedule) {
    now += slot.phase == Phase::Forward ? 1 : -1;
    most = std::max(most, now);
  }
  return std::max(most, 1);
}

std::vector<ScheduleSlot> scheduleSlots(const DeviceProgram &program) {
  return program.schedule.empty() ? std::vector<ScheduleSlot>{{Phase::Forward, 0}, {Phase::Backward, 0}}
                                  : program.schedule;
}

std::vector<ScheduledInstruction> scheduledInstructions(const DeviceProgram &program) {
  const auto slots = scheduleSlots(program);
  std::map<Phase, size_t> perPass; // instructions per pass: the step's size, reserved
  for (const Instruction &in : program.body)
    ++perPass[passOf(in.phase)];
  size_t total = perPass[Phase::Update];
  for (const ScheduleSlot &slot : slots)
    total += perPass[slot.phase];
  std::vector<ScheduledInstruction> step;
  step.reserve(total);
  auto append = [&](Phase phase, int microbatch) {
    for (const Instruction &in : program.body)
      if (passOf(in.phase) == phase)
        step.push_back({&in, expandedTag(in.tag, in.phase, microbatch), phase == Phase::Update ? -1 : microbatch});
  };
  for (const ScheduleSlot &slot : slots)
    append(slot.phase, slot.microbatch);
  append(Phase::Update, 0);
  return step;
}

DeviceProgram expandSchedule(const DeviceProgram &program) {
  DeviceProgram out = program;
  out.body.clear();
  out.schedule = {{Phase::Forward, 0}};
  out.microbatches = 1;
  const std::vector<ScheduledInstruction> step = scheduledInstructions(program);
  out.body.reserve(step.size());
  for (const ScheduledInstruction &each : step)
    out.body.emplace_back(*each.instruction).tag = each.tag;
  return out;
}

namespace {
std::string ids(const std::vector<int> &list) {
  std::string text;
  for (size_t i = 0; i < list.size(); ++i)
    text += (i ? ", %" : "%") + std::to_string(list[i]);
  return text;
}
std::string devices(const std::vector<int> &list) {
  return printDeviceList(list);
}
std::string slices(const std::vector<Box> &boxes) {
  std::string text;
  for (size_t i = 0; i < boxes.size(); ++i)
    text += (i ? ", " : " slices ") + printBox(boxes[i]);
  return text;
}
std::string ints(const std::vector<int64_t> &list) {
  std::string text = "[";
  for (size_t i = 0; i < list.size(); ++i)
    text += (i ? ", " : "") + std::to_string(list[i]);
  return text + "]";
}
} // namespace

std::string printProgram(const DeviceProgram &program) {
  std::string text = "program device " + std::to_string(program.device) + " plan " + std::to_string(program.plan) +
                     (program.peakBytes >= 0 ? " peak " + std::to_string(program.peakBytes) : "") + " {\n";
  text += "  schedule " + program.scheduleName + " stage " + std::to_string(program.stage) + " of " +
          std::to_string(program.stages) + " microbatches " + std::to_string(program.microbatches) + " of " +
          std::to_string(program.microbatchSize) + ":";
  for (const ScheduleSlot &slot : program.schedule)
    text += std::string(slot.phase == Phase::Forward ? " F" : " B") + std::to_string(slot.microbatch);
  text += "\n";
  for (const Buffer &b : program.buffers) {
    text += "  buffer %" + std::to_string(b.id) + " " + quoteString(b.value) + " : " + std::string(dtypeName(b.dtype)) +
            ints(b.shape);
    if (std::any_of(b.origin.begin(), b.origin.end(), [](int64_t x) { return x != 0; }))
      text += " origin " + ints(b.origin);
    if (b.offset >= 0)
      text += " at " + std::to_string(b.offset);
    if (b.slots != 1)
      text += " slots " + std::to_string(b.slots);
    if (b.zeroed)
      text += " zeroed";
    static const char *const roles[] = {"", " param", " state", " input"};
    text += roles[static_cast<int>(b.role)];
    text += "\n";
  }
  if (program.lossBuffer >= 0)
    text += "  loss %" + std::to_string(program.lossBuffer) + "\n";
  if (program.batchStart != 0)
    text += "  batch start " + std::to_string(program.batchStart) + "\n";
  for (const Instruction &in : program.body) {
    static const char *const prefix[] = {"  ", "  recompute ", "  backward ", "  update "};
    text += prefix[static_cast<int>(in.phase)];
    switch (in.kind) {
    case InstrKind::Kernel:
      text += "kernel " + in.op + " " + ids(in.inputs) + " -> " + ids(in.outputs) + " {";
      {
        bool first = true;
        for (const auto &[name, value] : in.attrs) {
          text += (first ? "" : ", ") + name + " = " + printAttrValue(value);
          first = false;
        }
      }
      text += "}";
      if (!in.group.empty()) // kernels that communicate inside (vocabulary-parallel cross-entropy)
        text += " group " + devices(in.group) + " tag " + std::to_string(in.tag);
      break;
    case InstrKind::Collective:
      text += in.op + " " + ids(in.inputs) + " -> " + ids(in.outputs) + " group " + devices(in.group) + " bytes " +
              std::to_string(in.bytes) + " tag " + std::to_string(in.tag);
      if (in.partial != 0)
        text += " partial " + std::to_string(in.partial);
      break;
    case InstrKind::Send:
      text += "send " + ids(in.inputs) + " to " + std::to_string(in.peer) + " bytes " + std::to_string(in.bytes) +
              " tag " + std::to_string(in.tag) + slices(in.slices);
      break;
    case InstrKind::Recv:
      text += in.op + " " + ids(in.outputs) + " from " + std::to_string(in.peer) + " bytes " +
              std::to_string(in.bytes) + " tag " + std::to_string(in.tag) + slices(in.slices);
      break;
    case InstrKind::Copy:
      if (in.op == "zero")
        text += "zero " + ids(in.outputs);
      else
        text += in.op + " " + ids(in.inputs) + " -> " + ids(in.outputs) + slices(in.slices);
      break;
    }
    if (in.loc.isKnown())
      text += " loc(" + quoteString(in.loc.file) + ":" + std::to_string(in.loc.line) + ":" +
              std::to_string(in.loc.col) + ")";
    text += "\n";
  }
  return text + "}\n";
}

} // namespace hspmd::ir
