// AstBuilder.cpp - parse tree -> AST for files, modules, functions and expressions.
#include "frontend/AstBuilderImpl.h"

#include <charconv>

namespace hspmd::frontend {

Location AstBuilder::loc(antlr4::Token *token) const {
  if (!token)
    return Location{fileName_, 0, 0, 1};
  return Location{fileName_, static_cast<uint32_t>(token->getLine()),
                  static_cast<uint32_t>(token->getCharPositionInLine() + 1),
                  static_cast<uint32_t>(std::max<size_t>(1, token->getText().size()))};
}

Location AstBuilder::loc(antlr4::ParserRuleContext *ctx) const {
  return loc(ctx->getStart());
}

Location AstBuilder::span(antlr4::ParserRuleContext *ctx) const {
  Location at = loc(ctx->getStart());
  antlr4::Token *stop = ctx->getStop();
  if (stop && stop->getLine() == at.line && stop->getStopIndex() >= ctx->getStart()->getStartIndex())
    at.length = static_cast<uint32_t>(stop->getStopIndex() - ctx->getStart()->getStartIndex() + 1);
  return at;
}

std::string AstBuilder::identText(P::IdentContext *ctx) {
  return ctx ? ctx->getText() : std::string();
}

std::string AstBuilder::unquote(const std::string &literal) {
  std::string out;
  for (size_t i = 1; i + 1 < literal.size(); ++i) {
    char c = literal[i];
    if (c == '\\' && i + 2 < literal.size()) {
      char next = literal[++i];
      out += next == 'n' ? '\n' : next == 'r' ? '\r' : next == 't' ? '\t' : next;
    } else {
      out += c;
    }
  }
  return out;
}

std::optional<int64_t> AstBuilder::intValue(antlr4::Token *token) {
  int64_t value = 0;
  const std::string text = token->getText();
  if (std::from_chars(text.data(), text.data() + text.size(), value).ec != std::errc()) {
    error(loc(token), "integer '" + text + "' is too large");
    return std::nullopt;
  }
  return value;
}

std::unique_ptr<FileAst> AstBuilder::build(P::FileContext *file) {
  auto ast = std::make_unique<FileAst>();
  ast->fileName = fileName_;
  for (auto *import : file->importDecl())
    ast->imports.push_back(ImportDecl{unquote(import->STRING()->getText()), loc(import->STRING()->getSymbol())});
  for (auto *top : file->topDecl()) {
    if (top->moduleDecl())
      ast->modules.push_back(buildModule(top->moduleDecl()));
    else if (top->aliasDecl())
      ast->modules.push_back(buildAlias(top->aliasDecl()));
    else if (top->planDecl())
      ast->plans.push_back(buildPlan(top->planDecl()));
  }
  return ast;
}

std::unique_ptr<ModuleDecl> AstBuilder::buildModule(P::ModuleDeclContext *ctx) {
  auto module = std::make_unique<ModuleDecl>();
  module->isModel = ctx->kind->getText() == "model";
  module->name = identText(ctx->name);
  module->loc = loc(ctx->name);
  for (auto *param : ctx->moduleParam()) {
    ModuleParam out;
    out.name = identText(param->name);
    out.typeName = identText(param->typeName);
    out.loc = loc(param->name);
    if (param->expr())
      out.defaultValue = buildExpr(param->expr());
    module->params.push_back(std::move(out));
  }
  for (auto *member : ctx->memberDecl())
    if (auto built = buildMember(member))
      module->members.push_back(std::move(*built));
  return module;
}

std::unique_ptr<ModuleDecl> AstBuilder::buildAlias(P::AliasDeclContext *ctx) {
  auto module = std::make_unique<ModuleDecl>();
  module->isModel = true;
  module->name = identText(ctx->name);
  module->loc = loc(ctx->name);
  module->aliasTarget = identText(ctx->target);
  module->aliasTargetLoc = loc(ctx->target);
  module->aliasArgs = buildArgs(ctx->callArgs());
  return module;
}

std::optional<Member> AstBuilder::buildMember(P::MemberDeclContext *ctx) {
  if (auto *p = ctx->paramDecl()) {
    ParamDecl param;
    param.name = identText(p->name);
    param.dtype = p->dtype ? identText(p->dtype) : "f32";
    param.init = identText(p->init);
    param.loc = loc(p->name);
    param.shape = buildExprList(p->exprList());
    if (p->callArgs())
      param.initArgs = buildArgs(p->callArgs());
    return Member(std::move(param));
  }
  if (auto *s = ctx->sublayerDecl()) {
    SublayerDecl layer;
    layer.name = identText(s->name);
    layer.callee = identText(s->callee);
    layer.loc = loc(s->name);
    layer.calleeLoc = loc(s->callee);
    layer.args = buildArgs(s->callArgs());
    if (s->count)
      layer.count = buildExpr(s->count);
    return Member(std::move(layer));
  }
  if (auto *c = ctx->constDecl())
    return Member(ConstDecl{identText(c->name), buildExpr(c->expr()), loc(c->name)});
  if (auto *f = ctx->fnDecl())
    return Member(buildFn(f));
  return std::nullopt;
}

TypeExpr AstBuilder::buildType(P::TypeExprContext *ctx) {
  TypeExpr type;
  type.dtype = identText(ctx->dtype);
  type.loc = span(ctx);
  type.hasShape = ctx->getText().find('[') != std::string::npos;
  type.dims = buildExprList(ctx->exprList());
  return type;
}

FnDecl AstBuilder::buildFn(P::FnDeclContext *ctx) {
  FnDecl fn;
  fn.name = identText(ctx->name);
  fn.loc = loc(ctx->name);
  fn.endLoc = loc(ctx->block()->getStop());
  for (auto *param : ctx->fnParam())
    fn.params.push_back(FnParam{identText(param->name), buildType(param->typeExpr()), loc(param->name)});
  if (ctx->result)
    fn.result = buildType(ctx->result);
  for (auto *stmt : ctx->block()->stmt()) {
    if (auto *let = stmt->letStmt()) {
      LetStmt out;
      for (auto *name : let->ident()) {
        out.names.push_back(identText(name));
        out.nameLocs.push_back(loc(name));
      }
      out.value = buildExpr(let->expr());
      out.loc = loc(let);
      fn.body.emplace_back(std::move(out));
    } else if (auto *ret = stmt->returnStmt()) {
      fn.body.emplace_back(ReturnStmt{buildExpr(ret->expr()), loc(ret)});
    }
  }
  return fn;
}

std::vector<ExprPtr> AstBuilder::buildExprList(P::ExprListContext *ctx) {
  std::vector<ExprPtr> list;
  if (ctx)
    for (auto *expr : ctx->expr())
      list.push_back(buildExpr(expr));
  return list;
}

std::vector<Arg> AstBuilder::buildArgs(P::CallArgsContext *ctx) {
  std::vector<Arg> args;
  if (!ctx)
    return args;
  for (auto *arg : ctx->arg())
    args.push_back(
        Arg{arg->name ? identText(arg->name) : "", buildExpr(arg->expr()), arg->name ? loc(arg->name) : loc(arg)});
  return args;
}

namespace {
ExprPtr makeExpr(ExprKind kind, Location at) {
  auto expr = std::make_unique<Expr>();
  expr->kind = kind;
  expr->loc = std::move(at);
  return expr;
}
} // namespace

ExprPtr AstBuilder::buildExpr(P::ExprContext *ctx) {
  // Chains like a + a + ... + a build a left-deep tree; bound the recursion.
  struct DepthGuard {
    int &depth;
    explicit DepthGuard(int &d) : depth(++d) {}
    ~DepthGuard() { --depth; }
  } guard(depth_);
  if (depth_ > 400) {
    if (!failed_)
      error(loc(ctx), "expression nested too deeply");
    return makeExpr(ExprKind::Int, loc(ctx));
  }
  if (auto *e = dynamic_cast<P::ParenExprContext *>(ctx))
    return buildExpr(e->expr());
  if (auto *e = dynamic_cast<P::IntExprContext *>(ctx)) {
    auto expr = makeExpr(ExprKind::Int, span(ctx));
    expr->intValue = intValue(e->INT()->getSymbol()).value_or(0);
    return expr;
  }
  if (auto *e = dynamic_cast<P::FloatExprContext *>(ctx)) {
    auto expr = makeExpr(ExprKind::Float, span(ctx));
    expr->floatValue = std::strtod(e->FLOAT()->getText().c_str(), nullptr);
    return expr;
  }
  if (auto *e = dynamic_cast<P::StringExprContext *>(ctx)) {
    auto expr = makeExpr(ExprKind::String, span(ctx));
    expr->text = unquote(e->STRING()->getText());
    return expr;
  }
  if (dynamic_cast<P::BoolExprContext *>(ctx)) {
    auto expr = makeExpr(ExprKind::Bool, span(ctx));
    expr->boolValue = ctx->getText() == "true";
    return expr;
  }
  if (auto *e = dynamic_cast<P::NameExprContext *>(ctx)) {
    auto expr = makeExpr(ExprKind::Name, span(ctx));
    expr->text = identText(e->ident());
    return expr;
  }
  if (auto *e = dynamic_cast<P::ListExprContext *>(ctx)) {
    auto expr = makeExpr(ExprKind::List, loc(ctx));
    expr->children = buildExprList(e->exprList());
    return expr;
  }
  if (auto *e = dynamic_cast<P::MemberExprContext *>(ctx)) {
    auto expr = makeExpr(ExprKind::Member, loc(e->ident()));
    expr->text = identText(e->ident());
    expr->children.push_back(buildExpr(e->expr()));
    return expr;
  }
  if (auto *e = dynamic_cast<P::IndexExprContext *>(ctx)) {
    auto expr = makeExpr(ExprKind::Index, loc(e->indexItem()));
    expr->children.push_back(buildExpr(e->expr()));
    auto *item = e->indexItem();
    expr->isSlice = item->getText().find(':') != std::string::npos;
    if (expr->isSlice) {
      expr->children.push_back(item->lo ? buildExpr(item->lo) : nullptr);
      expr->children.push_back(item->hi ? buildExpr(item->hi) : nullptr);
    } else {
      expr->children.push_back(buildExpr(item->expr(0)));
    }
    return expr;
  }
  if (auto *e = dynamic_cast<P::CallExprContext *>(ctx)) {
    auto expr = makeExpr(ExprKind::Call, loc(e->expr()));
    expr->children.push_back(buildExpr(e->expr()));
    for (auto &arg : buildArgs(e->callArgs())) {
      expr->argNames.push_back(arg.name);
      expr->argLocs.push_back(arg.loc);
      expr->children.push_back(std::move(arg.value));
    }
    return expr;
  }
  if (auto *e = dynamic_cast<P::NegExprContext *>(ctx)) {
    auto expr = makeExpr(ExprKind::Neg, loc(ctx));
    expr->children.push_back(buildExpr(e->expr()));
    return expr;
  }
  auto binary = [&](antlr4::Token *op, P::ExprContext *lhs, P::ExprContext *rhs) {
    auto expr = makeExpr(ExprKind::Binary, loc(op));
    expr->text = op->getText();
    expr->children.push_back(buildExpr(lhs));
    expr->children.push_back(buildExpr(rhs));
    return expr;
  };
  if (auto *e = dynamic_cast<P::MulExprContext *>(ctx))
    return binary(e->op, e->expr(0), e->expr(1));
  if (auto *e = dynamic_cast<P::AddExprContext *>(ctx))
    return binary(e->op, e->expr(0), e->expr(1));
  error(loc(ctx), "unsupported expression");
  return makeExpr(ExprKind::Int, loc(ctx));
}

} // namespace hspmd::frontend
