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
  // The training programs are kept rather than freed: the process ends right after, and
  // freeing every device's program cost more than the rest of printing (clang's
  // -disable-free). Reachable from here to the end, they are no leak.
  static auto *const programs = new passes::PipelineResult;
  driver::lintFile(compilation, planFile, modelFile, clusterFile, true, true, programs, bf16);
  const int errors = diags.errorCount(), warnings = diags.warningCount();
  int code = finish(sink, sources, json, errors + (werror ? warnings : 0));
  if (!json)
    std::cout << "lint: " << errors << (errors == 1 ? " error, " : " errors, ") << warnings
              << (warnings == 1 ? " warning\n" : " warnings\n");
  return code;
}

} // namespace hspmd::cli
