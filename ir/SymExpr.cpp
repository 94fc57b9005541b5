// SymExpr.cpp - symbolic integer polynomials: arithmetic, substitution and printing (ir/SymExpr.h).
#include "ir/SymExpr.h"

#include "ir/TextLexer.h"

#include <algorithm>
#include <cstdint>

namespace hspmd::ir {

SymExpr::SymExpr(int64_t constant) {
  addTerm({}, constant);
}

SymExpr SymExpr::symbol(const std::string &name) {
  SymExpr result;
  result.addTerm({{name, 1}}, 1);
  return result;
}

void SymExpr::addTerm(const Monomial &monomial, int64_t coefficient) {
  if (coefficient == 0)
    return;
  if (monomial.empty()) {
    overflow_ = __builtin_add_overflow(constant_, coefficient, &constant_) || overflow_;
    return;
  }
  int64_t &slot = terms_[monomial];
  overflow_ = __builtin_add_overflow(slot, coefficient, &slot) || overflow_;
  if (slot == 0)
    terms_.erase(monomial);
}

bool SymExpr::isConstant() const {
  return terms_.empty();
}

std::optional<int64_t> SymExpr::constant() const {
  if (isConstant())
    return constant_;
  return std::nullopt;
}

int64_t SymExpr::valueWithSymbolsAsOne() const {
  int64_t sum = constant_;
  for (const auto &[monomial, coefficient] : terms_)
    (void)__builtin_add_overflow(sum, coefficient, &sum); // wraps as addTerm's sum does
  return sum;
}

std::vector<std::string> SymExpr::symbols() const {
  std::vector<std::string> names;
  for (const auto &[monomial, coefficient] : terms_)
    for (const auto &[name, exponent] : monomial)
      if (std::find(names.begin(), names.end(), name) == names.end())
        names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

SymExpr SymExpr::operator+(const SymExpr &other) const {
  SymExpr result = *this;
  result.overflow_ = overflow_ || other.overflow_;
  result.addTerm({}, other.constant_);
  for (const auto &[monomial, coefficient] : other.terms_)
    result.addTerm(monomial, coefficient);
  return result;
}

SymExpr SymExpr::operator-(const SymExpr &other) const {
  return *this + other * SymExpr(-1);
}

static SymExpr::Monomial multiplyMonomials(const SymExpr::Monomial &a, const SymExpr::Monomial &b) {
  std::map<std::string, int> exponents;
  for (const auto &[name, exponent] : a)
    exponents[name] += exponent;
  for (const auto &[name, exponent] : b)
    exponents[name] += exponent;
  return {exponents.begin(), exponents.end()};
}

SymExpr SymExpr::operator*(const SymExpr &other) const {
  SymExpr result;
  result.overflow_ = overflow_ || other.overflow_;
  auto multiply = [&result](const Monomial &ma, int64_t ca, const Monomial &mb, int64_t cb) {
    if (ca == 0 || cb == 0)
      return;
    int64_t product = 0;
    result.overflow_ = __builtin_mul_overflow(ca, cb, &product) || result.overflow_;
    result.addTerm(ma.empty() ? mb : mb.empty() ? ma : multiplyMonomials(ma, mb), product);
  };
  const Monomial one;
  multiply(one, constant_, one, other.constant_);
  for (const auto &[mb, cb] : other.terms_)
    multiply(one, constant_, mb, cb);
  for (const auto &[ma, ca] : terms_) {
    multiply(ma, ca, one, other.constant_);
    for (const auto &[mb, cb] : other.terms_)
      multiply(ma, ca, mb, cb);
  }
  return result;
}

std::optional<SymExpr> SymExpr::divide(const SymExpr &divisor) const {
  // The divisor is one term: a constant, or a monomial times a coefficient.
  const Monomial none;
  const bool constantDivisor = divisor.terms_.empty();
  if (constantDivisor ? divisor.constant_ == 0 : divisor.terms_.size() != 1 || divisor.constant_ != 0)
    return std::nullopt;
  const Monomial &dm = constantDivisor ? none : divisor.terms_.begin()->first;
  const int64_t dc = constantDivisor ? divisor.constant_ : divisor.terms_.begin()->second;
  SymExpr result;
  result.overflow_ = overflow_ || divisor.overflow_;
  // Divides one term into `result`; false where it does not divide exactly.
  auto divideTerm = [&](const Monomial &monomial, int64_t coefficient) {
    if (dc == -1 && coefficient == INT64_MIN) { // the one quotient that does not fit
      result.overflow_ = true;
      return true;
    }
    if (coefficient % dc != 0)
      return false;
    std::map<std::string, int> exponents(monomial.begin(), monomial.end());
    for (const auto &[name, exponent] : dm) {
      auto it = exponents.find(name);
      if (it == exponents.end() || it->second < exponent)
        return false;
      if ((it->second -= exponent) == 0)
        exponents.erase(it);
    }
    result.addTerm({exponents.begin(), exponents.end()}, coefficient / dc);
    return true;
  };
  if (constant_ != 0 && !divideTerm(none, constant_))
    return std::nullopt;
  for (const auto &[monomial, coefficient] : terms_)
    if (!divideTerm(monomial, coefficient))
      return std::nullopt;
  return result;
}

SymExpr SymExpr::substitute(const std::map<std::string, int64_t> &values) const {
  SymExpr result(constant_);
  result.overflow_ = overflow_;
  for (const auto &[monomial, coefficient] : terms_) {
    SymExpr term(coefficient);
    for (const auto &[name, exponent] : monomial) {
      auto it = values.find(name);
      for (int i = 0; i < exponent; ++i)
        term = term * (it == values.end() ? SymExpr::symbol(name) : SymExpr(it->second));
    }
    result = result + term;
  }
  return result;
}

static int degree(const SymExpr::Monomial &monomial) {
  int total = 0;
  for (const auto &[name, exponent] : monomial)
    total += exponent;
  return total;
}

std::string SymExpr::str() const {
  if (terms_.empty())
    return std::to_string(constant_);
  std::vector<std::pair<Monomial, int64_t>> ordered(terms_.begin(), terms_.end());
  if (constant_ != 0)
    ordered.insert(ordered.begin(), {Monomial{}, constant_});
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto &a, const auto &b) { return degree(a.first) > degree(b.first); });
  std::string text;
  for (size_t i = 0; i < ordered.size(); ++i) {
    auto [monomial, coefficient] = ordered[i];
    if (i > 0) {
      text += coefficient < 0 ? " - " : " + ";
      coefficient = coefficient < 0 ? -coefficient : coefficient;
    } else if (coefficient < 0 && !monomial.empty()) {
      text += "-";
      coefficient = -coefficient;
    }
    std::string factors;
    for (const auto &[name, exponent] : monomial)
      for (int e = 0; e < exponent; ++e)
        factors += (factors.empty() ? "" : "*") + name;
    if (monomial.empty())
      text += std::to_string(coefficient);
    else if (coefficient == 1)
      text += factors;
    else
      text += std::to_string(coefficient) + "*" + factors;
  }
  return text;
}

namespace {
// expr := term (('+' | '-') term)* ; term := factor (('*' | '/') factor)* ;
// factor := INT | IDENT | '-' factor | '(' expr ')'
struct SymParser {
  TextLexer &lexer;
  std::string error;
  Token errorAt; // the token the error is about

  std::optional<SymExpr> parseExpr() {
    auto lhs = parseTerm();
    while (lhs && (lexer.peek().is("+") || lexer.peek().is("-"))) {
      bool plus = lexer.next().is("+");
      auto rhs = parseTerm();
      if (!rhs)
        return std::nullopt;
      lhs = plus ? *lhs + *rhs : *lhs - *rhs;
    }
    return lhs;
  }
  std::optional<SymExpr> parseTerm() {
    auto lhs = parseFactor();
    while (lhs && (lexer.peek().is("*") || lexer.peek().is("/"))) {
      bool times = lexer.next().is("*");
      auto rhs = parseFactor();
      if (!rhs)
        return std::nullopt;
      if (times) {
        lhs = *lhs * *rhs;
      } else {
        lhs = lhs->divide(*rhs);
        if (!lhs)
          error = "division is not exact", errorAt = lexer.peek();
      }
    }
    return lhs;
  }
  std::optional<SymExpr> parseFactor() {
    Token token = lexer.next();
    if (token.kind == TokenKind::Int)
      return SymExpr(token.intValue);
    if (token.kind == TokenKind::Ident)
      return SymExpr::symbol(token.text);
    if (token.is("-")) {
      auto inner = parseFactor();
      return inner ? std::optional<SymExpr>(SymExpr(0) - *inner) : std::nullopt;
    }
    if (token.is("(")) {
      auto inner = parseExpr();
      if (inner && !lexer.peek().is(")")) {
        error = "expected ')'", errorAt = lexer.peek();
        return std::nullopt;
      }
      lexer.next();
      return inner;
    }
    error = "expected a dimension, found " + token.describe(), errorAt = token;
    return std::nullopt;
  }
};
} // namespace

std::optional<SymExpr> parseSymExpr(TextLexer &lexer, std::string *error, Token *errorAt) {
  SymParser parser{lexer, {}, {}};
  auto result = parser.parseExpr();
  if (!result && error)
    *error = parser.error;
  if (!result && errorAt)
    *errorAt = parser.errorAt;
  return result;
}

std::optional<SymExpr> parseSymExpr(const std::string &text, std::string *error) {
  TextLexer lexer(text);
  SymParser parser{lexer, {}, {}};
  auto result = parser.parseExpr();
  if (result && lexer.peek().kind != TokenKind::End) {
    parser.error = "unexpected " + lexer.peek().describe();
    result.reset();
  }
  if (!result && error)
    *error = parser.error;
  return result;
}

} // namespace hspmd::ir
