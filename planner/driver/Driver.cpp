#include "planner/driver/Driver.h"

#include "passes/Pipeline.h"
#include "planner/Cluster.h"
#include "planner/Estimates.h"
#include "planner/Lint.h"

#include <algorithm>

namespace hspmd::driver {

using frontend::Compilation;
using frontend::DiagnosticEngine;

std::optional<Build> elaborateBuild(Compilation &compilation, const std::string &file,
                                    const std::vector<std::string> &planFiles, const std::string &modelName) {
  DiagnosticEngine &diags = compilation.diags();
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
  if (decls.empty() && modelName.empty() && !ast->plans.empty() &&
      std::none_of(ast->modules.begin(), ast->modules.end(), [](const auto &m) { return m->isModel; }))
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
    std::string text = ir::printGraph(*elaborated->graph);
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

void lintFile(Compilation &compilation, const std::string &planFile, const std::string &modelFile,
              const std::string &clusterFile, bool warnings) {
  DiagnosticEngine &diags = compilation.diags();
  std::optional<Build> build;
  if (modelFile.empty() || compilation.load(modelFile)) {
    const frontend::FileAst *ast = compilation.load(planFile);
    if (ast && ast->plans.empty())
      diags.error(ir::Location{planFile, 0, 0, 1}, "'" + planFile + "' holds no plan");
    else if (ast)
      build = elaborateBuild(compilation, planFile, {planFile}, "");
  }
  if (build) {
    const ir::PlanSpec &spec = build->plans[0];
    std::string path = !clusterFile.empty() ? clusterFile : spec.clusterPath;
    std::optional<planner::Cluster> cluster;
    if (!path.empty()) {
      std::vector<planner::ClusterError> errors;
      cluster = planner::loadCluster(path, compilation.stdlibDir() + "/devices.toml", errors);
      for (const auto &error : errors)
        diags.error(error.loc, error.message);
    }
    auto report = [&](const passes::Problem &problem) {
      if (warnings || problem.severity == passes::Severity::Error)
        reportProblem(diags, problem);
    };
    if (path.empty() || cluster) {
      passes::PipelineOptions options;
      if (cluster)
        options.links.assign(build->plans.size(), planner::linkModel(*cluster));
      // The memory check uses the memory plan of each device's training program where the
      // training build goes through (on a graph of its own: autodiff extends the graph).
      std::vector<std::map<int, int64_t>> peaks(build->plans.size());
      if (cluster) {
        auto training = elaborateBuild(compilation, planFile, {planFile}, "");
        passes::PipelineOptions trainOptions = options;
        trainOptions.train = true;
        auto trained = training ? passes::runPipeline(*training->graph, training->plans, trainOptions,
                                                      [](const passes::Problem &) {})
                                : passes::PipelineResult{};
        for (size_t p = 0; trained.ok && p < trained.programs.size() && p < peaks.size(); ++p)
          for (const auto &[device, program] : trained.programs[p])
            peaks[p][device] = program.peakBytes;
      }
      auto result = passes::runPipeline(*build->graph, build->plans, options, report);
      if (result.ok)
        for (size_t p = 0; p < result.plans.size(); ++p)
          planner::lintPlan(*build->graph, result.plans[p], cluster ? &*cluster : nullptr, report, peaks[p]);
    }
  }
}

bool checkPlan(Compilation &compilation, const std::string &file, const std::vector<std::string> &planFiles,
               const std::string &clusterFile) {
  const int before = compilation.diags().errorCount();
  if (planFiles.empty())
    lintFile(compilation, file, "", clusterFile, false);
  else
    for (const std::string &plan : planFiles)
      lintFile(compilation, plan, file, clusterFile, false);
  return compilation.diags().errorCount() == before;
}

} // namespace hspmd::driver
