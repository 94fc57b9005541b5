// CandidateSpec.cpp - a candidate as a PlanSpec, and as a plan file (planner/Search.h).
#include "planner/Search.h"

#include "ir/PlanText.h"
#include "ir/Words.h"
#include "planner/SearchModel.h"

#include <algorithm>

namespace hspmd::planner {

using namespace search;

ir::PlanSpec planSpec(const Candidate &candidate, const ModelShape &shape, const PlanRequest &request,
                      const std::string &name) {
  ir::PlanSpec spec;
  spec.name = name;
  spec.model = shape.model;
  spec.bindings = {{"B", request.tokens / request.sequence}, {"S", request.sequence}};
  spec.optimizer = "adamw";
  spec.optimizerArgs = {{"lr", 1e-3}};
  spec.schedule = "1f1b";
  spec.zero = candidate.zero;
  spec.chunked = candidate.chunked;
  spec.recompute = candidate.recompute;
  spec.bf16 = request.bf16;
  for (const PipelinePlan &pipeline : candidate.pipelines) {
    // The planner names pipelines after device types ("H20" + index), which a cluster file
    // may spell any way ("my.gpu", "4090"); as names of the language, one name each.
    ir::PipelineSpec p;
    p.name = ir::identifierFrom(pipeline.name);
    for (int k = 2; std::any_of(spec.pipelines.begin(), spec.pipelines.end(),
                                [&](const ir::PipelineSpec &other) { return other.name == p.name; });
         ++k)
      p.name = ir::identifierFrom(pipeline.name) + "_" + std::to_string(k);
    p.share = pipeline.sequences;
    p.microbatches = pipeline.microbatches;
    for (const StagePlan &stage : pipeline.stages) {
      ir::StageSpec s;
      s.devices = stage.devices;
      s.tp = stage.tp;
      for (size_t g = 0; g < stage.cp.size(); ++g)
        s.cp.push_back(ir::ShareSpec{{groupOf(stage, g).begin(), groupOf(stage, g).end()}, stage.cp[g], {}});
      for (size_t g = 0; g < stage.hp.size(); ++g)
        s.hp.push_back(ir::ShareSpec{{groupOf(stage, g).begin(), groupOf(stage, g).end()}, stage.hp[g], {}});
      s.stack = shape.stack;
      s.layerBegin = static_cast<int>(stage.layerBegin);
      s.layerEnd = static_cast<int>(stage.layerEnd);
      if (stage.first)
        s.with.insert(s.with.end(), shape.first.begin(), shape.first.end());
      if (stage.last)
        s.with.insert(s.with.end(), shape.last.begin(), shape.last.end());
      for (const std::string &with : s.with) // expanded as the frontend expands `with` paths
        for (const std::string &param : shape.paramsOf.at(with))
          s.extraParams.push_back(param);
      s.extraParamLocs.resize(s.extraParams.size());
      s.zero = candidate.zero;
      s.recompute = candidate.recompute;
      p.stages.push_back(std::move(s));
    }
    spec.pipelines.push_back(std::move(p));
  }
  return spec;
}

std::string planText(const Candidate &candidate, const ModelShape &shape, const PlanRequest &request,
                     const std::string &name, const std::string &modelImport, const std::string &clusterPath) {
  ir::PlanSpec spec = planSpec(candidate, shape, request, name);
  spec.clusterPath = clusterPath;
  return ir::printPlan(spec, {"Planned by hspmc plan: " + candidate.strategy + ".", modelImport, ""});
}

} // namespace hspmd::planner
