// AnnotationText.h - the textual notation of HSPMD annotations (shared/DESIGN.md section 4).
//
//   annotation := local | '{' local ('|' local)* '}' hetero
//   local      := devices ':' axis ('x' axis)*
//   devices    := '[' item (',' item)* ']'      item := INT | INT '..' INT  (half-open)
//   axis       := ('S' INT | 'R' | 'P') ('*' INT)?
//   hetero     := 'dup' | 'partial' | 'split' INT ( '[' INT,... ']' | 'ratio' '[' INT,... ']' )?
//
// The same notation is parsed by the ANTLR grammar in plan files (frontend/AstBuilder.cpp);
// both parsers share the word-level helpers below and the checks of ir/Annotation.h.
#pragma once

#include "ir/Annotation.h"
#include "ir/Location.h"
#include "ir/TextLexer.h"

#include <optional>
#include <string>

namespace hspmd::ir {

/// Canonical text. Runs of three or more consecutive devices print as a half-open range
/// (`[0..4]`); the axis count is left out when a group has a single axis; a single subgroup
/// with a `dup` placement prints without braces.
std::string printAnnotation(const Annotation &annotation);
std::string printLocalAnnotation(const LocalAnnotation &local);
std::string printHetero(const HeteroPlacement &hetero);
/// A box of a global tensor as the textual forms write it: "[0:4, 16:32]".
std::string printBox(const Box &box);
/// A list of devices: "[0, 1, 2]".
std::string printDeviceList(const std::vector<int> &devices);
/// A list of devices as plans write it: a run of more than two consecutive devices as a range,
/// "[0..4]", others as printDeviceList.
std::string printDeviceRange(const std::vector<int> &devices);

/// Reads an axis word: "S1" (split dim 1), "R", "P". The count is set to 0 (unknown).
std::optional<MeshAxis> parseAxisWord(const std::string &word, std::string *error);
/// Reads a placement word: "dup", "partial", "split0".
std::optional<HeteroPlacement> parseHeteroWord(const std::string &word, std::string *error);
/// Fills axis counts left out: allowed only when a group has a single axis, which then
/// spans the whole group. Returns the index of the offending axis, or -1.
int fillAxisCounts(LocalAnnotation &local, std::string *error);

/// Where each part of a parsed annotation came from, for diagnostics.
struct AnnotationSourceMap {
  Location whole, hetero;
  std::vector<Location> subgroups;
  std::vector<std::vector<Location>> devices; // per subgroup, one per device (ranges expanded)
  std::vector<std::vector<Location>> axes;    // per subgroup, one per axis
  /// The location of the part an AnnotationError refers to.
  const Location &locate(const AnnotationError &error) const;
};

/// A parse or check failure with its position in the text.
struct TextError {
  uint32_t line = 1, col = 1;
  std::string message;
  std::string str() const;
};

/// Parses an annotation starting at the lexer's current token and stops after it. Runs
/// checkAnnotation(). `file` names the text in the returned source map.
std::optional<Annotation> parseAnnotation(TextLexer &lexer, TextError *error, AnnotationSourceMap *map = nullptr,
                                          const std::string &file = "");
/// Parses a whole string holding one annotation.
std::optional<Annotation> parseAnnotation(const std::string &text, TextError *error);

} // namespace hspmd::ir
