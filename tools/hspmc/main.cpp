// hspmc - the hspmd compiler driver: command-line wiring of the libraries (docs/cli.md).
//
//   hspmc check FILE...                  parse and elaborate models, plans and cluster files
//   hspmc lint PLAN                      check a plan against its model and cluster (docs/lint.md)
//   hspmc passes                         the compiler's passes in order, one line each
//   hspmc dump-ir FILE [--after PASS]    the textual IR of a model (under a plan, after a pass)
//   hspmc dump-program PLAN --device D   the DeviceProgram one device runs
//   hspmc explain-reshard ...            how a tensor moves from one annotation to another
//   hspmc explain-switch FROM TO         what moving a run's state between two plans takes
//   hspmc train PLAN --data FILE         train on this machine (threads, or MPI)
//   hspmc build PLAN -o DIR              per-device C++ and a binary that trains
//   hspmc simulate PLAN                  one step on the plan's cluster, on the cost model
//   hspmc plan MODEL --cluster C ...     write a plan for a model on a cluster
//   hspmc --version
//
// Exit codes: 0 success, 1 user errors (diagnostics printed), 2 usage errors. Each command's
// body is in its own file (tools/hspmc/Commands.h); this file only declares the options.
#include "ir/Files.h"
#include "passes/Pipeline.h"
#include "planner/Cbc.h"
#include "planner/PlanSet.h"
#include "runtime/CliNumbers.h"
#include "runtime/DocumentsCli.h"
#include "runtime/Kernels.h"
#include "tools/hspmc/Commands.h"
#ifdef HSPMD_HAVE_CUDA
#include "runtime/gpu/GpuOffload.h"
#endif
#ifdef HSPMD_HAVE_NCCL
#include "runtime/gpu/GpuNccl.h"
#endif

#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>

#ifndef HSPMD_VERSION
#define HSPMD_VERSION "0.0.0"
#endif

using namespace hspmd;
using namespace hspmd::cli;

namespace {

// --precision (train, build, simulate, lint, dump-program): fp32, or bf16 mixed precision
// (docs/runtime.md); not given, each plan's own `precision`.
CLI::Option *addPrecision(CLI::App *command, std::string &precision) {
  return command
      ->add_option("--precision", precision,
                   "fp32 or bf16 (default: the plan's `precision`, else fp32). bf16: activations, their gradients and "
                   "messages stored in bf16; parameters, gradients, optimizer state and the loss in f32 "
                   "(docs/runtime.md)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
}

std::optional<bool> bf16Of(const std::string &precision) {
  return precision.empty() ? std::nullopt : std::optional<bool>(precision == "bf16");
}

int run(int argc, char **argv) {
  CLI::App app{"hspmc - compiles hspmd models and HSPMD annotation plans", "hspmc"};
  // A number of seconds (or a rate) must be finite: CLI11's ranges let "nan" through.
  const CLI::Validator finiteSeconds(
      [](const std::string &text) {
        try {
          if (std::isfinite(std::stod(text)))
            return std::string();
        } catch (const std::exception &) {
        }
        return text + " is not a finite number";
      },
      "NUMBER");
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
  runtime::DocumentFlags trainDocuments;
  runtime::addDocumentFlags(*trainCommand, trainDocuments);
  trainCommand->add_option("--steps", trainRun.steps, "Optimizer steps (0: with --save, the initial parameters)")
      ->check(runtime::int64AtLeast(0));
  trainCommand->add_option("--losses", trainLosses, "Write the per-step losses and the optimizer as JSON");
  trainCommand
      ->add_option("--backend", trainBackend,
                   "threads (every device a thread), mpi (under mpirun -np N) or nccl (under mpirun -np N, a GPU each: "
                   "kernels and communication on the GPUs, docs/gpu.md)")
      ->check(CLI::IsMember({"threads", "mpi", "nccl"}));
  std::string trainPrecision;
  addPrecision(trainCommand, trainPrecision);
  std::string trainDevice = "cpu";
  trainCommand
      ->add_option("--device", trainDevice,
                   "cpu, or gpu: every device's kernels on a GPU, communication through the host (docs/gpu.md)")
      ->check(CLI::IsMember({"cpu", "gpu"}));
  trainCommand->add_option("--seed", trainRun.seed, "Seed of the initial parameters")->check(runtime::uint64Whole());
  trainCommand->add_option("--save", trainRun.save, "Write a checkpoint (plan-independent) at the end");
  trainCommand
      ->add_option("--save-every", trainRun.saveEvery,
                   "K: with --save, also write the checkpoint after every K-th step (a death that leaves a part of "
                   "the state without a copy resumes from it)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  trainCommand->add_option("--load", trainRun.load, "Start from a checkpoint (saved under any plan)");
  trainCommand->add_option("--trace", trainRun.trace, "Write a Chrome trace (one track per device)");
  trainCommand->add_option("--timeout", trainTimeout, "Seconds a device waits for a peer before failing")
      ->check(CLI::Range(int64_t{1}, int64_t{86400}));
  double trainHeartbeat = 1.0;
  trainCommand
      ->add_option("--heartbeat", trainHeartbeat,
                   "MPI with --recover or --fail: seconds without a heartbeat after which a process is dead")
      ->check(CLI::Range(0.05, 3600.0))
      ->check(finiteSeconds);
  std::vector<std::string> trainSwitches;
  trainCommand->add_option("--switch", trainSwitches,
                           "STEP:PLAN: before step STEP, move every parameter and optimizer state to PLAN's layout "
                           "and train on under it (repeatable, in step order)");
  std::vector<std::string> trainFailures, trainRecover;
  trainCommand->add_option("--fail", trainFailures,
                           "STEP:DEVICE[@PHASE]: device DEVICE dies at the start of PHASE of step STEP: forward (the "
                           "default), backward, update, switch, or recovery (the move of a recovery before the step); "
                           "repeatable; on MPI its process kills itself");
  std::string trainFaultTrace;
  trainCommand->add_option("--fault-trace", trainFaultTrace,
                           "A file of events, a line each: STEP DEVICE fail [PHASE], STEP DEVICE join, or STEP DEVICE "
                           "slow FACTOR (# starts a comment)");
  trainCommand->add_flag("--stragglers", trainRun.stragglers,
                         "Watch each device's compute time per step; for one persistently slower than it was, plan "
                         "anew at its measured speed and switch where the gain over the steps left exceeds the "
                         "switch's cost");
  trainCommand->add_option("--recover", trainRecover,
                           "PLAN or auto: after a device dies, go on under the first such plan whose devices are all "
                           "alive (auto: one the planner makes for them), "
                           "redoing the interrupted step (repeatable)");

  auto *simulateCommand =
      app.add_subcommand("simulate", "Simulate one training step of a plan on its cluster (cost model)");
  std::string simulateFile, simulateCluster, simulateTrace, simulateFormat = "text";
  std::vector<std::string> simulatePlans;
  simulateCommand->add_option("file", simulateFile, "The plan (or model) file")->required();
  simulateCommand->add_option("--plan", simulatePlans, "A plan file, when FILE is the model");
  simulateCommand->add_option("--cluster", simulateCluster, "A cluster file instead of the plan's own");
  std::string simulatePrecision;
  addPrecision(simulateCommand, simulatePrecision);
  simulateCommand->add_option("--trace", simulateTrace, "Write the simulated step as a Chrome trace");
  simulateCommand->add_option("--format", simulateFormat, "Output format")->check(CLI::IsMember({"text", "json"}));
  FaultReplay replay;
  std::string simulateDocuments;
  int64_t simulateTokens = 0;
  simulateCommand->add_option(
      "--documents", simulateDocuments,
      "A file of document lengths (one per line): one pass over such documents, priced padded, packed and (FILE a "
      "plan set) with a plan per step (docs/mixed-lengths.md)");
  simulateCommand->add_option("--tokens", simulateTokens, "With --documents: real tokens per step at most")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  std::string simulateSchedule = "balanced";
  simulateCommand
      ->add_option("--schedule", simulateSchedule,
                   "With --documents: balanced (the scheduler spreads a step's documents over the pipelines and "
                   "micro-batches by estimated work) or in-order (rows in corpus order)")
      ->check(CLI::IsMember({"balanced", "in-order"}));
  simulateCommand->add_option("--fault-trace", replay.trace,
                              "A trace of failures and returns (as hspmc train's): price a run over it, in place "
                              "against checkpoint-and-restart (docs/elastic.md)");
  simulateCommand->add_option("--steps", replay.steps, "With --fault-trace: the run's steps")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  simulateCommand->add_option("--recover", replay.recoverPlans,
                              "With --fault-trace: the plans to go on under (the first whose devices are all alive)");
  simulateCommand
      ->add_option("--checkpoint-every", replay.checkpointEvery,
                   "With --fault-trace: checkpoint-and-restart saving every K steps (repeatable; default 10 and 50)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  simulateCommand->add_option("--heartbeat", replay.heartbeatSeconds, "With --fault-trace: seconds to detect a failure")
      ->check(CLI::Range(0.0, 3600.0))
      ->check(finiteSeconds);
  simulateCommand
      ->add_option("--restart-seconds", replay.restartSeconds,
                   "With --fault-trace: seconds to restart every process from a checkpoint (default 60)")
      ->check(CLI::Range(0.0, 86400.0))
      ->check(finiteSeconds);
  simulateCommand
      ->add_option("--checkpoint-gbps", replay.checkpointGBps,
                   "With --fault-trace: GB/s at which each device writes and reads its state (default 5)")
      ->check(CLI::Range(1e-3, 1e6))
      ->check(finiteSeconds);

  auto *planCommand =
      app.add_subcommand("plan", "Write a plan for a model on a cluster: pipelines, tensor, context and head "
                                 "parallelism sized for its devices");
  driver::PlanFiles planFiles;
  bool planReport = false;
  planCommand->add_option("model", planFiles.model, "The model file")->required();
  planCommand->add_option("--cluster", planFiles.cluster, "The cluster file")->required();
  // Ranges a model could train at (2^20 positions, 2^27 tokens a step); the model's own size
  // limits are checked when it is elaborated at the request.
  planCommand->add_option("--seq", planFiles.sequence, "Sequence length (positions)")
      ->required()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  planCommand->add_option("--tokens", planFiles.tokens, "Tokens per step (a multiple of --seq)")
      ->required()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 27));
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
  planCommand->add_flag("--every-finalist", planFiles.everyFinalist,
                        "Compile and simulate every finalist (by default the estimates leave out those they rule out)");
  planCommand->add_flag("--report", planReport, "Print every finalist and the local programs' gap to CBC");
  std::string planPrecision = "fp32";
  planCommand
      ->add_option("--precision", planPrecision,
                   "fp32 (default) or bf16: plans priced, compiled and simulated with activations and their messages "
                   "in bf16, written with `precision bf16` (docs/runtime.md)")
      ->check(CLI::IsMember({"fp32", "bf16"}));

  auto *buildCommand = app.add_subcommand("build", "Compile a plan for training into C++ and a binary");
  std::string buildFile, buildTarget = "cpu", buildOut;
  std::vector<std::string> buildPlans;
  bool buildNoCompile = false;
  buildCommand->add_option("file", buildFile, "The plan (or model) file")->required();
  buildCommand->add_option("--plan", buildPlans, "A plan file, when FILE is the model");
  buildCommand->add_option("--target", buildTarget, "cpu, or cuda: one GPU, for plans of one device (docs/gpu.md)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  buildCommand->add_option("-o,--output", buildOut, "The directory for the sources and the binary")->required();
  buildCommand->add_flag("--no-compile", buildNoCompile, "Write the sources and build files only");
  std::string buildPrecision;
  addPrecision(buildCommand, buildPrecision);
  std::vector<std::string> buildAlso;
  buildCommand->add_option("--also", buildAlso,
                           "Another plan file of the model to build in: the binary's --switch STEP:NAME changes to it");

  auto *program = app.add_subcommand("dump-program", "Print the DeviceProgram one device runs under a plan");
  std::string programFile;
  std::vector<std::string> programPlans;
  int64_t programDevice = 0;
  bool programTrain = false;
  program->add_option("file", programFile, "A .hspmd file with the model (or a plan that imports it)")->required();
  program->add_option("--plan", programPlans, "The plan file");
  program->add_option("--device", programDevice, "The device")->required()->check(runtime::int64AtLeast(0));
  program->add_flag("--train", programTrain, "Include the backward graph and gradient synchronisation");
  bool programNccl = false;
  std::string programPrecision;
  addPrecision(program, programPrecision);
  program->add_flag("--nccl", programNccl,
                    "Print the NCCL calls the device makes in one step instead (docs/gpu.md); fails when the plan "
                    "cannot run on NCCL");

  auto *lint = app.add_subcommand("lint", "Check a plan against its model and cluster (codes: docs/lint.md)");
  std::string lintPlan, lintModel, lintCluster, lintFormat = "text";
  bool lintWerror = false;
  lint->add_option("plan", lintPlan, "The plan file (it may import its model)")->required();
  lint->add_option("--model", lintModel, "A model file to load first, when the plan does not import it");
  lint->add_option("--cluster", lintCluster, "A cluster file instead of the plan's own");
  lint->add_option("--format", lintFormat, "Output format")->check(CLI::IsMember({"text", "json"}));
  lint->add_flag("--werror", lintWerror, "Exit 1 on warnings too");
  std::string lintPrecision;
  addPrecision(lint, lintPrecision);

  auto *explain = app.add_subcommand("explain-reshard", "Show how a tensor moves from one annotation to another");
  std::string explainShape, explainFrom, explainTo, explainCluster, explainDtype = "f32", explainFormat = "text";
  explain->add_option("--shape", explainShape, "The global shape, like 8,16")->required();
  explain->add_option("--from", explainFrom, "The annotation it has, like '[0..4]: S0'")->required();
  explain->add_option("--to", explainTo, "The annotation it needs")->required();
  explain->add_option("--cluster", explainCluster, "A cluster file: links and device ids");
  explain->add_option("--dtype", explainDtype, "Element type (f32, bf16, f16, i32, i64)");
  explain->add_option("--format", explainFormat, "Output format")->check(CLI::IsMember({"text", "json"}));

  auto *switchCommand =
      app.add_subcommand("explain-switch", "Show what moving a run's state from one plan's layout to another's takes");
  std::string switchFrom, switchTo, switchCluster, switchFormat = "text";
  switchCommand->add_option("from", switchFrom, "The plan switched from")->required();
  switchCommand->add_option("to", switchTo, "The plan switched to")->required();
  switchCommand->add_option("--cluster", switchCluster, "A cluster file: links (default: the second plan's)");
  switchCommand->add_option("--format", switchFormat, "Output format")->check(CLI::IsMember({"text", "json"}));

  // A first word that is no command is named as such (CLI11 would only say that a command is
  // required).
  if (argc > 1 && argv[1][0] != '-') {
    std::string commands;
    bool known = false;
    for (const CLI::App *sub : app.get_subcommands([](const CLI::App *) { return true; })) {
      commands += (commands.empty() ? "" : ", ") + sub->get_name();
      known = known || sub->get_name() == argv[1];
    }
    if (!known) {
      std::cerr << "hspmc: error: unknown command '" << argv[1] << "' (the commands: " << commands << ")\n";
      return 2;
    }
  }
  if (const std::optional<int> code = runtime::parseCommandLine(app, argc, argv))
    return *code;
  // Files are named relative to the current folder: in one that was deleted meanwhile, what
  // resolves names fails in its own ways (CBC's setup threw std::bad_alloc).
  std::error_code noFolder;
  if (const auto here = std::filesystem::current_path(noFolder); noFolder || here.empty()) {
    std::cerr << "hspmc: error: the current folder cannot be read (" << noFolder.message()
              << "; was it deleted?): change to a folder that exists\n";
    return 1;
  }
  TrainingBuild::bf16 = bf16Of(buildCommand->parsed()      ? buildPrecision
                               : simulateCommand->parsed() ? simulatePrecision
                                                           : trainPrecision);
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
    return runDumpProgram(programFile, programPlans, programDevice, programTrain, programNccl,
                          bf16Of(programPrecision));
  if (planCommand->parsed()) {
    planFiles.bf16 = planPrecision == "bf16";
    return planLengths.empty() ? runPlan(planFiles, planReport) : runPlanForLengths(planFiles, planLengths);
  }
  if (simulateCommand->parsed()) {
    for (const char *option :
         {"--steps", "--recover", "--checkpoint-every", "--heartbeat", "--restart-seconds", "--checkpoint-gbps"})
      if (replay.trace.empty() && simulateCommand->count(option) > 0) {
        std::cerr << "hspmc simulate: error: " << option << " needs --fault-trace FILE\n";
        return 2;
      }
    if (!replay.trace.empty() && simulateFormat == "json") {
      std::cerr << "hspmc simulate: error: --fault-trace prints text (no --format json)\n";
      return 2;
    }
    if (!simulateDocuments.empty() || simulateCommand->count("--tokens") > 0 ||
        simulateCommand->count("--schedule") > 0) {
      if (simulateDocuments.empty() || !replay.trace.empty() || !simulatePlans.empty() || !simulateTrace.empty() ||
          simulateFormat == "json") {
        std::cerr
            << "hspmc simulate: error: --documents FILE (with --tokens, --schedule) takes a plan or a plan set and "
               "--cluster, without --plan, --trace, --fault-trace or --format json\n";
        return 2;
      }
      return runSimulateDocuments(simulateFile, simulateCluster, simulateDocuments, simulateTokens,
                                  simulateSchedule == "balanced");
    }
    if (planner::isPlanSet(simulateFile)) {
      std::cerr << "hspmc simulate: error: " << simulateFile
                << " is a plan set: simulate it over documents (--documents LENGTHS)\n";
      return 2;
    }
    return runSimulate(simulateFile, simulatePlans, simulateCluster, simulateTrace, simulateFormat == "json", replay);
  }
  if (buildCommand->parsed())
    return runBuild(buildFile, buildPlans, buildTarget, buildOut, !buildNoCompile, buildAlso);
  if (trainCommand->parsed()) {
    trainRun.timeout = std::chrono::seconds(trainTimeout);
    trainRun.heartbeat = std::chrono::milliseconds(std::llround(trainHeartbeat * 1000));
    trainDocuments.applyTo(trainRun);
    const bool nccl = trainBackend == "nccl";
    if (nccl && trainDevice == "cpu" && trainCommand->count("--device") > 0) {
      std::cerr << "hspmc train: error: --backend nccl runs every device on a GPU, and --device cpu asks for the CPU\n";
      return 2;
    }
    if (trainDevice == "gpu" || nccl) {
      const std::string flag = nccl ? "--backend nccl" : "--device gpu";
#ifdef HSPMD_HAVE_CUDA
      std::string why;
      if (!runtime::gpu::gpuAvailable(&why)) {
        std::cerr << "hspmc train: error: " << flag << ": no GPU to run on (" << why << ")\n";
        return 1;
      }
      trainRun.offload = runtime::gpu::gpuOffload;
#ifdef HSPMD_HAVE_NCCL
      if (nccl)
        trainRun.offload = runtime::gpu::gpuNcclOffload;
#else
      if (nccl) {
        std::cerr << "hspmc train: error: --backend nccl: this hspmc was built without NCCL (CMake found no nccl.h "
                     "and libnccl with the CUDA toolkit; docs/gpu.md says what it needs)\n";
        return 1;
      }
#endif
#else
      std::cerr << "hspmc train: error: " << flag << ": " << kWithoutCuda << "\n";
      return 1;
#endif
      if (nccl)
        trainBackend = "mpi"; // the host's messages (NCCL's unique ids, the losses) on MPI
    }
    if (trainRun.documentOptions.perMicroBatch && !planner::isPlanSet(trainFile)) {
      std::cerr << "hspmc train: error: --granularity micro-batch runs the plans of a plan set within a step: FILE "
                   "must be a plan set (docs/mixed-lengths.md)\n";
      return 2;
    }
    return runTrain(trainFile, trainPlans, trainRun, trainLosses, trainBackend, trainSwitches, trainFailures,
                    trainFaultTrace, trainRecover, std::vector<std::string>(argv, argv + argc));
  }
  if (switchCommand->parsed())
    return runExplainSwitch(switchFrom, switchTo, switchCluster, switchFormat == "json");
  if (lint->parsed())
    return runLint(lintPlan, lintModel, lintCluster, lintFormat == "json", lintWerror, bf16Of(lintPrecision));
  if (dump->parsed())
    return runDumpIr(dumpFile, dumpPlans, dumpModel, dumpAfter, timePasses, train);
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  hspmd::runtime::kernels::quietBlas(); // its spinning threads cost every command (runtime/Kernels.h)
  // Every error a user can cause is reported where it is found, with its location; an
  // exception that reaches here is hspmc's own fault, and still ends with a message.
  try {
    const int code = run(argc, argv);
    // What a command printed is its result: a full disk under `> out.txt` is an error too.
    if (const std::string why = hspmd::ir::unflushedOutput(); !why.empty()) {
      std::cerr << "hspmc: error: cannot write the standard output (" << why << ")\n";
      return code ? code : 1;
    }
    return code;
  } catch (const hspmd::planner::LibraryUnavailable &e) { // the machine's installation, not hspmc
    std::cerr << "hspmc: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception &e) {
    std::cerr << "hspmc: internal error: " << e.what() << " (please report it)\n";
    return 70; // EX_SOFTWARE
  }
}
