// Printer.cpp - the textual IR. Example:
//
//   graph GPT {
//     symbols B, S
//     %wte = param {init = "normal", std = 0.02} : f32[256, 64] loc("gpt.hspmd":4:3)
//     %tokens = input : i32[B, S] <[0..4]: R> loc("gpt.hspmd":9:14)
//     %q, %k = unbind %qk {dim = 2} : f32[B, S, 4, 16], f32[B, S, 4, 16] loc("gpt.hspmd":12:9)
//     return %loss
//   }
//
// `<...>` after a result type lists its annotations, one per plan, separated by ';' ('?'
// where a plan leaves the value unannotated).
#include "ir/AnnotationText.h"
#include "ir/Graph.h"

namespace hspmd::ir {

static std::string printAttrs(const AttrMap &attrs) {
  if (attrs.empty())
    return "";
  std::string text = " {";
  bool first = true;
  for (const auto &[name, value] : attrs) {
    text += (first ? "" : ", ") + name + " = " + printAttrValue(value);
    first = false;
  }
  return text + "}";
}

static std::string printResultType(const Value &value) {
  std::string text = value.type.str();
  bool any = false;
  for (const auto &annotation : value.annotations)
    any = any || annotation.has_value();
  if (!any)
    return text;
  text += " <";
  for (size_t i = 0; i < value.annotations.size(); ++i)
    text += (i ? "; " : "") + (value.annotations[i] ? printAnnotation(*value.annotations[i]) : "?");
  return text + ">";
}

std::string printOp(const Op &op) {
  std::string text;
  for (size_t i = 0; i < op.results.size(); ++i)
    text += (i ? ", %" : "%") + op.results[i]->name;
  text += " = " + std::string(opInfo(op.kind).name);
  for (size_t i = 0; i < op.operands.size(); ++i)
    text += (i ? ", %" : " %") + op.operands[i]->name;
  text += printAttrs(op.attrs) + " : ";
  for (size_t i = 0; i < op.results.size(); ++i)
    text += (i ? ", " : "") + printResultType(*op.results[i]);
  if (op.loc.isKnown())
    text +=
        " loc(" + quoteString(op.loc.file) + ":" + std::to_string(op.loc.line) + ":" + std::to_string(op.loc.col) + ")";
  return text;
}

std::string printGraph(const Graph &graph) {
  std::string text = "graph " + graph.name() + " {\n";
  if (graph.numPlans > 0)
    text += "  plans " + std::to_string(graph.numPlans) + "\n";
  if (!graph.symbols.empty()) {
    text += "  symbols ";
    for (size_t i = 0; i < graph.symbols.size(); ++i)
      text += (i ? ", " : "") + graph.symbols[i];
    text += "\n";
  }
  for (const auto &op : graph.ops())
    text += "  " + printOp(*op) + "\n";
  if (!graph.outputs.empty()) {
    text += "  return";
    for (size_t i = 0; i < graph.outputs.size(); ++i)
      text += (i ? ", %" : " %") + graph.outputs[i]->name;
    text += "\n";
  }
  return text + "}\n";
}

} // namespace hspmd::ir
