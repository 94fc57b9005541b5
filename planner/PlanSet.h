// PlanSet.h - a plan set (docs/mixed-lengths.md): the plans of one model for the length
// buckets of a corpus, one TOML file naming them. `hspmc train SET --documents` runs each
// step under the plan whose S holds its longest document; `hspmc plan --length-distribution`
// writes one beside the plans it makes.
//
//   # examples/gpt/plans/docs.planset.toml
//   plans = ["docs_short.hspmd", "docs_medium.hspmd", "docs_long.hspmd"]
#pragma once

#include "planner/Cluster.h"

#include <optional>
#include <string>
#include <vector>

namespace hspmd::planner {

struct PlanSet {
  std::string path;               // the set's file
  std::vector<std::string> plans; // the plans' files, relative to the working directory
};

/// Whether `path` names a plan set (it ends in .planset.toml).
bool isPlanSet(const std::string &path);

/// Reads a plan set; nothing, with `errors` at FILE:LINE:COLUMN, where it is malformed (not
/// TOML, no `plans` array of file names, an unknown key, a plan named twice).
std::optional<PlanSet> readPlanSet(const std::string &path, std::vector<ClusterError> &errors);

/// Writes a plan set naming `plans` (paths relative to the set's folder); false where the
/// file cannot be written.
bool writePlanSet(const std::string &path, const std::vector<std::string> &plans, const std::string &comment);

} // namespace hspmd::planner
