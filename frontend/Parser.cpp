// Parser.cpp - one .hspmd file through the ANTLR lexer and parser into a FileAst, syntax errors as
// diagnostics (frontend/Parser.h).
#include "frontend/Parser.h"

#include "HspmdLexer.h"
#include "frontend/AstBuilderImpl.h"

#include <antlr4-runtime.h>

#include <cstdio>

namespace hspmd::frontend {

namespace {
using grammar::HspmdLexer;

// Describes a token for a message: 'foo', end of file.
std::string describeToken(antlr4::Token *token) {
  if (!token || token->getType() == antlr4::Token::EOF)
    return "end of file";
  std::string text = token->getText();
  if (text.size() > 24)
    text = text.substr(0, 21) + "...";
  return "'" + text + "'";
}

// "a name", "an integer" ... for the expected-token part of a message.
std::string expectedSummary(const antlr4::misc::IntervalSet &expected, const antlr4::dfa::Vocabulary &vocab) {
  std::vector<std::string> items;
  bool name = false, number = false, open = false;
  for (size_t type : expected.toList()) {
    if (type == HspmdLexer::IDENT) {
      name = true;
      continue;
    }
    std::string literal = vocab.getLiteralName(type);
    // Plan words double as names; when a name is expected, do not list them one by one.
    if (literal.size() > 2 && std::isalpha(static_cast<unsigned char>(literal[1])) &&
        expected.contains(static_cast<size_t>(HspmdLexer::IDENT)) && literal != "'true'" && literal != "'false'")
      continue;
    if (type == HspmdLexer::INT || type == HspmdLexer::FLOAT)
      number = true;
    if (literal == "'('")
      open = true;
    if (type == antlr4::Token::EOF)
      items.push_back("end of file");
    else if (type == HspmdLexer::INT)
      items.push_back("an integer");
    else if (type == HspmdLexer::FLOAT)
      items.push_back("a number");
    else if (type == HspmdLexer::STRING)
      items.push_back("a string");
    else if (!literal.empty())
      items.push_back(literal);
  }
  if (name && number && open)
    return "an expression";
  if (name)
    items.insert(items.begin(), "a name");
  // "end of file" reads best last.
  auto eof = std::find(items.begin(), items.end(), "end of file");
  if (eof != items.end()) {
    items.erase(eof);
    items.push_back("end of file");
  }
  if (items.empty() || items.size() > 5)
    return "";
  std::string text;
  for (size_t i = 0; i < items.size(); ++i)
    text += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
  return text;
}

// When the parser fails at the very start of a construct, name the construct with an
// example instead of listing tokens: "expected an annotation such as '[0..4]: S0'".
std::string phraseForRule(antlr4::Parser *parser, antlr4::Token *offending) {
  using P = grammar::HspmdParser;
  for (antlr4::ParserRuleContext *ctx = parser->getContext(); ctx;
       ctx = dynamic_cast<antlr4::ParserRuleContext *>(ctx->parent)) {
    if (ctx->getStart() != offending)
      return "";
    switch (ctx->getRuleIndex()) {
    case P::RuleAnnotation:
      return "an annotation such as '[0..4]: S0'";
    case P::RuleDeviceList:
      return "a device list such as '[0, 1]'";
    case P::RuleMeshAxis:
      return "a mesh axis (S<dim>, R or P)";
    case P::RuleTypeExpr:
      return "a type such as 'f32[B, S, d]'";
    case P::RuleValuePath:
      return "a path such as 'blocks[0:4]' or 'wte'";
    default:
      break;
    }
  }
  return "";
}

class SyntaxErrorListener : public antlr4::BaseErrorListener {
public:
  SyntaxErrorListener(std::string fileName, DiagnosticEngine &diags) : fileName_(std::move(fileName)), diags_(diags) {}
  bool failed = false;

  void syntaxError(antlr4::Recognizer *recognizer, antlr4::Token *offending, size_t line, size_t column,
                   const std::string &message, std::exception_ptr) override {
    // ANTLR's own text ("mismatched input ...") is replaced by ours, built from the
    // offending token and the tokens the parser expected at that point.
    if (failed)
      return; // only the first error: the rest are usually consequences
    failed = true;
    ir::Location at{fileName_, static_cast<uint32_t>(line), static_cast<uint32_t>(column + 1), 1};
    auto *parser = dynamic_cast<antlr4::Parser *>(recognizer);
    if (!parser) {
      // "token recognition error at: '$'"
      auto quote = message.find(": '");
      std::string text = quote == std::string::npos ? message : message.substr(quote + 3);
      if (!text.empty() && text.back() == '\'')
        text.pop_back();
      if (!text.empty() && text[0] == '"')
        diags_.error(at, "unterminated string");
      else
        diags_.error(at, "unexpected character '" + text.substr(0, 1) + "'");
      return;
    }
    if (offending && offending->getType() != antlr4::Token::EOF)
      at.length = static_cast<uint32_t>(std::max<size_t>(1, offending->getText().size()));
    std::string text = "unexpected " + describeToken(offending);
    std::string expected = phraseForRule(parser, offending);
    // After a stage, the parser expects only 'stage' or '}' (a stage's clauses are optional),
    // but the slip is most often a clause it does not know: name them.
    if (auto *pipeline = dynamic_cast<grammar::HspmdParser::PipelineItemContext *>(parser->getContext());
        expected.empty() && pipeline && !pipeline->stageDecl().empty())
      expected = "a stage clause (devices, tp, cp, hp, layers, with, zero, recompute), 'stage' or '}'";
    if (expected.empty() && dynamic_cast<grammar::HspmdParser::PlanDeclContext *>(parser->getContext()))
      expected = "a plan item (cluster, bind, optimizer, schedule, zero, recompute, chunked, precision, pipeline, "
                 "annotate, reshard) or '}'";
    if (expected.empty())
      expected = expectedSummary(parser->getExpectedTokens(), parser->getVocabulary());
    if (!expected.empty())
      text += "; expected " + expected;
    diags_.error(at, text);
  }

private:
  std::string fileName_;
  DiagnosticEngine &diags_;
};

// ANTLR's recursive descent would overflow the stack on absurdly nested input; refuse it
// before parsing. Returns false after reporting.
bool checkNesting(const std::string &fileName, const std::string &text, DiagnosticEngine &diags) {
  constexpr int kMaxDepth = 200;
  int depth = 0, minusRun = 0;
  uint32_t line = 1, col = 0;
  for (char c : text) {
    ++col;
    if (c == '\n')
      ++line, col = 0;
    if (c == '(' || c == '[' || c == '{')
      ++depth;
    else if (c == ')' || c == ']' || c == '}')
      --depth;
    if (c == '-')
      ++minusRun;
    else if (!std::isspace(static_cast<unsigned char>(c)))
      minusRun = 0;
    if (depth > kMaxDepth || minusRun > kMaxDepth) {
      diags.error(ir::Location{fileName, line, col, 1},
                  "expression nested too deeply (more than " + std::to_string(kMaxDepth) + " levels)");
      return false;
    }
  }
  return true;
}
// ANTLR decodes UTF-8 and throws on malformed bytes; find them first and say where.
bool checkUtf8(const std::string &fileName, const std::string &text, DiagnosticEngine &diags) {
  uint32_t line = 1, col = 1;
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    size_t length = byte < 0x80 ? 1 : (byte >> 5) == 0x6 ? 2 : (byte >> 4) == 0xE ? 3 : (byte >> 3) == 0x1E ? 4 : 0;
    bool ok = length > 0 && i + length <= text.size();
    for (size_t k = 1; ok && k < length; ++k)
      ok = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
    if (!ok) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", byte);
      diags.error(ir::Location{fileName, line, col, 1}, std::string("invalid UTF-8 (byte ") + hex + ")");
      return false;
    }
    if (byte == '\n')
      ++line, col = 1;
    else
      ++col;
    i += length;
  }
  return true;
}
} // namespace

static std::unique_ptr<FileAst> parseChecked(const std::string &fileName, const std::string &text,
                                             DiagnosticEngine &diags);

std::unique_ptr<FileAst> parseFile(const std::string &fileName, const std::string &text, DiagnosticEngine &diags) {
  if (!checkUtf8(fileName, text, diags) || !checkNesting(fileName, text, diags))
    return nullptr;
  try {
    return parseChecked(fileName, text, diags);
  } catch (const std::exception &error) {
    // The runtime should not throw on checked input; if it does, say so instead of crashing.
    diags.error(ir::Location{fileName, 0, 0, 1}, std::string("internal error while parsing: ") + error.what());
    return nullptr;
  }
}

static std::unique_ptr<FileAst> parseChecked(const std::string &fileName, const std::string &text,
                                             DiagnosticEngine &diags) {
  antlr4::ANTLRInputStream input(text);
  grammar::HspmdLexer lexer(&input);
  SyntaxErrorListener listener(fileName, diags);
  lexer.removeErrorListeners();
  lexer.addErrorListener(&listener);
  antlr4::CommonTokenStream tokens(&lexer);
  grammar::HspmdParser parser(&tokens);
  parser.removeErrorListeners();
  parser.addErrorListener(&listener);
  grammar::HspmdParser::FileContext *tree = parser.file();
  if (listener.failed)
    return nullptr;
  AstBuilder builder(fileName, diags);
  auto ast = builder.build(tree);
  if (builder.failed())
    return nullptr;
  return ast;
}

bool isKeyword(const std::string &word) {
  antlr4::ANTLRInputStream input("");
  grammar::HspmdLexer lexer(&input);
  const antlr4::dfa::Vocabulary &vocab = lexer.getVocabulary();
  for (size_t type = 1; type <= vocab.getMaxTokenType(); ++type)
    if (vocab.getLiteralName(type) == "'" + word + "'")
      return true;
  return false;
}

} // namespace hspmd::frontend
