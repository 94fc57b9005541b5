// Optimizer steps, in place on this device's piece of a parameter (or, under `zero`, its
// shard): AdamW (decoupled weight decay, bias-corrected moments, PyTorch's defaults) and
// SGD (with momentum when a momentum buffer is given). Elements run in parallel chunks.
#include "runtime/Kernels.h"
#include "runtime/kernels/Parallel.h"

#include <cmath>

namespace hspmd::runtime::kernels {

bool optimizer(const std::string &op, const ir::AttrMap &attrs, In in, In out, const KernelContext &context) {
  if (op == "adamw") {
    expect(in.size() == 4 && out.size() == 1, op, "expects param, grad, m, v -> param");
    float *p = out[0].f32(), *m = in[2].f32(), *v = in[3].f32();
    const float *g = in[1].f32();
    const double lr = ir::floatAttr(attrs, "lr", 1e-3), beta1 = ir::floatAttr(attrs, "beta1", 0.9),
                 beta2 = ir::floatAttr(attrs, "beta2", 0.999), eps = ir::floatAttr(attrs, "eps", 1e-8),
                 decay = ir::floatAttr(attrs, "weight_decay", 0.01);
    const double correction1 = 1 - std::pow(beta1, static_cast<double>(context.step)),
                 correction2 = 1 - std::pow(beta2, static_cast<double>(context.step));
    const int64_t n = out[0].numel();
    parallelFor(n, grainFor(n, 4), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        m[i] = static_cast<float>(beta1 * m[i] + (1 - beta1) * g[i]);
        v[i] = static_cast<float>(beta2 * v[i] + (1 - beta2) * static_cast<double>(g[i]) * g[i]);
        const double update = (m[i] / correction1) / (std::sqrt(v[i] / correction2) + eps);
        p[i] = static_cast<float>(p[i] * (1 - lr * decay) - lr * update);
      }
    });
  } else if (op == "sgd") {
    float *p = out[0].f32();
    const float *g = in[1].f32();
    float *momentum = in.size() > 2 ? in[2].f32() : nullptr;
    const double lr = ir::floatAttr(attrs, "lr", 1e-2), mu = ir::floatAttr(attrs, "momentum", 0.0),
                 decay = ir::floatAttr(attrs, "weight_decay", 0.0);
    const int64_t n = out[0].numel();
    parallelFor(n, grainFor(n, 2), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        double step = g[i] + decay * p[i];
        if (momentum) {
          momentum[i] = static_cast<float>(context.step == 1 ? step : mu * momentum[i] + step);
          step = momentum[i];
        }
        p[i] = static_cast<float>(p[i] - lr * step);
      }
    });
  } else {
    return false;
  }
  return true;
}

} // namespace hspmd::runtime::kernels
