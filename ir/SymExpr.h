// SymExpr.h - integer polynomials over named symbols, used for tensor dimensions.
//
// A dimension is either a constant (128) or an expression in the model's symbolic sizes
// (B, S, 3*B*S). Expressions are kept in a canonical form, so equality is structural:
// (B*S)*3 == 3*S*B. Division is exact or refused.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hspmd::ir {

class SymExpr {
public:
  /// A product of symbols with exponents, sorted by symbol name: B*S*S is {(B,1),(S,2)}.
  using Monomial = std::vector<std::pair<std::string, int>>;

  SymExpr() = default;
  SymExpr(int64_t constant); // NOLINT: implicit on purpose, dims are mostly constants
  static SymExpr symbol(const std::string &name);

  bool isConstant() const;
  /// The value when the expression has no symbols.
  std::optional<int64_t> constant() const;
  std::vector<std::string> symbols() const;
  /// The value with every symbol 1: the sum of the coefficients (as substitute() of every
  /// symbol by 1 and constant() would give, without building either).
  int64_t valueWithSymbolsAsOne() const;

  SymExpr operator+(const SymExpr &other) const;
  SymExpr operator-(const SymExpr &other) const;
  SymExpr operator*(const SymExpr &other) const;
  /// Exact division: by a constant that divides every coefficient, or by a single term
  /// that divides every term. Returns nullopt otherwise.
  std::optional<SymExpr> divide(const SymExpr &divisor) const;
  /// Replaces the named symbols by constants; the others stay symbolic.
  SymExpr substitute(const std::map<std::string, int64_t> &values) const;

  bool operator==(const SymExpr &other) const { return constant_ == other.constant_ && terms_ == other.terms_; }
  bool operator!=(const SymExpr &other) const { return !(*this == other); }

  /// Canonical text: highest-degree terms first, e.g. "3*B*S + 2".
  std::string str() const;

  /// Whether a coefficient of this expression, or of one it was computed from, left the 64-bit
  /// range (the arithmetic above is checked; the flag sticks through later arithmetic). The
  /// value of an overflowed expression means nothing: callers report it where it was computed.
  bool overflowed() const { return overflow_; }

private:
  // The constant term apart from the others: most dimensions are constants, and a constant
  // then costs no allocation (every value's shape, every attribute holds some).
  int64_t constant_ = 0;
  std::map<Monomial, int64_t> terms_; // the non-constant terms; no zero coefficients stored
  bool overflow_ = false;
  void addTerm(const Monomial &monomial, int64_t coefficient);
};

class TextLexer;
struct Token;
/// Parses one dimension expression at the lexer's position (see parseSymExpr below);
/// on failure `errorAt` receives the token the error is about.
std::optional<SymExpr> parseSymExpr(TextLexer &lexer, std::string *error, Token *errorAt = nullptr);
/// Parses the text produced by SymExpr::str() (and any + - * / expression of integers and
/// symbols with parentheses). Returns nullopt and sets `error` on failure.
std::optional<SymExpr> parseSymExpr(const std::string &text, std::string *error);

} // namespace hspmd::ir
