// Helpers shared by the frontend tests: compile text or files and collect diagnostics.
#pragma once

#include "frontend/Compilation.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace hspmd::testing {

struct Compiled {
  frontend::SourceManager sources;
  frontend::CollectingSink sink;
  frontend::DiagnosticEngine diags{sink};
  frontend::Compilation compilation{sources, diags, "stdlib"};

  /// "line:col: severity: message" per diagnostic and note; the file name is kept when
  /// it differs from `mainFile`.
  std::vector<std::string> messages(const std::string &mainFile) const {
    std::vector<std::string> out;
    auto add = [&](const frontend::Diagnostic &d) {
      std::string where = d.loc.file == mainFile ? "" : d.loc.file.str() + ":";
      out.push_back(where + std::to_string(d.loc.line) + ":" + std::to_string(d.loc.col) + ": " +
                    std::string(frontend::severityName(d.severity)) + ": " + d.message);
    };
    for (const auto &diagnostic : sink.diagnostics) {
      add(diagnostic);
      for (const auto &note : diagnostic.notes)
        add(note);
    }
    return out;
  }
};

/// Writes `text` to a file `name` in the temporary directory; returns its path.
inline std::string writeTemp(const std::string &name, const std::string &text) {
  auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

} // namespace hspmd::testing
