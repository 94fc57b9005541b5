// PlanText.h - a PlanSpec written as a plan file: what `hspmc plan` writes and what
// round-trips (a printed plan parses and elaborates back to the same PlanSpec, locations aside).
#pragma once

#include "ir/Plan.h"

#include <string>

namespace hspmd::ir {

struct PlanTextOptions {
  std::string comment;     // a `//` line (or lines) before the plan; "" for none
  std::string import;      // the model file to import, as the plan file's folder sees it; "" for none
  std::string clusterPath; // the cluster as the plan file's folder sees it; "" prints spec.clusterPath
};

/// The plan's text: `plan NAME for MODEL(args) { ... }` with its cluster, bindings, optimizer,
/// schedule, `zero` / `recompute` / `chunked` / `precision bf16`, pipelines (stages with their devices, tp, cp and
/// hp shares, layers and `with` parameters) and `annotate` / `reshard` lines, one a value.
std::string printPlan(const PlanSpec &spec, const PlanTextOptions &options = {});

/// Whether two specs say the same, locations aside (what the printer must preserve).
bool samePlan(const PlanSpec &a, const PlanSpec &b);

} // namespace hspmd::ir
