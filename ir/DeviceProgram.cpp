#include "ir/DeviceProgram.h"

#include "ir/TextLexer.h"

namespace hspmd::ir {

int64_t Buffer::bytes() const {
  int64_t n = dtypeBytes(dtype);
  for (int64_t d : shape)
    n *= d;
  return n;
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
    text += "  ";
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
