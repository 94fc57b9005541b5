// TextLexer.cpp - the tokenizer of the textual IR and annotation parsers (ir/TextLexer.h).
#include "ir/TextLexer.h"

#include <cctype>
#include <charconv>

namespace hspmd::ir {

std::string Token::describe() const {
  switch (kind) {
  case TokenKind::End:
    return "end of input";
  case TokenKind::ValueName:
    return "'%" + text + "'";
  case TokenKind::String:
    return quoteString(text);
  default:
    return "'" + text + "'";
  }
}

bool isValueNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '[' || c == ']';
}

std::string quoteString(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else
      out += c;
  }
  return out + "\"";
}

TextLexer::TextLexer(std::string text) : text_(std::move(text)) {
  current_ = lex();
}

Token TextLexer::next() {
  Token token = current_;
  current_ = lex();
  return token;
}

void TextLexer::skipSpaceAndComments() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == '\n') {
      ++pos_;
      ++line_;
      lineStart_ = static_cast<uint32_t>(pos_);
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++pos_;
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
      while (pos_ < text_.size() && text_[pos_] != '\n')
        ++pos_;
    } else {
      break;
    }
  }
}

Token TextLexer::lex() {
  skipSpaceAndComments();
  Token token;
  token.offset = static_cast<uint32_t>(pos_);
  token.line = line_;
  token.col = static_cast<uint32_t>(pos_ - lineStart_ + 1);
  if (pos_ >= text_.size()) {
    token.kind = TokenKind::End;
    return token;
  }
  const char c = text_[pos_];
  const size_t start = pos_;
  auto isDigit = [&](size_t i) { return i < text_.size() && std::isdigit(static_cast<unsigned char>(text_[i])); };
  if (isDigit(pos_)) {
    while (isDigit(pos_))
      ++pos_;
    bool isFloat = false;
    if (pos_ + 1 < text_.size() && text_[pos_] == '.' && isDigit(pos_ + 1)) {
      isFloat = true;
      for (++pos_; isDigit(pos_);)
        ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      size_t save = pos_++;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-'))
        ++pos_;
      if (isDigit(pos_)) {
        isFloat = true;
        while (isDigit(pos_))
          ++pos_;
      } else {
        pos_ = save;
      }
    }
    token.text = text_.substr(start, pos_ - start);
    const char *first = text_.data() + start, *last = text_.data() + pos_;
    if (isFloat) {
      token.kind = TokenKind::Float;
      std::from_chars(first, last, token.floatValue);
    } else {
      token.kind = TokenKind::Int;
      if (std::from_chars(first, last, token.intValue).ec != std::errc()) {
        token.kind = TokenKind::Error;
        token.text = "integer out of range: " + token.text;
      }
    }
    return token;
  }
  if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      ++pos_;
    token.kind = TokenKind::Ident;
    token.text = text_.substr(start, pos_ - start);
    return token;
  }
  if (c == '%') {
    ++pos_;
    while (pos_ < text_.size() && isValueNameChar(text_[pos_]))
      ++pos_;
    token.kind = pos_ - start > 1 ? TokenKind::ValueName : TokenKind::Error;
    token.text = pos_ - start > 1 ? text_.substr(start + 1, pos_ - start - 1) : "%";
    return token;
  }
  if (c == '"') {
    ++pos_;
    while (pos_ < text_.size() && text_[pos_] != '"' && text_[pos_] != '\n') {
      char ch = text_[pos_++];
      if (ch == '\\' && pos_ < text_.size()) {
        char esc = text_[pos_++];
        token.text += esc == 'n' ? '\n' : esc == 'r' ? '\r' : esc == 't' ? '\t' : esc;
      } else {
        token.text += ch;
      }
    }
    if (pos_ >= text_.size() || text_[pos_] != '"') {
      token.kind = TokenKind::Error;
      token.text = "unterminated string";
      return token;
    }
    ++pos_;
    token.kind = TokenKind::String;
    return token;
  }
  token.kind = TokenKind::Punct;
  if ((c == '.' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '.') ||
      (c == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '>')) {
    token.text = text_.substr(pos_, 2);
    pos_ += 2;
    return token;
  }
  token.text = std::string(1, c);
  ++pos_;
  if (!std::ispunct(static_cast<unsigned char>(c)))
    token.kind = TokenKind::Error;
  return token;
}

} // namespace hspmd::ir
