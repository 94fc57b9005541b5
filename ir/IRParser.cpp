// IRParser.cpp - reads the textual IR written by Printer.cpp.
#include "ir/AnnotationText.h"
#include "ir/Graph.h"

#include <limits>

namespace hspmd::ir {

namespace {
class IRParser {
public:
  explicit IRParser(const std::string &text) : lexer_(text) {}

  std::unique_ptr<Graph> parse(ParseError *error) {
    auto graph = parseGraphBody();
    if (!graph && error)
      *error = error_;
    return graph;
  }

private:
  TextLexer lexer_;
  ParseError error_;

  std::nullptr_t fail(const Token &at, std::string message) {
    if (error_.message.empty())
      error_ = ParseError{at.line, at.col, std::move(message)};
    return nullptr;
  }
  bool expect(const char *punct) {
    Token token = lexer_.next();
    if (token.is(punct))
      return true;
    fail(token, std::string("expected '") + punct + "', found " + token.describe());
    return false;
  }
  bool expectWord(const char *word) {
    Token token = lexer_.next();
    if (token.isIdent(word))
      return true;
    fail(token, std::string("expected '") + word + "', found " + token.describe());
    return false;
  }

  std::unique_ptr<Graph> parseGraphBody() {
    if (!expectWord("graph"))
      return nullptr;
    Token name = lexer_.next();
    if (name.kind != TokenKind::Ident)
      return fail(name, "expected the graph's name, found " + name.describe());
    auto graph = std::make_unique<Graph>(name.text);
    if (!expect("{"))
      return nullptr;
    if (lexer_.peek().isIdent("plans")) {
      lexer_.next();
      Token count = lexer_.next();
      if (count.kind != TokenKind::Int || count.intValue < 0 || count.intValue > 64)
        return fail(count, "expected a plan count, found " + count.describe());
      graph->setNumPlans(static_cast<int>(count.intValue));
    }
    if (lexer_.peek().isIdent("symbols")) {
      lexer_.next();
      do {
        Token symbol = lexer_.next();
        if (symbol.kind != TokenKind::Ident)
          return fail(symbol, "expected a symbol name, found " + symbol.describe());
        graph->symbols.push_back(symbol.text);
      } while (lexer_.peek().is(",") && (lexer_.next(), true));
    }
    while (lexer_.peek().kind == TokenKind::ValueName)
      if (!parseOp(*graph))
        return nullptr;
    if (lexer_.peek().isIdent("return")) {
      lexer_.next();
      do {
        Token output = lexer_.next();
        Value *value = output.kind == TokenKind::ValueName ? graph->findValue(output.text) : nullptr;
        if (!value)
          return fail(output, "expected a defined value after 'return', found " + output.describe());
        graph->outputs.push_back(value);
      } while (lexer_.peek().is(",") && (lexer_.next(), true));
    }
    if (!expect("}"))
      return nullptr;
    if (lexer_.peek().kind != TokenKind::End)
      return fail(lexer_.peek(), "unexpected " + lexer_.peek().describe() + " after the graph");
    return graph;
  }

  bool parseOp(Graph &graph) {
    std::vector<std::string> names;
    std::vector<Token> nameTokens;
    do {
      Token name = lexer_.next();
      if (name.kind != TokenKind::ValueName)
        return fail(name, "expected a result name, found " + name.describe()), false;
      if (graph.findValue(name.text))
        return fail(name, "value %" + name.text + " is defined twice"), false;
      names.push_back(name.text);
      nameTokens.push_back(name);
    } while (lexer_.peek().is(",") && (lexer_.next(), true));
    if (!expect("="))
      return false;
    Token opName = lexer_.next();
    auto kind = opName.kind == TokenKind::Ident ? opKindFromName(opName.text) : std::nullopt;
    if (!kind)
      return fail(opName, "unknown op " + opName.describe()), false;
    std::vector<Value *> operands;
    while (lexer_.peek().kind == TokenKind::ValueName) {
      Token operand = lexer_.next();
      Value *value = graph.findValue(operand.text);
      if (!value)
        return fail(operand, "use of undefined value %" + operand.text), false;
      operands.push_back(value);
      if (!lexer_.peek().is(","))
        break;
      lexer_.next();
    }
    AttrMap attrs;
    if (lexer_.peek().is("{") && !parseAttrs(attrs))
      return false;
    if (!expect(":"))
      return false;
    std::vector<TensorType> types;
    std::vector<std::vector<std::optional<Annotation>>> annotations;
    do {
      types.emplace_back();
      annotations.emplace_back();
      if (!parseType(types.back()) || !parseAnnotations(annotations.back(), graph.numPlans))
        return false;
    } while (lexer_.peek().is(",") && (lexer_.next(), true));
    if (types.size() != names.size())
      return fail(nameTokens.front(),
                  std::to_string(names.size()) + " results named but " + std::to_string(types.size()) + " types given"),
             false;
    Location loc;
    if (lexer_.peek().isIdent("loc") && !parseLocation(loc))
      return false;
    Op *op = graph.createOp(*kind, operands, types, attrs, loc, names);
    for (size_t i = 0; i < op->results.size(); ++i)
      if (!annotations[i].empty())
        op->results[i]->annotations = annotations[i];
    return true;
  }

  bool parseAttrs(AttrMap &attrs) {
    lexer_.next(); // '{'
    do {
      Token key = lexer_.next();
      if (key.kind != TokenKind::Ident)
        return fail(key, "expected an attribute name, found " + key.describe()), false;
      if (!expect("="))
        return false;
      AttrValue value;
      if (!parseAttrValue(value))
        return false;
      attrs[key.text] = value;
    } while (lexer_.peek().is(",") && (lexer_.next(), true));
    return expect("}");
  }

  bool parseAttrValue(AttrValue &value) {
    Token token = lexer_.next();
    bool negative = false;
    if (token.is("-")) {
      negative = true;
      token = lexer_.next();
    }
    if (token.kind == TokenKind::Int) {
      value = negative ? -token.intValue : token.intValue;
    } else if (token.kind == TokenKind::Float) {
      value = negative ? -token.floatValue : token.floatValue;
    } else if (!negative && (token.isIdent("inf") || token.isIdent("nan"))) {
      value = token.isIdent("inf") ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    } else if (negative && token.isIdent("inf")) {
      value = -std::numeric_limits<double>::infinity();
    } else if (!negative && (token.isIdent("true") || token.isIdent("false"))) {
      value = token.isIdent("true");
    } else if (!negative && token.kind == TokenKind::String) {
      value = token.text;
    } else if (!negative && token.is("[")) {
      std::vector<SymExpr> list;
      if (!parseDims(list))
        return false;
      value = list;
    } else {
      return fail(token, "expected an attribute value, found " + token.describe()), false;
    }
    return true;
  }

  // After '[': dims up to and including ']'.
  bool parseDims(std::vector<SymExpr> &dims) {
    if (lexer_.peek().is("]")) {
      lexer_.next();
      return true;
    }
    do {
      std::string message;
      Token at;
      auto dim = parseSymExpr(lexer_, &message, &at);
      if (!dim)
        return fail(at, message), false;
      dims.push_back(*dim);
    } while (lexer_.peek().is(",") && (lexer_.next(), true));
    return expect("]");
  }

  bool parseType(TensorType &type) {
    Token dtype = lexer_.next();
    auto parsed = dtype.kind == TokenKind::Ident ? dtypeFromName(dtype.text) : std::nullopt;
    if (!parsed)
      return fail(dtype, "expected an element type (f32, bf16, f16, i32, i64), found " + dtype.describe()), false;
    type.dtype = *parsed;
    return expect("[") && parseDims(type.shape);
  }

  bool parseAnnotations(std::vector<std::optional<Annotation>> &annotations, int numPlans) {
    if (!lexer_.peek().is("<"))
      return true;
    Token open = lexer_.next();
    do {
      if (lexer_.peek().is("?")) {
        lexer_.next();
        annotations.emplace_back();
        continue;
      }
      TextError error;
      auto annotation = parseAnnotation(lexer_, &error);
      if (!annotation)
        return fail(Token{TokenKind::End, "", 0, 0, error.line, error.col, 0}, error.message), false;
      annotations.push_back(*annotation);
    } while (lexer_.peek().is(";") && (lexer_.next(), true));
    if (static_cast<int>(annotations.size()) != numPlans)
      return fail(open, std::to_string(annotations.size()) + " annotations given, but the graph has " +
                            std::to_string(numPlans) + " plans"),
             false;
    return expect(">");
  }

  bool parseLocation(Location &loc) {
    lexer_.next(); // loc
    if (!expect("("))
      return false;
    Token file = lexer_.next();
    if (file.kind != TokenKind::String)
      return fail(file, "expected a file name, found " + file.describe()), false;
    if (!expect(":"))
      return false;
    Token line = lexer_.next();
    if (line.kind != TokenKind::Int || !expect(":"))
      return fail(line, "expected a line number"), false;
    Token col = lexer_.next();
    if (col.kind != TokenKind::Int)
      return fail(col, "expected a column number"), false;
    loc = Location{file.text, static_cast<uint32_t>(line.intValue), static_cast<uint32_t>(col.intValue), 1};
    return expect(")");
  }
};
} // namespace

std::unique_ptr<Graph> parseGraph(const std::string &text, ParseError *error) {
  return IRParser(text).parse(error);
}

} // namespace hspmd::ir
