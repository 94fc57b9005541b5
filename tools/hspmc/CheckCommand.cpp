// CheckCommand.cpp - hspmc check: parse and elaborate models, plans, cluster and device files.
#include "tools/hspmc/Commands.h"

#include "ir/Files.h"
#include "planner/Cluster.h"
#include "planner/PlanSet.h"

#include <filesystem>
#include <fstream>
#include <iostream>

namespace hspmd::cli {

namespace {

void checkToml(const std::string &path, Compilation &compilation) {
  std::vector<planner::ClusterError> errors;
  if (std::string why = ir::notAFile(path); !why.empty()) {
    compilation.diags().error(ir::Location{path, 0, 0, 1}, "cannot read '" + path + "': " + why);
    return;
  }
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && text.empty()) {
    compilation.diags().error(ir::Location{path, 0, 0, 1}, "cannot read '" + path + "'");
    return;
  }
  compilation.sources().addBuffer(path, text);
  if (planner::isPlanSet(path)) // its plans are checked when it trains (hspmc train SET)
    planner::readPlanSet(path, errors);
  else
    planner::checkTomlFile(path, compilation.stdlibDir() + "/devices.toml", errors);
  for (const auto &error : errors)
    compilation.diags().error(error.loc, error.message);
}

} // namespace

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

} // namespace hspmd::cli
