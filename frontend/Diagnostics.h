// Diagnostics.h - errors, warnings and notes with locations, rendered like a compiler's:
//
//   plan.hspmd:12:7: error: device 3 is listed twice (subgroups must be disjoint)
//     annotate wte = { [0..4]: S0 | [3]: R } dup
//                                   ^
//   plan.hspmd:12:20: note: ...
//
// A DiagnosticEngine forwards to a sink: a TextDiagnosticPrinter for people, a
// CollectingSink for tests and for `--format json`.
#pragma once

#include "frontend/SourceManager.h"
#include "ir/Location.h"

#include <ostream>
#include <string>
#include <vector>

namespace hspmd::frontend {

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  Severity severity = Severity::Error;
  ir::Location loc;
  std::string message;
  std::vector<Diagnostic> notes;
  std::string code = {}; // a lint code ("HS107", docs/lint.md), shown after the message
};

std::string_view severityName(Severity severity);

/// "file:line:col: severity: message" (no source line).
std::string diagnosticHeader(const Diagnostic &diagnostic);
/// The full rendering: header, source line, caret and underline, then the notes.
std::string renderDiagnostic(const Diagnostic &diagnostic, const SourceManager *sources);

class DiagnosticSink {
public:
  virtual ~DiagnosticSink() = default;
  virtual void handle(const Diagnostic &diagnostic) = 0;
};

class TextDiagnosticPrinter : public DiagnosticSink {
public:
  TextDiagnosticPrinter(std::ostream &out, const SourceManager &sources) : out_(out), sources_(sources) {}
  void handle(const Diagnostic &diagnostic) override;

private:
  std::ostream &out_;
  const SourceManager &sources_;
};

class CollectingSink : public DiagnosticSink {
public:
  void handle(const Diagnostic &diagnostic) override { diagnostics.push_back(diagnostic); }
  std::vector<Diagnostic> diagnostics;
};

class DiagnosticEngine;

/// Collects notes for one diagnostic and emits it when it goes out of scope.
class DiagnosticBuilder {
public:
  DiagnosticBuilder(DiagnosticEngine &engine, Diagnostic diagnostic)
      : engine_(&engine), diagnostic_(std::move(diagnostic)) {}
  DiagnosticBuilder(DiagnosticBuilder &&other) noexcept
      : engine_(other.engine_), diagnostic_(std::move(other.diagnostic_)) {
    other.engine_ = nullptr;
  }
  DiagnosticBuilder(const DiagnosticBuilder &) = delete;
  ~DiagnosticBuilder();
  DiagnosticBuilder &note(const ir::Location &loc, std::string message);
  DiagnosticBuilder &code(std::string code);

private:
  DiagnosticEngine *engine_;
  Diagnostic diagnostic_;
};

class DiagnosticEngine {
public:
  explicit DiagnosticEngine(DiagnosticSink &sink) : sink_(sink) {}
  DiagnosticBuilder error(const ir::Location &loc, std::string message);
  DiagnosticBuilder warning(const ir::Location &loc, std::string message);
  void emit(const Diagnostic &diagnostic);
  int errorCount() const { return errors_; }
  int warningCount() const { return warnings_; }
  bool hasErrors() const { return errors_ > 0; }

private:
  DiagnosticSink &sink_;
  int errors_ = 0, warnings_ = 0;
};

} // namespace hspmd::frontend
