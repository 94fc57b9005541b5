// hspmc - the hspmd compiler driver.
//
//   hspmc check FILE...                 parse and elaborate models, plans and cluster files
//   hspmc dump-ir FILE [--plan PLAN]    print the textual IR of a model (under a plan)
//   hspmc --version
//
// Exit codes: 0 success, 1 user errors (diagnostics printed), 2 usage errors.
#include "frontend/Compilation.h"
#include "planner/Cluster.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>

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

int runDumpIr(const std::string &file, const std::string &planFile, const std::string &modelName) {
  SourceManager sources;
  CollectingSink sink;
  DiagnosticEngine diags(sink);
  Compilation compilation(sources, diags);
  const frontend::FileAst *ast = compilation.load(file);
  const frontend::FileAst *planAst = ast && !planFile.empty() ? compilation.load(planFile) : ast;
  std::unique_ptr<ir::Graph> graph;
  if (ast && planAst) {
    const frontend::PlanDecl *plan = planAst->plans.empty() ? nullptr : planAst->plans.back().get();
    if (!planFile.empty() && !plan) {
      diags.error(ir::Location{planFile, 0, 0, 1}, "'" + planFile + "' holds no plan");
    } else if (plan && modelName.empty()) {
      if (auto elaborated = compilation.elaboratePlan(*plan))
        graph = std::move(elaborated->graph);
    } else {
      const frontend::ModuleDecl *model = nullptr;
      if (!modelName.empty()) {
        model = compilation.findModule(modelName);
        if (!model || !model->isModel)
          diags.error(ir::Location{file, 0, 0, 1}, "no model named '" + modelName + "'");
      } else {
        for (const auto &module : ast->modules)
          if (module->isModel)
            model = module.get();
        if (!model)
          diags.error(ir::Location{file, 0, 0, 1}, "'" + file + "' defines no model (use --model NAME)");
      }
      if (model && model->isModel)
        graph = compilation.elaborate(*model);
    }
  }
  int code = finish(sink, sources, false, diags.errorCount());
  if (code == 0 && graph)
    std::cout << ir::printGraph(*graph);
  return graph ? code : 1;
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

  auto *dump = app.add_subcommand("dump-ir", "Print the textual IR of a model, optionally under a plan");
  std::string dumpFile, dumpPlan, dumpModel;
  dump->add_option("file", dumpFile, "A .hspmd file with the model (or a plan that imports it)")->required();
  dump->add_option("--plan", dumpPlan, "A plan file: binds the model's arguments and symbols, adds its annotations");
  dump->add_option("--model", dumpModel, "Which model of FILE (default: the last one defined in it)");

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
  if (dump->parsed())
    return runDumpIr(dumpFile, dumpPlan, dumpModel);
  return 2;
}
