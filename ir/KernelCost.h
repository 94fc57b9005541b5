// KernelCost.h - what one kernel of a DeviceProgram costs at its local shapes, by the
// formulas of ir/Cost.h: the simulator prices instructions with it, and the runtime's
// document scheduler weighs attention's pairs against a token's work with it.
#pragma once

#include "ir/DeviceProgram.h"

namespace hspmd::cost {

/// FLOPs and bytes moved of one kernel at its local shapes (the buffers of `program`).
/// Attention counts every pair its mask lets through (no documents: their blocks are the
/// caller's to scale).
struct KernelCost {
  double flops = 0, bytes = 0;
};
KernelCost kernelCost(const ir::Instruction &kernel, const ir::DeviceProgram &program);

} // namespace hspmd::cost
