// Diagnostics.cpp - diagnostics with locations and their rendering with the source line and a caret
// (frontend/Diagnostics.h).
#include "frontend/Diagnostics.h"

#include <algorithm>

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
  const ir::Location &loc = diagnostic.loc;
  std::string where = loc.isKnown() || !loc.file.empty() ? loc.str() + ": " : std::string();
  return where + std::string(severityName(diagnostic.severity)) + ": " + diagnostic.message +
         (diagnostic.code.empty() ? "" : " [" + diagnostic.code + "]");
}

// A source line longer than this is shown as a window of it around the column, "..." marking
// what is cut: a minified or generated file's line can be hundreds of kilobytes.
constexpr size_t kExcerptWidth = 120;

static void renderOne(std::string &out, const Diagnostic &diagnostic, const SourceManager *sources) {
  out += diagnosticHeader(diagnostic) + "\n";
  if (!sources || !diagnostic.loc.isKnown())
    return;
  auto line = sources->line(diagnostic.loc.file, diagnostic.loc.line);
  if (!line)
    return;
  const size_t col = std::min<size_t>(diagnostic.loc.col == 0 ? 0 : diagnostic.loc.col - 1, line->size());
  size_t begin = 0, end = line->size();
  if (end > kExcerptWidth) {
    begin = col > kExcerptWidth / 3 ? col - kExcerptWidth / 3 : 0;
    end = std::min(line->size(), begin + kExcerptWidth);
  }
  const std::string before = begin > 0 ? "..." : "";
  out += "  " + before;
  // Control characters (a terminal's escape sequences) are shown as '?'; tabs are kept so the
  // caret lines up under tab-indented source.
  for (size_t i = begin; i < end; ++i) {
    const unsigned char c = static_cast<unsigned char>((*line)[i]);
    out += c == '\t' || (c >= 0x20 && c != 0x7f) ? static_cast<char>(c) : '?';
  }
  out += (end < line->size() ? "...\n  " : "\n  ") + std::string(before.size(), ' ');
  for (size_t i = begin; i < col; ++i)
    out += (*line)[i] == '\t' ? '\t' : ' ';
  out += '^';
  const size_t underline = std::min<size_t>(diagnostic.loc.length, end > col ? end - col : 1);
  for (size_t i = 1; i < underline; ++i)
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
