// PlanElaborator.cpp - resolves a plan's names and numbers against its model: the model
// under the plan's arguments and bindings, pipelines and stages, and the raw `annotate` /
// `reshard` lines pinned to graph values. Whether the plan makes sense as a whole
// (layers covered once, memory, balance) is `hspmc lint`'s job.
#include "frontend/Compilation.h"
#include "frontend/ElaboratorImpl.h"
#include "ir/Files.h"
#include "ir/Tags.h"
#include "planner/Cluster.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

namespace hspmd::frontend {

namespace {
// "blocks[3].attn.wq" -> {("blocks", 3), ("attn", -1), ("wq", -1)}
std::vector<std::pair<std::string, int64_t>> splitValueName(const std::string &name) {
  std::vector<std::pair<std::string, int64_t>> parts;
  size_t start = 0;
  while (start <= name.size()) {
    size_t dot = name.find('.', start);
    std::string segment = name.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    int64_t index = -1;
    if (auto open = segment.find('['); open != std::string::npos && segment.back() == ']') {
      index = std::atoll(segment.substr(open + 1).c_str());
      segment = segment.substr(0, open);
    }
    parts.emplace_back(segment, index);
    if (dot == std::string::npos)
      break;
    start = dot + 1;
  }
  return parts;
}

bool matchSegments(const Path &pattern, const std::string &name, bool prefix) {
  auto parts = splitValueName(name);
  if (parts.size() < pattern.segments.size() || (!prefix && parts.size() != pattern.segments.size()))
    return false;
  for (size_t i = 0; i < pattern.segments.size(); ++i) {
    const PathSegment &segment = pattern.segments[i];
    const auto &[partName, index] = parts[i];
    if (segment.name != partName)
      return false;
    switch (segment.index) {
    case PathSegment::Index::None:
      if (index >= 0)
        return false;
      break;
    case PathSegment::Index::At:
      if (index != segment.at)
        return false;
      break;
    case PathSegment::Index::All:
      if (index < 0)
        return false;
      break;
    case PathSegment::Index::Range:
      if (index < 0 || (segment.lo && index < *segment.lo) || (segment.hi && index >= *segment.hi))
        return false;
      break;
    }
  }
  return true;
}

// Follows model aliases to the module that declares `fn forward`.
const ModuleDecl *resolveAlias(const Compilation &compilation, const ModuleDecl *model) {
  for (int hops = 0; model && model->isAlias() && hops < 64; ++hops)
    model = compilation.findModule(model->aliasTarget);
  return model && !model->isAlias() ? model : nullptr;
}

std::vector<std::string> signatureSymbols(const ModuleDecl &model) {
  std::vector<std::string> names;
  for (const Member &member : model.members)
    if (auto *fn = std::get_if<FnDecl>(&member); fn && fn->name == "forward")
      for (const FnParam &param : fn->params)
        for (const ExprPtr &dim : param.type.dims)
          if (dim->kind == ExprKind::Name && std::find(names.begin(), names.end(), dim->text) == names.end() &&
              std::none_of(model.params.begin(), model.params.end(),
                           [&](const ModuleParam &p) { return p.name == dim->text; })) // `d` of M(d: int)
            names.push_back(dim->text);
  return names;
}

// A pipeline's `share` and a cp/hp share: far beyond any batch, sequence or head count, and
// small enough that their sums and products with sizes stay exact.
constexpr int64_t kMaxShare = int64_t{1} << 40;

std::string joinNames(const std::vector<std::string> &names) {
  std::string text;
  for (const auto &name : names)
    text += (text.empty() ? "" : ", ") + name;
  return text.empty() ? "none" : text;
}
} // namespace

std::optional<Compilation::ElaboratedPlan> Compilation::elaboratePlan(const PlanDecl &plan) {
  const int errorsBefore = diags_.errorCount();
  const ModuleDecl *model = findModule(plan.model);
  if (!model || !model->isModel) {
    diags_.error(plan.modelLoc, model ? "'" + plan.model + "' is a layer, not a model"
                                      : "unknown model '" + plan.model + "' (is its file imported?)");
    return std::nullopt;
  }
  ElaboratedPlan result;
  ir::PlanSpec &spec = result.spec;
  spec.name = plan.name;
  spec.model = plan.model;
  spec.loc = plan.loc;

  // Bindings of symbolic dimensions.
  ir::Graph scratch;
  Elaborator constants(*this, scratch);
  const ModuleDecl *declaring = resolveAlias(*this, model);
  std::vector<std::string> symbols = declaring ? signatureSymbols(*declaring) : std::vector<std::string>{};
  for (const Arg &binding : plan.bindings) {
    EValue value = constants.evalConstant(*binding.value);
    auto *integer = std::get_if<ir::SymExpr>(&value);
    if (std::holds_alternative<std::monostate>(value))
      continue; // already reported
    if (!integer || !integer->constant() || *integer->constant() < 1) {
      diags_.error(binding.value->loc, "'" + binding.name + "' must be bound to a positive integer");
      continue;
    }
    if (std::find(symbols.begin(), symbols.end(), binding.name) == symbols.end()) {
      diags_.error(binding.loc, "'" + binding.name + "' is not a symbolic dimension of " + plan.model +
                                    ".forward (its symbols: " + joinNames(symbols) + ")");
      continue;
    }
    if (!spec.bindings.emplace(binding.name, *integer->constant()).second)
      diags_.error(binding.loc, "'" + binding.name + "' is bound twice");
  }
  // The model's arguments, evaluated (model parameters are ints, floats and bools).
  for (const Arg &arg : plan.modelArgs) {
    EValue value = constants.evalConstant(*arg.value);
    ir::ModelArg out{arg.name, int64_t{0}, arg.loc};
    if (auto *i = std::get_if<ir::SymExpr>(&value); i && i->constant())
      out.value = *i->constant();
    else if (auto *d = std::get_if<double>(&value))
      out.value = *d;
    else if (auto *b = std::get_if<bool>(&value))
      out.value = *b;
    else if (!std::holds_alternative<std::monostate>(value))
      diags_.error(arg.value->loc, "a model argument must be an int, a float or a bool");
    spec.modelArgs.push_back(std::move(out));
  }
  if (diags_.errorCount() != errorsBefore)
    return std::nullopt;
  result.graph = elaborate(*model, plan.modelArgs, spec.bindings, plan.modelLoc);
  if (!result.graph)
    return std::nullopt;
  // Every symbolic dimension needs a value: unbound, it would be taken as 1 and the plan
  // would train one position of one sequence a step.
  for (const std::string &symbol : result.graph->symbols)
    diags_.error(plan.loc, "plan '" + plan.name + "' does not bind '" + symbol + "', a symbolic dimension of " +
                               plan.model + ".forward (add `bind " + symbol + " = ...`)");
  ir::Graph &graph = *result.graph;

  // Cluster file, relative to the plan's folder.
  if (plan.cluster) {
    namespace fs = std::filesystem;
    spec.clusterPath = (fs::path(plan.loc.file.str()).parent_path() / *plan.cluster).lexically_normal().string();
    std::vector<planner::ClusterError> errors;
    std::error_code ec;
    if (!fs::is_regular_file(spec.clusterPath, ec)) {
      const std::string why = ir::notAFile(spec.clusterPath); // "" where nothing is there
      diags_.error(plan.clusterLoc,
                   "cannot read cluster file '" + spec.clusterPath + "'" + (why.empty() ? "" : ": " + why));
    } else if (!planner::loadCluster(spec.clusterPath, stdlibDir_ + "/devices.toml", errors)) {
      for (const auto &error : errors)
        diags_.error(error.loc, error.message).note(plan.clusterLoc, "in the cluster file of plan '" + plan.name + "'");
    }
  }

  // Optimizer and schedule.
  if (!plan.optimizer.empty()) {
    spec.optimizer = plan.optimizer;
    static const std::map<std::string, std::vector<std::string>> kOptimizers = {
        {"adamw", {"lr", "beta1", "beta2", "eps", "weight_decay"}}, {"sgd", {"lr", "momentum", "weight_decay"}}};
    auto known = kOptimizers.find(plan.optimizer);
    if (known == kOptimizers.end()) {
      diags_.error(plan.optimizerLoc, "unknown optimizer '" + plan.optimizer + "'; expected adamw or sgd");
    } else {
      for (const Arg &arg : plan.optimizerArgs) {
        const auto &allowed = known->second;
        if (arg.name.empty() || std::find(allowed.begin(), allowed.end(), arg.name) == allowed.end()) {
          diags_.error(arg.loc, "optimizer '" + plan.optimizer + "' takes named arguments " + joinNames(allowed));
          continue;
        }
        EValue value = constants.evalConstant(*arg.value);
        std::optional<double> number;
        if (auto *d = std::get_if<double>(&value))
          number = *d;
        else if (auto *i = std::get_if<ir::SymExpr>(&value); i && i->constant())
          number = static_cast<double>(*i->constant());
        else if (!std::holds_alternative<std::monostate>(value))
          diags_.error(arg.value->loc, "'" + arg.name + "' must be a number");
        if (!number)
          continue;
        // The ranges in which the update means what it says.
        const bool rate = arg.name == "lr" || arg.name == "eps";
        const bool fraction = arg.name == "beta1" || arg.name == "beta2" || arg.name == "momentum";
        const double x = *number;
        if (!std::isfinite(x) || (rate && x <= 0) || (fraction && (x < 0 || x >= 1)) ||
            (arg.name == "weight_decay" && x < 0)) {
          char text[64];
          std::snprintf(text, sizeof text, "%g", x);
          diags_.error(arg.value->loc, "'" + arg.name + "' must be " +
                                           (rate       ? std::string("positive")
                                            : fraction ? std::string("at least 0 and below 1")
                                                       : std::string("at least 0")) +
                                           ", got " + text);
          continue;
        }
        spec.optimizerArgs[arg.name] = x;
      }
    }
  }
  if (!plan.schedule.empty())
    spec.schedule = plan.schedule;
  spec.clusterLoc = plan.clusterLoc;
  spec.scheduleLoc = plan.scheduleLoc;
  auto checkedZeroReplicas = [&](int64_t replicas, const Location &at) {
    if (replicas < 1 || replicas > 64) {
      diags_.error(at, "'zero replicas' must be between 1 and 64");
      return 1;
    }
    return static_cast<int>(replicas);
  };
  spec.zero = plan.zero;
  spec.zeroLoc = plan.zeroLoc;
  spec.zeroReplicas = checkedZeroReplicas(plan.zeroReplicas, plan.zeroLoc);
  spec.chunked = plan.chunked;
  spec.bf16 = plan.precision == "bf16";
  spec.recompute = plan.recompute;

  // Stacks of the model, from parameter names: "blocks[3].wqkv" -> blocks has >= 4 layers.
  std::map<std::string, int64_t> stackSizes;
  for (const ir::Value *param : graph.params()) {
    auto parts = splitValueName(param->name);
    std::string prefix;
    for (const auto &[name, index] : parts) {
      prefix += (prefix.empty() ? "" : ".") + name;
      if (index >= 0) {
        stackSizes[prefix] = std::max(stackSizes[prefix], index + 1);
        prefix += "[" + std::to_string(index) + "]";
      }
    }
  }
  auto positiveInt = [&](const ExprPtr &expr, int64_t fallback, const char *what) -> int64_t {
    if (!expr)
      return fallback;
    EValue value = constants.evalConstant(*expr);
    auto *integer = std::get_if<ir::SymExpr>(&value);
    if (!integer || !integer->constant() || *integer->constant() < 1) {
      if (!std::holds_alternative<std::monostate>(value))
        diags_.error(expr->loc, std::string(what) + " must be a positive integer");
      return fallback;
    }
    return *integer->constant();
  };
  for (const PipelineDecl &pipeline : plan.pipelines) {
    ir::PipelineSpec out;
    out.name = pipeline.name.empty() ? "pipeline" + std::to_string(spec.pipelines.size()) : pipeline.name;
    out.loc = pipeline.loc;
    out.share = positiveInt(pipeline.share, 1, "'share'");
    if (out.share > kMaxShare) {
      diags_.error(pipeline.share->loc, "'share' is " + std::to_string(out.share) + "; a share is at most 2^40");
      out.share = 1;
    }
    out.shareLoc = pipeline.share ? pipeline.share->loc : pipeline.loc;
    out.microbatchesLoc = pipeline.microbatches ? pipeline.microbatches->loc : pipeline.loc;
    out.microbatches = positiveInt(pipeline.microbatches, 1, "'microbatches'");
    if (out.microbatches > ir::tags::kMaxMicrobatches) {
      diags_.error(out.microbatchesLoc, "'microbatches' is " + std::to_string(out.microbatches) +
                                            "; a pipeline has at most " + std::to_string(ir::tags::kMaxMicrobatches) +
                                            " micro-batches");
      out.microbatches = 1;
    }
    if (pipeline.stages.empty())
      diags_.error(pipeline.loc, "pipeline '" + out.name + "' has no stages");
    for (const StageDecl &stage : pipeline.stages) {
      ir::StageSpec s;
      s.loc = stage.loc;
      s.devices = stage.devices;
      s.devicesLoc = stage.devicesLoc;
      s.tpLoc = stage.tpLoc;
      s.cpLoc = stage.cpLoc;
      s.hpLoc = stage.hpLoc;
      s.layersLoc = stage.layers ? stage.layers->loc : stage.loc;
      s.zero = stage.zero || plan.zero;
      s.zeroLoc = stage.zero ? stage.zeroLoc : plan.zeroLoc;
      s.zeroReplicas = stage.zero ? checkedZeroReplicas(stage.zeroReplicas, stage.zeroLoc) : spec.zeroReplicas;
      s.recompute = stage.recompute || plan.recompute;
      if (s.devices.empty())
        diags_.error(stage.loc, "a stage needs 'devices [...]'");
      if (stage.tp) {
        if (*stage.tp < 1 || *stage.tp > 4096)
          diags_.error(stage.tpLoc, "'tp' must be between 1 and 4096");
        s.tp = static_cast<int>(*stage.tp);
      }
      for (const auto *entries : {&stage.cp, &stage.hp})
        for (const ShareEntry &entry : *entries) {
          if (entry.value > kMaxShare)
            diags_.error(entry.loc, "a share of " + std::to_string(entry.value) + " is more than 2^40");
          (entries == &stage.cp ? s.cp : s.hp)
              .push_back(ir::ShareSpec{entry.devices, std::min(entry.value, kMaxShare), entry.loc});
        }
      if (stage.layers) {
        const Path &layers = *stage.layers;
        std::string stackName;
        for (size_t i = 0; i + 1 < layers.segments.size(); ++i)
          stackName += layers.segments[i].name + ".";
        const PathSegment &last = layers.segments.back();
        stackName += last.name;
        auto size = stackSizes.find(stackName);
        if (size == stackSizes.end() || last.index == PathSegment::Index::All) {
          diags_.error(layers.loc, "'" + layers.str() + "' is not a stack of layers of " + plan.model);
        } else {
          int64_t lo = 0, hi = size->second;
          if (last.index == PathSegment::Index::At)
            lo = last.at, hi = last.at + 1;
          if (last.index == PathSegment::Index::Range)
            lo = last.lo.value_or(0), hi = last.hi.value_or(size->second);
          if (lo < 0 || hi > size->second || lo >= hi)
            diags_.error(layers.loc, "'" + layers.str() + "' is out of range: '" + stackName + "' has " +
                                         std::to_string(size->second) + " layers");
          s.stack = stackName;
          s.layerBegin = static_cast<int>(lo);
          s.layerEnd = static_cast<int>(hi);
        }
      }
      for (const Path &with : stage.with) {
        s.with.push_back(with.str());
        size_t found = 0;
        for (const ir::Value *param : graph.params())
          if (matchSegments(with, param->name, /*prefix=*/true)) {
            s.extraParams.push_back(param->name);
            s.extraParamLocs.push_back(with.loc);
            ++found;
          }
        if (!found)
          diags_.error(with.loc, "'" + with.str() + "' names no parameter of " + plan.model);
      }
      out.stages.push_back(std::move(s));
    }
    spec.pipelines.push_back(std::move(out));
  }

  // Raw annotations: `annotate` on parameters and inputs, `reshard` on any named value.
  auto pin = [&](const PlanDecl::Annotate &line, bool anyValue, std::vector<ir::PinnedAnnotation> &into) {
    std::vector<ir::Value *> candidates;
    if (anyValue) {
      for (const auto &op : graph.ops())
        candidates.insert(candidates.end(), op->results.begin(), op->results.end());
    } else {
      candidates = graph.params();
      for (ir::Value *input : graph.inputs())
        candidates.push_back(input);
    }
    size_t matched = 0;
    for (ir::Value *value : candidates) {
      if (!matchSegments(line.path, value->name, false))
        continue;
      ++matched;
      std::vector<int64_t> sizes;
      for (const auto &dim : value->type.shape)
        sizes.push_back(dim.constant().value_or(-1));
      if (auto problem = ir::checkAnnotation(line.annotation.annotation, sizes)) {
        diags_
            .error(line.annotation.map.locate(*problem),
                   problem->message + " (for '" + value->name + "' of type " + value->type.str() + ")")
            .code(problem->code);
        return;
      }
      // A parameter or an input is whole on each device that holds it: partial sums of it
      // mean nothing (each device would read its piece as the whole and train wrong).
      if (!anyValue) {
        const ir::Annotation &a = line.annotation.annotation;
        bool partial = a.hetero.kind == ir::HeteroKind::Partial;
        for (const auto &local : a.subgroups)
          for (const auto &axis : local.axes)
            partial = partial || axis.kind == ir::AxisKind::Partial;
        if (partial) {
          diags_
              .error(line.annotation.loc,
                     "'" + value->name + "' is a " +
                         (value->def && value->def->kind == ir::OpKind::Input ? "model input" : "parameter") +
                         ": it cannot hold partial sums (use R to copy it or S to split it)")
              .code("HS118");
          return;
        }
      }
      // Two lines that annotate one value differently contradict each other.
      auto earlier = std::find_if(into.begin(), into.end(), [&](const auto &p) { return p.value == value->name; });
      if (earlier != into.end() && !(earlier->annotation == line.annotation.annotation)) {
        diags_.error(line.annotation.loc, "'" + value->name + "' is annotated twice, differently")
            .note(earlier->loc, "first annotated here")
            .code("HS115");
        return;
      }
      into.push_back(ir::PinnedAnnotation{value->name, line.annotation.annotation, line.annotation.loc});
    }
    if (!matched)
      diags_.error(line.path.loc, "'" + line.path.str() + "' matches no " +
                                      (anyValue ? "value" : "parameter or input") + " of " + plan.model);
  };
  for (const auto &line : plan.annotates)
    pin(line, false, spec.annotations);
  for (const auto &line : plan.reshards)
    pin(line, true, spec.reshards);
  graph.setNumPlans(1);
  for (const auto &pinned : spec.annotations)
    graph.findValue(pinned.value)->annotations[0] = pinned.annotation;

  if (diags_.errorCount() != errorsBefore)
    return std::nullopt;
  return result;
}

std::unique_ptr<ir::Graph> Compilation::elaborateSpec(const ir::PlanSpec &spec) {
  const ModuleDecl *model = findModule(spec.model);
  if (!model || !model->isModel) {
    diags_.error(spec.loc, "unknown model '" + spec.model + "' (is its file loaded?)");
    return nullptr;
  }
  std::vector<Arg> args;
  for (const ir::ModelArg &arg : spec.modelArgs) {
    auto expr = std::make_unique<Expr>();
    expr->loc = arg.loc;
    if (auto *i = std::get_if<int64_t>(&arg.value)) {
      expr->kind = ExprKind::Int;
      expr->intValue = *i;
    } else if (auto *d = std::get_if<double>(&arg.value)) {
      expr->kind = ExprKind::Float;
      expr->floatValue = *d;
    } else if (auto *b = std::get_if<bool>(&arg.value)) {
      expr->kind = ExprKind::Bool;
      expr->boolValue = *b;
    } else {
      expr->kind = ExprKind::String;
      expr->text = std::get<std::string>(arg.value);
    }
    args.push_back(Arg{arg.name, std::move(expr), arg.loc});
  }
  auto graph = elaborate(*model, args, spec.bindings);
  if (!graph)
    return nullptr;
  graph->setNumPlans(1);
  for (const auto &pinned : spec.annotations) {
    ir::Value *value = graph->findValue(pinned.value);
    if (!value) {
      diags_.error(pinned.loc, "'" + pinned.value + "' is no value of " + spec.model);
      return nullptr;
    }
    value->annotations[0] = pinned.annotation;
  }
  return graph;
}

} // namespace hspmd::frontend
