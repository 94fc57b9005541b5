// AnnotationText.cpp - printing and parsing the annotation notation, device lists and boxes
// (ir/AnnotationText.h).
#include "ir/AnnotationText.h"

#include <cctype>

namespace hspmd::ir {

static std::string printDevices(const std::vector<int> &devices) {
  std::string text = "[";
  for (size_t i = 0; i < devices.size();) {
    size_t run = i + 1;
    while (run < devices.size() && devices[run] == devices[run - 1] + 1)
      ++run;
    if (i > 0)
      text += ", ";
    if (run - i >= 3) {
      text += std::to_string(devices[i]) + ".." + std::to_string(devices[run - 1] + 1);
      i = run;
    } else {
      text += std::to_string(devices[i]);
      ++i;
    }
  }
  return text + "]";
}

std::string printLocalAnnotation(const LocalAnnotation &local) {
  std::string text = printDevices(local.devices) + ": ";
  for (size_t a = 0; a < local.axes.size(); ++a) {
    const MeshAxis &axis = local.axes[a];
    if (a > 0)
      text += " x ";
    text += axis.kind == AxisKind::Split ? "S" + std::to_string(axis.dim) : axis.kind == AxisKind::Dup ? "R" : "P";
    if (local.axes.size() > 1)
      text += "*" + std::to_string(axis.count);
  }
  return text;
}

static std::string printIntList(const std::vector<int64_t> &values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

std::string printHetero(const HeteroPlacement &hetero) {
  switch (hetero.kind) {
  case HeteroKind::Dup:
    return "dup";
  case HeteroKind::Partial:
    return "partial";
  case HeteroKind::Split:
    break;
  }
  std::string text = "split" + std::to_string(hetero.dim);
  if (!hetero.sizes.empty())
    text += (hetero.ratio ? " ratio " : " ") + printIntList(hetero.sizes);
  return text;
}

std::string printBox(const Box &box) {
  std::string text = "[";
  for (size_t d = 0; d < box.lo.size(); ++d)
    text += (d ? ", " : "") + std::to_string(box.lo[d]) + ":" + std::to_string(box.hi[d]);
  return text + "]";
}

std::string printDeviceList(const std::vector<int> &devices) {
  std::string text = "[";
  for (size_t i = 0; i < devices.size(); ++i)
    text += (i ? ", " : "") + std::to_string(devices[i]);
  return text + "]";
}

std::string printDeviceRange(const std::vector<int> &devices) {
  bool contiguous = !devices.empty();
  for (size_t i = 1; i < devices.size(); ++i)
    contiguous = contiguous && devices[i] == devices[i - 1] + 1;
  if (contiguous && devices.size() > 2)
    return "[" + std::to_string(devices.front()) + ".." + std::to_string(devices.back() + 1) + "]";
  return printDeviceList(devices);
}

std::string printAnnotation(const Annotation &annotation) {
  if (annotation.subgroups.size() == 1 && annotation.hetero.kind == HeteroKind::Dup)
    return printLocalAnnotation(annotation.subgroups[0]);
  std::string text = "{ ";
  for (size_t g = 0; g < annotation.subgroups.size(); ++g)
    text += (g ? " | " : "") + printLocalAnnotation(annotation.subgroups[g]);
  return text + " } " + printHetero(annotation.hetero);
}

static std::optional<int> parseDigits(const std::string &digits) {
  if (digits.empty() || digits.size() > 6)
    return std::nullopt;
  for (char c : digits)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return std::nullopt;
  return std::stoi(digits);
}

std::optional<MeshAxis> parseAxisWord(const std::string &word, std::string *error) {
  MeshAxis axis;
  axis.count = 0;
  if (word == "R") {
    axis.kind = AxisKind::Dup;
    return axis;
  }
  if (word == "P") {
    axis.kind = AxisKind::Partial;
    return axis;
  }
  if (word.size() > 1 && word[0] == 'S') {
    if (auto dim = parseDigits(word.substr(1))) {
      axis.kind = AxisKind::Split;
      axis.dim = *dim;
      return axis;
    }
  }
  *error = "unknown mesh axis '" + word + "'; expected S<dim>, R or P";
  return std::nullopt;
}

std::optional<HeteroPlacement> parseHeteroWord(const std::string &word, std::string *error) {
  HeteroPlacement hetero;
  if (word == "dup")
    return hetero;
  if (word == "partial") {
    hetero.kind = HeteroKind::Partial;
    return hetero;
  }
  if (word.rfind("split", 0) == 0) {
    if (auto dim = parseDigits(word.substr(5))) {
      hetero.kind = HeteroKind::Split;
      hetero.dim = *dim;
      return hetero;
    }
  }
  *error = "unknown placement '" + word + "'; expected dup, partial or split<dim>";
  return std::nullopt;
}

int fillAxisCounts(LocalAnnotation &local, std::string *error) {
  for (size_t a = 0; a < local.axes.size(); ++a) {
    if (local.axes[a].count != 0)
      continue;
    if (local.axes.size() > 1) {
      *error = "each mesh axis needs a count (as in 'S1*2') when a group has several axes";
      return static_cast<int>(a);
    }
    local.axes[a].count = static_cast<int>(local.devices.size());
  }
  return -1;
}

const Location &AnnotationSourceMap::locate(const AnnotationError &error) const {
  auto pick = [&](const std::vector<std::vector<Location>> &table) -> const Location & {
    if (error.subgroup < static_cast<int>(table.size()) && error.item < static_cast<int>(table[error.subgroup].size()))
      return table[error.subgroup][error.item];
    return whole;
  };
  switch (error.part) {
  case AnnotationError::Part::Whole:
    return whole;
  case AnnotationError::Part::Hetero:
    return hetero.isKnown() ? hetero : whole;
  case AnnotationError::Part::Subgroup:
    return error.subgroup < static_cast<int>(subgroups.size()) ? subgroups[error.subgroup] : whole;
  case AnnotationError::Part::Device:
    return pick(devices);
  case AnnotationError::Part::Axis:
    return pick(axes);
  }
  return whole;
}

std::string TextError::str() const {
  return std::to_string(line) + ":" + std::to_string(col) + ": " + message;
}

namespace {
struct AnnotationParser {
  TextLexer &lexer;
  TextError *error;
  AnnotationSourceMap map;
  std::string file;
  bool wholeText = false; // the text is the annotation alone: what follows it is a syntax error
  int64_t listed = 0;     // devices listed so far, over every subgroup

  Location here(const Token &token) const {
    return Location{file, token.line, token.col, static_cast<uint32_t>(std::max<size_t>(1, token.text.size()))};
  }
  bool fail(const Token &token, std::string message) {
    if (error)
      *error = TextError{token.line, token.col, std::move(message)};
    return false;
  }
  bool expect(const char *punct, const char *what) {
    Token token = lexer.next();
    if (token.is(punct))
      return true;
    return fail(token, std::string("expected ") + what + ", found " + token.describe());
  }
  bool parseInt(int64_t &value, const char *what) {
    Token token = lexer.next();
    if (token.kind != TokenKind::Int)
      return fail(token, std::string("expected ") + what + ", found " + token.describe());
    value = token.intValue;
    return true;
  }

  bool parseLocal(LocalAnnotation &local) {
    map.subgroups.push_back(here(lexer.peek()));
    map.devices.emplace_back();
    map.axes.emplace_back();
    if (!expect("[", "'[' to start a device list"))
      return false;
    do {
      Token first = lexer.peek();
      int64_t lo = 0, hi = 0;
      if (!parseInt(lo, "a device id"))
        return false;
      if (lo >= kMostDevices) // before lo + 1, which 2^63 - 1 overflows
        return fail(first, "device id " + std::to_string(lo) + " is too large (ids are below " +
                               std::to_string(kMostDevices) + ")");
      hi = lo + 1;
      if (lexer.peek().is("..")) {
        lexer.next();
        if (!parseInt(hi, "the end of a device range"))
          return false;
        if (hi <= lo)
          return fail(first, "empty device range " + std::to_string(lo) + ".." + std::to_string(hi) +
                                 " (the end is excluded)");
      }
      if (hi > kMostDevices)
        return fail(first, "device id " + std::to_string(hi - 1) + " is too large (ids are below " +
                               std::to_string(kMostDevices) + ")");
      if ((listed += hi - lo) > kMostDevices)
        return fail(first, "an annotation of more than " + std::to_string(kMostDevices) + " devices");
      for (int64_t d = lo; d < hi; ++d) {
        local.devices.push_back(static_cast<int>(d));
        map.devices.back().push_back(here(first));
      }
    } while (lexer.peek().is(",") && (lexer.next(), true));
    if (!expect("]", "',' or ']' in a device list") || !expect(":", "':' after the device list"))
      return false;
    do {
      Token word = lexer.next();
      if (word.kind != TokenKind::Ident)
        return fail(word, "expected a mesh axis (S<dim>, R or P), found " + word.describe());
      std::string message;
      auto axis = parseAxisWord(word.text, &message);
      if (!axis)
        return fail(word, message);
      if (lexer.peek().is("*")) {
        lexer.next();
        int64_t count = 0;
        if (!parseInt(count, "an axis count"))
          return false;
        axis->count = static_cast<int>(std::min<int64_t>(count, 1 << 30));
        if (count < 1)
          return fail(word, "a mesh axis count must be at least 1");
      }
      local.axes.push_back(*axis);
      map.axes.back().push_back(here(word));
    } while (lexer.peek().isIdent("x") && (lexer.next(), true));
    std::string message;
    if (int bad = fillAxisCounts(local, &message); bad >= 0) {
      const Location &at = map.axes.back()[bad];
      if (error)
        *error = TextError{at.line, at.col, message};
      return false;
    }
    return true;
  }

  bool parseHetero(HeteroPlacement &hetero) {
    Token word = lexer.next();
    map.hetero = here(word);
    if (word.kind != TokenKind::Ident)
      return fail(word, "expected a placement (dup, partial or split<dim>) after '}', found " + word.describe());
    std::string message;
    auto placement = parseHeteroWord(word.text, &message);
    if (!placement)
      return fail(word, message);
    hetero = *placement;
    const bool ratio = lexer.peek().isIdent("ratio");
    if (!lexer.peek().is("[") && !ratio)
      return true;
    if (hetero.kind != HeteroKind::Split)
      return fail(lexer.peek(), "only a split placement takes sizes");
    if (ratio)
      lexer.next();
    hetero.ratio = ratio;
    if (!expect("[", "'[' to start the sizes"))
      return false;
    do {
      int64_t size = 0;
      if (!parseInt(size, "a size"))
        return false;
      hetero.sizes.push_back(size);
    } while (lexer.peek().is(",") && (lexer.next(), true));
    return expect("]", "',' or ']' in the sizes");
  }

  std::optional<Annotation> parse() {
    Annotation annotation;
    map.whole = here(lexer.peek());
    if (lexer.peek().is("{")) {
      lexer.next();
      do {
        annotation.subgroups.emplace_back();
        if (!parseLocal(annotation.subgroups.back()))
          return std::nullopt;
      } while (lexer.peek().is("|") && (lexer.next(), true));
      if (!expect("}", "'|' or '}' after a device group") || !parseHetero(annotation.hetero))
        return std::nullopt;
    } else {
      annotation.subgroups.emplace_back();
      if (!parseLocal(annotation.subgroups.back()))
        return std::nullopt;
    }
    // Syntax before meaning: "[0..4]: S0*2 S1*2" is the stray 'S1', not a count of 2.
    if (wholeText && lexer.peek().kind != TokenKind::End) {
      if (error)
        *error = TextError{lexer.peek().line, lexer.peek().col,
                           "unexpected " + lexer.peek().describe() + " after the annotation"};
      return std::nullopt;
    }
    if (auto problem = checkAnnotation(annotation)) {
      const Location &at = map.locate(*problem);
      if (error)
        *error = TextError{at.line, at.col, problem->message};
      return std::nullopt;
    }
    return annotation;
  }
};
} // namespace

std::optional<Annotation> parseAnnotation(TextLexer &lexer, TextError *error, AnnotationSourceMap *map,
                                          const std::string &file) {
  AnnotationParser parser{lexer, error, {}, file};
  auto result = parser.parse();
  if (map)
    *map = std::move(parser.map);
  return result;
}

std::optional<Annotation> parseAnnotation(const std::string &text, TextError *error) {
  TextLexer lexer(text);
  AnnotationParser parser{lexer, error, {}, ""};
  parser.wholeText = true;
  return parser.parse();
}

} // namespace hspmd::ir
