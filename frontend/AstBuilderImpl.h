// AstBuilderImpl.h - private to frontend/: turns ANTLR contexts into Ast.h nodes.
// Split over AstBuilder.cpp (models, expressions) and PlanBuilder.cpp (plans, annotations).
#pragma once

#include "HspmdParser.h"
#include "frontend/Ast.h"
#include "frontend/Diagnostics.h"

namespace hspmd::frontend {

using P = grammar::HspmdParser;

class AstBuilder {
public:
  AstBuilder(std::string fileName, DiagnosticEngine &diags) : fileName_(std::move(fileName)), diags_(diags) {}
  std::unique_ptr<FileAst> build(P::FileContext *file);

  // Models (AstBuilder.cpp).
  std::unique_ptr<ModuleDecl> buildModule(P::ModuleDeclContext *ctx);
  std::unique_ptr<ModuleDecl> buildAlias(P::AliasDeclContext *ctx);
  std::optional<Member> buildMember(P::MemberDeclContext *ctx);
  FnDecl buildFn(P::FnDeclContext *ctx);
  TypeExpr buildType(P::TypeExprContext *ctx);
  ExprPtr buildExpr(P::ExprContext *ctx);
  std::vector<Arg> buildArgs(P::CallArgsContext *ctx);
  std::vector<ExprPtr> buildExprList(P::ExprListContext *ctx);

  // Plans (PlanBuilder.cpp).
  std::unique_ptr<PlanDecl> buildPlan(P::PlanDeclContext *ctx);
  void buildPlanItem(PlanDecl &plan, P::PlanItemContext *ctx);
  StageDecl buildStage(P::StageDeclContext *ctx);
  Path buildPath(P::ValuePathContext *ctx);
  std::optional<AnnotationExpr> buildAnnotation(P::AnnotationContext *ctx);
  std::vector<int> buildDeviceList(P::DeviceListContext *ctx, std::vector<Location> *locs);

  Location loc(antlr4::Token *token) const;
  Location loc(antlr4::ParserRuleContext *ctx) const;
  /// Spans from the start of `ctx` to the end of its last token on the same line.
  Location span(antlr4::ParserRuleContext *ctx) const;
  static std::string identText(P::IdentContext *ctx);
  static std::string unquote(const std::string &literal);
  std::optional<int64_t> intValue(antlr4::Token *token);

  bool failed() const { return failed_; }
  void error(const Location &at, std::string message, std::string code = {}) {
    failed_ = true;
    diags_.error(at, std::move(message)).code(std::move(code));
  }

private:
  std::string fileName_;
  DiagnosticEngine &diags_;
  bool failed_ = false;
  int depth_ = 0;
};

} // namespace hspmd::frontend
