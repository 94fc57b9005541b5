// PlanText.cpp - a PlanSpec written as a plan file (ir/PlanText.h).
#include "ir/PlanText.h"

#include "ir/AnnotationText.h"
#include "ir/TextLexer.h"

#include <cstdio>
#include <cstdlib>

namespace hspmd::ir {

namespace {

// A double that reads back as the same double, and as a float (not an integer).
std::string number(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", value);
  std::string out = text;
  // The shortest text that reads back the same.
  for (int digits = 1; digits < 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) {
      out = text;
      break;
    }
  }
  if (out.find_first_of(".en") == std::string::npos)
    out += ".0";
  return out;
}

std::string argValue(const std::variant<int64_t, double, bool, std::string> &value) {
  if (auto *i = std::get_if<int64_t>(&value))
    return std::to_string(*i);
  if (auto *d = std::get_if<double>(&value))
    return number(*d);
  if (auto *b = std::get_if<bool>(&value))
    return *b ? "true" : "false";
  return quoteString(std::get<std::string>(value));
}

std::string shares(const char *key, const std::vector<ShareSpec> &list) {
  if (list.empty())
    return "";
  std::string text = std::string(" ") + key + " [";
  for (size_t i = 0; i < list.size(); ++i)
    text += (i ? ", " : "") + printDeviceRange(list[i].devices) + ": " + std::to_string(list[i].value);
  return text + "]";
}

bool sameShares(const std::vector<ShareSpec> &a, const std::vector<ShareSpec> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].devices != b[i].devices || a[i].value != b[i].value)
      return false;
  return true;
}

bool samePins(const std::vector<PinnedAnnotation> &a, const std::vector<PinnedAnnotation> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].value != b[i].value || !(a[i].annotation == b[i].annotation))
      return false;
  return true;
}

} // namespace

std::string printPlan(const PlanSpec &spec, const PlanTextOptions &options) {
  std::string text;
  if (!options.comment.empty()) {
    size_t start = 0;
    while (start < options.comment.size()) {
      const size_t end = options.comment.find_first_of("\r\n", start); // a `//` comment ends at either
      text += "// " + options.comment.substr(start, end == std::string::npos ? std::string::npos : end - start) + "\n";
      start = end == std::string::npos ? options.comment.size() : end + 1;
    }
  }
  if (!options.import.empty())
    text += "import " + quoteString(options.import) + "\n";
  if (!text.empty())
    text += "\n";
  text += "plan " + spec.name + " for " + spec.model;
  if (!spec.modelArgs.empty()) {
    text += "(";
    for (size_t i = 0; i < spec.modelArgs.size(); ++i)
      text += (i ? ", " : "") + (spec.modelArgs[i].name.empty() ? "" : spec.modelArgs[i].name + " = ") +
              argValue(spec.modelArgs[i].value);
    text += ")";
  }
  text += " {\n";
  const std::string cluster = options.clusterPath.empty() ? spec.clusterPath : options.clusterPath;
  if (!cluster.empty())
    text += "  cluster " + quoteString(cluster) + "\n";
  if (!spec.bindings.empty()) {
    text += "  bind ";
    bool first = true;
    for (const auto &[name, value] : spec.bindings) {
      text += (first ? "" : ", ") + name + " = " + std::to_string(value);
      first = false;
    }
    text += "\n";
  }
  text += "  optimizer " + spec.optimizer;
  if (!spec.optimizerArgs.empty()) {
    text += "(";
    bool first = true;
    for (const auto &[name, value] : spec.optimizerArgs) {
      text += (first ? "" : ", ") + name + " = " + number(value);
      first = false;
    }
    text += ")";
  }
  text += "\n  schedule " + spec.schedule + "\n";
  if (spec.zero)
    text += spec.zeroReplicas > 1 ? "  zero replicas " + std::to_string(spec.zeroReplicas) + "\n" : "  zero\n";
  if (spec.recompute)
    text += "  recompute\n";
  if (spec.chunked)
    text += "  chunked\n";
  if (spec.bf16)
    text += "  precision bf16\n";
  for (const PipelineSpec &pipeline : spec.pipelines) {
    text += "\n  pipeline " + pipeline.name + " share " + std::to_string(pipeline.share) + " microbatches " +
            std::to_string(pipeline.microbatches) + " {\n";
    for (const StageSpec &stage : pipeline.stages) {
      text += "    stage devices " + printDeviceRange(stage.devices);
      if (stage.tp > 1)
        text += " tp " + std::to_string(stage.tp);
      text += shares("cp", stage.cp) + shares("hp", stage.hp);
      if (!stage.stack.empty())
        text += " layers " + stage.stack + "[" + std::to_string(stage.layerBegin) + ":" +
                std::to_string(stage.layerEnd) + "]";
      // The paths as written when known (they expand to the same parameters), else the names.
      const std::vector<std::string> &with = stage.with.empty() ? stage.extraParams : stage.with;
      for (size_t i = 0; i < with.size(); ++i)
        text += (i ? ", " : " with ") + with[i];
      if (stage.zero && (!spec.zero || stage.zeroReplicas != spec.zeroReplicas))
        text += stage.zeroReplicas > 1 ? " zero replicas " + std::to_string(stage.zeroReplicas) : " zero";
      if (stage.recompute && !spec.recompute)
        text += " recompute";
      text += "\n";
    }
    text += "  }\n";
  }
  if (!spec.annotations.empty() || !spec.reshards.empty())
    text += "\n";
  for (const PinnedAnnotation &pin : spec.annotations)
    text += "  annotate " + pin.value + " = " + printAnnotation(pin.annotation) + "\n";
  for (const PinnedAnnotation &pin : spec.reshards)
    text += "  reshard " + pin.value + " to " + printAnnotation(pin.annotation) + "\n";
  return text + "}\n";
}

bool samePlan(const PlanSpec &a, const PlanSpec &b) {
  if (a.name != b.name || a.model != b.model || a.modelArgs != b.modelArgs || a.clusterPath != b.clusterPath ||
      a.bindings != b.bindings || a.optimizer != b.optimizer || a.optimizerArgs != b.optimizerArgs ||
      a.schedule != b.schedule || a.zero != b.zero || a.zeroReplicas != b.zeroReplicas || a.recompute != b.recompute ||
      a.chunked != b.chunked || a.bf16 != b.bf16 || a.pipelines.size() != b.pipelines.size() ||
      !samePins(a.annotations, b.annotations) || !samePins(a.reshards, b.reshards))
    return false;
  for (size_t p = 0; p < a.pipelines.size(); ++p) {
    const PipelineSpec &x = a.pipelines[p], &y = b.pipelines[p];
    if (x.name != y.name || x.share != y.share || x.microbatches != y.microbatches ||
        x.stages.size() != y.stages.size())
      return false;
    for (size_t s = 0; s < x.stages.size(); ++s) {
      const StageSpec &u = x.stages[s], &v = y.stages[s];
      if (u.devices != v.devices || u.tp != v.tp || !sameShares(u.cp, v.cp) || !sameShares(u.hp, v.hp) ||
          u.stack != v.stack || u.layerBegin != v.layerBegin || u.layerEnd != v.layerEnd ||
          u.extraParams != v.extraParams || u.with != v.with || u.zero != v.zero || u.zeroReplicas != v.zeroReplicas ||
          u.recompute != v.recompute)
        return false;
    }
  }
  return true;
}

} // namespace hspmd::ir
