// TrainCommands.cpp - hspmc train, simulate and build: a plan compiled for training, then run
// on this machine, simulated on its cluster, or written out as C++ and built.
#include "tools/hspmc/Commands.h"

#include "codegen/Codegen.h"
#include "ir/Files.h"
#include "ir/JsonText.h"
#include "planner/Estimates.h"
#include "planner/PlanSet.h"
#include "planner/Simulator.h"
#include "planner/driver/ModelInfo.h"
#include "planner/driver/Replan.h"
#include "runtime/MpiRun.h"
#include "runtime/gpu/DeviceTypes.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <unistd.h>

namespace hspmd::cli {

namespace {

// What a run needs the plans it switches between to share: the model, its batch, and the
// optimizer. Empty when they do; else what differs.
std::string sameTraining(const TrainingBuild &a, const TrainingBuild &b, bool sameBatch = true) {
  const runtime::ModelInfo x = driver::modelInfo(*a.build->graph), y = driver::modelInfo(*b.build->graph);
  if (runtime::ParameterStore::fingerprint(x.name, x.params) != runtime::ParameterStore::fingerprint(y.name, y.params))
    return "it trains " + y.name + " with other parameters than " + x.name + " under plan '" + a.plan().name + "'";
  if (sameBatch && (x.batch != y.batch || x.seq != y.seq))
    return "its batch is " + std::to_string(y.batch) + " x " + std::to_string(y.seq) + ", plan '" + a.plan().name +
           "''s " + std::to_string(x.batch) + " x " + std::to_string(x.seq);
  if (a.plan().optimizer != b.plan().optimizer || a.plan().optimizerArgs != b.plan().optimizerArgs)
    return "its optimizer differs from plan '" + a.plan().name + "''s";
  return "";
}

// The link model of a plan's cluster, for choosing owners and pricing a switch (defaults
// without a cluster).
runtime::SwitchLinks switchLinks(const planner::Cluster *cluster) {
  runtime::SwitchLinks links;
  if (!cluster)
    return links;
  const passes::LinkModel model = planner::linkModel(*cluster);
  links.bandwidth = model.bandwidth;
  links.sameNode = model.sameNode;
  links.alpha = model.alpha;
  return links;
}

// Each device's memory by the cluster file (unknown without one, or beyond its devices).
std::function<runtime::DeviceMemory(int)> memoryOn(const planner::Cluster *cluster) {
  return [cluster](int device) {
    if (!cluster || device >= static_cast<int>(cluster->devices.size()))
      return runtime::DeviceMemory{};
    const planner::DeviceType &type = cluster->typeOf(device);
    return runtime::DeviceMemory{type.name, type.memoryGiB * (1 << 30)};
  };
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// For GPUs: each plan's devices' types by its cluster file (by its programs), and the GPU
// types a GPU's name is matched to (devices.toml's and the clusters' own; not "cpu": CPU
// threads posing as devices).
struct GpuTypes {
  runtime::gpu::PlanDeviceTypes planned;
  std::vector<std::string> types;
};
GpuTypes gpuTypesOf(const std::vector<std::pair<const std::map<int, ir::DeviceProgram> *, std::string>> &plans,
                    const std::string &devicesToml) {
  GpuTypes out;
  std::set<std::string> types;
  for (const auto &[programs, clusterPath] : plans) {
    std::map<int, std::string> &devices = out.planned.emplace_back(programs, std::map<int, std::string>{}).second;
    std::vector<planner::ClusterError> errors;
    if (clusterPath.empty())
      continue;
    if (auto cluster = planner::loadCluster(clusterPath, devicesToml, errors)) {
      for (const planner::Device &device : cluster->devices)
        if (programs->count(device.id))
          devices[device.id] = device.type;
      for (const auto &[type, properties] : cluster->types)
        if (type != "cpu")
          types.insert(type);
    }
  }
  out.types.assign(types.begin(), types.end());
  return out;
}

// Compiles FILE under its plan (and the plans it switches to) for training and runs them;
// `reported`: this process reported the run (MPI: the one whose status is the run's).
int train(const std::string &file, const std::vector<std::string> &planFiles, runtime::RunOptions run,
          const std::string &lossesPath, const std::string &backend, const std::vector<std::string> &switches,
          const std::vector<std::string> &failures, const std::string &faultTrace,
          const std::vector<std::string> &recoverPlans, const std::vector<std::string> &arguments, bool &reported) {
  // A plan set (planner/PlanSet.h): its first plan compiles as the run's, the others after.
  std::optional<planner::PlanSet> set;
  if (planner::isPlanSet(file)) {
    std::vector<planner::ClusterError> errors;
    set = planner::readPlanSet(file, errors);
    for (const auto &error : errors)
      std::cerr << error.loc.str() + ": error: " + error.message + "\n";
    if (!set)
      return 1;
    if (!planFiles.empty()) {
      std::cerr << "hspmc train: error: " + file + " is a plan set: its plans are its own (no --plan)\n";
      return 1;
    }
  }
  TrainingBuild t(set ? set->plans.front() : file, planFiles, set ? "train a plan set" : "train");
  if (int code = t.report(); code != 0)
    return code;
  const auto &build = t.build;
  const runtime::ModelInfo model = driver::modelInfo(*build->graph);
  const bool mpi = backend == "mpi";
  const bool leader = !mpi || runtime::launcherRank() <= 0; // prints and writes files
  auto fail = [&](const std::string &message) {
    if (leader)
      std::cerr << "hspmc train: error: " + message + "\n";
    return 1;
  };
  // The plans of the run, each compiled once (a switch back to a plan compiles nothing).
  std::map<std::string, std::unique_ptr<TrainingBuild>> compiled;
  std::vector<const TrainingBuild *> plans = {&t};
  // A plan's file by one name however it is spelt (its own where that cannot be resolved: a
  // name too long, a folder not to be searched; compiling it then says why).
  auto fileKey = [](const std::string &path) {
    std::error_code unresolved;
    const std::filesystem::path key = std::filesystem::weakly_canonical(path, unresolved);
    return unresolved ? path : key.string();
  };
  std::vector<std::string> paths = {fileKey(planFiles.empty() ? file : planFiles[0])};
  std::vector<std::unique_ptr<runtime::StateSwitch>> transfers;
  runtime::RunPlans runPlans;
  runPlans.plans.push_back(&t.programs());
  runPlans.names.push_back(t.plan().name);
  // The index of the plan in `path` among the run's plans, compiled now unless it was
  // already; `compileText` says which. Non-zero `code` where it cannot be.
  std::string compileText;
  auto planOf = [&](const std::string &path, const std::string &option, int &code) -> size_t {
    const std::string key = fileKey(path);
    auto known = std::find(paths.begin(), paths.end(), key);
    compileText = "cached";
    if (known != paths.end())
      return static_cast<size_t>(known - paths.begin());
    const auto start = std::chrono::steady_clock::now();
    auto next = std::make_unique<TrainingBuild>(
        path, std::vector<std::string>{},
        option.rfind("--", 0) == 0 ? "train " + option.substr(0, option.find(' ')) : "train a plan set");
    if ((code = next->report()) != 0)
      return 0;
    char text[64];
    std::snprintf(text, sizeof text, "compiled in %.2f s", secondsSince(start));
    compileText = text;
    if (std::string differs = sameTraining(t, *next, !set); !differs.empty()) {
      code = fail(option + ": plan '" + next->plan().name + "' " +
                  (set ? "cannot be in a plan set with '" + t.plan().name + "'" : "cannot continue this run") + ": " +
                  differs);
      return 0;
    }
    plans.push_back(next.get());
    paths.push_back(key);
    runPlans.plans.push_back(&next->programs());
    runPlans.names.push_back(next->plan().name);
    compiled[key] = std::move(next);
    return plans.size() - 1;
  };
  std::string setText; // the plans of a plan set, for the banner
  if (set) {
    if (!run.documents)
      return fail(file + " is a plan set: it trains on documents (add --documents; docs/mixed-lengths.md)");
    if (!switches.empty() || !failures.empty() || !faultTrace.empty() || !recoverPlans.empty() || run.stragglers)
      return fail(file + " is a plan set, whose run switches plans by the documents' lengths: --switch, --fail, "
                         "--fault-trace, --recover and --stragglers do not combine with it yet");
    for (const std::string &path : set->plans) {
      int code = 0;
      const size_t index = path == set->plans.front() ? 0 : planOf(path, file, code);
      if (code != 0)
        return code;
      const runtime::ModelInfo info = driver::modelInfo(*plans[index]->build->graph);
      for (const auto &bucket : runPlans.buckets)
        if (bucket.seq == info.seq)
          return fail(file + ": plans '" + runPlans.names[bucket.plan] + "' and '" + runPlans.names[index] +
                      "' both take sequences of " + std::to_string(info.seq) + ": a length bucket has one plan");
      runPlans.buckets.push_back({index, info.batch, info.seq});
      // Per micro-batch, the plans' executors hand the state and gradients over in memory.
      if (run.documentOptions.perMicroBatch && index != 0) {
        const auto &a = plans[0]->programs(), &b = plans[index]->programs();
        std::string differs;
        for (const auto &[device, program] : a)
          if (auto other = b.find(device); other == b.end())
            differs = "device " + std::to_string(device) + " is in one plan only";
          else if (differs.empty())
            differs = runtime::sameStateLayout(program, other->second);
        if (differs.empty() && a.size() != b.size())
          differs = "their devices differ";
        if (!differs.empty())
          return fail(file +
                      ": --granularity micro-batch runs plans within a step, which needs them to hold the "
                      "state alike; '" +
                      runPlans.names[0] + "' and '" + runPlans.names[index] + "' do not: " + differs);
      }
      setText += (setText.empty() ? "" : ", ") + runPlans.names[index] + " " + std::to_string(info.batch) + " x " +
                 std::to_string(info.seq);
    }
  }
  int64_t previousStep = 0;
  size_t current = 0;
  for (const std::string &option : switches) {
    const runtime::SwitchOption parsed =
        runtime::parseSwitchOption(option, previousStep, run.steps, !run.load.empty(), "a plan file");
    if (!parsed.error.empty())
      return fail(parsed.error);
    const int64_t step = previousStep = parsed.step;
    int code = 0;
    const size_t index = planOf(parsed.target, "--switch " + option, code);
    if (code != 0)
      return code;
    if (index == current)
      return fail("--switch " + option + ": the run is already under plan '" + plans[index]->plan().name + "' then");
    std::optional<planner::Cluster> cluster;
    if (const std::string &clusterPath = plans[index]->plan().clusterPath; !clusterPath.empty()) {
      std::vector<planner::ClusterError> errors;
      cluster = planner::loadCluster(clusterPath, t.compilation.stdlibDir() + "/devices.toml", errors);
    }
    // The move fits each device's memory (by the new plan's cluster file): side by side, or
    // in buckets by layer.
    try {
      transfers.push_back(std::make_unique<runtime::StateSwitch>(runtime::planSwitchToFit(
          plans[current]->programs(), plans[index]->programs(), switchLinks(cluster ? &*cluster : nullptr),
          memoryOn(cluster ? &*cluster : nullptr))));
    } catch (const runtime::SwitchError &e) {
      return fail("--switch " + option + ": " + e.what());
    }
    char text[300];
    const runtime::StateSwitch &transfer = *transfers.back();
    const std::string buckets = transfer.byLayer
                                    ? " in " + std::to_string(transfer.buckets.size()) +
                                          " buckets by layer (the old and new arenas do not fit side by side)"
                                    : "";
    std::snprintf(text, sizeof text, "switched to plan '%s' before step %lld: %s, transfer planned in %.1f ms%s",
                  plans[index]->plan().name.c_str(), static_cast<long long>(step), compileText.c_str(),
                  transfer.planSeconds * 1e3, buckets.c_str());
    runPlans.switches.push_back(runtime::PlanSwitch{step, index, transfers.back().get(), text});
    current = index;
  }
  // Failures to inject, and the plans to go on under after one.
  std::vector<std::unique_ptr<TrainingBuild>> replanned; // --recover auto's plans, compiled during the run
  for (const std::string &path : recoverPlans) {
    if (path == "auto") {
      if (std::string problem = driver::replanProblem(t.plan(), t.compilation); !problem.empty())
        return fail(problem);
      runPlans.recoveries.push_back(runtime::RunPlans::kReplan);
      continue;
    }
    int code = 0;
    const size_t index = planOf(path, "--recover " + path, code);
    if (code != 0)
      return code;
    runPlans.recoveries.push_back(index);
  }
  for (const std::string &option : failures) {
    const runtime::FaultOption parsed = runtime::parseFaultOption(option, runPlans.devices(), run.steps);
    if (!parsed.error.empty())
      return fail(parsed.error);
    run.faults.push_back(parsed.fault);
  }
  // --recover auto: the planner plans for the live devices, written beside the run's other
  // files in a folder of this process's own; the plan is compiled and checked like any other.
  // (driver::replanProblem has refused a run that needs it where there is no temporary folder.)
  std::error_code noTemporaryFolder;
  const std::filesystem::path temporary = std::filesystem::temp_directory_path(noTemporaryFolder);
  const std::string replanDirectory =
      ((noTemporaryFolder ? std::filesystem::path("/tmp") : temporary) / ("hspmd-recover-" + std::to_string(getpid())))
          .string();
  // Plans for the live devices (at `speeds`: --stragglers), compiles and checks the plan
  // written; with `running`, a step of the new plan and of the running one simulated at those
  // speeds.
  auto planAnew = [&](const std::vector<int> &live, const std::map<int, double> &speeds,
                      const std::map<int, ir::DeviceProgram> *running) {
    runtime::Replanned made;
    auto start = std::chrono::steady_clock::now();
    const runtime::ModelInfo info = driver::modelInfo(*t.build->graph);
    ir::PlanSpec plan = t.plan();
    plan.bf16 = TrainingBuild::bf16.value_or(plan.bf16); // planned as the run stores its activations
    const driver::SurvivorPlan planned =
        driver::planForSurvivors(plan, t.compilation, info.batch, info.seq, live, replanDirectory, speeds);
    made.planSeconds = secondsSince(start);
    made.name = planned.name;
    made.path = planned.path;
    if (!planned.error.empty()) {
      made.error = planned.error;
      return made;
    }
    start = std::chrono::steady_clock::now();
    auto next = std::make_unique<TrainingBuild>(planned.path, std::vector<std::string>{}, "train");
    if (next->report() != 0) {
      made.error = "the plan it wrote, " + planned.path + ", does not compile (above)";
      return made;
    }
    if (std::string differs = sameTraining(t, *next); !differs.empty()) {
      made.error = "the plan it wrote, " + planned.path + ", cannot continue this run: " + differs;
      return made;
    }
    made.compileSeconds = secondsSince(start);
    std::vector<planner::ClusterError> errors;
    if (running && !planned.speedsCluster.empty())
      if (auto cluster =
              planner::loadCluster(planned.speedsCluster, t.compilation.stdlibDir() + "/devices.toml", errors)) {
        const planner::CostModel costs = planner::costModel(*cluster);
        made.predictedSeconds = planner::simulate(next->programs(), costs).stepSeconds;
        made.predictedNowSeconds = planner::simulate(*running, costs).stepSeconds;
      }
    made.programs = &next->programs();
    replanned.push_back(std::move(next));
    return made;
  };
  runPlans.replan = [&](const std::vector<int> &live) { return planAnew(live, {}, nullptr); };
  runPlans.replanForSpeeds = [&](const std::vector<int> &live, const std::map<int, double> &speeds,
                                 const std::map<int, ir::DeviceProgram> &running) {
    return planAnew(live, speeds, &running);
  };
  if (run.stragglers) {
    if (std::string problem = driver::replanProblem(t.plan(), t.compilation, "--stragglers"); !problem.empty())
      return fail(problem);
  }
  if (!faultTrace.empty())
    if (std::string error = runtime::readFaultTrace(faultTrace, runPlans.devices(), run.steps, run.faults);
        !error.empty())
      return fail(error);
  if (std::string twice = runtime::deathsOfTheDead(run.faults); !twice.empty())
    return fail(twice);
  if (run.saveEvery > 0 && run.save.empty())
    return fail("--save-every " + std::to_string(run.saveEvery) + " needs --save FILE (where to write the checkpoint)");
  // The files the run reads: each plan's own and those it imports, its cluster, the plan set,
  // the fault trace.
  std::vector<ir::ReadFile> inputs = {{faultTrace, "the fault trace (--fault-trace)"},
                                      {set ? file : "", "the plan set"}};
  for (const TrainingBuild *plan : plans) {
    for (const std::string &source : plan->sources.names())
      inputs.push_back({source, "a source file of plan '" + plan->plan().name + "'"});
    inputs.push_back({plan->plan().clusterPath, "the cluster file of plan '" + plan->plan().name + "'"});
  }
  if (std::string problem = runtime::unwritableOutputs(run, lossesPath, inputs); !problem.empty())
    return fail(problem);
  const bool elastic = runtime::killsDevices(run.faults) || !runPlans.recoveries.empty();
  if (mpi && runtime::launcherRank() < 0) { // started without mpirun: it starts mpirun
    std::vector<std::string> command = arguments;
    std::error_code noProc; // without /proc, the name it was started by
    if (const auto self = std::filesystem::read_symlink("/proc/self/exe", noProc); !noProc)
      command[0] = self.string();
    // A spare process for each return (a `join` in the fault trace).
    const auto spares = std::count_if(run.faults.begin(), run.faults.end(),
                                      [](const runtime::Fault &f) { return f.phase == runtime::FaultPhase::Join; });
    // Every process on this machine: arenas that do not fit it are refused before mpirun starts
    // (each process would find the memory free, and the system kill them midway).
    if (std::string problem =
            runtime::hostMemoryProblem(runPlans, runtime::hostMemoryFree(), runtime::HostRun::LocalMpi);
        !problem.empty())
      return fail(problem);
    return runtime::launchUnderMpirun(command, static_cast<int>(runPlans.devices().size() + spares), elastic);
  }
  if (mpi && elastic) {
    // OpenMPI's mpirun ends every process when one dies, unless told not to.
    const char *recovery = std::getenv("OMPI_MCA_orte_enable_recovery");
    if (std::getenv("OMPI_COMM_WORLD_RANK") && (!recovery || std::string(recovery) != "1")) {
      // Every process says it: mpirun ends the others when the first one exits.
      std::cerr << std::string("hspmc train: error: ") + (run.faults.empty() ? "--recover" : "--fail") +
                       " on MPI: mpirun ends every process when one dies; start it with mpirun --enable-recovery\n";
      return 1;
    }
  }
  if (leader)
    std::cout << runtime::runBanner(model, build->plans[0].name, runPlans.devices().size(), mpi, run.data, runPlans,
                                    set ? file + "' (" + setText + ")" : "")
              << std::endl;
  run.progress = &std::cout;
  if (run.offload) { // a word where a device's GPU is not the type its plan was made for
    std::vector<std::pair<const std::map<int, ir::DeviceProgram> *, std::string>> clusters;
    for (const TrainingBuild *plan : plans)
      clusters.emplace_back(&plan->programs(), plan->plan().clusterPath);
    GpuTypes types = gpuTypesOf(clusters, t.compilation.stdlibDir() + "/devices.toml");
    run.offload =
        runtime::gpu::warningOfGpuTypes(run.offload, std::move(types.planned), std::move(types.types), "hspmc train");
  }
  try {
    const runtime::RunResult trained =
        mpi ? runtime::runMpi(runPlans, model, run) : runtime::runThreads(runPlans, model, run);
    reported = trained.reported;
    if (trained.reported && !lossesPath.empty())
      runtime::writeLosses(lossesPath, build->plans[0].name, model, run.seed, build->plans[0].optimizer,
                           build->plans[0].optimizerArgs, trained);
  } catch (const std::exception &e) {
    runtime::reportRunError("hspmc train", e);
    return 1;
  }
  return 0;
}

// A step's work lost to a failure in `phase` of it: nothing at its start (forward, a switch,
// a recovery), the forward pass (a third of the step) at the backward, all but the update
// at the update.
double lostFraction(runtime::FaultPhase phase) {
  switch (phase) {
  case runtime::FaultPhase::Backward:
    return 1.0 / 3;
  case runtime::FaultPhase::Update:
    return 1.0;
  default:
    return 0.0;
  }
}

// hspmc simulate --fault-trace: the run priced step by step, in place and by restarts, after
// `stepReport` (the one step's), which is printed only once the trace and the --recover plans
// have passed their checks: an error is then all that is printed.
int replayFaults(TrainingBuild &t, const planner::Cluster &cluster, const std::string &clusterPath, double stepSeconds,
                 double tokens, const FaultReplay &replay, const std::string &stepReport) {
  auto fail = [](const std::string &message) {
    std::cerr << "hspmc simulate: error: " << message << "\n";
    return 1;
  };
  // The plans: the run's, then each --recover plan, checked and compiled on the run's cluster
  // (`clusterPath`: once, the gate's programs kept) and simulated.
  struct Priced {
    std::string name;
    const std::map<int, ir::DeviceProgram> *programs;
    double step = 0, compile = 0, stateBytes = 0; // the largest device's state
  };
  std::vector<std::unique_ptr<TrainingBuild>> builds;
  std::vector<Priced> plans = {{t.plan().name, &t.programs(), stepSeconds, 0, 0}};
  const planner::CostModel costs = planner::costModel(cluster);
  for (const std::string &path : replay.recoverPlans) {
    const auto start = std::chrono::steady_clock::now();
    auto next =
        std::make_unique<TrainingBuild>(path, std::vector<std::string>{}, "simulate --recover", true, clusterPath);
    next->compileOn(cluster);
    if (int code = next->report(); code != 0)
      return code;
    const double compiled = secondsSince(start); // what recovering to it costs: not its simulation
    if (std::string differs = sameTraining(t, *next); !differs.empty())
      return fail("--recover " + path + ": plan '" + next->plan().name + "' cannot continue this run: " + differs);
    plans.push_back(
        {next->plan().name, &next->programs(), planner::simulate(next->programs(), costs).stepSeconds, compiled, 0});
    builds.push_back(std::move(next));
  }
  for (Priced &plan : plans)
    for (const auto &[device, program] : *plan.programs) {
      double bytes = 0;
      for (const ir::Buffer &b : program.buffers)
        if (b.role == ir::BufferRole::Parameter || b.role == ir::BufferRole::State)
          bytes += static_cast<double>(b.bytes());
      plan.stateBytes = std::max(plan.stateBytes, bytes);
    }
  std::vector<int> devices;
  for (const auto &[device, program] : t.programs())
    devices.push_back(device);
  for (const Priced &plan : plans)
    for (const auto &[device, program] : *plan.programs)
      if (std::find(devices.begin(), devices.end(), device) == devices.end())
        devices.push_back(device);
  std::sort(devices.begin(), devices.end());
  std::vector<runtime::Fault> faults;
  if (std::string error = runtime::readFaultTrace(replay.trace, devices, replay.steps, faults); !error.empty())
    return fail(error);
  if (std::string twice = runtime::deathsOfTheDead(faults); !twice.empty())
    return fail(twice);
  std::stable_sort(faults.begin(), faults.end(),
                   [](const runtime::Fault &a, const runtime::Fault &b) { return a.step < b.step; });
  // The plan after each event: the first --recover plan whose devices are all alive.
  auto choose = [&](const std::set<int> &dead) -> std::optional<size_t> {
    for (size_t p = 1; p < plans.size(); ++p) {
      bool alive = true;
      for (const auto &[device, program] : *plans[p].programs)
        alive = alive && !dead.count(device);
      if (alive)
        return p;
    }
    return std::nullopt;
  };
  const runtime::SwitchLinks links = switchLinks(&cluster);
  auto move = [&](size_t from, size_t to, const std::set<int> &dead) {
    std::map<int, ir::DeviceProgram> survivors;
    for (const auto &[device, program] : *plans[from].programs)
      if (!dead.count(device))
        survivors.emplace(device, program);
    return runtime::planSwitchToFit(survivors, *plans[to].programs, links, memoryOn(&cluster)).seconds;
  };
  const double ioSeconds = 1.0 / (replay.checkpointGBps * 1e9);
  // In place: detection, the interrupted step's lost work, compiling the plan, the move; a
  // return: the move (the device is not waited for).
  double inPlace = 0, detect = 0, lost = 0, compile = 0, moving = 0;
  int failures = 0, returns = 0;
  std::string history, impossible; // why in-place recovery cannot go on, where it cannot
  {                                // the plans the run goes through
    size_t current = 0;
    std::set<int> dead;
    for (const runtime::Fault &f : faults) {
      if (f.phase == runtime::FaultPhase::Slow)
        return fail(replay.trace + ": 'slow' events are not simulated (hspmc train --stragglers runs them)");
      if (f.phase == runtime::FaultPhase::Join) {
        dead.erase(f.device);
        ++returns;
      } else {
        dead.insert(f.device);
        ++failures;
      }
      const std::optional<size_t> target = choose(dead);
      if (!target)
        return fail(replay.trace + ": after " +
                    (f.phase == runtime::FaultPhase::Join ? "device " + std::to_string(f.device) + " comes back"
                                                          : "the failure of device " + std::to_string(f.device)) +
                    " before step " + std::to_string(f.step) + ", no --recover plan uses only the live devices");
      if (*target != current) {
        char text[200];
        std::snprintf(text, sizeof text, "; from step %lld '%s' (%.3f s)", static_cast<long long>(f.step),
                      plans[*target].name.c_str(), plans[*target].step);
        history += text;
      }
      current = *target;
    }
  }
  try {
    size_t current = 0;
    std::set<int> dead;
    size_t next = 0;
    for (int64_t step = 1; step <= replay.steps; ++step) {
      for (; next < faults.size() && faults[next].step == step; ++next) {
        const runtime::Fault &f = faults[next];
        const bool back = f.phase == runtime::FaultPhase::Join;
        if (back)
          dead.erase(f.device);
        else
          dead.insert(f.device);
        const std::optional<size_t> target = choose(dead);
        const double moved = move(current, *target, dead);
        if (!back) {
          detect += replay.heartbeatSeconds;
          lost += lostFraction(f.phase) * plans[current].step;
          compile += plans[*target].compile;
          inPlace += replay.heartbeatSeconds + lostFraction(f.phase) * plans[current].step + plans[*target].compile;
        }
        moving += moved;
        inPlace += moved;
        current = *target;
      }
      inPlace += plans[current].step;
    }
  } catch (const runtime::SwitchError &e) {
    impossible = e.what();
  }
  // Checkpoint-and-restart every K steps: each checkpoint writes the largest device's state;
  // a failure costs detection, the interrupted step's lost work, a restart, reading the last
  // checkpoint and redoing the steps after it (under the plan restarted on); a return, a
  // checkpoint and a restart.
  struct Restarted {
    int64_t every = 0;
    double seconds = 0, writing = 0, restarting = 0, redone = 0;
    int64_t stepsRedone = 0;
  };
  std::vector<Restarted> restarts;
  for (int64_t every : replay.checkpointEvery) {
    Restarted r;
    r.every = every;
    size_t current = 0;
    std::set<int> dead;
    size_t next = 0;
    int64_t saved = 0;
    for (int64_t step = 1; step <= replay.steps; ++step) {
      for (; next < faults.size() && faults[next].step == step; ++next) {
        const runtime::Fault &f = faults[next];
        const bool back = f.phase == runtime::FaultPhase::Join;
        if (back)
          dead.erase(f.device);
        else
          dead.insert(f.device);
        const size_t target = *choose(dead);
        const double read = plans[target].stateBytes * ioSeconds;
        if (back) { // save now, restart with the device, read it back
          const double write = plans[current].stateBytes * ioSeconds;
          r.writing += write;
          r.restarting += replay.restartSeconds + read;
          r.seconds += write + replay.restartSeconds + read;
          saved = step - 1;
        } else {
          const double redo = static_cast<double>(step - 1 - saved) * plans[target].step;
          r.stepsRedone += step - 1 - saved;
          r.redone += redo + lostFraction(f.phase) * plans[current].step;
          r.restarting += replay.heartbeatSeconds + replay.restartSeconds + read;
          r.seconds += replay.heartbeatSeconds + lostFraction(f.phase) * plans[current].step + replay.restartSeconds +
                       read + redo;
        }
        current = target;
      }
      r.seconds += plans[current].step;
      if (step % every == 0 && step < replay.steps) {
        const double write = plans[current].stateBytes * ioSeconds;
        r.writing += write;
        r.seconds += write;
        saved = step;
      }
    }
    restarts.push_back(r);
  }
  const double total = tokens * static_cast<double>(replay.steps);
  const double clean = stepSeconds * static_cast<double>(replay.steps);
  char text[600];
  std::snprintf(text, sizeof text,
                "\n%lld steps over %s: %d failure%s, %d return%s; '%s' %.3f s a step%s\n"
                "  without failures              %10.1f s  %8.0f tokens/s\n",
                static_cast<long long>(replay.steps), replay.trace.c_str(), failures, failures == 1 ? "" : "s", returns,
                returns == 1 ? "" : "s", t.plan().name.c_str(), stepSeconds, history.c_str(), clean, total / clean);
  std::cout << stepReport << text;
  std::snprintf(text, sizeof text,
                "  in place                      %10.1f s  %8.0f tokens/s  %5.1f%%: detection %.1f s, lost work %.1f "
                "s, compiling %.2f s, moving %.2f s\n",
                inPlace, total / inPlace, 100 * clean / inPlace, detect, lost, compile, moving);
  std::cout << (impossible.empty() ? std::string(text)
                                   : "  in place: not possible, every copy of a part of the state died: " + impossible +
                                         " (`zero replicas 2` keeps a copy of each share)\n");
  for (const Restarted &r : restarts) {
    std::snprintf(text, sizeof text,
                  "  checkpoint every %-4lld steps   %10.1f s  %8.0f tokens/s  %5.1f%%: checkpoints %.1f s, restarts "
                  "%.1f s, redone %.1f s (%lld steps)\n",
                  static_cast<long long>(r.every), r.seconds, total / r.seconds, 100 * clean / r.seconds, r.writing,
                  r.restarting, r.redone, static_cast<long long>(r.stepsRedone));
    std::cout << text;
  }
  std::snprintf(text, sizeof text, "  (assumed: detection %g s, a restart %g s, checkpoints at %g GB/s per device)\n",
                replay.heartbeatSeconds, replay.restartSeconds, replay.checkpointGBps);
  std::cout << text;
  return 0;
}

} // namespace

int runTrain(const std::string &file, const std::vector<std::string> &planFiles, const runtime::RunOptions &run,
             const std::string &lossesPath, const std::string &backend, const std::vector<std::string> &switches,
             const std::vector<std::string> &failures, const std::string &faultTrace,
             const std::vector<std::string> &recoverPlans, const std::vector<std::string> &arguments) {
  bool reported = false;
  const int code = train(file, planFiles, run, lossesPath, backend, switches, failures, faultTrace, recoverPlans,
                         arguments, reported);
  runtime::recordExit(code, reported); // for hspmc's own launch of mpirun
  return code;
}

// hspmc explain-switch FROM TO: the slice table's totals, per kind and fused.
int runExplainSwitch(const std::string &from, const std::string &to, const std::string &clusterFile, bool json) {
  TrainingBuild a(from, {}, "explain-switch explain-switch"), b(to, {}, "explain-switch explain-switch");
  if (int code = a.report(); code != 0)
    return code;
  if (int code = b.report(); code != 0)
    return code;
  if (std::string differs = sameTraining(a, b); !differs.empty()) {
    std::cerr << "hspmc explain-switch: error: plan '" << b.plan().name << "' (" << to
              << ") cannot continue a run of plan '" << a.plan().name << "': " << differs << "\n";
    return 1;
  }
  std::optional<planner::Cluster> cluster;
  const std::string clusterPath = !clusterFile.empty() ? clusterFile : b.plan().clusterPath;
  if (!clusterPath.empty()) {
    std::vector<planner::ClusterError> errors;
    cluster = planner::loadCluster(clusterPath, a.compilation.stdlibDir() + "/devices.toml", errors);
    for (const auto &error : errors)
      std::cerr << error.loc.str() << ": error: " << error.message << "\n";
    if (!cluster)
      return 1;
    // Both plans' devices are the cluster's: a device outside it has no links to price.
    for (const TrainingBuild *x : {&a, &b})
      if (const int last = x->programs().empty() ? -1 : x->programs().rbegin()->first;
          last >= static_cast<int>(cluster->devices.size())) {
        std::cerr << "hspmc explain-switch: error: device " << last << " of plan '" << x->plan().name
                  << "' is not in the cluster (" << cluster->name << " has devices 0.."
                  << static_cast<int>(cluster->devices.size()) - 1 << ")\n";
        return 1;
      }
  }
  const auto start = std::chrono::steady_clock::now();
  runtime::StateSwitch plan;
  try {
    plan = runtime::planSwitchToFit(a.programs(), b.programs(), switchLinks(cluster ? &*cluster : nullptr),
                                    memoryOn(cluster ? &*cluster : nullptr));
  } catch (const runtime::SwitchError &e) {
    std::cerr << "hspmc explain-switch: error: " << e.what() << "\n";
    return 1;
  }
  const double planSeconds = secondsSince(start);
  // What the switch costs in steps of each plan, on the cluster's cost model.
  auto stepOf = [&](const TrainingBuild &x) {
    if (!cluster)
      return 0.0;
    return planner::simulate(x.programs(), planner::costModel(*cluster)).stepSeconds;
  };
  const double stepSeconds = stepOf(b), stepBefore = stepOf(a);
  int64_t tensors[2] = {0, 0}, bytes[2] = {0, 0};
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    ++tensors[plan.isParameter[i] ? 0 : 1];
    bytes[plan.isParameter[i] ? 0 : 1] += plan.tensorBytes[i];
  }
  nlohmann::json out = {{"from", a.plan().name},
                        {"to", b.plan().name},
                        {"parameters", {{"tensors", tensors[0]}, {"bytes", bytes[0]}}},
                        {"optimizer_state", {{"tensors", tensors[1]}, {"bytes", bytes[1]}}},
                        {"bytes_kept", plan.localBytes},
                        {"bytes_moved", plan.bytesMoved},
                        {"bytes_min", plan.bytesMin},
                        {"messages_unfused", plan.messagesUnfused},
                        {"messages", plan.messages.size()},
                        {"max_send_bytes", plan.maxSendBytes},
                        {"balanced_send_bytes", plan.balancedSendBytes},
                        {"estimated_seconds", plan.seconds},
                        {"lower_bound_seconds", plan.lowerSeconds},
                        {"buckets", plan.buckets.size()},
                        {"step_seconds_before", stepBefore},
                        {"step_seconds_after", stepSeconds},
                        {"planning_seconds", planSeconds}};
  if (json) {
    std::cout << ir::jsonText(out, 2) << "\n";
    return 0;
  }
  auto mib = [](int64_t n) { return static_cast<double>(n) / (1 << 20); };
  char text[1024];
  std::snprintf(text, sizeof text,
                "switch from plan '%s' (%zu devices) to plan '%s' (%zu devices)%s%s\n"
                "  parameters       %lld tensors, %.2f MiB\n"
                "  optimizer state  %lld tensors, %.2f MiB\n"
                "  kept in place    %.2f MiB\n"
                "  moved            %.2f MiB (the least possible: %.2f MiB)\n"
                "  messages         %zu fused (%lld per tensor and device pair)\n"
                "  busiest sender   %.2f MiB (balanced lower bound %.2f MiB)\n"
                "  estimated time   %.3f ms (busiest device's lower bound %.3f ms); planned in %.1f ms\n",
                a.plan().name.c_str(), plan.fromDevices.size(), b.plan().name.c_str(), plan.toDevices.size(),
                cluster ? " on cluster " : "", cluster ? cluster->name.c_str() : "", static_cast<long long>(tensors[0]),
                mib(bytes[0]), static_cast<long long>(tensors[1]), mib(bytes[1]), mib(plan.localBytes),
                mib(plan.bytesMoved), mib(plan.bytesMin), plan.messages.size(),
                static_cast<long long>(plan.messagesUnfused), mib(plan.maxSendBytes), mib(plan.balancedSendBytes),
                plan.seconds * 1e3, plan.lowerSeconds * 1e3, planSeconds * 1e3);
  std::cout << text;
  if (plan.byLayer)
    std::cout << "  in buckets       " << plan.buckets.size()
              << " by layer, one after another (the old and new arenas do not fit side by side)\n";
  if (cluster && stepBefore > 0) {
    std::snprintf(text, sizeof text, "  a step of '%s'  %.3f s simulated: the switch costs %.3f steps\n",
                  a.plan().name.c_str(), stepBefore, plan.seconds / stepBefore);
    std::cout << text;
  }
  if (cluster) {
    std::snprintf(text, sizeof text, "  a step of '%s'  %.3f s simulated: the switch costs %.3f steps\n",
                  b.plan().name.c_str(), stepSeconds, stepSeconds > 0 ? plan.seconds / stepSeconds : 0.0);
    std::cout << text;
  }
  return 0;
}

std::optional<planner::Cluster> TrainingBuild::simulationCluster(const std::string &clusterFile) {
  if (!checked)
    return std::nullopt;
  const std::string path = !clusterFile.empty() ? clusterFile : plan().clusterPath;
  if (path.empty()) {
    diags.error(plan().loc, "simulate needs a cluster: the plan names none (add `cluster \"FILE\"` or pass "
                            "--cluster FILE)");
    return std::nullopt;
  }
  std::vector<planner::ClusterError> errors;
  std::optional<planner::Cluster> cluster =
      planner::loadCluster(path, compilation.stdlibDir() + "/devices.toml", errors);
  for (const auto &error : errors)
    diags.error(error.loc, error.message);
  return cluster;
}

void TrainingBuild::compileOn(const planner::Cluster &cluster) {
  // The gate checked against this cluster (the same file), so its programs are these.
  if (checked && checkedPrograms.ok && !checkedPrograms.programs.empty())
    takeCheckedOrCompile();
  else
    compile(planner::linkModel(cluster));
  if (!result || !result->ok)
    return;
  for (const auto &[device, program] : programs())
    if (device >= static_cast<int>(cluster.devices.size()))
      diags.error(plan().loc, "device " + std::to_string(device) + " is not in the cluster '" + cluster.name +
                                  "' (it has " + std::to_string(cluster.devices.size()) + " devices)");
}

// Compiles FILE under its plan for training and simulates one step on the cluster.
int runSimulate(const std::string &file, const std::vector<std::string> &planFiles, const std::string &clusterFile,
                const std::string &tracePath, bool json, const FaultReplay &replay) {
  if (!tracePath.empty())
    if (std::string why = ir::unwritable(tracePath); !why.empty()) {
      std::cerr << "hspmc simulate: error: cannot write " << tracePath << " (--trace): " << why << "\n";
      return 1;
    }
  const auto started = std::chrono::steady_clock::now();
  TrainingBuild t(file, planFiles, "simulate", true, clusterFile);
  const std::optional<planner::Cluster> cluster = t.simulationCluster(clusterFile);
  if (cluster)
    t.compileOn(*cluster);
  if (int code = t.report(json); code != 0)
    return code;
  if (!tracePath.empty()) { // not over a file it read
    std::vector<ir::ReadFile> inputs = {{clusterFile.empty() ? t.plan().clusterPath : clusterFile, "the cluster file"},
                                        {replay.trace, "the fault trace (--fault-trace)"}};
    for (const std::string &source : t.sources.names())
      inputs.push_back({source, "a source file of the plan"});
    if (std::string why = ir::readByTheCommand(tracePath, inputs); !why.empty()) {
      std::cerr << "hspmc simulate: error: cannot write " << tracePath << " (--trace): " << why << "\n";
      return 1;
    }
  }
  const auto &build = t.build;
  const auto &result = t.result;
  const planner::CostModel model = planner::costModel(*cluster);
  const double compileSeconds = secondsSince(started);
  const auto simulating = std::chrono::steady_clock::now();
  const planner::Simulation sim = planner::simulate(result->programs[0], model, !tracePath.empty());
  const double simulateSeconds = secondsSince(simulating);
  const runtime::ModelInfo info = driver::modelInfo(*build->graph);
  const double tokens = static_cast<double>(info.batch * info.seq);
  std::ostringstream report; // printed here, or with --fault-trace once the replay's checks pass
  if (json) {
    nlohmann::json out = {{"plan", build->plans[0].name},      {"cluster", cluster->name},
                          {"step_seconds", sim.stepSeconds},   {"tokens_per_second", tokens / sim.stepSeconds},
                          {"compile_seconds", compileSeconds}, {"simulate_seconds", simulateSeconds},
                          {"devices", nlohmann::json::array()}};
    for (const auto &[device, d] : sim.devices)
      out["devices"].push_back({{"device", device},
                                {"type", cluster->devices[static_cast<size_t>(device)].type},
                                {"busy", d.busy},
                                {"communicating", d.communicating},
                                {"idle", d.idle},
                                {"peak_bytes", d.peakBytes}});
    report << ir::jsonText(out, 2) << "\n";
  } else {
    char line[200];
    std::snprintf(line, sizeof line,
                  "step %.3f ms, %.0f tokens/s (%s under plan '%s' on cluster '%s'; compiled in %.2f s, simulated in "
                  "%.2f s)\n",
                  sim.stepSeconds * 1e3, tokens / sim.stepSeconds, build->graph->name().c_str(),
                  build->plans[0].name.c_str(), cluster->name.c_str(), compileSeconds, simulateSeconds);
    report << line << "device  type      busy           communicating  idle           peak memory\n";
    for (const auto &[device, d] : sim.devices) {
      std::snprintf(line, sizeof line, "%-6d  %-8s  %7.3f ms %3.0f%%  %7.3f ms %3.0f%%  %7.3f ms %3.0f%%  %.1f MiB\n",
                    device, cluster->devices[static_cast<size_t>(device)].type.c_str(), d.busy * 1e3,
                    100 * d.busy / sim.stepSeconds, d.communicating * 1e3, 100 * d.communicating / sim.stepSeconds,
                    d.idle * 1e3, 100 * d.idle / sim.stepSeconds, static_cast<double>(d.peakBytes) / (1 << 20));
      report << line;
    }
  }
  if (!tracePath.empty()) {
    std::map<int, std::vector<runtime::TraceEvent>> events;
    for (const auto &e : sim.events)
      events[e.device].push_back({e.name, e.communication, e.start, e.seconds});
    try {
      runtime::writeTrace(tracePath, events);
    } catch (const runtime::RunError &e) { // checked above; the disk may still fill
      std::cerr << "hspmc simulate: error: " << e.what() << "\n";
      return 1;
    }
  }
  if (replay.trace.empty()) {
    std::cout << report.str();
    return 0;
  }
  return replayFaults(t, *cluster, clusterFile.empty() ? t.plan().clusterPath : clusterFile, sim.stepSeconds, tokens,
                      replay, report.str());
}

// Why `dir` cannot take hspmc build's files `names` ("" where it can): it must be a directory
// (it is created where it does not exist) that holds none of them, or one hspmc build wrote
// before (its CMakeLists.txt says so). Before, `-o ""` and `-o .` wrote over the CMakeLists.txt
// of the directory the user stood in.
std::string outputDirProblem(const std::string &dir, const std::vector<std::string> &names) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (dir.empty())
    return "the path is empty";
  if (!fs::exists(dir, ec))
    return "";
  if (!fs::is_directory(dir, ec))
    return "it is not a directory";
  std::ifstream cmake(fs::path(dir) / "CMakeLists.txt");
  std::string first;
  if (cmake && std::getline(cmake, first) && first.rfind(codegen::kGeneratedMarker, 0) == 0)
    return ""; // an earlier hspmc build's: its files are replaced
  for (const std::string &name : names)
    if (fs::exists(fs::path(dir) / name, ec))
      return "it holds " + name +
             ", which hspmc build did not write (it would be replaced): give a new or empty "
             "directory";
  return "";
}

// `text` as one word of a POSIX shell command line.
std::string shellWord(const std::string &text) {
  std::string quoted = "'";
  for (char c : text)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Runs `command` (a build), appending what it prints to `log`, and says on stderr how far it
// is at every tenth of its steps (ninja's `[k/n]` lines): a plan of many devices compiles one
// source a device, minutes of work. Returns whether the command succeeded.
bool buildWithProgress(const std::string &command, const std::string &log) {
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe)
    return false;
  std::ofstream out(log, std::ios::app);
  char line[4096];
  long tenths = 0;
  while (std::fgets(line, sizeof line, pipe)) {
    out << line;
    long done = 0, total = 0;
    if (std::sscanf(line, "[%ld/%ld]", &done, &total) == 2 && total > 0 && done * 10 / total > tenths) {
      tenths = done * 10 / total;
      std::cerr << "compiling: " << done << " of " << total << " build steps" << std::endl;
    }
  }
  return pclose(pipe) == 0;
}

// Where hspmc build has CMake build the generated code, beside the binary it names after the
// plan: a name no plan has (a plan's name is an identifier), so that a plan named `build` builds.
constexpr const char *kCmakeBuild = "cmake-build";

// Compiles FILE under its plan for training and writes (and builds) the generated C++.
int runBuild(const std::string &file, const std::vector<std::string> &planFiles, const std::string &target,
             const std::string &outDir, bool compile, const std::vector<std::string> &also) {
#ifndef HSPMD_HAVE_CUDA
  if (target == "cuda") {
    std::cerr << "hspmc build: error: --target cuda: " << kWithoutCuda << "\n";
    return 1;
  }
#endif
  const codegen::Target kind = target == "cuda" ? codegen::Target::Cuda : codegen::Target::Cpu;
  if (std::string why = outputDirProblem(outDir, {}); !why.empty()) {
    std::cerr << "hspmc build: error: cannot write to " << outDir << ": " << why << "\n";
    return 1;
  }
  TrainingBuild t(file, planFiles, "build");
  if (int code = t.report(); code != 0)
    return code;
  const auto &build = t.build;
  const std::string name = build->plans[0].name;
  if (name.size() > NAME_MAX) { // the binary is named after the plan
    std::cerr << t.plan().loc.str() << ": error: plan '" << name.substr(0, 16) << "...' has a name of " << name.size()
              << " bytes: hspmc build names the binary after its plan, and a file name holds at most " << NAME_MAX
              << "\n";
    return 1;
  }
  // The plans the binary can switch to (--also), each compiled and checked like the first.
  std::vector<std::unique_ptr<TrainingBuild>> others;
  std::vector<codegen::PlanToBuild> plans = {{&t.programs(), &t.plan()}};
  std::set<std::string> names = {name};
  size_t devices = t.programs().size();
  for (const std::string &path : also) {
    auto other = std::make_unique<TrainingBuild>(path, std::vector<std::string>{}, "build --also");
    if (int code = other->report(); code != 0)
      return code;
    if (std::string differs = sameTraining(t, *other); !differs.empty()) {
      std::cerr << "hspmc build: error: --also " << path << ": plan '" << other->plan().name
                << "' cannot continue a run of plan '" << name << "': " << differs << "\n";
      return 1;
    }
    if (!names.insert(other->plan().name).second) {
      std::cerr << "hspmc build: error: --also " << path << ": the binary already has a plan named '"
                << other->plan().name << "' (--switch names plans)\n";
      return 1;
    }
    plans.push_back({&other->programs(), &other->plan()});
    others.push_back(std::move(other));
  }
  {
    runtime::RunPlans all;
    for (const auto &plan : plans)
      all.plans.push_back(plan.programs);
    devices = all.devices().size();
  }
  // For GPUs: each device's type by its plan's cluster, and the GPU types.
  GpuTypes gpuTypes;
  if (kind == codegen::Target::Cuda) {
    std::vector<std::pair<const std::map<int, ir::DeviceProgram> *, std::string>> clusters;
    for (const codegen::PlanToBuild &plan : plans)
      clusters.emplace_back(plan.programs, plan.plan->clusterPath);
    gpuTypes = gpuTypesOf(clusters, t.compilation.stdlibDir() + "/devices.toml");
    for (size_t k = 0; k < plans.size(); ++k)
      plans[k].deviceTypes = gpuTypes.planned[k].second;
  }
#ifdef HSPMD_NCCL_LIBRARY
  const std::string ncclLibrary = HSPMD_NCCL_LIBRARY;
#else
  const std::string ncclLibrary;
#endif
  const auto files =
      codegen::generate(plans, driver::modelInfo(*build->graph), name,
                        codegen::Toolchain{HSPMD_SOURCE_DIR, HSPMD_BINARY_DIR, ncclLibrary}, kind, gpuTypes.types);
  {
    std::vector<std::string> written = {"build.log", kCmakeBuild, name};
    for (const auto &[path, text] : files)
      written.push_back(path);
    if (std::string why = outputDirProblem(outDir, written); !why.empty()) {
      std::cerr << "hspmc build: error: cannot write to " << outDir << ": " << why << "\n";
      return 1;
    }
  }
  std::error_code error;
  std::filesystem::create_directories(outDir, error);
  if (error) { // a file where a directory of the path should be, a read-only file system
    std::cerr << "hspmc build: error: cannot create the directory " << outDir << ": " << error.message() << "\n";
    return 1;
  }
  for (const auto &[path, text] : files) {
    const std::string written = (std::filesystem::path(outDir) / path).string();
    if (const std::string why = ir::writeWhole(written, text); !why.empty()) {
      std::cerr << "hspmc build: error: cannot write " << written << " (" << why << ")\n";
      return 1;
    }
  }
  size_t programs = 0;
  for (const auto &plan : plans)
    programs += plan.programs->size();
  std::cout << "wrote " << files.size() << " files to " << outDir << " (" << programs << " device programs"
            << (plans.size() > 1 ? " of " + std::to_string(plans.size()) + " plans" : std::string()) << ")"
            << std::endl;
  if (!compile)
    return 0;
  const std::string log = (std::filesystem::path(outDir) / "build.log").string();
  const std::string buildDir = (std::filesystem::path(outDir) / kCmakeBuild).string();
  const std::string configure = "cmake -S " + shellWord(outDir) + " -B " + shellWord(buildDir) +
                                " -G Ninja -DCMAKE_BUILD_TYPE=Release > " + shellWord(log) + " 2>&1";
  std::cout << "compiling (log: " << log << ")" << std::endl;
  if (std::system(configure.c_str()) != 0 || !buildWithProgress("cmake --build " + shellWord(buildDir), log)) {
    std::cerr << "hspmc build: error: compiling the generated code failed; see " << log << "\n";
    return 1;
  }
  const auto binary = std::filesystem::path(outDir) / name;
  std::filesystem::copy_file(std::filesystem::path(buildDir) / name, binary,
                             std::filesystem::copy_options::overwrite_existing, error);
  if (error) {
    std::cerr << "hspmc build: error: cannot copy the binary to " << binary.string() << ": " << error.message() << "\n";
    return 1;
  }
  std::cout << "built " << binary.string() << " (run it with --data FILE; --backend "
            << (target == "cuda" && !ncclLibrary.empty() ? "nccl" : "mpi") << " under mpirun -np " << devices
            << (plans.size() > 1 ? "; --switch STEP:NAME to change plans" : "") << ")" << std::endl;
  return 0;
}

} // namespace hspmd::cli
