// Parser.h - reads one .hspmd file into a FileAst (syntax only; no imports, no elaboration).
#pragma once

#include "frontend/Ast.h"
#include "frontend/Diagnostics.h"

#include <memory>

namespace hspmd::frontend {

/// Parses `text` (named `fileName` in diagnostics). Syntax errors are reported in human
/// words, only the first one per file; returns null when the file has errors.
std::unique_ptr<FileAst> parseFile(const std::string &fileName, const std::string &text, DiagnosticEngine &diags);

/// Whether `word` is one of the language's words ("plan", "model", "stage", ...), which a name
/// that a tool makes up must not be.
bool isKeyword(const std::string &word);

} // namespace hspmd::frontend
