// AnnotationTextTest.cpp - the annotation notation: printing and parsing round-trip, and parse
// errors.
#include "ir/AnnotationText.h"

#include <gtest/gtest.h>

using namespace hspmd::ir;

namespace {

std::string roundTrip(const std::string &text) {
  TextError error;
  auto annotation = parseAnnotation(text, &error);
  if (!annotation)
    return "error " + error.str();
  return printAnnotation(*annotation);
}

TEST(AnnotationText, CanonicalPrinting) {
  EXPECT_EQ(roundTrip("[0..4]: S0"), "[0..4]: S0");
  EXPECT_EQ(roundTrip("[0, 1, 2, 3]: S0*4"), "[0..4]: S0");
  EXPECT_EQ(roundTrip("[0..8]: R*2 x S1*4"), "[0..8]: R*2 x S1*4");
  EXPECT_EQ(roundTrip("{ [0..4]: S1*4 | [4..6]: S1*2 } dup"), "{ [0..4]: S1 | [4, 5]: S1 } dup");
  EXPECT_EQ(roundTrip("{ [0,1]: R*2 | [2]: R } split0 [12, 4]"), "{ [0, 1]: R | [2]: R } split0 [12, 4]");
  EXPECT_EQ(roundTrip("{ [0,1]: R | [2,3]: R } split0 ratio [3, 1]"), "{ [0, 1]: R | [2, 3]: R } split0 ratio [3, 1]");
  EXPECT_EQ(roundTrip("{ [0]: R | [1]: R | [2..4]: S1*2 } split1 [5, 3, 3]"),
            "{ [0]: R | [1]: R | [2, 3]: S1 } split1 [5, 3, 3]");
  EXPECT_EQ(roundTrip("{ [0..4]: P } partial"), "{ [0..4]: P } partial");
  EXPECT_EQ(roundTrip("{ [0..4]: R } dup"), "[0..4]: R");
  EXPECT_EQ(roundTrip("[7, 0..3, 9]: S0"), "[7, 0..3, 9]: S0");
  EXPECT_EQ(roundTrip("{ [0]: R | [1]: R } split2"), "{ [0]: R | [1]: R } split2");
}

TEST(AnnotationText, PrintParsePrintIsIdentity) {
  for (const char *text :
       {"[0..4]: S0", "[0..8]: R*2 x S1*4", "{ [0..4]: S1 | [4, 5]: S1 } dup", "{ [0, 1]: R | [2]: R } split0 [12, 4]",
        "[3, 1, 2]: P*3", "{ [0, 1]: S0*2 x P*1 | [5]: R } partial"}) {
    std::string once = roundTrip(text);
    EXPECT_EQ(roundTrip(once), once);
  }
}

TEST(AnnotationText, ErrorsPointAtTheirColumn) {
  EXPECT_EQ(roundTrip("[0..4] S0"), "error 1:8: expected ':' after the device list, found 'S0'");
  EXPECT_EQ(roundTrip("[0..4]: T0"), "error 1:9: unknown mesh axis 'T0'; expected S<dim>, R or P");
  EXPECT_EQ(roundTrip("[0..4]: R*2 x S1*3"),
            "error 1:1: mesh axis counts 2 x 3 multiply to 6, but the group has 4 devices");
  // Counts whose product passes 2^63 (each may be up to 2^20) are said to, not wrapped.
  EXPECT_EQ(roundTrip("[0..4]: R*1048576 x S0*1048576 x P*1048576 x S1*1048576"),
            "error 1:1: mesh axis counts 1048576 x 1048576 x 1048576 x 1048576 multiply to more than "
            "9223372036854775807, but the group has 4 devices");
  EXPECT_EQ(roundTrip("[0..4]: R x S1*2"),
            "error 1:9: each mesh axis needs a count (as in 'S1*2') when a group has several axes");
  EXPECT_EQ(roundTrip("{ [0, 1]: S0 | [1]: R } dup"),
            "error 1:17: device 1 is listed twice (subgroups must be disjoint)");
  EXPECT_EQ(roundTrip("[2, 2]: R"), "error 1:5: device 2 is listed twice in one device group");
  EXPECT_EQ(roundTrip("{ [0]: R | [1]: R } split0 [1, 2, 3]"), "error 1:21: 3 sizes given for 2 subgroups");
  EXPECT_EQ(roundTrip("{ [0]: R | [1]: R }"),
            "error 1:20: expected a placement (dup, partial or split<dim>) after '}', found end of input");
  EXPECT_EQ(roundTrip("{ [0]: R | [1]: R } dup [1, 2]"), "error 1:25: only a split placement takes sizes");
  EXPECT_EQ(roundTrip("{ [0]: R | [1]: R } spilt0"),
            "error 1:21: unknown placement 'spilt0'; expected dup, partial or split<dim>");
  EXPECT_EQ(roundTrip("[4..2]: R"), "error 1:2: empty device range 4..2 (the end is excluded)");
  EXPECT_EQ(roundTrip("[0..4]: S0 junk"), "error 1:12: unexpected 'junk' after the annotation");
  // ... before what the annotation means (this said that counts of 2 multiply to 2).
  EXPECT_EQ(roundTrip("[0..4]: S0*2 S1*2"), "error 1:14: unexpected 'S1' after the annotation");
  EXPECT_EQ(roundTrip("[0..4]: S0*0"), "error 1:9: a mesh axis count must be at least 1");
  EXPECT_EQ(roundTrip("{ [0]: R | [1]: R } split0 ratio [1, 0]"), "error 1:21: ratios must be positive");
  EXPECT_EQ(roundTrip(""), "error 1:1: expected '[' to start a device list, found end of input");
  // Device ids are below 2^20, as in plans: 2^32 was device 0, 2^31 - 1 an internal error
  // (a vector too large), 3e9 "negative".
  EXPECT_EQ(roundTrip("[0, 4294967296]: R"), "error 1:5: device id 4294967296 is too large (ids are below 1048576)");
  EXPECT_EQ(roundTrip("[2147483647]: R"), "error 1:2: device id 2147483647 is too large (ids are below 1048576)");
  EXPECT_EQ(roundTrip("[3000000000]: R"), "error 1:2: device id 3000000000 is too large (ids are below 1048576)");
  EXPECT_EQ(roundTrip("[1048570..1048577]: R"), "error 1:2: device id 1048576 is too large (ids are below 1048576)");
  EXPECT_EQ(roundTrip("[1048575]: R"), "[1048575]: R");
  // 2^63 - 1 + 1 overflowed: "a device group must not be empty".
  EXPECT_EQ(roundTrip("[9223372036854775807]: R"),
            "error 1:2: device id 9223372036854775807 is too large (ids are below 1048576)");
  // ... and an annotation lists at most 2^20 of them (ranges repeated had no end).
  EXPECT_EQ(roundTrip("[0..1048576, 0..1]: R"), "error 1:14: an annotation of more than 1048576 devices");
}

TEST(AnnotationText, SourceMapLocatesParts) {
  TextLexer lexer("{ [0, 1]: S0 | [2]: R*1 } split0 [3, 4]");
  TextError error;
  AnnotationSourceMap map;
  auto annotation = parseAnnotation(lexer, &error, &map, "f");
  ASSERT_TRUE(annotation);
  EXPECT_EQ(map.subgroups.at(1).col, 16u);
  EXPECT_EQ(map.devices.at(0).at(1).col, 7u);
  EXPECT_EQ(map.axes.at(1).at(0).col, 21u);
  EXPECT_EQ(map.hetero.col, 27u);
  AnnotationError hetero{AnnotationError::Part::Hetero, 0, 0, "x", "HS105"};
  EXPECT_EQ(map.locate(hetero).col, 27u);
}

// Every byte of a string (a file name in a loc(...), a buffer's value name) reads back from
// quoteString's one-line text, and no line break is left in it.
TEST(TextLexer, QuotedStringsReadBack) {
  std::string all;
  for (int byte = 1; byte < 256; ++byte)
    all += static_cast<char>(byte);
  for (const std::string &text : {std::string(), all, std::string("a\"b\\c\r\n\td")}) {
    const std::string quoted = quoteString(text);
    EXPECT_EQ(quoted.find_first_of("\r\n"), std::string::npos) << quoted;
    TextLexer lexer(quoted);
    const Token token = lexer.next();
    EXPECT_EQ(token.kind, TokenKind::String) << token.text;
    EXPECT_EQ(token.text, text);
    EXPECT_EQ(lexer.next().kind, TokenKind::End);
  }
}

} // namespace
