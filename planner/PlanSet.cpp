// PlanSet.cpp - reading and writing plan sets (planner/PlanSet.h).
#include "planner/PlanSet.h"

#include "ir/Files.h"

#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace hspmd::planner {

namespace {
ir::Location at(const std::string &path, const toml::source_region &region) {
  ir::Location loc{path, static_cast<uint32_t>(region.begin.line), static_cast<uint32_t>(region.begin.column), 1};
  return loc.isKnown() ? loc : ir::Location{path, 0, 0, 1};
}
} // namespace

bool isPlanSet(const std::string &path) {
  const std::string suffix = ".planset.toml";
  return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::optional<PlanSet> readPlanSet(const std::string &path, std::vector<ClusterError> &errors) {
  if (std::string why = ir::notAFile(path); !why.empty()) {
    errors.push_back({ir::Location{path, 0, 0, 1}, "cannot read '" + path + "': " + why});
    return std::nullopt;
  }
  if (!std::ifstream(path)) {
    errors.push_back({ir::Location{path, 0, 0, 1}, "cannot read '" + path + "'"});
    return std::nullopt;
  }
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error &error) {
    errors.push_back({at(path, error.source()), std::string(error.description())});
    return std::nullopt;
  }
  for (const auto &[key, value] : root)
    if (key.str() != "plans")
      errors.push_back(
          {at(path, value.source()), "unknown key '" + std::string(key.str()) + "' in a plan set (it has 'plans')"});
  const toml::array *list = root.get_as<toml::array>("plans");
  if (!list) {
    errors.push_back({root.get("plans") ? at(path, root.get("plans")->source()) : ir::Location{path, 1, 1, 1},
                      "a plan set needs `plans = [\"PLAN.hspmd\", ...]`, a plan per length bucket"});
    return std::nullopt;
  }
  PlanSet set{path, {}};
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  for (const toml::node &entry : *list) {
    const auto *name = entry.as_string();
    if (!name) {
      errors.push_back({at(path, entry.source()), "a plan of a plan set is a file name in quotes"});
      continue;
    }
    const std::string file = (folder / name->get()).lexically_normal().string();
    if (std::find(set.plans.begin(), set.plans.end(), file) != set.plans.end())
      errors.push_back({at(path, entry.source()), "plan '" + name->get() + "' is named twice"});
    else if (isPlanSet(file))
      errors.push_back({at(path, entry.source()), "a plan set names plans (.hspmd files), not plan sets"});
    else if (const std::string why = ir::notAFile(file); !why.empty() || !std::ifstream(file))
      errors.push_back({at(path, entry.source()), "cannot read plan '" + file + "'" + (why.empty() ? "" : ": " + why)});
    set.plans.push_back(file);
  }
  if (set.plans.empty() && errors.empty())
    errors.push_back({at(path, list->source()), "a plan set needs at least one plan"});
  if (!errors.empty())
    return std::nullopt;
  return set;
}

bool writePlanSet(const std::string &path, const std::vector<std::string> &plans, const std::string &comment) {
  std::ostringstream out;
  // The comment a `#` line each, ending wherever TOML ends a comment (a file name may hold a
  // line break), then the plans quoted by toml++.
  const std::string text =
      comment + "\nA plan set (docs/mixed-lengths.md): hspmc train " + path + " --data FILE --documents";
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find_first_of("\r\n", start), text.size());
    out << "# " << text.substr(start, end - start) << "\n";
    start = end + 1;
  }
  toml::array list;
  for (const std::string &plan : plans)
    list.push_back(plan);
  out << toml::table{{"plans", std::move(list)}} << "\n";
  return ir::writeWhole(path, out.str()).empty();
}

} // namespace hspmd::planner
