// Specialize.h - one DeviceProgram per device of a deduced plan (the specialize, recompute,
// optimizer-step and schedule-pipeline passes at once: passes/ProgramBuilder.h), and the
// cross-device verifier that proves the programs fit together before anything runs.
#pragma once

#include "ir/DeviceProgram.h"
#include "passes/Communication.h"
#include "passes/LoweredPlan.h"
#include "passes/PassSupport.h"

#include <map>

namespace hspmd::passes {

/// For each device of the plan: the ops it takes part in, with local shapes (which differ
/// between devices under unequal splits) and the global offsets kernels need (the first
/// query and key position of an attention's local sequence piece, for the causal mask), and
/// every reshard as concrete collectives (with their groups) or sends and receives (with
/// their peers). Instructions of one step share a tag on every device. Each instruction is
/// marked forward, backward or update; the program carries the device's pipeline stage, its
/// micro-batch count and size, and the schedule (1F1B or GPipe) that orders the passes:
/// ir::expandSchedule turns it into the instruction stream one training step executes.
std::map<int, ir::DeviceProgram> specialize(const ir::Graph &graph, const LoweredPlan &plan, const LinkModel &links);

/// Checks that the programs fit together: every member of a collective calls it, with the
/// same group and size, in an order that cannot deadlock; every send has its receive (same
/// peers, size and tag). Reports each violation naming the devices, the instructions and
/// their source locations; returns whether all is well.
bool verifyPrograms(const std::map<int, ir::DeviceProgram> &programs, const ReportFn &report);
/// The same for the step the schedules run: every micro-batch's passes in schedule order,
/// then the update (as ir::expandSchedule lays it out, without copying the programs). Where
/// every device runs the same passes in the same order, one pass of each kind stands for all
/// its micro-batches (their tags keep them apart; VerifyPrograms.cpp says why that suffices).
/// Where every message and collective joins passes that run for the same micro-batches, the
/// step is matched through the bodies and only its order is replayed; the problems reported
/// are those of matching the expanded step itself.
bool verifyScheduledStep(const std::map<int, ir::DeviceProgram> &programs, const ReportFn &report);

} // namespace hspmd::passes
