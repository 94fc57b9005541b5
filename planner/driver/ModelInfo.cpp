// ModelInfo.cpp - what a training run reads of the model: its inputs, parameters and their
// initializers (planner/driver/ModelInfo.h).
#include "planner/driver/ModelInfo.h"

#include <iostream>

namespace hspmd::driver {

namespace {
std::string stringAttr(const ir::AttrMap &attrs, const std::string &name, const std::string &fallback) {
  auto it = attrs.find(name);
  if (it == attrs.end())
    return fallback;
  const auto *text = std::get_if<std::string>(&it->second);
  return text ? *text : fallback;
}
} // namespace

runtime::ModelInfo modelInfo(const ir::Graph &graph) {
  runtime::ModelInfo info;
  info.name = graph.name();
  for (const ir::Value *param : graph.params()) {
    runtime::ParamSpec spec;
    spec.name = param->name;
    spec.shape = ir::sizesWithUnboundAsOne(param->type.shape);
    spec.init = stringAttr(param->def->attrs, "init", "normal");
    spec.std = ir::floatAttr(param->def->attrs, "std", 0.02);
    info.params.push_back(spec);
  }
  for (const ir::Value *input : graph.inputs())
    if (input->type.shape.size() == 2) {
      const auto sizes = ir::sizesWithUnboundAsOne(input->type.shape);
      info.batch = sizes[0];
      info.seq = sizes[1];
    }
  info.vocab = int64_t{1} << 31;
  for (const auto &op : graph.ops())
    if (op->kind == ir::OpKind::Embedding)
      info.vocab = std::min(info.vocab, ir::sizesWithUnboundAsOne(op->operands[0]->type.shape)[0]);
  return info;
}

bool checkTrainable(const ir::Graph &graph, const std::string &command, frontend::DiagnosticEngine &diags) {
  const int before = diags.errorCount();
  for (const ir::Value *input : graph.inputs()) {
    const bool known = input->name == "tokens" || input->name == "targets";
    if (!known)
      diags.error(input->def->loc, command + " feeds a model 'tokens' and 'targets' from --data, but " + graph.name() +
                                       " takes '" + input->name + "' (" + input->type.str() + ")");
    else if (input->type.rank() != 2 || input->type.dtype != ir::DType::I32)
      diags.error(input->def->loc,
                  "'" + input->name + "' must be i32[B, S] for " + command + " (it is " + input->type.str() + ")");
  }
  return diags.errorCount() == before;
}

} // namespace hspmd::driver
