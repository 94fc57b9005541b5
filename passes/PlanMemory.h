// PlanMemory.h - plan-memory: places every buffer of a DeviceProgram in one arena, reusing
// the space of buffers no longer live.
#pragma once

#include "ir/DeviceProgram.h"

#include <vector>

namespace hspmd::passes {

/// Buffers that outlive one pass (parameters, inputs, optimizer state, stashed activations
/// with all their copies, gradient accumulators) live for the whole step, at the bottom of
/// the arena; any other buffer lives from the instruction that first writes it to the last
/// that reads it, in execution order (forward, recompute, backward, update), and is placed
/// by linear scan at the lowest free offset (first fit). Every buffer starts at a multiple of
/// 64 bytes (a cache line: the CPU kernels' vector loads). Sets each buffer's offset and the
/// program's peak; returns the peak in bytes.
int64_t planMemory(ir::DeviceProgram &program);

/// planMemory for each of `programs`, on up to `threads` threads (0: the machine's cores).
/// Programs alike in everything a memory plan reads (each buffer's bytes, copies, and whether
/// it is zeroed or the loss; each instruction's pass, inputs and outputs), as the tensor-parallel
/// peers and the replicas of a stage mostly are, are planned once and share the plan.
void planMemories(const std::vector<ir::DeviceProgram *> &programs, int threads);

} // namespace hspmd::passes
