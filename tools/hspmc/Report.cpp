// Report.cpp - how hspmc prints diagnostics: text on stderr or JSON on stdout.
#include "tools/hspmc/Commands.h"

#include "ir/JsonText.h"

#include <nlohmann/json.hpp>

#include <iostream>

namespace hspmd::cli {

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

} // namespace

// Prints what was collected, as text (stderr) or JSON (stdout). Returns the exit code.
int finish(const CollectingSink &sink, const SourceManager &sources, bool json, int errors) {
  if (json) {
    nlohmann::json out = {{"ok", errors == 0}, {"diagnostics", nlohmann::json::array()}};
    for (const auto &diagnostic : sink.diagnostics)
      out["diagnostics"].push_back(diagnosticJson(diagnostic));
    std::cout << ir::jsonText(out, 2) << "\n";
  } else {
    for (const auto &diagnostic : sink.diagnostics)
      std::cerr << frontend::renderDiagnostic(diagnostic, &sources);
  }
  return errors == 0 ? 0 : 1;
}

} // namespace hspmd::cli
