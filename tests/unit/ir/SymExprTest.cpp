// SymExprTest.cpp - symbolic dimensions: arithmetic, simplification and printing.
#include "ir/SymExpr.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>

using hspmd::ir::parseSymExpr;
using hspmd::ir::SymExpr;

namespace {

SymExpr sym(const char *name) {
  return SymExpr::symbol(name);
}

TEST(SymExpr, ConstantsFold) {
  EXPECT_EQ((SymExpr(3) * SymExpr(4) + SymExpr(2)).constant(), 14);
  EXPECT_TRUE(SymExpr(7).isConstant());
  EXPECT_FALSE(sym("B").isConstant());
  EXPECT_EQ(SymExpr().constant(), 0);
}

TEST(SymExpr, CanonicalFormMakesProductsCommute) {
  SymExpr a = sym("B") * sym("S") * SymExpr(3);
  SymExpr b = SymExpr(3) * sym("S") * sym("B");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.str(), "3*B*S");
  EXPECT_EQ((sym("S") - sym("S")).str(), "0");
}

TEST(SymExpr, PrintsHighestDegreeFirst) {
  SymExpr e = SymExpr(2) + sym("B") * sym("S") * SymExpr(3) - sym("B");
  EXPECT_EQ(e.str(), "3*B*S - B + 2");
  EXPECT_EQ((SymExpr(0) - sym("B")).str(), "-B");
  EXPECT_EQ((sym("S") * sym("S")).str(), "S*S");
}

TEST(SymExpr, ExactDivisionOnly) {
  SymExpr e = SymExpr(6) * sym("B") * sym("S");
  EXPECT_EQ(e.divide(SymExpr(3))->str(), "2*B*S");
  EXPECT_EQ(e.divide(sym("S"))->str(), "6*B");
  EXPECT_EQ(e.divide(SymExpr(2) * sym("B"))->str(), "3*S");
  EXPECT_FALSE(e.divide(SymExpr(4)).has_value());
  EXPECT_FALSE(e.divide(sym("H")).has_value());
  EXPECT_FALSE(SymExpr(10).divide(SymExpr(3)).has_value());
  EXPECT_FALSE(e.divide(sym("B") + SymExpr(1)).has_value());
}

// The constant term is held apart from the others (a constant costs no allocation): every
// operation treats it as a term like the others.
TEST(SymExpr, TheConstantTermIsATermLikeTheOthers) {
  const SymExpr e = SymExpr(2) * sym("B") + SymExpr(4);
  EXPECT_EQ(e.divide(SymExpr(2))->str(), "B + 2");
  EXPECT_FALSE((SymExpr(2) * sym("B") + SymExpr(3)).divide(SymExpr(2)).has_value());
  EXPECT_FALSE(e.divide(sym("B")).has_value()); // 4 / B
  EXPECT_FALSE(SymExpr(6).divide(sym("B")).has_value());
  EXPECT_FALSE(e.divide(SymExpr(0)).has_value());
  EXPECT_EQ(SymExpr(0).divide(sym("B"))->str(), "0");
  EXPECT_EQ((e * e).str(), "4*B*B + 16*B + 16");
  EXPECT_EQ((e * SymExpr(0)).str(), "0");
  EXPECT_EQ(e - SymExpr(4), SymExpr(2) * sym("B"));
  EXPECT_NE(e, SymExpr(2) * sym("B"));
  EXPECT_FALSE(e.isConstant());
  EXPECT_EQ((e - SymExpr(2) * sym("B")).constant(), 4);
  EXPECT_EQ(e.substitute({{"B", 5}}).constant(), 14);
  EXPECT_EQ(e.valueWithSymbolsAsOne(), 6);
  EXPECT_TRUE((SymExpr(INT64_MAX) + SymExpr(1)).overflowed());
  EXPECT_TRUE((SymExpr(INT64_MAX) * SymExpr(2)).overflowed());
  EXPECT_TRUE(SymExpr(INT64_MIN).divide(SymExpr(-1))->overflowed());
  EXPECT_FALSE((SymExpr(INT64_MAX) + SymExpr(-1)).overflowed());
}

TEST(SymExpr, SubstituteBindsSomeSymbols) {
  SymExpr e = SymExpr(3) * sym("B") * sym("S") + sym("B");
  EXPECT_EQ(e.substitute({{"B", 2}}).str(), "6*S + 2");
  EXPECT_EQ(e.substitute({{"B", 2}, {"S", 10}}).constant(), 62);
  EXPECT_EQ(e.symbols(), (std::vector<std::string>{"B", "S"}));
}

// Every symbol 1 (what estimates use for unbound sizes): the value substitute() gives.
TEST(SymExpr, ValueWithSymbolsAsOneIsSubstitutionByOnes) {
  for (const char *text : {"0", "17", "B", "3*B*S", "3*B*S - B + 2", "-B", "S*S + 4*S - 7", "B - S", "4*B*B*S - 9"}) {
    std::string error;
    auto e = parseSymExpr(text, &error);
    ASSERT_TRUE(e) << text;
    std::map<std::string, int64_t> ones;
    for (const std::string &name : e->symbols())
      ones[name] = 1;
    EXPECT_EQ(e->valueWithSymbolsAsOne(), e->substitute(ones).constant()) << text;
  }
  EXPECT_EQ((SymExpr(3) * sym("B") - SymExpr(5)).valueWithSymbolsAsOne(), -2);
}

TEST(SymExpr, ParsesWhatItPrints) {
  for (const char *text : {"0", "17", "B", "3*B*S", "3*B*S - B + 2", "-B", "S*S + 4*S - 7"}) {
    std::string error;
    auto parsed = parseSymExpr(text, &error);
    ASSERT_TRUE(parsed) << text << ": " << error;
    EXPECT_EQ(parsed->str(), text);
  }
  EXPECT_EQ(parseSymExpr("(B + 1) * 2", nullptr)->str(), "2*B + 2");
  EXPECT_EQ(parseSymExpr("4 * B / 2", nullptr)->str(), "2*B");
}

TEST(SymExpr, ParseErrorsSayWhy) {
  std::string error;
  EXPECT_FALSE(parseSymExpr("B +", &error));
  EXPECT_EQ(error, "expected a dimension, found end of input");
  EXPECT_FALSE(parseSymExpr("B / 3", &error));
  EXPECT_EQ(error, "division is not exact");
  EXPECT_FALSE(parseSymExpr("(B", &error));
  EXPECT_EQ(error, "expected ')'");
}

} // namespace
