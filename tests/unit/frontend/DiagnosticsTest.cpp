// Diagnostics render like a compiler's: header, source line, caret and underline, notes.
#include "frontend/Diagnostics.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace hspmd::frontend;

namespace {

TEST(Diagnostics, RendersSourceLineCaretAndNotes) {
  SourceManager sources;
  sources.addBuffer("plan.hspmd", "plan p for GPT {\n  annotate wte = { [0, 1]: S0 | [1]: R } dup\n}\n");
  std::ostringstream out;
  TextDiagnosticPrinter printer(out, sources);
  DiagnosticEngine diags(printer);
  diags.error({"plan.hspmd", 2, 34, 1}, "device 1 is listed twice (subgroups must be disjoint)")
      .note({"plan.hspmd", 2, 21, 6}, "first listed here");
  EXPECT_EQ(out.str(), "plan.hspmd:2:34: error: device 1 is listed twice (subgroups must be disjoint)\n"
                       "    annotate wte = { [0, 1]: S0 | [1]: R } dup\n"
                       "                                   ^\n"
                       "plan.hspmd:2:21: note: first listed here\n"
                       "    annotate wte = { [0, 1]: S0 | [1]: R } dup\n"
                       "                      ^~~~~~\n");
  EXPECT_EQ(diags.errorCount(), 1);
}

TEST(Diagnostics, TabsKeepTheCaretAligned) {
  SourceManager sources;
  sources.addBuffer("m.hspmd", "\tlet x = y\n");
  Diagnostic diagnostic{Severity::Warning, {"m.hspmd", 1, 10, 1}, "unused", {}};
  EXPECT_EQ(renderDiagnostic(diagnostic, &sources), "m.hspmd:1:10: warning: unused\n  \tlet x = y\n  \t        ^\n");
}

TEST(Diagnostics, LongLinesAreShownAsAWindowAroundTheColumn) {
  SourceManager sources;
  sources.addBuffer("m.hspmd", std::string(1000, 'a') + "BAD" + std::string(1000, 'b') + "\n");
  Diagnostic diagnostic{Severity::Error, {"m.hspmd", 1, 1001, 3}, "bad", {}};
  EXPECT_EQ(renderDiagnostic(diagnostic, &sources), "m.hspmd:1:1001: error: bad\n  ..." + std::string(40, 'a') + "BAD" +
                                                        std::string(77, 'b') + "...\n     " + std::string(40, ' ') +
                                                        "^~~\n");
  // Near the start of the line: no "..." before it.
  Diagnostic early{Severity::Error, {"m.hspmd", 1, 2, 1}, "bad", {}};
  EXPECT_EQ(renderDiagnostic(early, &sources), "m.hspmd:1:2: error: bad\n  " + std::string(120, 'a') + "...\n   ^\n");
}

TEST(Diagnostics, ControlCharactersInTheSourceAreNotPrinted) {
  SourceManager sources;
  sources.addBuffer("m.hspmd", "let x = \x1b[2J y\n");
  Diagnostic diagnostic{Severity::Error, {"m.hspmd", 1, 14, 1}, "unknown name 'y'", {}};
  EXPECT_EQ(renderDiagnostic(diagnostic, &sources),
            "m.hspmd:1:14: error: unknown name 'y'\n  let x = ?[2J y\n               ^\n");
}

TEST(Diagnostics, LocationsWithoutSourceStillPrint) {
  Diagnostic fileOnly{Severity::Error, {"x.toml", 0, 0, 1}, "cannot read 'x.toml'", {}};
  EXPECT_EQ(renderDiagnostic(fileOnly, nullptr), "x.toml: error: cannot read 'x.toml'\n");
  Diagnostic none{Severity::Error, {}, "something", {}};
  EXPECT_EQ(renderDiagnostic(none, nullptr), "error: something\n");
}

TEST(Diagnostics, CollectingSinkCountsBySeverity) {
  CollectingSink sink;
  DiagnosticEngine diags(sink);
  diags.warning({"f", 1, 1, 1}, "w");
  diags.error({"f", 2, 1, 1}, "e");
  EXPECT_EQ(diags.warningCount(), 1);
  EXPECT_EQ(diags.errorCount(), 1);
  ASSERT_EQ(sink.diagnostics.size(), 2u);
  EXPECT_EQ(diagnosticHeader(sink.diagnostics[1]), "f:2:1: error: e");
}

TEST(SourceManager, LinesAreOneBasedAndStripCarriageReturns) {
  SourceManager sources;
  sources.addBuffer("f", "one\r\ntwo\nthree");
  EXPECT_EQ(sources.line("f", 1), "one");
  EXPECT_EQ(sources.line("f", 3), "three");
  EXPECT_FALSE(sources.line("f", 4));
  EXPECT_FALSE(sources.line("g", 1));
  EXPECT_EQ(sources.load("/nonexistent/file.hspmd"), nullptr);
}

} // namespace
