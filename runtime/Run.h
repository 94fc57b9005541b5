// Run.h - a training run over every device's program: one loop (train) over a World of
// communicators; the threads backend runs each device on a thread of this process
// (runThreads), the MPI backend one device per process (runMpi, MpiRun.h). Both print a
// progress line per step and a per-device summary at the end.
#pragma once

#include "ir/Files.h"

#include "ir/DeviceProgram.h"
#include "runtime/Documents.h"
#include "runtime/Executor.h"
#include "runtime/Switch.h"

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace hspmd::runtime {

/// What a run needs to know of the model beyond the programs.
struct ModelInfo {
  std::string name;              // for checkpoints: ParameterStore::fingerprint
  std::vector<ParamSpec> params; // global shapes and initialisers
  int64_t batch = 0, seq = 0;    // the global batch: B sequences of S tokens
  int64_t vocab = 0;             // tokens must be below it
};

/// Where an injected failure strikes: at the start of the device's forward or backward pass
/// of a step, of its update (before its gradients' reductions), of the plan switch before the
/// step, or of the move of a recovery after which the step runs (if the run recovers there).
/// `Join`: a device that died comes back before the step.
enum class FaultPhase { Forward, Backward, Update, Switch, Recovery, Join, Slow };
struct Fault {
  int64_t step = 0;
  int device = 0;
  FaultPhase phase = FaultPhase::Forward;
  double factor = 1;  // Slow: from step `step` on, the device's kernels take this many times as long
  std::string origin; // where it was asked for: "--fail 3:2" or "FILE:LINE" of a fault trace ("" in code)
};
/// "3:2", "3:2@backward": a --fail option, checked against the run's devices and steps;
/// `error` is empty when it is good (it then names the option).
struct FaultOption {
  Fault fault;
  std::string error;
};
FaultOption parseFaultOption(const std::string &option, const std::vector<int> &devices, int64_t steps);
/// A fault trace (hspmc train --fault-trace): a line per event, `STEP DEVICE fail [PHASE]`,
/// `STEP DEVICE join` (a device that died before STEP comes back then) or `STEP DEVICE slow
/// FACTOR` (from STEP on its kernels take FACTOR times as long; 1: its own speed again); `#`
/// starts a comment.
/// Appends to `faults`; returns "" or the first error, at FILE:LINE.
std::string readFaultTrace(const std::string &path, const std::vector<int> &devices, int64_t steps,
                           std::vector<Fault> &faults);
/// A device dies once until it joins again: "" where no fault kills a device that is dead by
/// then (an earlier or the same step's death, no join between), otherwise that, at the later
/// death's origin and naming the earlier's (`--fail 1:0 --fail 1:0@backward` ran with the
/// backward one alone).
std::string deathsOfTheDead(const std::vector<Fault> &faults);

struct RunOptions {
  int64_t steps = 20;
  uint64_t seed = 1;
  std::string data; // a text, token or jsonl file (Dataset::load)
  /// hspmc train --documents: `data` is read as documents (runtime/Documents.h), each step
  /// takes whole documents, attention is masked to each and only real tokens are scored.
  bool documents = false;
  DocumentOptions documentOptions;
  std::string save, load; // checkpoint paths ("" for none)
  /// With `save`: the checkpoint is also written after every `saveEvery`-th step (0: only at
  /// the end). A death that leaves a part of the state without a copy then resumes from it.
  int64_t saveEvery = 0;
  std::string trace; // Chrome trace JSON path ("" for none), of the first 4 steps
  std::chrono::milliseconds timeout = std::chrono::seconds(120);
  /// MPI runs that go on after a death (--recover): every process sends each other one a
  /// heartbeat ten times per `heartbeat`, and one not heard from for `heartbeat` is dead.
  std::chrono::milliseconds heartbeat = std::chrono::seconds(1);
  std::ostream *progress = nullptr; // progress lines and the summary ("" when null)
  /// Generated code's phase functions, per plan of the run and device (hspmc build); absent:
  /// the executor walks each program's instructions.
  std::vector<std::map<int, PhaseFunctions>> generated;
  /// Failures to inject (hspmc train --fail): the device dies at that point of that step.
  std::vector<Fault> faults;
  /// hspmc train --stragglers: each step's kernel times are compared (runtime/Stragglers.h);
  /// a device persistently slower than it was makes the run re-plan for its measured speed
  /// (RunPlans::replanForSpeeds) and switch when the predicted gain over the steps left
  /// exceeds the switch's cost.
  bool stragglers = false;
  /// Where each device's kernels run (a GPU: hspmc build --target cuda); empty: in the
  /// executor's arena, on the CPU (runtime/Offload.h).
  OffloadFactory offload;
  /// Threads of each device's kernels; 0: the process's cores divided among its devices
  /// (runtime/kernels/Parallel.h). bench_simulate calibrates kernels at a given count.
  int kernelThreads = 0;
  /// Who the run's messages are from ("hspmc train", a generated binary's path): a signal
  /// that stops a threads run is reported under it (runtime/StopReport.h).
  std::string program = "hspmc train";
};
/// The files a run writes (`run.save`, `run.trace`, and `losses` where not empty) checked
/// before it trains rather than when it writes them: "cannot write PATH (--save): why", or "".
/// A checkpoint is written beside its path and renamed onto it, so --save must name a regular
/// file where something is there (as root, a rename onto /dev/null replaces it). No output may
/// be a file the run reads (ir::readByTheCommand: `inputs`, its data, and for --losses and
/// --trace the checkpoint it loads; --save may replace that one) or another output.
std::string unwritableOutputs(const RunOptions &run, const std::string &losses, std::vector<ir::ReadFile> inputs = {});
/// Whether `faults` kill a device (a `slow` event does not).
bool killsDevices(const std::vector<Fault> &faults);

/// --documents lays out every step's documents before the run (its bucket switches are planned
/// from them): a step's layout takes some hundred bytes, so a run (from step 1, its checkpoint's
/// steps included) has at most this many steps. (Before, --steps 1000000000 took 6.5 GB in 20 s
/// and went on.)
constexpr int64_t kMostDocumentSteps = 1'000'000;

/// --trace records the first steps only (a step is many events).
constexpr int64_t kTracedSteps = 4;

/// A change of plan during a run (hspmc train --switch): before step `beforeStep` every
/// device moves its parameters and optimizer state by `transfer` (runtime/Switch.h) from the
/// layout of the plan it ran to that of plan `plan`, and trains on under it. `report` begins
/// the switch's line in the progress output ("switched to plan 'b' before step 3: compiled
/// in 0.4 s, transfer planned in 1.2 ms"); the run adds what the move took.
struct PlanSwitch {
  int64_t beforeStep = 0;
  size_t plan = 0;
  const StateSwitch *transfer = nullptr;
  std::string report;
};

struct RunResult {
  std::vector<double> losses;        // per step: the global mean loss
  std::vector<double> switchSeconds; // per switch: the move, until every device had its state
  /// Per recovery after a death: the step redone, how long the survivors took to agree, to
  /// plan the move and to move (until each held its state under the recovery plan).
  struct Recovery {
    int64_t step = 0;
    double agreeSeconds = 0, planSeconds = 0, moveSeconds = 0;
    double replanSeconds = 0, compileSeconds = 0; // --recover auto: the planner, the compiler
  };
  std::vector<Recovery> recoveries;
  std::map<int, DeviceTimes> times;
  double seconds = 0;              // wall time of the run
  std::vector<double> stepSeconds; // per step, from the end of the previous one
  int64_t tokensPerStep = 0;       // with --documents: real tokens, the mean over the run's steps
  /// --documents: per step, the documents (pieces) it took and their real tokens.
  std::vector<int64_t> stepDocuments, stepTokens;
  /// This process gathered the devices' reports: it printed the summary and wrote the files
  /// (threads: always; MPI: the process of the first device alive at the end).
  bool reported = false;
};

struct RunError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// An error that every process of an MPI run finds alike before training (the process count):
/// only the first process says it (reportRunError, MpiRun.h), not one copy per process.
struct SameEverywhereError : RunError {
  using RunError::RunError;
};

/// The one training loop, for every backend. Each device of `world` that this process runs
/// loads its regions of the parameters and optimizer state, then steps through the data:
/// step k (from 1, counting on from a loaded checkpoint) trains on the data's batch k - 1 and
/// ends with the sum of the devices' losses (sumOverDevices), which the first device records.
/// At the end every device reports its times, trace and (with --save) its state to the first
/// device, whose process prints the summary and writes the checkpoint and trace. Only that
/// process's result has the losses and times. Throws RunError with the first device's error.
RunResult train(World &world, const std::map<int, ir::DeviceProgram> &programs, const ModelInfo &model,
                const RunOptions &options);

/// The plans of one run: the programs of each (plans[0] first) and the switches between them,
/// in step order. The world holds every device of every plan; a device a plan does not use
/// waits out its steps (it still adds 0 to each step's loss).
/// A plan made during a run for the devices alive (hspmc train --recover auto).
struct Replanned {
  const std::map<int, ir::DeviceProgram> *programs = nullptr; // null: `error` says why
  std::string name, path, error;
  double planSeconds = 0, compileSeconds = 0;
  /// replanForSpeeds: one step of the new plan and of the plan the run is on, simulated on
  /// the run's cluster at the devices' measured speeds.
  double predictedSeconds = 0, predictedNowSeconds = 0;
};

struct RunPlans {
  std::vector<const std::map<int, ir::DeviceProgram> *> plans;
  std::vector<PlanSwitch> switches;
  /// After a device dies, the survivors go on under the first of these plans whose devices
  /// are all alive (hspmc train --recover); none: the run stops. kReplan: a plan made then
  /// by `replan` for the live devices.
  std::vector<size_t> recoveries;
  static constexpr size_t kReplan = static_cast<size_t>(-1);
  std::vector<std::string> names; // per plan, for the progress lines ("plan 2" when absent)
  /// Plans and compiles the run anew for the live devices (increasing); called once per
  /// agreement that needs it (threads: by one device while the others wait), the programs kept
  /// by the caller for the rest of the run.
  std::function<Replanned(const std::vector<int> &live)> replan = nullptr;
  /// --stragglers: plans and compiles the run anew for the live devices at their measured
  /// speeds (device -> speed against its type's profile; absent: 1), and simulates a step of
  /// the new plan and of `current` (the plan the run is on) at those speeds.
  std::function<Replanned(const std::vector<int> &live, const std::map<int, double> &speeds,
                          const std::map<int, ir::DeviceProgram> &current)>
      replanForSpeeds = nullptr;
  /// A plan set (docs/mixed-lengths.md): a plan per length bucket, with its batch of B
  /// sequences of S. Non-empty: the run trains on documents, each step under the plan of
  /// the smallest S that holds its longest document (DocumentSteps), switching where the
  /// next step's plan is another.
  struct Bucket {
    size_t plan = 0;
    int64_t batch = 0, seq = 0;
  };
  std::vector<Bucket> buckets = {};
  /// Every device of every plan, in increasing order.
  std::vector<int> devices() const;
};

/// Marks in `batch` the micro-batch indices but the first that are padding only in every
/// pipeline of `programs` (Batch::skipMicrobatch): every device skips them, and their
/// communication with them. Nothing without documents.
void skipEmptyMicrobatches(Batch &batch, const std::map<int, ir::DeviceProgram> &programs);

/// The shape a plan runs a batch of B x S in, for the document scheduler (DocumentShape):
/// its pipelines' rows (none where they do not partition the batch) and the work of one
/// attention pair against a token's, from the FLOPs of its kernels (ir/KernelCost.h).
DocumentShape documentShape(const std::map<int, ir::DeviceProgram> &programs, int64_t batch, int64_t seq);

/// The line on a run's documents (--documents): the corpus's lengths and what its steps take
/// on average (documents, real tokens, rows of the batch), and with a plan set the steps
/// each plan runs.
std::string describeSteps(const Documents &documents, const DocumentSteps &steps, const RunPlans &plans,
                          const RunOptions &options, int64_t firstStep);

/// The training loop over several plans (train() is this with one plan and no switch).
RunResult train(World &world, const RunPlans &plans, const ModelInfo &model, const RunOptions &options);

/// train() with every device a thread of this process. The RunPlans form first checks that the
/// devices' arenas fit the memory this machine has free (hostMemoryProblem): a run that cannot
/// fit is a RunError before anything is allocated, not a process the system kills midway.
RunResult runThreads(const std::map<int, ir::DeviceProgram> &programs, const ModelInfo &model,
                     const RunOptions &options);
RunResult runThreads(const RunPlans &plans, const ModelInfo &model, const RunOptions &options);
/// The bytes of memory this machine has free: /proc/meminfo's MemAvailable plus SwapFree
/// (nullopt where it cannot be read).
std::optional<int64_t> hostMemoryFree();
/// Where a run's devices are on this machine: threads of this process, or a process each that
/// hspmc starts under mpirun itself (hspmc train --backend mpi outside mpirun: all on this machine).
enum class HostRun { Threads, LocalMpi };
/// "" where the largest of the plans' sums of their devices' arenas (the memory plans' peaks,
/// a lower bound of what the run allocates) fits in `free` bytes (nullopt: unknown, ""),
/// otherwise why not.
std::string hostMemoryProblem(const RunPlans &plans, std::optional<int64_t> free, HostRun run = HostRun::Threads);

/// Prints the progress line of step s (from 0) when it is due: the first and last steps and
/// about 20 in between. The loss shown is the mean of the steps since the previous line.
/// `shown` false: recorded, not printed (an MPI process that is not the first one alive).
class Progress {
public:
  Progress(std::ostream *out, int64_t firstStep, int64_t steps, int64_t tokensPerStep)
      : out_(out), firstStep_(firstStep), steps_(steps), tokensPerStep_(tokensPerStep),
        start_(std::chrono::steady_clock::now()) {}
  void step(int64_t s, const std::vector<double> &losses, bool shown = true);

private:
  std::ostream *out_;
  int64_t firstStep_, steps_, tokensPerStep_, printed_ = 0;
  std::chrono::steady_clock::time_point start_;
};

/// The first line of a run: "training M under plan 'P' on N devices (threads), B x S tokens
/// per step, data FILE"; with `planSet` ("SET' (p 8 x 64, q 2 x 256)") "under plan set 'SET'
/// (...)" in place of the plan and its batch; "(threads, bf16)" where the run's `plans` store
/// activations in bf16.
std::string runBanner(const ModelInfo &model, const std::string &plan, size_t devices, bool mpi,
                      const std::string &data, const RunPlans &plans, const std::string &planSet = "");

/// Writes the per-step losses with what produced them (plan, model, batch, seed, optimizer)
/// as JSON: what tests/torch/check_plan.py reads.
void writeLosses(const std::string &path, const std::string &plan, const ModelInfo &model, uint64_t seed,
                 const std::string &optimizer, const std::map<std::string, double> &optimizerArgs,
                 const RunResult &result);

/// Writes one Chrome trace (one track per device) of the events of every device.
void writeTrace(const std::string &path, const std::map<int, std::vector<TraceEvent>> &events);

/// The per-device summary lines: busy, communicating, idle.
void printSummary(std::ostream &out, const std::map<int, DeviceTimes> &times, double seconds);

} // namespace hspmd::runtime
