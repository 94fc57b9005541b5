#include "ir/DeviceProgram.h"

#include "ir/TextLexer.h"

#include <algorithm>

namespace hspmd::ir {

int64_t Buffer::bytes() const {
  int64_t n = dtypeBytes(dtype);
  for (int64_t d : shape)
    n *= d;
  return n;
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

DeviceProgram expandSchedule(const DeviceProgram &program) {
  DeviceProgram out = program;
  out.body.clear();
  out.schedule = {{Phase::Forward, 0}};
  out.microbatches = 1;
  auto slots = program.schedule.empty() ? std::vector<ScheduleSlot>{{Phase::Forward, 0}, {Phase::Backward, 0}}
                                        : program.schedule;
  for (const ScheduleSlot &slot : slots)
    for (const Instruction &in : program.body)
      if (in.phase == slot.phase) {
        Instruction copy = in;
        copy.tag = in.tag * 1024 + slot.microbatch;
        out.body.push_back(copy);
      }
  for (const Instruction &in : program.body)
    if (in.phase == Phase::Update) {
      Instruction copy = in;
      copy.tag = in.tag * 1024 + 1023;
      out.body.push_back(copy);
    }
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
            "[";
    for (size_t i = 0; i < b.shape.size(); ++i)
      text += (i ? ", " : "") + std::to_string(b.shape[i]);
    text += "]";
    if (b.offset >= 0)
      text += " at " + std::to_string(b.offset);
    text += "\n";
  }
  for (const Instruction &in : program.body) {
    text += in.phase == Phase::Forward ? "  " : in.phase == Phase::Backward ? "  backward " : "  update ";
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
      break;
    case InstrKind::Collective:
      text += in.op + " " + ids(in.inputs) + " -> " + ids(in.outputs) + " group " + devices(in.group) + " bytes " +
              std::to_string(in.bytes) + " tag " + std::to_string(in.tag);
      break;
    case InstrKind::Send:
      text += "send " + ids(in.inputs) + " to " + std::to_string(in.peer) + " bytes " + std::to_string(in.bytes) +
              " tag " + std::to_string(in.tag);
      break;
    case InstrKind::Recv:
      text += "recv " + ids(in.outputs) + " from " + std::to_string(in.peer) + " bytes " + std::to_string(in.bytes) +
              " tag " + std::to_string(in.tag);
      break;
    case InstrKind::Copy:
      text += "copy " + ids(in.inputs) + " -> " + ids(in.outputs);
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
