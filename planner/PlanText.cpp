// PlanText.cpp - a candidate written as a plan file (planner/Search.h: planText).
#include "planner/Search.h"

#include "planner/SearchModel.h"

namespace hspmd::planner {

using namespace search;

std::string planText(const Candidate &candidate, const ModelShape &shape, const PlanRequest &request,
                     const std::string &name, const std::string &modelImport, const std::string &clusterPath) {
  std::string text = "// Planned by hspmc plan: " + candidate.strategy + ".\n";
  text += "import \"" + modelImport + "\"\n\nplan " + name + " for " + shape.model + " {\n";
  text += "  cluster \"" + clusterPath + "\"\n";
  text += "  bind B = " + std::to_string(request.tokens / request.sequence) +
          ", S = " + std::to_string(request.sequence) + "\n";
  text += "  optimizer adamw(lr = 1e-3)\n  schedule 1f1b\n";
  if (candidate.zero)
    text += "  zero\n";
  if (candidate.recompute)
    text += "  recompute\n";
  for (const auto &pipeline : candidate.pipelines) {
    text += "\n  pipeline " + pipeline.name + " share " + std::to_string(pipeline.sequences) + " microbatches " +
            std::to_string(pipeline.microbatches) + " {\n";
    for (const auto &stage : pipeline.stages) {
      text += "    stage devices " + rangeText(stage.devices);
      if (stage.tp > 1)
        text += " tp " + std::to_string(stage.tp);
      for (const auto *shares : {&stage.cp, &stage.hp}) {
        if (shares->empty())
          continue;
        std::string list;
        for (size_t g = 0; g < shares->size(); ++g)
          list += (g ? ", " : "") + rangeText(groupOf(stage, g)) + ": " + std::to_string((*shares)[g]);
        text += std::string(shares == &stage.cp ? " cp [" : " hp [") + list + "]";
      }
      text += " layers " + shape.stack;
      if (stage.layerBegin != 0 || stage.layerEnd != shape.layers)
        text += "[" + std::to_string(stage.layerBegin) + ":" + std::to_string(stage.layerEnd) + "]";
      std::vector<std::string> with;
      if (stage.first)
        with.insert(with.end(), shape.first.begin(), shape.first.end());
      if (stage.last)
        with.insert(with.end(), shape.last.begin(), shape.last.end());
      for (size_t i = 0; i < with.size(); ++i)
        text += (i ? ", " : " with ") + with[i];
      text += "\n";
    }
    text += "  }\n";
  }
  return text + "}\n";
}

} // namespace hspmd::planner
