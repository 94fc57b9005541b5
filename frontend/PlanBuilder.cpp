// PlanBuilder.cpp - parse tree -> AST for plans, paths and HSPMD annotations.
#include "frontend/AstBuilderImpl.h"

namespace hspmd::frontend {

namespace {
// Device ids a plan may name: far beyond any cluster, and small enough for an int.
using ir::kMostDevices;
} // namespace

std::string Path::str() const {
  std::string text;
  for (const auto &segment : segments) {
    if (!text.empty())
      text += ".";
    text += segment.name;
    switch (segment.index) {
    case PathSegment::Index::None:
      break;
    case PathSegment::Index::At:
      text += "[" + std::to_string(segment.at) + "]";
      break;
    case PathSegment::Index::All:
      text += "[*]";
      break;
    case PathSegment::Index::Range:
      text += "[" + (segment.lo ? std::to_string(*segment.lo) : "") + ":" +
              (segment.hi ? std::to_string(*segment.hi) : "") + "]";
      break;
    }
  }
  return text;
}

std::unique_ptr<PlanDecl> AstBuilder::buildPlan(P::PlanDeclContext *ctx) {
  auto plan = std::make_unique<PlanDecl>();
  plan->name = identText(ctx->name);
  plan->loc = loc(ctx->name);
  plan->model = identText(ctx->model);
  plan->modelLoc = loc(ctx->model);
  plan->modelArgs = buildArgs(ctx->callArgs());
  for (auto *item : ctx->planItem())
    buildPlanItem(*plan, item);
  return plan;
}

void AstBuilder::buildPlanItem(PlanDecl &plan, P::PlanItemContext *ctx) {
  auto once = [&](bool alreadySet, const Location &previous, const char *what) {
    if (alreadySet) {
      failed_ = true;
      diags_.error(loc(ctx), std::string("'") + what + "' is given twice").note(previous, "first given here");
    }
  };
  if (auto *c = dynamic_cast<P::ClusterItemContext *>(ctx)) {
    once(plan.cluster.has_value(), plan.clusterLoc, "cluster");
    plan.cluster = unquote(c->STRING()->getText());
    plan.clusterLoc = loc(c->STRING()->getSymbol());
  } else if (auto *b = dynamic_cast<P::BindItemContext *>(ctx)) {
    for (auto *binding : b->binding())
      plan.bindings.push_back(Arg{identText(binding->name), buildExpr(binding->expr()), loc(binding->name)});
  } else if (auto *o = dynamic_cast<P::OptimizerItemContext *>(ctx)) {
    once(!plan.optimizer.empty(), plan.optimizerLoc, "optimizer");
    plan.optimizer = identText(o->name);
    plan.optimizerLoc = loc(o->name);
    plan.optimizerArgs = buildArgs(o->callArgs());
  } else if (auto *s = dynamic_cast<P::ScheduleItemContext *>(ctx)) {
    once(!plan.schedule.empty(), plan.scheduleLoc, "schedule");
    plan.schedule = ctx->children.back()->getText();
    plan.scheduleLoc = loc(ctx->getStop());
    if (plan.schedule != "1f1b" && plan.schedule != "gpipe")
      error(plan.scheduleLoc, "unknown schedule '" + plan.schedule + "'; expected 1f1b or gpipe");
    (void)s;
  } else if (auto *z = dynamic_cast<P::ZeroItemContext *>(ctx)) {
    plan.zero = true;
    plan.zeroLoc = loc(ctx->getStart());
    if (z->replicas) {
      plan.zeroReplicas = intValue(z->replicas).value_or(1);
      plan.zeroLoc = loc(z->replicas);
    }
  } else if (dynamic_cast<P::RecomputeItemContext *>(ctx)) {
    plan.recompute = true;
  } else if (dynamic_cast<P::ChunkedItemContext *>(ctx)) {
    plan.chunked = true;
  } else if (auto *precision = dynamic_cast<P::PrecisionItemContext *>(ctx)) {
    once(!plan.precision.empty(), plan.precisionLoc, "precision");
    plan.precision = identText(precision->ident());
    plan.precisionLoc = loc(precision->ident());
    if (plan.precision != "fp32" && plan.precision != "bf16")
      error(plan.precisionLoc, "unknown precision '" + plan.precision + "'; expected fp32 or bf16");
  } else if (auto *p = dynamic_cast<P::PipelineItemContext *>(ctx)) {
    PipelineDecl pipeline;
    pipeline.name = p->name ? identText(p->name) : "";
    pipeline.loc = loc(ctx);
    for (auto *option : p->pipelineOption()) {
      ExprPtr &slot = option->key->getText() == "share" ? pipeline.share : pipeline.microbatches;
      if (slot)
        error(loc(option->key), "'" + option->key->getText() + "' is given twice");
      slot = buildExpr(option->expr());
    }
    for (auto *stage : p->stageDecl())
      pipeline.stages.push_back(buildStage(stage));
    plan.pipelines.push_back(std::move(pipeline));
  } else if (auto *a = dynamic_cast<P::AnnotateItemContext *>(ctx)) {
    if (auto annotation = buildAnnotation(a->annotation()))
      plan.annotates.push_back(PlanDecl::Annotate{buildPath(a->valuePath()), std::move(*annotation)});
  } else if (auto *r = dynamic_cast<P::ReshardItemContext *>(ctx)) {
    if (auto annotation = buildAnnotation(r->annotation()))
      plan.reshards.push_back(PlanDecl::Annotate{buildPath(r->valuePath()), std::move(*annotation)});
  }
}

StageDecl AstBuilder::buildStage(P::StageDeclContext *ctx) {
  StageDecl stage;
  stage.loc = loc(ctx);
  auto twice = [&](antlr4::ParserRuleContext *clause, bool set) {
    if (set)
      error(loc(clause), "'" + clause->getStart()->getText() + "' is given twice in one stage");
  };
  for (auto *clause : ctx->stageClause()) {
    if (auto *d = dynamic_cast<P::DevicesClauseContext *>(clause)) {
      twice(clause, !stage.devices.empty());
      stage.devices = buildDeviceList(d->deviceList(), nullptr);
      stage.devicesLoc = span(d->deviceList());
    } else if (auto *t = dynamic_cast<P::TpClauseContext *>(clause)) {
      twice(clause, stage.tp.has_value());
      stage.tp = intValue(t->INT()->getSymbol());
      stage.tpLoc = loc(t->INT()->getSymbol());
    } else if (auto *s = dynamic_cast<P::ShareClauseContext *>(clause)) {
      const bool isCp = s->key->getText() == "cp";
      auto &entries = isCp ? stage.cp : stage.hp;
      twice(clause, !entries.empty());
      (isCp ? stage.cpLoc : stage.hpLoc) = loc(clause);
      for (auto *entry : s->shareEntry()) {
        ShareEntry out;
        out.loc = loc(entry);
        if (entry->deviceList()) {
          out.devices = buildDeviceList(entry->deviceList(), nullptr);
        } else {
          const int64_t device = intValue(entry->INT(0)->getSymbol()).value_or(0);
          if (device >= kMostDevices)
            error(loc(entry), "device id " + std::to_string(device) + " is too large (ids are below " +
                                  std::to_string(kMostDevices) + ")");
          out.devices = {static_cast<int>(std::min<int64_t>(device, kMostDevices - 1))};
        }
        out.value = intValue(entry->INT().back()->getSymbol()).value_or(0);
        entries.push_back(std::move(out));
      }
    } else if (auto *l = dynamic_cast<P::LayersClauseContext *>(clause)) {
      twice(clause, stage.layers.has_value());
      stage.layers = buildPath(l->valuePath());
    } else if (auto *w = dynamic_cast<P::WithClauseContext *>(clause)) {
      for (auto *path : w->valuePath())
        stage.with.push_back(buildPath(path));
    } else if (auto *z = dynamic_cast<P::StageZeroClauseContext *>(clause)) {
      stage.zero = true;
      stage.zeroLoc = loc(clause->getStart());
      if (z->replicas) {
        stage.zeroReplicas = intValue(z->replicas).value_or(1);
        stage.zeroLoc = loc(z->replicas);
      }
    } else if (dynamic_cast<P::StageRecomputeClauseContext *>(clause)) {
      stage.recompute = true;
    }
  }
  return stage;
}

Path AstBuilder::buildPath(P::ValuePathContext *ctx) {
  Path path;
  path.loc = span(ctx);
  for (auto *segment : ctx->pathSegment()) {
    PathSegment out;
    out.name = identText(segment->ident());
    if (auto *index = segment->pathIndex()) {
      const std::string text = index->getText();
      if (text == "*") {
        out.index = PathSegment::Index::All;
      } else if (text.find(':') != std::string::npos) {
        out.index = PathSegment::Index::Range;
        if (index->lo)
          out.lo = intValue(index->lo);
        if (index->hi)
          out.hi = intValue(index->hi);
      } else {
        out.index = PathSegment::Index::At;
        out.at = intValue(index->INT(0)->getSymbol()).value_or(0);
      }
    }
    path.segments.push_back(std::move(out));
  }
  return path;
}

std::vector<int> AstBuilder::buildDeviceList(P::DeviceListContext *ctx, std::vector<Location> *locs) {
  std::vector<int> devices;
  for (auto *item : ctx->deviceItem()) {
    auto lo = intValue(item->lo);
    if (lo && *lo >= kMostDevices) {
      error(span(item),
            "device id " + std::to_string(*lo) + " is too large (ids are below " + std::to_string(kMostDevices) + ")");
      continue;
    }
    auto hi = item->hi ? intValue(item->hi) : (lo ? std::optional<int64_t>(*lo + 1) : std::nullopt);
    if (!lo || !hi)
      continue;
    if (*hi <= *lo) {
      error(span(item),
            "empty device range " + std::to_string(*lo) + ".." + std::to_string(*hi) + " (the end is excluded)");
      continue;
    }
    if (*hi > kMostDevices) {
      error(span(item), "device id " + std::to_string(*hi - 1) + " is too large (ids are below " +
                            std::to_string(kMostDevices) + ")");
      continue;
    }
    for (int64_t d = *lo; d < *hi; ++d) {
      devices.push_back(static_cast<int>(d));
      if (locs)
        locs->push_back(span(item));
    }
  }
  return devices;
}

std::optional<AnnotationExpr> AstBuilder::buildAnnotation(P::AnnotationContext *ctx) {
  AnnotationExpr out;
  out.loc = span(ctx);
  out.map.whole = out.loc;
  bool ok = true;
  for (auto *localCtx : ctx->localAnnotation()) {
    ir::LocalAnnotation local;
    out.map.subgroups.push_back(span(localCtx));
    out.map.devices.emplace_back();
    out.map.axes.emplace_back();
    local.devices = buildDeviceList(localCtx->deviceList(), &out.map.devices.back());
    for (auto *axisCtx : localCtx->meshAxis()) {
      std::string message;
      auto axis = ir::parseAxisWord(identText(axisCtx->ident()), &message);
      if (!axis) {
        error(loc(axisCtx), message);
        ok = false;
        continue;
      }
      if (axisCtx->INT()) {
        auto count = intValue(axisCtx->INT()->getSymbol());
        if (count && (*count < 1 || *count > (1 << 20))) {
          error(loc(axisCtx->INT()->getSymbol()), "a mesh axis count must be between 1 and 1048576");
          ok = false;
        }
        axis->count = static_cast<int>(count.value_or(1));
      }
      local.axes.push_back(*axis);
      out.map.axes.back().push_back(span(axisCtx));
    }
    std::string message;
    if (int bad = ir::fillAxisCounts(local, &message); bad >= 0) {
      error(out.map.axes.back()[bad], message);
      ok = false;
    }
    out.annotation.subgroups.push_back(std::move(local));
  }
  if (auto *hetero = ctx->hetero()) {
    out.map.hetero = span(hetero);
    std::string message;
    auto placement = ir::parseHeteroWord(identText(hetero->ident()), &message);
    if (!placement) {
      error(loc(hetero), message);
      return std::nullopt;
    }
    out.annotation.hetero = *placement;
    if (!hetero->INT().empty()) {
      if (placement->kind != ir::HeteroKind::Split) {
        error(loc(hetero->INT(0)->getSymbol()), "only a split placement takes sizes");
        return std::nullopt;
      }
      out.annotation.hetero.ratio = hetero->getText().find("ratio") != std::string::npos;
      for (auto *size : hetero->INT())
        out.annotation.hetero.sizes.push_back(intValue(size->getSymbol()).value_or(0));
    }
  }
  if (!ok || failed_)
    return std::nullopt;
  if (auto problem = ir::checkAnnotation(out.annotation)) {
    error(out.map.locate(*problem), problem->message, problem->code);
    return std::nullopt;
  }
  return out;
}

} // namespace hspmd::frontend
