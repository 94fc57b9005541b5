// ProgramParser.cpp - reads the textual DeviceProgram written by DeviceProgram.cpp.
#include "ir/DeviceProgram.h"

#include "ir/TextLexer.h"

#include <cctype>

namespace hspmd::ir {

namespace {

class ProgramParser {
public:
  explicit ProgramParser(const std::string &text) : lexer_(text) {}

  std::optional<DeviceProgram> parse(std::string *error) {
    DeviceProgram program;
    bool ok = word("program") && word("device") && integer(program.device) && word("plan") && integer(program.plan);
    if (ok && lexer_.peek().isIdent("peak"))
      ok = word("peak") && integer(program.peakBytes);
    ok = ok && punct("{");
    if (ok && lexer_.peek().isIdent("schedule")) // optional: one stage, one forward pass
      ok = scheduleLine(program);
    while (ok && !lexer_.peek().is("}"))
      if (lexer_.peek().isIdent("loss")) {
        lexer_.next();
        std::vector<int> id;
        ok = bufferRef(id);
        if (ok)
          program.lossBuffer = id[0];
      } else if (lexer_.peek().isIdent("batch")) {
        lexer_.next();
        ok = word("start") && integer(program.batchStart);
      } else {
        ok = lexer_.peek().isIdent("buffer") ? bufferLine(program) : instruction(program);
      }
    ok = ok && punct("}");
    if (ok && lexer_.peek().kind != TokenKind::End)
      ok = fail("unexpected " + lexer_.peek().describe() + " after the program");
    if (!ok) {
      if (error)
        *error = error_;
      return std::nullopt;
    }
    return program;
  }

private:
  TextLexer lexer_;
  std::string error_;

  bool fail(const std::string &message) {
    if (error_.empty())
      error_ = std::to_string(lexer_.peek().line) + ":" + std::to_string(lexer_.peek().col) + ": " + message;
    return false;
  }
  bool word(const char *w) {
    if (!lexer_.peek().isIdent(w))
      return fail(std::string("expected '") + w + "', found " + lexer_.peek().describe());
    lexer_.next();
    return true;
  }
  bool punct(const char *p) {
    if (!lexer_.peek().is(p))
      return fail(std::string("expected '") + p + "', found " + lexer_.peek().describe());
    lexer_.next();
    return true;
  }
  template <typename T> bool integer(T &out) {
    bool negative = lexer_.peek().is("-");
    if (negative)
      lexer_.next();
    if (lexer_.peek().kind != TokenKind::Int)
      return fail("expected an integer, found " + lexer_.peek().describe());
    out = static_cast<T>(negative ? -lexer_.next().intValue : lexer_.next().intValue);
    return true;
  }
  bool bufferRef(std::vector<int> &into) {
    const Token &t = lexer_.peek();
    if (t.kind != TokenKind::ValueName || t.text.size() > 9 ||
        t.text.find_first_not_of("0123456789") != std::string::npos)
      return fail("expected a buffer like %3, found " + t.describe());
    into.push_back(std::stoi(lexer_.next().text));
    return true;
  }
  bool bufferList(std::vector<int> &into) {
    if (lexer_.peek().kind != TokenKind::ValueName)
      return true;
    do {
      if (!bufferRef(into))
        return false;
    } while (lexer_.peek().is(",") && (lexer_.next(), true));
    return true;
  }
  bool intList(DeviceGroup &into) {
    std::vector<int> members;
    const bool ok = intList(members);
    into = std::move(members);
    return ok;
  }
  template <typename T> bool intList(std::vector<T> &into) {
    if (!punct("["))
      return false;
    while (!lexer_.peek().is("]")) {
      T v = 0;
      if (!integer(v))
        return false;
      into.push_back(v);
      if (lexer_.peek().is(","))
        lexer_.next();
    }
    return punct("]");
  }
  // slices [0:2, 0:64], [2:4, 0:64]
  bool sliceList(std::vector<Box> &into) {
    if (!lexer_.peek().isIdent("slices"))
      return true;
    lexer_.next();
    do {
      Box box;
      if (!punct("["))
        return false;
      while (!lexer_.peek().is("]")) {
        int64_t lo = 0, hi = 0;
        if (!integer(lo) || !punct(":") || !integer(hi))
          return false;
        box.lo.push_back(lo);
        box.hi.push_back(hi);
        if (lexer_.peek().is(","))
          lexer_.next();
      }
      lexer_.next();
      into.push_back(box);
    } while (lexer_.peek().is(",") && (lexer_.next(), true));
    return true;
  }
  bool location(Location &loc) {
    if (!lexer_.peek().isIdent("loc"))
      return true;
    lexer_.next();
    if (!punct("("))
      return false;
    Token file = lexer_.next();
    if (file.kind != TokenKind::String)
      return fail("expected a file name");
    loc.file = file.text;
    return punct(":") && integer(loc.line) && punct(":") && integer(loc.col) && punct(")");
  }

  bool scheduleLine(DeviceProgram &program) {
    if (!word("schedule"))
      return false;
    program.scheduleName = lexer_.peek().text;
    lexer_.next();
    if (program.scheduleName == "1") // "1f1b" lexes as 1 and f1b
      program.scheduleName += lexer_.next().text;
    if (!(word("stage") && integer(program.stage) && word("of") && integer(program.stages) && word("microbatches") &&
          integer(program.microbatches) && word("of") && integer(program.microbatchSize) && punct(":")))
      return false;
    program.schedule.clear();
    while (lexer_.peek().kind == TokenKind::Ident && (lexer_.peek().text[0] == 'F' || lexer_.peek().text[0] == 'B') &&
           lexer_.peek().text.size() > 1 && std::isdigit(static_cast<unsigned char>(lexer_.peek().text[1]))) {
      Token slot = lexer_.next();
      program.schedule.push_back(
          {slot.text[0] == 'F' ? Phase::Forward : Phase::Backward, std::stoi(slot.text.substr(1))});
    }
    return true;
  }

  bool bufferLine(DeviceProgram &program) {
    lexer_.next(); // buffer
    Buffer b;
    std::vector<int> id;
    if (!bufferRef(id))
      return false;
    b.id = id[0];
    Token value = lexer_.next();
    if (value.kind != TokenKind::String)
      return fail("expected the buffer's value name");
    b.value = value.text;
    if (!punct(":"))
      return false;
    Token dtype = lexer_.next();
    auto parsed = dtype.kind == TokenKind::Ident ? dtypeFromName(dtype.text) : std::nullopt;
    if (!parsed)
      return fail("expected an element type, found " + dtype.describe());
    b.dtype = *parsed;
    if (!intList(b.shape))
      return false;
    if (lexer_.peek().isIdent("origin") && !(word("origin") && intList(b.origin)))
      return false;
    if (lexer_.peek().isIdent("at") && !(word("at") && integer(b.offset)))
      return false;
    if (lexer_.peek().isIdent("slots") && !(word("slots") && integer(b.slots)))
      return false;
    if (lexer_.peek().isIdent("zeroed"))
      b.zeroed = (lexer_.next(), true);
    if (lexer_.peek().isIdent("param"))
      b.role = (lexer_.next(), BufferRole::Parameter);
    else if (lexer_.peek().isIdent("state"))
      b.role = (lexer_.next(), BufferRole::State);
    else if (lexer_.peek().isIdent("input"))
      b.role = (lexer_.next(), BufferRole::Input);
    program.buffers.push_back(b);
    return true;
  }

  bool instruction(DeviceProgram &program) {
    Instruction in;
    if (lexer_.peek().isIdent("recompute"))
      in.phase = (lexer_.next(), Phase::Recompute);
    else if (lexer_.peek().isIdent("backward"))
      in.phase = (lexer_.next(), Phase::Backward);
    else if (lexer_.peek().isIdent("update"))
      in.phase = (lexer_.next(), Phase::Update);
    Token head = lexer_.next();
    if (head.kind != TokenKind::Ident)
      return fail("expected an instruction, found " + head.describe());
    // Collective names carry dashes: all-reduce, split-all-gather, ...
    std::string name = head.text;
    while (lexer_.peek().is("-")) {
      lexer_.next();
      name += "-" + lexer_.next().text;
    }
    bool ok = true;
    if (name == "kernel") {
      in.kind = InstrKind::Kernel;
      in.op = lexer_.next().text;
      ir::AttrMap attrs;
      ok = bufferList(in.inputs) && punct("->") && bufferList(in.outputs) && attributes(attrs);
      in.attrs = std::move(attrs);
      if (ok && lexer_.peek().isIdent("group"))
        ok = word("group") && intList(in.group) && word("tag") && integer(in.tag);
    } else if (name == "send" || name == "recv" || name == "recv-add") {
      in.kind = name == "send" ? InstrKind::Send : InstrKind::Recv;
      in.op = name;
      ok = (name == "send" ? bufferList(in.inputs) && word("to") : bufferList(in.outputs) && word("from")) &&
           integer(in.peer) && word("bytes") && integer(in.bytes) && word("tag") && integer(in.tag) &&
           sliceList(in.slices);
    } else if (name == "zero") {
      in.kind = InstrKind::Copy;
      in.op = name;
      ok = bufferList(in.outputs);
    } else if (name == "copy" || name == "copy-add") {
      in.kind = InstrKind::Copy;
      in.op = name;
      ok = bufferList(in.inputs) && punct("->") && bufferList(in.outputs) && sliceList(in.slices);
    } else {
      in.kind = InstrKind::Collective;
      in.op = name;
      ok = bufferList(in.inputs) && punct("->") && bufferList(in.outputs) && word("group") && intList(in.group) &&
           word("bytes") && integer(in.bytes) && word("tag") && integer(in.tag);
      if (ok && lexer_.peek().isIdent("partial"))
        ok = word("partial") && integer(in.partial);
    }
    ok = ok && location(in.loc);
    if (ok)
      program.body.push_back(std::move(in));
    return ok;
  }

  bool attributes(AttrMap &attrs) {
    if (!punct("{"))
      return false;
    while (!lexer_.peek().is("}")) {
      Token key = lexer_.next();
      if (key.kind != TokenKind::Ident || !punct("="))
        return fail("expected an attribute");
      Token v = lexer_.next();
      bool negative = v.is("-");
      if (negative)
        v = lexer_.next();
      if (v.kind == TokenKind::Int)
        attrs[key.text] = negative ? -v.intValue : v.intValue;
      else if (v.kind == TokenKind::Float)
        attrs[key.text] = negative ? -v.floatValue : v.floatValue;
      else if (v.isIdent("true") || v.isIdent("false"))
        attrs[key.text] = v.isIdent("true");
      else if (v.kind == TokenKind::String)
        attrs[key.text] = v.text;
      else if (v.is("[")) {
        std::vector<SymExpr> list;
        while (!lexer_.peek().is("]")) {
          std::string message;
          auto dim = parseSymExpr(lexer_, &message);
          if (!dim)
            return fail(message);
          list.push_back(*dim);
          if (lexer_.peek().is(","))
            lexer_.next();
        }
        lexer_.next();
        attrs[key.text] = list;
      } else {
        return fail("expected an attribute value, found " + v.describe());
      }
      if (lexer_.peek().is(","))
        lexer_.next();
    }
    return punct("}");
  }
};

} // namespace

std::optional<DeviceProgram> parseProgram(const std::string &text, std::string *error) {
  return ProgramParser(text).parse(error);
}

} // namespace hspmd::ir
