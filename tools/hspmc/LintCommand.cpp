// LintCommand.cpp - hspmc lint: a plan checked against its model and cluster (docs/lint.md).
#include "tools/hspmc/Commands.h"

#include <iostream>

namespace hspmd::cli {

int runLint(const std::string &planFile, const std::string &modelFile, const std::string &clusterFile, bool json,
            bool werror, std::optional<bool> bf16) {
  SourceManager sources;
  CollectingSink sink;
  DiagnosticEngine diags(sink);
  Compilation compilation(sources, diags);
  driver::lintFile(compilation, planFile, modelFile, clusterFile, true, true, nullptr, bf16);
  const int errors = diags.errorCount(), warnings = diags.warningCount();
  int code = finish(sink, sources, json, errors + (werror ? warnings : 0));
  if (!json)
    std::cout << "lint: " << errors << (errors == 1 ? " error, " : " errors, ") << warnings
              << (warnings == 1 ? " warning\n" : " warnings\n");
  return code;
}

} // namespace hspmd::cli
