// MpiRun.h - the MPI backend: one device per process, started by `mpirun -np N` (N = the
// plan's device count; rank r runs the r-th device in increasing id order). Messages carry
// their 64-bit tag in a header; every wait polls against a deadline, so a peer that never
// answers ends the run with an error naming it instead of a hang.
#pragma once

#include "runtime/Run.h"

namespace hspmd::runtime {

/// Whether this build has the MPI backend.
bool mpiAvailable();

/// Runs this process's device through train() (Run.h): MPI must not be initialised yet; it is
/// finalised at the end. Rank 0 runs the first device: it prints the progress and summary and
/// writes the checkpoint and trace. Throws RunError when the world size does not match the
/// plan; any other error aborts every process (MPI_Abort) after printing it.
RunResult runMpi(const std::map<int, ir::DeviceProgram> &programs, const ModelInfo &model, const RunOptions &options);
/// runMpi over several plans (Run.h, RunPlans): one process per device of any of them.
RunResult runMpi(const RunPlans &plans, const ModelInfo &model, const RunOptions &options);

/// This process's MPI rank when started by mpirun (from the environment, before MPI_Init),
/// else -1.
int launcherRank();

/// Prints `error` as "PROGRAM: error: WHAT" in one write (lines written piece by piece by
/// several processes interleave), where this process says it: every process does, except for a
/// SameEverywhereError, which only the first process of an MPI run prints. Such an error leaves
/// MPI open: here every process waits for the others, then closes it, so that no process exits
/// (and mpirun ends the rest) before the first has printed.
void reportRunError(const std::string &program, const std::exception &error);

/// hspmc train --backend mpi outside mpirun: runs `command` (this program's arguments) under
/// `mpirun -np processes` (--enable-recovery where the run goes on after deaths: `elastic`)
/// and returns the run's exit status: that of the process that reported the run (it printed
/// the summary), else the first non-zero one, else mpirun's, saying first that no process
/// finished or said why (one was killed, and mpirun ended the others). (Under --enable-recovery mpirun
/// itself exits 0 whatever its processes do.) A SIGTERM, SIGINT or SIGHUP meanwhile is passed
/// on to mpirun, which ends the processes; then it returns 128 + the signal.
int launchUnderMpirun(const std::vector<std::string> &command, int processes, bool elastic);
/// A process started by launchUnderMpirun records its exit status for it (elsewhere: nothing).
void recordExit(int code, bool reported);

} // namespace hspmd::runtime
