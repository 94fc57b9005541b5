#include "ir/KernelCost.h"

#include "ir/Cost.h"
#include "ir/Ops.h"

namespace hspmd::cost {

namespace {

double numel(const ir::Buffer &b) {
  double n = 1;
  for (int64_t d : b.shape)
    n *= static_cast<double>(d);
  return n;
}

} // namespace

KernelCost kernelCost(const ir::Instruction &kernel, const ir::DeviceProgram &program) {
  auto buffer = [&](int id) -> const ir::Buffer & { return program.buffers[static_cast<size_t>(id)]; };
  KernelCost cost;
  for (int b : kernel.inputs)
    cost.bytes += static_cast<double>(buffer(b).bytes());
  for (int b : kernel.outputs)
    cost.bytes += static_cast<double>(buffer(b).bytes());
  const std::string &op = kernel.op;
  const double out = kernel.outputs.empty() ? 0 : numel(buffer(kernel.outputs[0]));
  if (op == "matmul") {
    const auto &a = buffer(kernel.inputs[0]).shape;
    cost.flops = matmulFlops(out, static_cast<double>(a.empty() ? 1 : a.back()));
  } else if (op == "attention" || op == "attention_grad") {
    const auto &q = buffer(kernel.inputs[0]).shape, &k = buffer(kernel.inputs[1]).shape;
    if (q.size() == 4 && k.size() == 4) {
      // Scores and their product with V: 4 B H S T D; a causal mask over a query range
      // [a, b) of keys from c sees sum over s of (a + s + 1 - c) keys.
      const double B = static_cast<double>(q[0]), S = static_cast<double>(q[1]), H = static_cast<double>(q[2]),
                   D = static_cast<double>(q[3]), T = static_cast<double>(k[1]);
      double keys = S * T;
      if (ir::boolAttr(kernel.attrs, "causal"))
        keys = causalPairs(S, T,
                           static_cast<double>(ir::intAttr(kernel.attrs, "query_offset")) -
                               static_cast<double>(ir::intAttr(kernel.attrs, "key_offset")));
      cost.flops = attentionFlops(B, H, keys, D) * (op == "attention_grad" ? kAttentionBackwardFactor : 1.0);
    }
  } else if (op == "adamw") {
    cost.flops = kAdamwFlops * out;
  } else if (op == "rmsnorm" || op == "layernorm" || op == "softmax" || op == "cross_entropy") {
    cost.flops = kNormFlops * numel(buffer(kernel.inputs[0]));
  } else if (op == "rmsnorm_grad" || op == "layernorm_grad" || op == "cross_entropy_grad") {
    cost.flops = kNormGradFlops * numel(buffer(kernel.inputs[0]));
  } else if (op == "gelu" || op == "gelu_grad" || op == "silu" || op == "silu_grad") {
    cost.flops = kActivationFlops * out;
  } else {
    cost.flops = kElementwiseFlops * out;
  }
  return cost;
}

} // namespace hspmd::cost
