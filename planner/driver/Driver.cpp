// Driver.cpp - elaborating a build, lint (lintBuild, lintFile) and the gate (checkPlan, checkSpec),
// explain-reshard (planner/driver/Driver.h).
#include "planner/driver/Driver.h"

#include "passes/Pipeline.h"
#include "planner/Cluster.h"
#include "planner/Estimates.h"
#include "planner/Lint.h"
#include "planner/PlanSet.h"
#include "runtime/Fusion.h"

#include <algorithm>
#include <cstdlib>
#include <set>

namespace hspmd::driver {

using frontend::Compilation;
using frontend::DiagnosticEngine;

namespace {

// A plan set or a cluster file is TOML, not the language: said as such (an error) rather than
// as its first character, where a command takes one plan.
bool notAPlanHere(DiagnosticEngine &diags, const std::string &path) {
  const bool set = planner::isPlanSet(path);
  if (!set && !(path.size() > 5 && path.compare(path.size() - 5, 5, ".toml") == 0))
    return false;
  diags.error(ir::Location{path, 0, 0, 1},
              "'" + path + "' is " +
                  (set ? "a plan set, not a plan: hspmc train and hspmc simulate --documents take plan sets; here "
                         "give one of the plans it lists"
                       : "TOML (a cluster file?), not a plan (.hspmd)"));
  return true;
}

} // namespace

std::optional<Build> elaborateBuild(Compilation &compilation, const std::string &file,
                                    const std::vector<std::string> &planFiles, const std::string &modelName) {
  DiagnosticEngine &diags = compilation.diags();
  for (const std::string &path : planFiles.empty() ? std::vector<std::string>{file} : planFiles)
    if (notAPlanHere(diags, path))
      return std::nullopt;
  const frontend::FileAst *ast = compilation.load(file);
  if (!ast)
    return std::nullopt;
  std::vector<const frontend::PlanDecl *> decls;
  for (const std::string &planFile : planFiles) {
    const frontend::FileAst *planAst = compilation.load(planFile);
    if (!planAst)
      return std::nullopt;
    if (planAst->plans.empty()) {
      diags.error(ir::Location{planFile, 0, 0, 1}, "'" + planFile + "' holds no plan");
      return std::nullopt;
    }
    decls.push_back(planAst->plans.back().get());
  }
  // A file that holds a plan (with its model or importing it) is built under its last plan.
  if (decls.empty() && modelName.empty() && !ast->plans.empty())
    decls.push_back(ast->plans.back().get());
  Build build;
  if (decls.empty()) {
    const frontend::ModuleDecl *model = nullptr;
    if (!modelName.empty()) {
      model = compilation.findModule(modelName);
      if (!model || !model->isModel) {
        diags.error(ir::Location{file, 0, 0, 1}, "no model named '" + modelName + "'");
        return std::nullopt;
      }
    } else {
      for (const auto &module : ast->modules)
        if (module->isModel)
          model = module.get();
      if (!model) {
        diags.error(ir::Location{file, 0, 0, 1}, "'" + file + "' defines no model (use --model NAME)");
        return std::nullopt;
      }
    }
    build.graph = compilation.elaborate(*model);
    return build.graph ? std::optional<Build>(std::move(build)) : std::nullopt;
  }
  std::string firstText;
  for (const frontend::PlanDecl *decl : decls) {
    auto elaborated = compilation.elaboratePlan(*decl);
    if (!elaborated)
      return std::nullopt;
    elaborated->graph->setNumPlans(0);
    // Plans of one file must make the same graph: compared as text, where there are several.
    std::string text = decls.size() > 1 ? ir::printGraph(*elaborated->graph) : std::string();
    if (!build.graph) {
      build.graph = std::move(elaborated->graph);
      firstText = text;
    } else if (text != firstText) {
      diags.error(decl->loc, "plan '" + decl->name + "' elaborates the model differently from plan '" +
                                 build.plans[0].name +
                                 "': plans of one build need the same model arguments and bindings");
      return std::nullopt;
    }
    build.plans.push_back(std::move(elaborated->spec));
  }
  return build;
}

void reportProblem(DiagnosticEngine &diags, const passes::Problem &problem) {
  frontend::Diagnostic diagnostic{problem.severity == passes::Severity::Error     ? frontend::Severity::Error
                                  : problem.severity == passes::Severity::Warning ? frontend::Severity::Warning
                                                                                  : frontend::Severity::Note,
                                  problem.loc,
                                  problem.message,
                                  {},
                                  problem.code};
  if (!problem.note.empty())
    diagnostic.notes.push_back(frontend::Diagnostic{frontend::Severity::Note, problem.noteLoc, problem.note, {}});
  diags.emit(diagnostic);
}

namespace {

// What lint's memory checks weigh of each training program (planner::PlannedMemory): its
// memory plan's peak, and for a program with bf16 tensors on a device type that is not "cpu",
// the bf16 copies of parameters a GPU keeps beside it (runtime/Fusion.h), where they might not all
// fit.
std::map<int, planner::PlannedMemory> plannedMemory(const std::map<int, ir::DeviceProgram> &programs,
                                                    const planner::Cluster &cluster) {
  std::map<int, planner::PlannedMemory> out;
  for (const auto &[device, program] : programs) {
    planner::PlannedMemory &memory = out[device];
    memory.peak = program.peakBytes;
    memory.reserve = runtime::kParameterCopyReserve;
    if (device < 0 || device >= static_cast<int>(cluster.devices.size()) || cluster.typeOf(device).name == "cpu" ||
        std::none_of(program.buffers.begin(), program.buffers.end(),
                     [](const ir::Buffer &b) { return b.dtype == ir::DType::BF16; }))
      continue;
    // Where half the bytes of every f32 parameter fit, every copy does (HS206 has nothing to say).
    double halves = 0;
    for (const ir::Buffer &b : program.buffers)
      if (b.role == ir::BufferRole::Parameter && b.dtype == ir::DType::F32)
        halves += static_cast<double>(b.bytes() / 2);
    if (static_cast<double>(memory.peak + memory.reserve) + halves <=
        cluster.typeOf(device).memoryGiB * 1024 * 1024 * 1024)
      continue;
    for (int id : runtime::bf16ParameterCopies(program, runtime::fusionFor(program, /*bf16=*/true)))
      memory.bf16Copies.push_back(program.buffers[static_cast<size_t>(id)].bytes() / 2);
  }
  return out;
}

// Lint's checks of each plan but the memory check (planner/Lint.h), on a deduced graph, as
// the passes' checkPlans hook runs them: what they found, whether an error among it rejects
// the plan, and whether they ran.
struct PlanChecks {
  std::vector<passes::Problem> problems;
  bool rejected = false, checked = false;
  void run(const ir::Graph &graph, const std::vector<passes::LoweredPlan> &plans, const planner::Cluster *cluster) {
    checked = true;
    for (const passes::LoweredPlan &plan : plans)
      planner::lintPlan(
          graph, plan, cluster,
          [&](const passes::Problem &problem) {
            rejected = rejected || problem.severity == passes::Severity::Error;
            problems.push_back(problem);
          },
          {}, planner::LintPart::AllButMemory);
  }
};

// The gate's common case, a plan that compiles clean, in one build: the training build, with
// the plan's checks run on the forward ops of its deduced graph (passes::inForwardGraph: the
// inference build's graph within it) when it has been verified. Where a pass reports a
// problem or a check an error (or the build stops before the checks), nothing is reported and
// it returns false: the two builds below then say it as lint always has. Half the gate's work
// before the programs (elaborating, deducing and resolving the plan) was the inference
// build's, done twice.
bool lintInOneBuild(DiagnosticEngine &diags, Build &build, const planner::Cluster *cluster, bool warnings,
                    passes::PipelineResult *training, bool memory, const std::atomic<bool> *cancelled, int threads,
                    std::optional<bool> bf16) {
  passes::PipelineOptions options;
  options.cancelled = cancelled;
  options.threads = threads;
  options.train = true;
  options.bf16 = bf16;
  if (cluster)
    options.links.assign(build.plans.size(), planner::linkModel(*cluster));
  std::vector<passes::Problem> passProblems;
  PlanChecks checks;
  options.checkPlans = [&](const ir::Graph &graph, const std::vector<passes::LoweredPlan> &plans) {
    checks.run(graph, plans, cluster);
    return !checks.rejected;
  };
  passes::PipelineResult trained = passes::runPipeline(
      *build.graph, build.plans, options, [&](const passes::Problem &problem) { passProblems.push_back(problem); });
  if (cancelled && cancelled->load())
    return true; // nobody reads it
  if (!checks.checked || checks.rejected || !passProblems.empty() || !trained.ok) {
    passes::releasePrograms(trained, threads);
    return false;
  }
  auto report = [&](const passes::Problem &problem) {
    if ((memory || problem.code != "HS111") && (warnings || problem.severity == passes::Severity::Error))
      reportProblem(diags, problem);
  };
  if (memory && cluster)
    for (size_t p = 0; p < trained.plans.size(); ++p) {
      planner::lintPlan(*build.graph, trained.plans[p], cluster, report,
                        p < trained.programs.size() ? plannedMemory(trained.programs[p], *cluster)
                                                    : std::map<int, planner::PlannedMemory>{});
    }
  else
    for (const passes::Problem &problem : checks.problems)
      report(problem);
  if (training)
    *training = std::move(trained);
  else
    passes::releasePrograms(trained, threads);
  return true;
}

} // namespace

void lintBuild(DiagnosticEngine &diags, const std::function<std::optional<Build>()> &make,
               const planner::Cluster *cluster, bool warnings, passes::PipelineResult *training, bool memory,
               const std::atomic<bool> *cancelled, int threads, std::optional<bool> bf16) {
  std::optional<Build> build = make();
  if (!build)
    return;
  // HSPMD_GATE_TWO_BUILDS=1 always takes the two builds (a test compares the ways).
  const char *twoBuilds = std::getenv("HSPMD_GATE_TWO_BUILDS");
  if (!(twoBuilds && std::string(twoBuilds) == "1")) {
    if (lintInOneBuild(diags, *build, cluster, warnings, training, memory, cancelled, threads, bf16))
      return;
    build = make(); // autodiff extended the first one's graph
    if (!build)
      return;
  }
  // What is reported, so that the training build's problems are not said twice.
  std::set<std::string> said;
  int errors = 0;
  auto report = [&](const passes::Problem &problem) {
    if (!memory && problem.code == "HS111")
      return;
    said.insert(problem.loc.str() + problem.message);
    errors += problem.severity == passes::Severity::Error;
    if (warnings || problem.severity == passes::Severity::Error)
      reportProblem(diags, problem);
  };
  passes::PipelineOptions options;
  options.cancelled = cancelled;
  options.threads = threads;
  if (cluster)
    options.links.assign(build->plans.size(), planner::linkModel(*cluster));
  // The plan's own checks first, on the inference build's deduced graph: a plan they reject
  // (the planner's finalists often are) gets no training build. The inference build makes no
  // DevicePrograms: the training build's include its forward passes.
  PlanChecks checks;
  passes::PipelineOptions inferenceOptions = options;
  inferenceOptions.checkPlans = [&](const ir::Graph &graph, const std::vector<passes::LoweredPlan> &plans) {
    checks.run(graph, plans, cluster);
    // Passed or not, the inference build stops here: the training build below builds the
    // programs that train (the forward passes among them) and runs the verifiers on them.
    return false;
  };
  auto result = passes::runPipeline(*build->graph, build->plans, inferenceOptions, report);
  const bool planRejected = checks.rejected || errors > 0;
  // The training build (on a graph of its own: autodiff extends the graph) gives the memory
  // plan of each device's program, and runs the cross-device verifier on the programs that
  // train: its errors are lint's too, so that a plan that lints clean trains.
  std::vector<passes::Problem> trainingProblems;
  std::vector<std::map<int, planner::PlannedMemory>> planned(build->plans.size());
  passes::PipelineResult trained;
  if (!planRejected)
    if (auto trainingBuild = make()) {
      passes::PipelineOptions trainOptions = options;
      trainOptions.train = true;
      trainOptions.bf16 = bf16;
      trained = passes::runPipeline(*trainingBuild->graph, trainingBuild->plans, trainOptions,
                                    [&](const passes::Problem &problem) { trainingProblems.push_back(problem); });
      for (size_t p = 0; trained.ok && cluster && p < trained.programs.size() && p < planned.size(); ++p)
        planned[p] = plannedMemory(trained.programs[p], *cluster);
    }
  // Every check in its order, the memory check (HS111) with the training programs' peaks
  // (its estimate where they were not compiled).
  if (memory && cluster && checks.checked)
    for (size_t p = 0; p < result.plans.size(); ++p)
      planner::lintPlan(*build->graph, result.plans[p], cluster, report, planned[p]);
  else
    for (const passes::Problem &problem : checks.problems)
      report(problem);
  // A plan error explains what the compiled programs then get wrong: say only the first.
  const bool planErrors = errors > 0;
  for (const passes::Problem &problem : trainingProblems)
    if (!planErrors && problem.severity == passes::Severity::Error && !said.count(problem.loc.str() + problem.message))
      report(problem);
  if (training)
    *training = std::move(trained);
  else
    passes::releasePrograms(trained, threads);
}

void lintFile(Compilation &compilation, const std::string &planFile, const std::string &modelFile,
              const std::string &clusterFile, bool warnings, bool memory, passes::PipelineResult *training,
              std::optional<bool> bf16) {
  DiagnosticEngine &diags = compilation.diags();
  if (!modelFile.empty() && !compilation.load(modelFile))
    return;
  const std::vector<std::string> fromModelFile = compilation.moduleNames(); // before the plan's imports
  if (notAPlanHere(diags, planFile))
    return;
  const frontend::FileAst *ast = compilation.load(planFile);
  if (!ast)
    return;
  if (ast->plans.empty()) {
    diags.error(ir::Location{planFile, 0, 0, 1}, "'" + planFile + "' holds no plan");
    return;
  }
  // --model names the file of the plan's model: one that does not define it would be ignored.
  if (const frontend::PlanDecl &plan = *ast->plans.back();
      !modelFile.empty() && std::find(fromModelFile.begin(), fromModelFile.end(), plan.model) == fromModelFile.end()) {
    diags.error(plan.modelLoc, "plan '" + plan.name + "' is for model '" + plan.model + "', which --model " +
                                   modelFile + " does not define");
    return;
  }
  std::optional<Build> build = elaborateBuild(compilation, planFile, {planFile}, "");
  if (!build)
    return;
  const std::string path = !clusterFile.empty() ? clusterFile : build->plans[0].clusterPath;
  std::optional<planner::Cluster> cluster;
  if (!path.empty()) {
    std::vector<planner::ClusterError> errors;
    cluster = planner::loadCluster(path, compilation.stdlibDir() + "/devices.toml", errors);
    for (const auto &error : errors)
      diags.error(error.loc, error.message);
    if (!cluster)
      return;
  }
  bool first = true;
  lintBuild(
      diags,
      [&]() -> std::optional<Build> {
        if (first) {
          first = false;
          return std::move(build);
        }
        return elaborateBuild(compilation, planFile, {planFile}, "");
      },
      cluster ? &*cluster : nullptr, warnings, training, memory, nullptr, 0, bf16);
}

bool checkPlan(Compilation &compilation, const std::string &file, const std::vector<std::string> &planFiles,
               const std::string &clusterFile, bool memory, passes::PipelineResult *training,
               std::optional<bool> bf16) {
  const int before = compilation.diags().errorCount();
  if (planFiles.empty())
    lintFile(compilation, file, "", clusterFile, false, memory, training, bf16);
  else
    for (const std::string &plan : planFiles)
      lintFile(compilation, plan, file, clusterFile, false, memory, planFiles.size() == 1 ? training : nullptr, bf16);
  return compilation.diags().errorCount() == before;
}

std::vector<passes::LinkModel> planLinks(Compilation &compilation, const std::vector<ir::PlanSpec> &plans,
                                         const std::string &clusterFile) {
  std::vector<passes::LinkModel> links;
  for (const ir::PlanSpec &plan : plans) {
    const std::string path = !clusterFile.empty() ? clusterFile : plan.clusterPath;
    std::vector<planner::ClusterError> errors;
    std::optional<planner::Cluster> cluster;
    if (!path.empty())
      cluster = planner::loadCluster(path, compilation.stdlibDir() + "/devices.toml", errors);
    links.push_back(cluster ? planner::linkModel(*cluster) : passes::LinkModel{});
  }
  return links;
}

bool checkSpec(Compilation &compilation, const ir::PlanSpec &spec, const planner::Cluster &cluster,
               passes::PipelineResult *training, const std::atomic<bool> *cancelled) {
  const int before = compilation.diags().errorCount();
  lintBuild(
      compilation.diags(),
      [&]() -> std::optional<Build> {
        Build build;
        build.graph = compilation.elaborateSpec(spec);
        if (!build.graph)
          return std::nullopt;
        build.plans.push_back(spec);
        return build;
      },
      &cluster, false, training, /*memory=*/false, cancelled,
      /*threads=*/1); // the planner compiles its finalists in parallel already
  return compilation.diags().errorCount() == before;
}

} // namespace hspmd::driver
