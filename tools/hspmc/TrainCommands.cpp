// TrainCommands.cpp - hspmc train, simulate and build: a plan compiled for training, then run
// on this machine, simulated on its cluster, or written out as C++ and built.
#include "tools/hspmc/Commands.h"

#include "codegen/Codegen.h"
#include "planner/Estimates.h"
#include "planner/Simulator.h"
#include "planner/driver/ModelInfo.h"
#include "runtime/MpiRun.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace hspmd::cli {

// Compiles FILE under its plan for training and runs every device's program on a thread.
int runTrain(const std::string &file, const std::vector<std::string> &planFiles, runtime::RunOptions run,
             const std::string &lossesPath, const std::string &backend) {
  TrainingBuild t(file, planFiles, "train");
  if (int code = t.report(); code != 0)
    return code;
  const auto &build = t.build;
  const auto &result = t.result;
  const runtime::ModelInfo model = driver::modelInfo(*build->graph);
  const bool mpi = backend == "mpi";
  const bool leader = !mpi || runtime::launcherRank() <= 0; // prints and writes files
  if (leader)
    std::cout << runtime::runBanner(model, build->plans[0].name, result->programs[0].size(), mpi, run.data)
              << std::endl;
  run.progress = &std::cout;
  try {
    const runtime::RunResult trained =
        mpi ? runtime::runMpi(result->programs[0], model, run) : runtime::runThreads(result->programs[0], model, run);
    if (leader && !lossesPath.empty())
      runtime::writeLosses(lossesPath, build->plans[0].name, model, run.seed, build->plans[0].optimizer,
                           build->plans[0].optimizerArgs, trained);
  } catch (const std::exception &e) {
    std::cerr << "hspmc train: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

// Compiles FILE under its plan for training and simulates one step on the cluster.
int runSimulate(const std::string &file, const std::vector<std::string> &planFiles, const std::string &clusterFile,
                const std::string &tracePath, bool json) {
  TrainingBuild t(file, planFiles, "simulate", true, clusterFile);
  std::optional<planner::Cluster> cluster;
  if (t.checked) {
    const std::string path = !clusterFile.empty() ? clusterFile : t.plan().clusterPath;
    if (path.empty()) {
      t.diags.error(t.plan().loc, "simulate needs a cluster: the plan names none (add `cluster \"FILE\"` or "
                                  "pass --cluster FILE)");
    } else {
      std::vector<planner::ClusterError> errors;
      cluster = planner::loadCluster(path, t.compilation.stdlibDir() + "/devices.toml", errors);
      for (const auto &error : errors)
        t.diags.error(error.loc, error.message);
    }
  }
  if (cluster) {
    t.compile(planner::linkModel(*cluster));
    for (const auto &[device, program] : t.result->ok ? t.result->programs[0] : std::map<int, ir::DeviceProgram>{})
      if (device >= static_cast<int>(cluster->devices.size()))
        t.diags.error(t.plan().loc, "device " + std::to_string(device) + " is not in the cluster (it has " +
                                        std::to_string(cluster->devices.size()) + " devices)");
  }
  if (int code = t.report(json); code != 0)
    return code;
  const auto &build = t.build;
  const auto &result = t.result;
  const planner::CostModel model = planner::costModel(*cluster);
  const planner::Simulation sim = planner::simulate(result->programs[0], model, !tracePath.empty());
  const runtime::ModelInfo info = driver::modelInfo(*build->graph);
  const double tokens = static_cast<double>(info.batch * info.seq);
  if (json) {
    nlohmann::json out = {{"plan", build->plans[0].name},
                          {"cluster", cluster->name},
                          {"step_seconds", sim.stepSeconds},
                          {"tokens_per_second", tokens / sim.stepSeconds},
                          {"devices", nlohmann::json::array()}};
    for (const auto &[device, d] : sim.devices)
      out["devices"].push_back({{"device", device},
                                {"type", cluster->devices[static_cast<size_t>(device)].type},
                                {"busy", d.busy},
                                {"communicating", d.communicating},
                                {"idle", d.idle},
                                {"peak_bytes", d.peakBytes}});
    std::cout << out.dump(2) << "\n";
  } else {
    char line[200];
    std::snprintf(line, sizeof line, "step %.3f ms, %.0f tokens/s (%s under plan '%s' on cluster '%s')\n",
                  sim.stepSeconds * 1e3, tokens / sim.stepSeconds, build->graph->name().c_str(),
                  build->plans[0].name.c_str(), cluster->name.c_str());
    std::cout << line << "device  type      busy           communicating  idle           peak memory\n";
    for (const auto &[device, d] : sim.devices) {
      std::snprintf(line, sizeof line, "%-6d  %-8s  %7.3f ms %3.0f%%  %7.3f ms %3.0f%%  %7.3f ms %3.0f%%  %.1f MiB\n",
                    device, cluster->devices[static_cast<size_t>(device)].type.c_str(), d.busy * 1e3,
                    100 * d.busy / sim.stepSeconds, d.communicating * 1e3, 100 * d.communicating / sim.stepSeconds,
                    d.idle * 1e3, 100 * d.idle / sim.stepSeconds, static_cast<double>(d.peakBytes) / (1 << 20));
      std::cout << line;
    }
  }
  if (!tracePath.empty()) {
    std::map<int, std::vector<runtime::TraceEvent>> events;
    for (const auto &e : sim.events)
      events[e.device].push_back({e.name, e.communication, e.start, e.seconds});
    runtime::writeTrace(tracePath, events);
  }
  return 0;
}

// Compiles FILE under its plan for training and writes (and builds) the generated C++.
int runBuild(const std::string &file, const std::vector<std::string> &planFiles, const std::string &target,
             const std::string &outDir, bool compile) {
  if (target != "cpu") {
    std::cerr << "hspmc build: error: --target " << target
              << " is not available yet (the CUDA kernels and NCCL backend are not written); use --target cpu\n";
    return 1;
  }
  TrainingBuild t(file, planFiles, "build");
  if (int code = t.report(); code != 0)
    return code;
  const auto &build = t.build;
  const auto &result = t.result;
  const std::string name = build->plans[0].name;
  const auto files = codegen::generateCpu(result->programs[0], driver::modelInfo(*build->graph), build->plans[0], name,
                                          codegen::Toolchain{HSPMD_SOURCE_DIR, HSPMD_BINARY_DIR});
  std::error_code error;
  std::filesystem::create_directories(outDir, error);
  for (const auto &[path, text] : files) {
    std::ofstream out(std::filesystem::path(outDir) / path);
    out << text;
    if (!out) {
      std::cerr << "hspmc build: error: cannot write " << (std::filesystem::path(outDir) / path).string() << "\n";
      return 1;
    }
  }
  std::cout << "wrote " << files.size() << " files to " << outDir << " (" << result->programs[0].size()
            << " device programs)" << std::endl;
  if (!compile)
    return 0;
  const std::string log = (std::filesystem::path(outDir) / "build.log").string();
  const std::string buildDir = (std::filesystem::path(outDir) / "build").string();
  const std::string command = "cmake -S '" + outDir + "' -B '" + buildDir +
                              "' -G Ninja -DCMAKE_BUILD_TYPE=Release > '" + log + "' 2>&1 && cmake --build '" +
                              buildDir + "' >> '" + log + "' 2>&1";
  std::cout << "compiling (log: " << log << ")" << std::endl;
  if (std::system(command.c_str()) != 0) {
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
  std::cout << "built " << binary.string() << " (run it with --data FILE; --backend mpi under mpirun -np "
            << result->programs[0].size() << ")" << std::endl;
  return 0;
}

} // namespace hspmd::cli
