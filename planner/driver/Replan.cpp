// Replan.cpp - hspmc train --recover auto: after a death the planner plans the run's model
// anew for the devices alive (planner/driver/Replan.h).
#include "planner/driver/Replan.h"

#include "ir/Files.h"
#include "ir/PlanText.h"
#include "planner/driver/PlanModel.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace hspmd::driver {

std::string replanProblem(const ir::PlanSpec &plan, const frontend::Compilation &compilation,
                          const std::string &option) {
  if (plan.clusterPath.empty())
    return option + " plans for the run's cluster, but plan '" + plan.name +
           "' names no cluster file (cluster \"FILE\")";
  if (!plan.modelArgs.empty())
    return option + " plans model " + plan.model + " as its file defines it, but plan '" + plan.name +
           "' gives it arguments (for " + plan.model + "(...))";
  if (!compilation.findModule(plan.model))
    return option + " cannot find the file of model " + plan.model;
  // The first of these set is the folder std::filesystem::temp_directory_path gives (libstdc++'s
  // order), named in the message.
  for (const char *name : {"TMPDIR", "TMP", "TEMP", "TEMPDIR"})
    if (const char *value = std::getenv(name)) {
      std::error_code ignored;
      if (!std::filesystem::is_directory(value, ignored))
        return option + " writes the plans it makes in the temporary folder, but $" + name + " ('" + value +
               "') is not a folder";
      break;
    }
  return "";
}

namespace {

constexpr const char *kWhat = "The devices alive of the run's cluster (hspmc train --recover auto, --stragglers).";

// The run's cluster file without the dead devices: each node keeps its live devices (a node
// with none is left out), every type written inline. The k-th device of the result is the
// k-th live device (ids go node after node in both). A device whose speed is not 1 (a
// straggler, `speeds`) gets a type of its own, the node's type at that speed (compute and
// memory bandwidth), and a node of its own: the node is cut into runs of devices of one
// speed, each run's uplink at the node's device links so that they still talk at that speed.
planner::Cluster survivorsCluster(const planner::Cluster &cluster, const std::vector<int> &live,
                                  const std::map<int, double> &speeds) {
  planner::Cluster out;
  out.name = cluster.name + "_alive";
  out.interNodeGBps = cluster.interNodeGBps;
  out.overlapCommunication = cluster.overlapCommunication;
  out.exchangeCollectives = cluster.exchangeCollectives;
  auto speedOf = [&](int d) {
    auto it = speeds.find(d);
    return it == speeds.end() ? 1.0 : it->second;
  };
  auto typeName = [&](const std::string &type, double speed) {
    if (speed == 1.0)
      return type;
    char text[64];
    std::snprintf(text, sizeof text, "_at_%.0f_percent", speed * 100);
    return type + text;
  };
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    const planner::Node &node = cluster.nodes[n];
    std::vector<std::pair<double, int>> runs; // (speed, devices), in device order
    for (int d : live)
      if (cluster.devices[static_cast<size_t>(d)].node == static_cast<int>(n)) {
        if (runs.empty() || runs.back().first != speedOf(d))
          runs.emplace_back(speedOf(d), 0);
        ++runs.back().second;
      }
    for (size_t r = 0; r < runs.size(); ++r) {
      const auto [speed, devices] = runs[r];
      planner::DeviceType type = cluster.types.at(node.type);
      type.name = typeName(node.type, speed);
      type.bf16Tflops *= speed;
      type.hbmGBps *= speed;
      out.types[type.name] = type;
      out.nodes.push_back({node.name + (runs.size() > 1 ? "_" + std::to_string(r) : ""), type.name, devices,
                           runs.size() > 1 ? type.intraNodeGBps : node.networkGBps});
    }
  }
  return out;
}

} // namespace

SurvivorPlan planForSurvivors(const ir::PlanSpec &plan, const frontend::Compilation &compilation, int64_t batch,
                              int64_t sequence, const std::vector<int> &live, const std::string &directory,
                              const std::map<int, double> &speeds) {
  SurvivorPlan planned;
  std::string ids, who, slow;
  for (int d : live) {
    ids += "_" + std::to_string(d);
    who += (who.empty() ? "" : ", ") + std::to_string(d);
    if (auto it = speeds.find(d); it != speeds.end() && it->second != 1.0)
      slow += "_" + std::to_string(d);
  }
  planned.name = "auto" + ids + (slow.empty() ? "" : "_slow" + slow);
  std::vector<planner::ClusterError> clusterErrors;
  auto cluster = planner::loadCluster(plan.clusterPath, compilation.stdlibDir() + "/devices.toml", clusterErrors);
  if (!cluster) {
    planned.error = "cannot read the run's cluster file " + plan.clusterPath;
    return planned;
  }
  for (int d : live)
    if (d < 0 || d >= static_cast<int>(cluster->devices.size())) {
      planned.error = "device " + std::to_string(d) + " is not in the run's cluster file " + plan.clusterPath;
      return planned;
    }
  std::error_code made;
  std::filesystem::create_directories(directory, made);
  const std::string base = (std::filesystem::path(directory) / planned.name).string();
  if (const std::string why = ir::writeWhole(base + ".cluster.toml",
                                             planner::writeCluster(survivorsCluster(*cluster, live, speeds), kWhat));
      !why.empty()) {
    planned.error = "cannot write " + base + ".cluster.toml (" + why + ")";
    return planned;
  }
  if (!speeds.empty()) { // every device of the run's cluster at its speed, for simulating its plans
    std::vector<int> all(cluster->devices.size());
    for (size_t d = 0; d < all.size(); ++d)
      all[d] = static_cast<int>(d);
    planned.speedsCluster = base + ".speeds.cluster.toml";
    if (const std::string why = ir::writeWhole(planned.speedsCluster,
                                               planner::writeCluster(survivorsCluster(*cluster, all, speeds), kWhat));
        !why.empty()) {
      planned.error = "cannot write " + planned.speedsCluster + " (" + why + ")";
      return planned;
    }
  }
  PlanFiles files;
  files.model = std::filesystem::absolute(compilation.findModule(plan.model)->loc.file.str()).string();
  files.cluster = base + ".cluster.toml";
  files.out = base + ".planner.hspmd"; // the planner's own plan, on the survivors' numbering
  files.sequence = sequence;
  files.tokens = batch * sequence;
  files.bf16 = plan.bf16; // priced as the run stores its activations
  PlanOutcome outcome;
  std::ostringstream progress, errors;
  if (!planModel(files, outcome, progress, errors) || !outcome.chosen) {
    std::string first = errors.str();
    planned.error = "the planner found no plan for devices " + who + ": " + first.substr(0, first.find('\n'));
    return planned;
  }
  // Every optimizer state replicated (no ZeRO) where that fits: a later death then loses no
  // part of it.
  planner::Candidate candidate = outcome.chosen->candidate;
  const planner::PlanRequest request = requestOf(files);
  if (candidate.zero) {
    planner::Candidate whole = candidate;
    whole.zero = false;
    planner::estimate(whole, outcome.shape, outcome.cluster, request);
    if (whole.fits)
      candidate = whole;
  }
  // Its devices back to the run's ids, its training (optimizer) the run's.
  for (planner::PipelinePlan &pipeline : candidate.pipelines)
    for (planner::StagePlan &stage : pipeline.stages)
      for (int &d : stage.devices)
        d = live[static_cast<size_t>(d)];
  ir::PlanSpec spec = planner::planSpec(candidate, outcome.shape, request, planned.name);
  spec.clusterPath = std::filesystem::absolute(plan.clusterPath).string();
  spec.optimizer = plan.optimizer;
  spec.optimizerArgs = plan.optimizerArgs;
  planned.strategy = candidate.strategy;
  planned.path = base + ".hspmd";
  const std::string why = ir::writeWhole(
      planned.path,
      ir::printPlan(spec, {"Planned by hspmc train " + std::string(speeds.empty() ? "--recover auto" : "--stragglers") +
                               " for devices " + who +
                               (slow.empty() ? "" : " at their measured speeds (" + base + ".cluster.toml)") + ": " +
                               candidate.strategy + ".",
                           files.model, ""}));
  if (!why.empty())
    planned.error = "cannot write " + planned.path + " (" + why + ")";
  return planned;
}

} // namespace hspmd::driver
