// TextLexer.h - the tokenizer shared by the textual IR parser and the annotation parser.
//
// Tokens: integers, floats (a digit is required after '.', so "0..4" is 0 '..' 4), strings,
// identifiers, value names (%name, where a name may hold letters, digits, '_', '.', '[', ']'),
// and punctuation ("..", "->", and single characters).
#pragma once

#include <cstdint>
#include <string>

namespace hspmd::ir {

enum class TokenKind { Int, Float, String, Ident, ValueName, Punct, End, Error };

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text; // identifier, punctuation, unescaped string, or value name without '%'
  int64_t intValue = 0;
  double floatValue = 0;
  uint32_t line = 1, col = 1; // 1-based position of the first character
  uint32_t offset = 0;        // 0-based offset in the input

  bool is(const char *punct) const { return kind == TokenKind::Punct && text == punct; }
  bool isIdent(const char *word) const { return kind == TokenKind::Ident && text == word; }
  /// For messages: "'foo'", "end of input".
  std::string describe() const;
};

class TextLexer {
public:
  explicit TextLexer(std::string text);
  const Token &peek() const { return current_; }
  Token next();

private:
  std::string text_;
  size_t pos_ = 0;
  uint32_t line_ = 1, lineStart_ = 0;
  Token current_;
  Token lex();
  void skipSpaceAndComments();
};

/// Characters allowed in value names after '%'.
bool isValueNameChar(char c);
/// `text` as a one-line quoted string: '"', '\\', line breaks, carriage returns and tabs
/// escaped. The textual IR and the plan files hspmc writes share it (frontend's unquote and
/// this lexer read it back).
std::string quoteString(const std::string &text);

} // namespace hspmd::ir
