// Replan.cpp - hspmc train --recover auto: after a death the planner plans the run's model
// anew for the devices alive (planner/driver/Replan.h).
#include "planner/driver/Replan.h"

#include "ir/PlanText.h"
#include "planner/driver/PlanModel.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace hspmd::driver {

std::string replanProblem(const ir::PlanSpec &plan, const frontend::Compilation &compilation) {
  if (plan.clusterPath.empty())
    return "--recover auto plans for the run's cluster, but plan '" + plan.name +
           "' names no cluster file (cluster \"FILE\")";
  if (!plan.modelArgs.empty())
    return "--recover auto plans model " + plan.model + " as its file defines it, but plan '" + plan.name +
           "' gives it arguments (for " + plan.model + "(...))";
  if (!compilation.findModule(plan.model))
    return "--recover auto cannot find the file of model " + plan.model;
  return "";
}

namespace {

// The run's cluster file without the dead devices: each node keeps its live devices (a node
// with none is left out), every type written inline. The k-th device of the result is the
// k-th live device (ids go node after node in both).
std::string survivorsCluster(const planner::Cluster &cluster, const std::vector<int> &live) {
  std::ostringstream out;
  out << "# The devices alive of cluster '" << cluster.name << "' (hspmc train --recover auto).\n"
      << "name = \"" << cluster.name << "_alive\"\n"
      << "inter_node_gbps = " << cluster.interNodeGBps << "\n"
      << "overlap_communication = " << (cluster.overlapCommunication ? "true" : "false") << "\n"
      << "collectives = \"" << (cluster.exchangeCollectives ? "exchange" : "ring") << "\"\n";
  std::set<std::string> types;
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    int alive = 0;
    for (int d : live)
      alive += cluster.devices[static_cast<size_t>(d)].node == static_cast<int>(n) ? 1 : 0;
    if (alive == 0)
      continue;
    const planner::Node &node = cluster.nodes[n];
    out << "\n[[nodes]]\nname = \"" << node.name << "\"\ntype = \"" << node.type << "\"\ndevices = " << alive << "\n";
    if (node.networkGBps > 0)
      out << "network_gbps = " << node.networkGBps << "\n";
    types.insert(node.type);
  }
  for (const std::string &name : types) {
    const planner::DeviceType &type = cluster.types.at(name);
    out << "\n[types." << name << "]\nbf16_tflops = " << type.bf16Tflops << "\nmemory_gib = " << type.memoryGiB
        << "\nhbm_gbps = " << type.hbmGBps << "\nintra_node_gbps = " << type.intraNodeGBps << "\n";
  }
  return out.str();
}

} // namespace

SurvivorPlan planForSurvivors(const ir::PlanSpec &plan, const frontend::Compilation &compilation, int64_t batch,
                              int64_t sequence, const std::vector<int> &live, const std::string &directory) {
  SurvivorPlan planned;
  std::string ids, who;
  for (int d : live) {
    ids += "_" + std::to_string(d);
    who += (who.empty() ? "" : ", ") + std::to_string(d);
  }
  planned.name = "auto" + ids;
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
  {
    std::ofstream file(base + ".cluster.toml");
    file << survivorsCluster(*cluster, live);
    if (!file) {
      planned.error = "cannot write " + base + ".cluster.toml";
      return planned;
    }
  }
  PlanFiles files;
  files.model = std::filesystem::absolute(compilation.findModule(plan.model)->loc.file).string();
  files.cluster = base + ".cluster.toml";
  files.out = base + ".planner.hspmd"; // the planner's own plan, on the survivors' numbering
  files.sequence = sequence;
  files.tokens = batch * sequence;
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
  planner::PlanRequest request;
  request.tokens = files.tokens;
  request.sequence = files.sequence;
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
  std::ofstream file(planned.path);
  file << ir::printPlan(
      spec,
      {"Planned by hspmc train --recover auto for devices " + who + ": " + candidate.strategy + ".", files.model, ""});
  if (!file)
    planned.error = "cannot write " + planned.path;
  return planned;
}

} // namespace hspmd::driver
