// Diagnostics.cpp - diagnostics with locations and their rendering with the source line and a caret
// (frontend/Diagnostics.h).
#include "frontend/Diagnostics.h"

namespace hspmd::frontend {

std::string_view severityName(Severity severity) {
  switch (severity) {
  case Severity::Error:
    return "error";
  case Severity::Warning:
    return "warning";
  case Severity::Note:
    return "note";
  }
  return "error";
}

std::string diagnosticHeader(const Diagnostic &diagnostic) {
  std::string where = diagnostic.loc.isKnown()      ? diagnostic.loc.str() + ": "
                      : diagnostic.loc.file.empty() ? std::string()
                                                    : diagnostic.loc.file + ": ";
  return where + std::string(severityName(diagnostic.severity)) + ": " + diagnostic.message +
         (diagnostic.code.empty() ? "" : " [" + diagnostic.code + "]");
}

static void renderOne(std::string &out, const Diagnostic &diagnostic, const SourceManager *sources) {
  out += diagnosticHeader(diagnostic) + "\n";
  if (!sources || !diagnostic.loc.isKnown())
    return;
  auto line = sources->line(diagnostic.loc.file, diagnostic.loc.line);
  if (!line)
    return;
  out += "  " + std::string(*line) + "\n  ";
  // Keep tabs so the caret lines up under tab-indented source.
  for (uint32_t i = 1; i < diagnostic.loc.col && i - 1 < line->size(); ++i)
    out += (*line)[i - 1] == '\t' ? '\t' : ' ';
  out += '^';
  for (uint32_t i = 1; i < diagnostic.loc.length; ++i)
    out += '~';
  out += "\n";
}

std::string renderDiagnostic(const Diagnostic &diagnostic, const SourceManager *sources) {
  std::string out;
  renderOne(out, diagnostic, sources);
  for (const Diagnostic &note : diagnostic.notes)
    renderOne(out, note, sources);
  return out;
}

void TextDiagnosticPrinter::handle(const Diagnostic &diagnostic) {
  out_ << renderDiagnostic(diagnostic, &sources_);
}

DiagnosticBuilder::~DiagnosticBuilder() {
  if (engine_)
    engine_->emit(diagnostic_);
}

DiagnosticBuilder &DiagnosticBuilder::note(const ir::Location &loc, std::string message) {
  diagnostic_.notes.push_back(Diagnostic{Severity::Note, loc, std::move(message), {}});
  return *this;
}

DiagnosticBuilder &DiagnosticBuilder::code(std::string code) {
  diagnostic_.code = std::move(code);
  return *this;
}

DiagnosticBuilder DiagnosticEngine::error(const ir::Location &loc, std::string message) {
  return DiagnosticBuilder(*this, Diagnostic{Severity::Error, loc, std::move(message), {}});
}

DiagnosticBuilder DiagnosticEngine::warning(const ir::Location &loc, std::string message) {
  return DiagnosticBuilder(*this, Diagnostic{Severity::Warning, loc, std::move(message), {}});
}

void DiagnosticEngine::emit(const Diagnostic &diagnostic) {
  if (diagnostic.severity == Severity::Error)
    ++errors_;
  else if (diagnostic.severity == Severity::Warning)
    ++warnings_;
  sink_.handle(diagnostic);
}

} // namespace hspmd::frontend
