// hspmc - the hspmd compiler driver: command-line wiring of the libraries (docs/cli.md).
//
//   hspmc check FILE...                  parse and elaborate models, plans and cluster files
//   hspmc lint PLAN                      check a plan against its model and cluster (docs/lint.md)
//   hspmc passes                         the compiler's passes in order, one line each
//   hspmc dump-ir FILE [--after PASS]    the textual IR of a model (under a plan, after a pass)
//   hspmc dump-program PLAN --device D   the DeviceProgram one device runs
//   hspmc explain-reshard ...            how a tensor moves from one annotation to another
//   hspmc train PLAN --data FILE         train on this machine (threads, or MPI)
//   hspmc build PLAN -o DIR              per-device C++ and a binary that trains
//   hspmc simulate PLAN                  one step on the plan's cluster, on the cost model
//   hspmc plan MODEL --cluster C ...     write a plan for a model on a cluster
//   hspmc --version
//
// Exit codes: 0 success, 1 user errors (diagnostics printed), 2 usage errors.
#include "codegen/Codegen.h"
#include "frontend/Compilation.h"
#include "passes/Pipeline.h"
#include "planner/Cluster.h"
#include "planner/Estimates.h"
#include "planner/Lint.h"
#include "planner/Simulator.h"
#include "runtime/MpiRun.h"
#include "tools/hspmc/Driver.h"
#include "tools/hspmc/Plan.h"
#include "tools/hspmc/Train.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#ifndef HSPMD_VERSION
#define HSPMD_VERSION "0.0.0"
#endif

using namespace hspmd;
using frontend::CollectingSink;
using frontend::Compilation;
using frontend::DiagnosticEngine;
using frontend::SourceManager;

namespace {

nlohmann::json diagnosticJson(const frontend::Diagnostic &diagnostic) {
  nlohmann::json out = {{"severity", frontend::severityName(diagnostic.severity)},
                        {"file", diagnostic.loc.file},
                        {"line", diagnostic.loc.line},
                        {"column", diagnostic.loc.col},
                        {"message", diagnostic.message}};
  if (!diagnostic.code.empty())
    out["code"] = diagnostic.code;
  out["notes"] = nlohmann::json::array();
  for (const auto &note : diagnostic.notes)
    out["notes"].push_back(diagnosticJson(note));
  return out;
}

// Prints what was collected, as text (stderr) or JSON (stdout). Returns the exit code.
int finish(const CollectingSink &sink, const SourceManager &sources, bool json, int errors) {
  if (json) {
    nlohmann::json out = {{"ok", errors == 0}, {"diagnostics", nlohmann::json::array()}};
    for (const auto &diagnostic : sink.diagnostics)
      out["diagnostics"].push_back(diagnosticJson(diagnostic));
    std::cout << out.dump(2) << "\n";
  } else {
    for (const auto &diagnostic : sink.diagnostics)
      std::cerr << frontend::renderDiagnostic(diagnostic, &sources);
  }
  return errors == 0 ? 0 : 1;
}

void checkToml(const std::string &path, Compilation &compilation) {
  std::vector<planner::ClusterError> errors;
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && text.empty()) {
    compilation.diags().error(ir::Location{path, 0, 0, 1}, "cannot read '" + path + "'");
    return;
  }
  compilation.sources().addBuffer(path, text);
  planner::checkTomlFile(path, compilation.stdlibDir() + "/devices.toml", errors);
  for (const auto &error : errors)
    compilation.diags().error(error.loc, error.message);
}

int runCheck(const std::vector<std::string> &files, bool json) {
  SourceManager sources;
  CollectingSink sink;
  DiagnosticEngine diags(sink);
  for (const std::string &file : files) {
    Compilation compilation(sources, diags);
    if (std::filesystem::path(file).extension() == ".toml") {
      checkToml(file, compilation);
      continue;
    }
    if (const frontend::FileAst *ast = compilation.load(file))
      compilation.checkFile(*ast);
  }
  int code = finish(sink, sources, json, diags.errorCount());
  if (!json && code == 0)
    std::cout << "ok: " << files.size() << (files.size() == 1 ? " file" : " files") << " checked\n";
  return code;
}

// The pass table (passes/Pipeline.cpp): name, summary, and what --after prints.
int runPasses() {
  size_t width = 0;
  for (const auto &pass : passes::passTable())
    width = std::max(width, pass.name.size());
  for (const auto &pass : passes::passTable())
    std::cout << pass.name << std::string(width + 2 - pass.name.size(), ' ') << pass.summary
              << (pass.programs ? " [--after prints the DevicePrograms]" : "") << "\n";
  return 0;
}

int runDumpIr(const std::string &file, const std::vector<std::string> &planFiles, const std::string &modelName,
              const std::string &after, bool timePasses, bool train) {
  SourceManager sources;
  CollectingSink sink;
  DiagnosticEngine diags(sink);
  Compilation compilation(sources, diags);
  auto build = driver::elaborateBuild(compilation, file, planFiles, modelName);
  std::ostringstream dump, timing;
  if (build && (!after.empty() || timePasses)) {
    if (build->plans.empty()) {
      diags.error(ir::Location{file, 0, 0, 1}, "--after and --time-passes need a plan (--plan PLAN)");
    } else {
      passes::PipelineOptions options{after, &dump, timePasses ? &timing : nullptr};
      options.train = train;
      passes::runPipeline(*build->graph, build->plans, options,
                          [&](const passes::Problem &problem) { driver::reportProblem(diags, problem); });
    }
  } else if (build && !build->plans.empty()) {
    // Without --after: the elaborated graph with the plan's own `annotate` lines.
    build->graph->setNumPlans(1);
    for (const auto &pinned : build->plans[0].annotations)
      build->graph->findValue(pinned.value)->annotations[0] = pinned.annotation;
    dump << ir::printGraph(*build->graph);
  } else if (build) {
    dump << ir::printGraph(*build->graph);
  }
  int code = finish(sink, sources, false, diags.errorCount());
  std::cerr << timing.str();
  std::cout << dump.str(); // also when a later pass fails: the IR up to --after is what one debugs with
  return build ? code : 1;
}

int runLint(const std::string &planFile, const std::string &modelFile, const std::string &clusterFile, bool json,
            bool werror) {
  SourceManager sources;
  CollectingSink sink;
  DiagnosticEngine diags(sink);
  Compilation compilation(sources, diags);
  driver::lintFile(compilation, planFile, modelFile, clusterFile);
  const int errors = diags.errorCount(), warnings = diags.warningCount();
  int code = finish(sink, sources, json, errors + (werror ? warnings : 0));
  if (!json)
    std::cout << "lint: " << errors << (errors == 1 ? " error, " : " errors, ") << warnings
              << (warnings == 1 ? " warning\n" : " warnings\n");
  return code;
}

int runDumpProgram(const std::string &file, const std::vector<std::string> &planFiles, int device, bool train) {
  SourceManager sources;
  CollectingSink sink;
  DiagnosticEngine diags(sink);
  Compilation compilation(sources, diags);
  auto build = driver::elaborateBuild(compilation, file, planFiles, "");
  std::string text;
  if (build && build->plans.empty())
    diags.error(ir::Location{file, 0, 0, 1}, "dump-program needs a plan (--plan PLAN)");
  else if (build) {
    passes::PipelineOptions options;
    options.train = train;
    auto result = passes::runPipeline(*build->graph, build->plans, options,
                                      [&](const passes::Problem &problem) { driver::reportProblem(diags, problem); });
    if (result.ok) {
      auto it = result.programs[0].find(device);
      if (it == result.programs[0].end())
        diags.error(ir::Location{file, 0, 0, 1},
                    "device " + std::to_string(device) + " takes no part in plan '" + build->plans[0].name + "'");
      else
        text = ir::printProgram(it->second);
    }
  }
  int code = finish(sink, sources, false, diags.errorCount());
  if (code == 0)
    std::cout << text;
  return code;
}

// What train, simulate and build share: FILE under its plan, compiled for training into
// DevicePrograms, with the diagnostics collected for finish().
struct TrainingBuild {
  SourceManager sources;
  CollectingSink sink;
  DiagnosticEngine diags{sink};
  Compilation compilation{sources, diags};
  std::optional<driver::Build> build;
  std::optional<passes::PipelineResult> result;

  /// Elaborates, and unless `later`, compiles (later: the caller calls compile()).
  TrainingBuild(const std::string &file, const std::vector<std::string> &planFiles, const std::string &command,
                bool later = false) {
    build = driver::elaborateBuild(compilation, file, planFiles, "");
    if (build && build->plans.empty())
      diags.error(ir::Location{file, 0, 0, 1}, command + " needs a plan (--plan PLAN)");
    if (!later && hasPlan())
      compile();
  }
  bool hasPlan() const { return build && !build->plans.empty(); }
  void compile(const std::optional<passes::LinkModel> &links = {}) {
    passes::PipelineOptions options;
    options.train = true;
    if (links)
      options.links.assign(build->plans.size(), *links);
    result = passes::runPipeline(*build->graph, build->plans, options,
                                 [&](const passes::Problem &problem) { driver::reportProblem(diags, problem); });
  }
  /// Prints the diagnostics; 0 when the programs are there, else the exit code.
  int report(bool json = false) {
    const int code = finish(sink, sources, json, diags.errorCount());
    return code != 0 ? code : (!result || !result->ok) ? 1 : 0;
  }
  const std::map<int, ir::DeviceProgram> &programs() const { return result->programs[0]; }
  const ir::PlanSpec &plan() const { return build->plans[0]; }
};

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
  TrainingBuild t(file, planFiles, "simulate", true);
  std::optional<planner::Cluster> cluster;
  if (t.hasPlan()) {
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
    for (const auto &[device, program] : t.result->programs[0])
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

// hspmc plan: the planner's search, its finalists simulated, the fastest written
// (tools/hspmc/Plan.h).
// hspmc plan --length-distribution: one plan per length bucket, and what switching between
// them gains over padding every sequence to --seq.
int runPlanForLengths(const driver::PlanFiles &files, const std::string &lengths) {
  driver::LengthPlan plan;
  if (!driver::planForLengths(files, lengths, plan, std::cout, std::cerr))
    return 1;
  std::printf("\n%10s %10s %8s %12s  %s\n", "positions", "sequences", "tokens", "step", "plan");
  for (const auto &b : plan.buckets)
    std::printf("%10lld %10lld %7.1f%% %9.3f ms  %s\n", static_cast<long long>(b.positions),
                static_cast<long long>(b.sequences), 100 * b.tokens / plan.tokens, b.stepSeconds * 1e3, b.path.c_str());
  std::printf("the distribution (%.0f tokens): %.3f s with a plan per bucket, %.3f s padded to %lld under one plan: "
              "%.2fx\n",
              plan.tokens, plan.bucketedSeconds, plan.paddedSeconds, static_cast<long long>(files.sequence),
              plan.paddedSeconds / plan.bucketedSeconds);
  return 0;
}

int runPlan(const driver::PlanFiles &files, bool report) {
  driver::PlanOutcome outcome;
  if (!driver::planModel(files, outcome, std::cout, std::cerr))
    return 1;
  const auto &chosen = *outcome.chosen;
  const double seconds = chosen.simulated.seconds;
  std::printf("wrote %s: %s\n", files.out.c_str(), chosen.candidate.strategy.c_str());
  std::printf("simulated step %.3f ms, %.0f tokens/s", seconds * 1e3, static_cast<double>(files.tokens) / seconds);
  if (outcome.bestSymmetric && outcome.bestSymmetric != &chosen)
    std::printf("; best symmetric plan %.3f ms: %.2fx", outcome.bestSymmetric->simulated.seconds * 1e3,
                outcome.bestSymmetric->simulated.seconds / seconds);
  else if (!outcome.bestSymmetric)
    std::printf("; no symmetric plan fits");
  else
    std::printf("; it is the best symmetric plan");
  std::printf("\n");
  if (report) {
    planner::PlanRequest request;
    request.tokens = files.tokens;
    request.sequence = files.sequence;
    const planner::LocalCheck check =
        planner::checkLocalPrograms(chosen.candidate, outcome.shape, outcome.cluster, request);
    std::printf("search %.1f ms over %d candidates, simulation of the finalists %.1f s\nlocal programs: %s\n",
                outcome.searchSeconds * 1e3, outcome.considered, outcome.simulateSeconds, check.text.c_str());
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

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"hspmc - compiles hspmd models and HSPMD annotation plans", "hspmc"};
  app.set_version_flag("--version", std::string("hspmc ") + HSPMD_VERSION);
  app.require_subcommand(1);

  auto *check =
      app.add_subcommand("check", "Parse and elaborate .hspmd files (models and plans) and cluster .toml files");
  std::vector<std::string> checkFiles;
  std::string checkFormat = "text";
  check->add_option("files", checkFiles, "Files to check")->required();
  check->add_option("--format", checkFormat, "Output format")->check(CLI::IsMember({"text", "json"}));

  auto *passList = app.add_subcommand("passes", "List the compiler's passes in the order they run");

  auto *dump = app.add_subcommand("dump-ir", "Print the textual IR of a model, optionally under a plan");
  std::string dumpFile, dumpModel, dumpAfter;
  std::vector<std::string> dumpPlans;
  bool timePasses = false;
  dump->add_option("file", dumpFile, "A .hspmd file with the model (or a plan that imports it)")->required();
  dump->add_option("--plan", dumpPlans,
                   "A plan file (repeat for several plans): binds the model's arguments and symbols");
  dump->add_option("--model", dumpModel, "Which model of FILE (default: the last one defined in it)");
  dump->add_option("--after", dumpAfter, "Print the IR after this pass (hspmc passes lists them)")
      ->check(CLI::IsMember(passes::passNames()));
  dump->add_flag("--time-passes", timePasses, "Print the time each pass takes (stderr)");
  bool train = false;
  dump->add_flag("--train", train, "Differentiate the loss: add the backward graph and the gradient synchronisation");

  auto *trainCommand = app.add_subcommand("train", "Compile a plan for training and run it on this machine (threads)");
  std::string trainFile;
  std::vector<std::string> trainPlans;
  runtime::RunOptions trainRun;
  int64_t trainTimeout = 120;
  std::string trainLosses, trainBackend = "threads";
  trainCommand->add_option("file", trainFile, "The plan (or model) file")->required();
  trainCommand->add_option("--plan", trainPlans, "A plan file, when FILE is the model");
  trainCommand->add_option("--data", trainRun.data, "Training data: text (bytes), .bin/.u32.bin tokens or .jsonl")
      ->required();
  trainCommand->add_option("--steps", trainRun.steps, "Optimizer steps (0: with --save, the initial parameters)")
      ->check(CLI::NonNegativeNumber);
  trainCommand->add_option("--losses", trainLosses, "Write the per-step losses and the optimizer as JSON");
  trainCommand->add_option("--backend", trainBackend, "threads (every device a thread) or mpi (under mpirun -np N)")
      ->check(CLI::IsMember({"threads", "mpi"}));
  trainCommand->add_option("--seed", trainRun.seed, "Seed of the initial parameters");
  trainCommand->add_option("--save", trainRun.save, "Write a checkpoint (plan-independent) at the end");
  trainCommand->add_option("--load", trainRun.load, "Start from a checkpoint (saved under any plan)");
  trainCommand->add_option("--trace", trainRun.trace, "Write a Chrome trace (one track per device)");
  trainCommand->add_option("--timeout", trainTimeout, "Seconds a device waits for a peer before failing")
      ->check(CLI::PositiveNumber);

  auto *simulateCommand =
      app.add_subcommand("simulate", "Simulate one training step of a plan on its cluster (cost model)");
  std::string simulateFile, simulateCluster, simulateTrace, simulateFormat = "text";
  std::vector<std::string> simulatePlans;
  simulateCommand->add_option("file", simulateFile, "The plan (or model) file")->required();
  simulateCommand->add_option("--plan", simulatePlans, "A plan file, when FILE is the model");
  simulateCommand->add_option("--cluster", simulateCluster, "A cluster file instead of the plan's own");
  simulateCommand->add_option("--trace", simulateTrace, "Write the simulated step as a Chrome trace");
  simulateCommand->add_option("--format", simulateFormat, "Output format")->check(CLI::IsMember({"text", "json"}));

  auto *planCommand =
      app.add_subcommand("plan", "Write a plan for a model on a cluster: pipelines, tensor, context and head "
                                 "parallelism sized for its devices");
  driver::PlanFiles planFiles;
  bool planReport = false;
  planCommand->add_option("model", planFiles.model, "The model file")->required();
  planCommand->add_option("--cluster", planFiles.cluster, "The cluster file")->required();
  planCommand->add_option("--seq", planFiles.sequence, "Sequence length (positions)")
      ->required()
      ->check(CLI::PositiveNumber);
  planCommand->add_option("--tokens", planFiles.tokens, "Tokens per step (a multiple of --seq)")
      ->required()
      ->check(CLI::PositiveNumber);
  planCommand->add_option("-o,--output", planFiles.out, "The plan file to write")->required();
  planCommand
      ->add_option("--finalists", planFiles.finalists,
                   "Candidates of each family of strategies (planned and symmetric) to simulate")
      ->check(CLI::Range(1, 20));
  std::string planLengths;
  planCommand->add_option("--length-distribution", planLengths,
                          "Sequence lengths seen in training, one per line: one plan per length bucket");
  planCommand->add_option("--keep-finalists", planFiles.finalistsDir, "Keep every simulated finalist's plan in DIR")
      ->check(CLI::ExistingDirectory);
  planCommand->add_flag("--report", planReport, "Print every finalist and the local programs' gap to CBC");

  auto *buildCommand = app.add_subcommand("build", "Compile a plan for training into C++ and a binary");
  std::string buildFile, buildTarget = "cpu", buildOut;
  std::vector<std::string> buildPlans;
  bool buildNoCompile = false;
  buildCommand->add_option("file", buildFile, "The plan (or model) file")->required();
  buildCommand->add_option("--plan", buildPlans, "A plan file, when FILE is the model");
  buildCommand->add_option("--target", buildTarget, "cpu (cuda: not yet)");
  buildCommand->add_option("-o,--output", buildOut, "The directory for the sources and the binary")->required();
  buildCommand->add_flag("--no-compile", buildNoCompile, "Write the sources and build files only");

  auto *program = app.add_subcommand("dump-program", "Print the DeviceProgram one device runs under a plan");
  std::string programFile;
  std::vector<std::string> programPlans;
  int programDevice = 0;
  bool programTrain = false;
  program->add_option("file", programFile, "A .hspmd file with the model (or a plan that imports it)")->required();
  program->add_option("--plan", programPlans, "The plan file");
  program->add_option("--device", programDevice, "The device")->required();
  program->add_flag("--train", programTrain, "Include the backward graph and gradient synchronisation");

  auto *lint = app.add_subcommand("lint", "Check a plan against its model and cluster (codes: docs/lint.md)");
  std::string lintPlan, lintModel, lintCluster, lintFormat = "text";
  bool lintWerror = false;
  lint->add_option("plan", lintPlan, "The plan file (it may import its model)")->required();
  lint->add_option("--model", lintModel, "A model file to load first, when the plan does not import it");
  lint->add_option("--cluster", lintCluster, "A cluster file instead of the plan's own");
  lint->add_option("--format", lintFormat, "Output format")->check(CLI::IsMember({"text", "json"}));
  lint->add_flag("--werror", lintWerror, "Exit 1 on warnings too");

  auto *explain = app.add_subcommand("explain-reshard", "Show how a tensor moves from one annotation to another");
  std::string explainShape, explainFrom, explainTo, explainCluster, explainDtype = "f32", explainFormat = "text";
  explain->add_option("--shape", explainShape, "The global shape, like 8,16")->required();
  explain->add_option("--from", explainFrom, "The annotation it has, like '[0..4]: S0'")->required();
  explain->add_option("--to", explainTo, "The annotation it needs")->required();
  explain->add_option("--cluster", explainCluster, "A cluster file: links and device ids");
  explain->add_option("--dtype", explainDtype, "Element type (f32, bf16, f16, i32, i64)");
  explain->add_option("--format", explainFormat, "Output format")->check(CLI::IsMember({"text", "json"}));

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success &success) {
    return app.exit(success);
  } catch (const CLI::ParseError &error) {
    app.exit(error);
    return 2;
  }
  if (check->parsed())
    return runCheck(checkFiles, checkFormat == "json");
  if (passList->parsed())
    return runPasses();
  if (explain->parsed())
    return driver::explainReshard(explainShape, explainFrom, explainTo, explainCluster, explainDtype,
                                  explainFormat == "json", std::cout, std::cerr)
               ? 0
               : 1;
  if (program->parsed())
    return runDumpProgram(programFile, programPlans, programDevice, programTrain);
  if (planCommand->parsed())
    return planLengths.empty() ? runPlan(planFiles, planReport) : runPlanForLengths(planFiles, planLengths);
  if (simulateCommand->parsed())
    return runSimulate(simulateFile, simulatePlans, simulateCluster, simulateTrace, simulateFormat == "json");
  if (buildCommand->parsed())
    return runBuild(buildFile, buildPlans, buildTarget, buildOut, !buildNoCompile);
  if (trainCommand->parsed()) {
    trainRun.timeout = std::chrono::seconds(trainTimeout);
    return runTrain(trainFile, trainPlans, trainRun, trainLosses, trainBackend);
  }
  if (lint->parsed())
    return runLint(lintPlan, lintModel, lintCluster, lintFormat == "json", lintWerror);
  if (dump->parsed())
    return runDumpIr(dumpFile, dumpPlans, dumpModel, dumpAfter, timePasses, train);
  return 2;
}
