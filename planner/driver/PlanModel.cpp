// PlanModel.cpp - `hspmc plan` end to end: the search, each finalist compiled in memory through the
// gate and simulated, the plan written and linted (planner/driver/PlanModel.h).
#include "planner/driver/PlanModel.h"

#include "ir/Files.h"
#include "ir/Words.h"
#include "planner/PlanSet.h"

#include "frontend/Parser.h"
#include "ir/PlanText.h"
#include "passes/Pipeline.h"
#include "planner/Estimates.h"
#include "planner/Lint.h"
#include "planner/Simulator.h"
#include "planner/driver/Driver.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace hspmd::driver {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string relativeTo(const std::string &path, const std::string &file) {
  const auto from = std::filesystem::absolute(std::filesystem::path(file)).parent_path();
  return std::filesystem::relative(std::filesystem::absolute(path), from).string();
}

std::string firstError(const frontend::CollectingSink &sink) {
  for (const auto &d : sink.diagnostics)
    if (d.severity == frontend::Severity::Error)
      return frontend::diagnosticHeader(d);
  return "failed";
}

// The plan's name: the stem of the file it is written to, as an identifier.
std::string planName(const std::string &out) {
  const std::string n = ir::identifierFrom(std::filesystem::path(out).stem().string());
  return frontend::isKeyword(n) ? "p_" + n : n; // not a word of the language (-o plan.hspmd)
}

// A candidate at another batch (B sequences of S, tokens alike): the same devices, stages,
// layers and groups, so that it holds the state as the candidate does; each pipeline's
// sequences scaled with B (its micro-batches kept: each holds the same tokens), context
// shares scaled with S. None where they do not scale to whole numbers.
std::optional<planner::Candidate> rebound(planner::Candidate c, int64_t fromB, int64_t fromS, int64_t toB,
                                          int64_t toS) {
  if (fromB <= 0 || toS <= 0 || toB % fromB != 0 || fromS % toS != 0)
    return std::nullopt;
  const int64_t more = toB / fromB, shorter = fromS / toS;
  for (planner::PipelinePlan &pipeline : c.pipelines) {
    pipeline.sequences *= more;
    for (planner::StagePlan &stage : pipeline.stages)
      for (int64_t &share : stage.cp) {
        if (share % shorter != 0 || share / shorter == 0)
          return std::nullopt;
        share /= shorter;
      }
  }
  c.strategy = "the layout of the " + std::to_string(fromS) + "-position plan (" + c.strategy + ")";
  return c;
}

// Which finalists the estimates rule out, from what the compiled ones showed:
// - memory: one the estimate puts over what a device may use, once a plan that fits has been
//   simulated; before that, one over kUncompiledMemoryRatio times it (the estimate has been
//   within 0.67-1.38x of the memory plan), which is compiled only if nothing else fits;
// - time: one whose estimated step, at the smallest error its family (else any family) has
//   shown (simulated / estimated, less kEstimateSlack), is slower than the fastest simulated
//   plan that fits (for a symmetric finalist, the fastest symmetric one: the baseline
//   `hspmc plan` compares its plan with).
class FinalistOrder {
public:
  explicit FinalistOrder(bool everyOne) : everyOne_(everyOne) {}

  // Why `c` is not compiled ("" to compile it).
  std::string skip(const planner::Candidate &c) const {
    if (everyOne_)
      return "";
    const double best = c.symmetric ? bestSymmetric_ : std::min(bestSymmetric_, bestPlanned_);
    const bool haveBest = std::isfinite(best);
    char text[240];
    if (c.memoryRatio > kUncompiledMemoryRatio || (haveBest && c.memoryRatio > 1)) {
      std::snprintf(text, sizeof text,
                    "estimated %.3f ms, memory estimated %s, %.2fx what a device may use: not compiled",
                    c.seconds * 1e3, planner::memoryText(c.peakBytes).c_str(), c.memoryRatio);
      return text;
    }
    const double error = smallestError(c.family);
    if (haveBest && c.seconds * error > best) {
      std::snprintf(text, sizeof text,
                    "estimated %.3f ms, at least %.3f ms at its family's error, slower than %.3f ms simulated: not "
                    "compiled",
                    c.seconds * 1e3, c.seconds * error * 1e3, best * 1e3);
      return text;
    }
    return "";
  }

  void observe(const SimulatedCandidate &s) {
    if (s.simulated.seconds <= 0 || s.candidate.seconds <= 0)
      return;
    errors_[s.candidate.family].push_back(s.simulated.seconds / s.candidate.seconds);
    double &best = s.candidate.symmetric ? bestSymmetric_ : bestPlanned_;
    if (s.simulated.fits)
      best = std::min(best, s.simulated.seconds);
  }

private:
  bool everyOne_;
  // The fastest simulated steps that fit.
  double bestPlanned_ = std::numeric_limits<double>::infinity(), bestSymmetric_ = bestPlanned_;
  std::map<std::string, std::vector<double>> errors_;

  double smallestError(const std::string &family) const {
    double smallest = std::numeric_limits<double>::infinity();
    if (auto it = errors_.find(family); it != errors_.end())
      for (double e : it->second)
        smallest = std::min(smallest, e);
    else
      for (const auto &[other, errors] : errors_)
        for (double e : errors)
          smallest = std::min(smallest, std::min(e, 1.0));
    return std::isfinite(smallest) ? smallest * (1 - kEstimateSlack) : 1 - kEstimateSlack;
  }
};

// A finalist compiled and simulated. One whose only fault is `zero` state that its replicas
// do not divide evenly (HS104 on the optimizer state) is compiled again with `chunked`: the
// shards are then ceil-sized and gathered by a split all-gather (docs/lint.md, HS104).
SimulatedPlan compileFinalist(frontend::Compilation &compilation, const frontend::CollectingSink &sink,
                              ir::PlanSpec spec, const planner::Cluster &cluster, const std::atomic<bool> *cancelled) {
  const size_t before = sink.diagnostics.size();
  SimulatedPlan plan = simulateSpec(compilation, sink, spec, cluster, cancelled);
  if (plan.error.empty() || !spec.zero || spec.chunked)
    return plan;
  bool onlyZeroState = false;
  for (size_t i = before; i < sink.diagnostics.size(); ++i) {
    const frontend::Diagnostic &d = sink.diagnostics[i];
    if (d.severity != frontend::Severity::Error)
      continue;
    if (d.code != "HS104" || d.message.find(planner::kUnevenZeroState) == std::string::npos)
      return plan;
    onlyZeroState = true;
  }
  if (!onlyZeroState)
    return plan;
  spec.chunked = true;
  SimulatedPlan chunked = simulateSpec(compilation, sink, spec, cluster, cancelled);
  chunked.chunked = true;
  return chunked;
}

// What compiling and simulating a finalist costs, about: the layers each device runs, times
// the micro-batches it runs them for, over all devices (the scheduled step's size).
double scheduledLayers(const ir::PlanSpec &spec) {
  double total = 0;
  for (const ir::PipelineSpec &pipeline : spec.pipelines)
    for (const ir::StageSpec &stage : pipeline.stages)
      total += static_cast<double>(stage.devices.size()) * static_cast<double>(pipeline.microbatches) *
               std::max(1, stage.layerEnd - stage.layerBegin);
  return total;
}

// Threads for the finalists: the machine's cores, at most 8 (a large finalist's compile holds
// over a GiB).
size_t finalistThreads() {
  return std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
}

// Compiles and simulates finalists on the machine's cores. Each worker thread has a
// Compilation of its own with the model loaded on the constructing thread (the ANTLR 4.9
// runtime is not safe to parse with from several threads; elaborating a PlanSpec parses
// nothing). A compile can be cancelled: it stops before its next pass.
class FinalistWorkers {
public:
  FinalistWorkers(const std::string &model, const planner::Cluster &cluster, size_t threads) : cluster_(cluster) {
    for (size_t t = 0; t < std::max<size_t>(threads, 1); ++t) {
      workers_.push_back(std::make_unique<Worker>());
      workers_.back()->compilation.load(model);
    }
    for (auto &worker : workers_)
      worker->thread = std::thread([this, w = worker.get()] { run(*w); });
  }
  ~FinalistWorkers() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
      queue_.clear();
      for (auto &[key, task] : tasks_)
        task.cancelled->store(true);
    }
    wake_.notify_all();
    for (auto &worker : workers_)
      worker->thread.join();
  }
  FinalistWorkers(const FinalistWorkers &) = delete;
  FinalistWorkers &operator=(const FinalistWorkers &) = delete;

  size_t size() const { return workers_.size(); }
  // Queued and running compiles (a cancelled one runs until its pass ends).
  size_t busy() {
    std::lock_guard lock(mutex_);
    return queue_.size() + running_;
  }
  bool started(size_t key) {
    std::lock_guard lock(mutex_);
    return tasks_.count(key) > 0;
  }
  void start(size_t key, const ir::PlanSpec &spec) {
    {
      std::lock_guard lock(mutex_);
      if (!tasks_.emplace(key, Task{spec, std::make_shared<std::atomic<bool>>(false), std::nullopt}).second)
        return;
      queue_.push_back(key);
    }
    wake_.notify_one();
  }
  void cancel(size_t key) {
    std::lock_guard lock(mutex_);
    if (auto it = tasks_.find(key); it != tasks_.end())
      it->second.cancelled->store(true);
    queue_.erase(std::remove(queue_.begin(), queue_.end(), key), queue_.end());
  }
  // Waits until `key` (started) is done or another compile ends; its result once done.
  std::optional<SimulatedPlan> waitForChange(size_t key) {
    std::unique_lock lock(mutex_);
    const size_t seen = finished_;
    done_.wait(lock, [&] { return tasks_.at(key).result || finished_ != seen; });
    return tasks_.at(key).result;
  }

private:
  struct Worker {
    frontend::SourceManager sources;
    frontend::CollectingSink sink;
    frontend::DiagnosticEngine diags{sink};
    frontend::Compilation compilation{sources, diags};
    std::thread thread;
  };
  struct Task {
    ir::PlanSpec spec;
    std::shared_ptr<std::atomic<bool>> cancelled;
    std::optional<SimulatedPlan> result;
  };
  const planner::Cluster &cluster_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::deque<size_t> queue_;
  std::map<size_t, Task> tasks_;
  size_t running_ = 0, finished_ = 0;
  bool stop_ = false;

  void run(Worker &w) {
    for (;;) {
      ir::PlanSpec spec;
      std::shared_ptr<std::atomic<bool>> cancelled;
      size_t key = 0;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_)
          return;
        key = queue_.front();
        queue_.pop_front();
        spec = tasks_.at(key).spec;
        cancelled = tasks_.at(key).cancelled;
        ++running_;
      }
      SimulatedPlan result;
      try {
        result = compileFinalist(w.compilation, w.sink, spec, cluster_, cancelled.get());
      } catch (const std::exception &e) { // what the main thread would have caught, as the finalist's error
        result.error = std::string("internal error: ") + e.what();
      }
      w.sink.diagnostics.clear();
      {
        std::lock_guard lock(mutex_);
        --running_;
        ++finished_;
        tasks_.at(key).result = std::move(result);
      }
      done_.notify_all();
    }
  }
};

} // namespace

SimulatedPlan simulateSpec(frontend::Compilation &compilation, const frontend::CollectingSink &sink,
                           const ir::PlanSpec &spec, const planner::Cluster &cluster,
                           const std::atomic<bool> *cancelled) {
  SimulatedPlan out;
  const size_t before = sink.diagnostics.size();
  passes::PipelineResult training;
  if (!checkSpec(compilation, spec, cluster, &training, cancelled) || !training.ok || training.programs.empty()) {
    out.error = "failed";
    for (size_t i = before; i < sink.diagnostics.size(); ++i)
      if (sink.diagnostics[i].severity == frontend::Severity::Error) {
        out.error = frontend::diagnosticHeader(sink.diagnostics[i]);
        break;
      }
    return out;
  }
  if (cancelled && cancelled->load()) {
    out.error = "cancelled";
    return out;
  }
  out.seconds = planner::simulate(training.programs[0], planner::costModel(cluster)).stepSeconds;
  out.fits = true;
  for (const auto &[device, program] : training.programs[0]) {
    out.peakBytes = std::max(out.peakBytes, static_cast<double>(program.peakBytes));
    out.fits = out.fits && device < static_cast<int>(cluster.devices.size()) &&
               static_cast<double>(program.peakBytes) <= cluster.typeOf(device).memoryGiB * (1ull << 30);
  }
  return out;
}

SimulatedPlan simulatePlanFile(const std::string &path, const planner::Cluster &cluster) {
  frontend::SourceManager sources;
  frontend::CollectingSink sink;
  frontend::DiagnosticEngine diags(sink);
  frontend::Compilation compilation(sources, diags);
  auto build = elaborateBuild(compilation, path, {path}, "");
  if (!build || build->plans.empty() || diags.errorCount() > 0) {
    SimulatedPlan out;
    out.error = firstError(sink);
    return out;
  }
  return simulateSpec(compilation, sink, build->plans[0], cluster);
}

planner::PlanRequest requestOf(const PlanFiles &files) {
  planner::PlanRequest request;
  request.tokens = files.tokens;
  request.sequence = files.sequence;
  request.bf16 = files.bf16;
  return request;
}

bool planModel(const PlanFiles &files, PlanOutcome &outcome, std::ostream &progress, std::ostream &errors) {
  frontend::SourceManager sources;
  frontend::CollectingSink sink;
  frontend::DiagnosticEngine diags(sink);
  frontend::Compilation compilation(sources, diags);
  std::vector<planner::ClusterError> clusterErrors;
  auto cluster = planner::loadCluster(files.cluster, compilation.stdlibDir() + "/devices.toml", clusterErrors);
  for (const auto &error : clusterErrors)
    diags.error(error.loc, error.message);
  // MODEL is the model: a plan file would be planned at its own bindings, not the request's.
  std::optional<Build> build;
  if (const frontend::FileAst *ast = compilation.load(files.model)) {
    if (!ast->plans.empty())
      diags.error(ast->plans.back()->loc, "'" + files.model +
                                              "' holds a plan; hspmc plan takes the model file (the one that "
                                              "defines model " +
                                              ast->plans.back()->model + ")");
    else
      build = elaborateBuild(compilation, files.model, {}, "");
  }
  if (files.sequence <= 0 || files.tokens <= 0 || files.tokens % files.sequence != 0)
    diags.error(ir::Location{files.model, 0, 0, 1}, "--tokens (" + std::to_string(files.tokens) +
                                                        ") must be a positive multiple of --seq (" +
                                                        std::to_string(files.sequence) + ")");
  std::string shapeError;
  if (build && diags.errorCount() == 0) {
    outcome.shape = planner::modelShape(*build->graph, shapeError);
    if (!shapeError.empty())
      diags.error(ir::Location{files.model, 0, 0, 1}, shapeError);
  }
  // The model at the request's sizes (B sequences of S positions): a tensor too large to
  // represent is one error here, not one per finalist.
  if (diags.errorCount() == 0 && build)
    if (const frontend::ModuleDecl *model = compilation.findModule(outcome.shape.model))
      compilation.elaborate(*model, {}, {{"B", files.tokens / files.sequence}, {"S", files.sequence}});
  if (diags.errorCount() > 0 || !cluster || !build) {
    for (const auto &d : sink.diagnostics)
      errors << frontend::renderDiagnostic(d, &sources);
    return false;
  }
  std::error_code outError;
  std::string why = ir::unwritable(files.out);
  if (why.empty() && std::filesystem::exists(files.out, outError) &&
      !std::filesystem::is_regular_file(files.out, outError))
    why = "it is not a regular file"; // the plan is read back to be linted
  if (why.empty() && std::filesystem::path(files.out).extension() == ".toml")
    why = "hspmc reads a .toml file as a cluster or a plan set, not as a plan: name it .hspmd";
  if (why.empty()) {
    std::vector<ir::ReadFile> inputs = {{files.cluster, "the cluster file (--cluster)"},
                                        {files.lengths, "the lengths file (--length-distribution)"}};
    for (const std::string &source : sources.names())
      inputs.push_back({source, "a source file of the model"});
    why = ir::readByTheCommand(files.out, inputs);
  }
  if (!why.empty()) {
    errors << "hspmc plan: error: cannot write " << files.out << ": " << why << "\n";
    return false;
  }
  if (!files.finalistsDir.empty()) {
    why = ir::unwritable(files.finalistsDir + "/finalist.hspmd");
    if (!why.empty()) {
      errors << "hspmc plan: error: --keep-finalists " << files.finalistsDir << ": " << why << "\n";
      return false;
    }
  }
  outcome.cluster = *cluster;
  const planner::PlanRequest request = requestOf(files);

  auto start = Clock::now();
  planner::SearchResult search = planner::searchPlans(outcome.shape, *cluster, request, files.finalists);
  outcome.searchSeconds = since(start);
  outcome.considered = search.considered;
  if (search.planned.empty() && search.symmetric.empty()) {
    errors << "hspmc plan: error: no strategy places " << outcome.shape.model << " on " << cluster->name
           << " (the model's layers or heads do not divide over its devices)\n";
    return false;
  }
  char line[160];
  std::snprintf(line, sizeof line, "searched %d candidates in %.1f ms; simulating the best %zu:", search.considered,
                outcome.searchSeconds * 1e3, search.planned.size() + search.symmetric.size());
  progress << line << std::endl;

  // The finalists, compiled and simulated; the fastest that fits is the plan. When none
  // fits, the next best as many of each family are simulated too (once). Compiling is most
  // of the time (seconds for a large context-parallel plan), so the estimates order the work
  // and leave out what they rule out (FinalistOrder).
  start = Clock::now();
  const std::string name = planName(files.out);
  const std::string modelImport = relativeTo(files.model, files.out),
                    clusterPath = relativeTo(files.cluster, files.out);
  int index = 0;
  std::set<std::string> simulated, plans; // strategies, plan texts
  FinalistOrder order(files.everyFinalist || files.ignoreMemory);
  // A finalist to compile: where its result goes, its plan, its key for the workers.
  struct Work {
    std::vector<SimulatedCandidate> *list;
    size_t at;
    ir::PlanSpec spec;
    size_t key;
    std::string kept; // --keep-finalists: its file
  };
  size_t keys = 0;
  std::string unwrittenKept;    // a finalist's file rewritten with `chunked`, where that failed
  std::vector<Work> overMemory; // left out by the memory estimate, for when nothing fits
  auto prefix = [&](const std::vector<SimulatedCandidate> *list) {
    return list == &outcome.planned ? "  planned   " : "  symmetric ";
  };
  FinalistWorkers workers(files.model, *cluster, files.threads > 0 ? files.threads : finalistThreads());
  // Compiles w = (*round)[i]: the result is what compiling the round in order gives (the
  // decisions are taken in order, on the results before), but while it compiles, idle
  // workers start the next finalists the estimates would compile now; those the decisions
  // then leave out are cancelled.
  // Of those, the ones likely to be compiled (estimated within kLikelyEstimate of the best of
  // their list) go longest first (scheduledLayers), so that the one that takes longest does not
  // start last and leave the other cores idle while it runs; then the rest in order.
  auto compile = [&](Work &w, std::vector<Work> *round, size_t i) {
    SimulatedCandidate &s = (*w.list)[w.at];
    workers.start(w.key, w.spec);
    for (;;) {
      while (round && workers.busy() < workers.size()) {
        const Work *pick = nullptr;
        bool pickLikely = false;
        for (size_t j = i + 1; j < round->size(); ++j) {
          const Work &next = (*round)[j];
          const planner::Candidate &c = (*next.list)[next.at].candidate;
          if (workers.started(next.key) || !order.skip(c).empty())
            continue;
          double bestOfList = c.seconds;
          for (const Work &other : *round)
            if (other.list == next.list)
              bestOfList = std::min(bestOfList, (*other.list)[other.at].candidate.seconds);
          const bool likely = c.seconds <= kLikelyEstimate * bestOfList;
          if (!pick || (likely && !pickLikely) ||
              (likely && pickLikely && scheduledLayers(next.spec) > scheduledLayers(pick->spec))) {
            pick = &next;
            pickLikely = likely;
          }
        }
        if (!pick)
          break;
        workers.start(pick->key, pick->spec);
      }
      if (auto result = workers.waitForChange(w.key)) {
        s.simulated = std::move(*result);
        s.candidate.chunked = s.simulated.chunked;                           // the plan written says so
        if (s.candidate.chunked && !w.kept.empty() && unwrittenKept.empty()) // and so does the finalist kept
          if (const std::string unwritten = ir::writeWhole(
                  w.kept, planner::planText(s.candidate, outcome.shape, request, name, relativeTo(files.model, w.kept),
                                            relativeTo(files.cluster, w.kept)));
              !unwritten.empty())
            unwrittenKept = w.kept + " (" + unwritten + ")";
        break;
      }
    }
    order.observe(s);
    char text[160];
    if (s.simulated.error.empty())
      std::snprintf(text, sizeof text, "estimated %.3f ms, simulated %.3f ms, memory %s%s", s.candidate.seconds * 1e3,
                    s.simulated.seconds * 1e3, planner::memoryText(s.simulated.peakBytes).c_str(),
                    s.simulated.fits ? "" : " (over a device's memory)");
    progress << prefix(w.list) << s.candidate.strategy << (s.candidate.chunked ? " (chunked zero state)" : "") << ": "
             << (s.simulated.error.empty() ? text : s.simulated.error) << std::endl;
  };
  for (bool widened = false;; widened = true) {
    std::vector<Work> round;
    for (const auto *list : {&search.planned, &search.symmetric})
      for (const auto &candidate : *list) {
        if (!simulated.insert(candidate.strategy).second)
          continue;
        SimulatedCandidate s{candidate, {}};
        planner::refineLocalPrograms(s.candidate, outcome.shape, *cluster, request);
        const std::string kind = list == &search.planned ? "planned" : "symmetric";
        auto &into = list == &search.planned ? outcome.planned : outcome.symmetric;
        ir::PlanSpec spec = planner::planSpec(s.candidate, outcome.shape, request, name);
        spec.clusterPath = files.cluster;
        // Strategies can come out as the same plan (a pipeline the batch program leaves
        // unused).
        if (!plans.insert(ir::printPlan(spec)).second) {
          progress << prefix(&into) << s.candidate.strategy << ": the same plan as an earlier finalist" << std::endl;
          continue;
        }
        // --keep-finalists DIR: each finalist is written there, as the plan would be (again
        // once compiled, if it is compiled with `chunked`).
        std::string kept;
        if (!files.finalistsDir.empty()) {
          kept = files.finalistsDir + "/" + name + "_" + std::to_string(++index) + "_" + kind + ".hspmd";
          if (const std::string unwritten = ir::writeWhole(kept, planner::planText(s.candidate, outcome.shape, request,
                                                                                   name, relativeTo(files.model, kept),
                                                                                   relativeTo(files.cluster, kept)));
              !unwritten.empty()) {
            errors << "hspmc plan: error: cannot write " << kept << " (" << unwritten << ")\n";
            return false;
          }
        }
        into.push_back(s);
        round.push_back(Work{&into, into.size() - 1, std::move(spec), keys++, kept});
      }
    // Those the estimate says fit first, fastest first: a fast plan that fits, simulated
    // early, is what lets the estimates rule the others out.
    std::stable_sort(round.begin(), round.end(), [](const Work &a, const Work &b) {
      const planner::Candidate &x = (*a.list)[a.at].candidate, &y = (*b.list)[b.at].candidate;
      return x.fits != y.fits ? x.fits : x.seconds < y.seconds;
    });
    for (size_t i = 0; i < round.size(); ++i) {
      Work &w = round[i];
      SimulatedCandidate &s = (*w.list)[w.at];
      s.simulated.skipped = order.skip(s.candidate);
      if (s.simulated.skipped.empty()) {
        compile(w, &round, i);
        continue;
      }
      workers.cancel(w.key); // if it was started ahead
      progress << prefix(w.list) << s.candidate.strategy << ": " << s.simulated.skipped << std::endl;
      if (s.candidate.memoryRatio > 1) {
        w.key = keys++; // a compile of its own, if it comes to that
        overMemory.push_back(std::move(w));
      }
    }
    const bool fits =
        std::any_of(outcome.planned.begin(), outcome.planned.end(), [](const auto &c) { return c.simulated.fits; }) ||
        std::any_of(outcome.symmetric.begin(), outcome.symmetric.end(), [](const auto &c) { return c.simulated.fits; });
    if (fits || files.finalists == 0)
      break;
    if (widened) {
      // The memory estimate can be wrong: before giving up, those it left out.
      if (!overMemory.empty()) {
        progress << "no finalist fits the devices' memory; compiling those the estimate put over it:" << std::endl;
        for (size_t i = 0; i < overMemory.size(); ++i)
          compile(overMemory[i], &overMemory, i);
      }
      break;
    }
    search = planner::searchPlans(outcome.shape, *cluster, request, 2 * files.finalists);
    progress << "no finalist fits the devices' memory; simulating the next best " << files.finalists
             << " of each family:" << std::endl;
  }
  outcome.simulateSeconds = since(start);
  if (!unwrittenKept.empty()) {
    errors << "hspmc plan: error: cannot write " << unwrittenKept << "\n";
    return false;
  }
  // The fastest finalist whose programs fit the devices' memory.
  auto better = [&](const SimulatedCandidate *best, const SimulatedCandidate &c) {
    if (c.simulated.seconds <= 0 || (!c.simulated.fits && !files.ignoreMemory))
      return best;
    return !best || c.simulated.seconds < best->simulated.seconds ? &c : best;
  };
  for (const auto &c : outcome.symmetric)
    outcome.bestSymmetric = better(outcome.bestSymmetric, c);
  outcome.chosen = outcome.bestSymmetric;
  for (const auto &c : outcome.planned)
    outcome.chosen = better(outcome.chosen, c);
  if (!outcome.chosen) {
    errors << "hspmc plan: error: no finalist fits the devices' memory";
    for (const auto *list : {&outcome.planned, &outcome.symmetric})
      for (const auto &c : *list)
        errors << "\n  " << c.candidate.strategy << ": "
               << (!c.simulated.error.empty()     ? c.simulated.error
                   : !c.simulated.skipped.empty() ? c.simulated.skipped
                                                  : planner::memoryText(c.simulated.peakBytes));
    errors << "\n";
    return false;
  }
  if (const std::string unwritten =
          ir::writeWhole(files.out, planner::planText(outcome.chosen->candidate, outcome.shape, request, name,
                                                      modelImport, clusterPath));
      !unwritten.empty()) {
    errors << "hspmc plan: error: cannot write " << files.out << " (" << unwritten << ")\n";
    return false;
  }
  if (files.ignoreMemory)
    return true; // it may not fit, and then does not lint clean
  // The plan must lint clean. It passed the gate, lint's checks, as compiled from its
  // PlanSpec, and its memory plans fit: what is left to check is that the file written says
  // that same plan. Where it does not (or cannot be read back), the file is linted whole.
  {
    frontend::SourceManager readSources;
    frontend::CollectingSink readSink;
    frontend::DiagnosticEngine readDiags(readSink);
    frontend::Compilation readCompilation(readSources, readDiags);
    auto read = elaborateBuild(readCompilation, files.out, {files.out}, "");
    ir::PlanSpec chosen = planner::planSpec(outcome.chosen->candidate, outcome.shape, request, name);
    std::error_code ec;
    if (read && readDiags.errorCount() == 0 && read->plans.size() == 1 &&
        std::filesystem::equivalent(read->plans[0].clusterPath, files.cluster, ec)) {
      ir::PlanSpec written = read->plans[0];
      written.clusterPath = chosen.clusterPath = "";
      if (ir::printPlan(written) == ir::printPlan(chosen))
        return true;
    }
  }
  frontend::SourceManager lintSources;
  frontend::CollectingSink lintSink;
  frontend::DiagnosticEngine lintDiags(lintSink);
  frontend::Compilation lintCompilation(lintSources, lintDiags);
  lintFile(lintCompilation, files.out, "", "");
  if (lintDiags.errorCount() > 0) {
    for (const auto &d : lintSink.diagnostics)
      errors << frontend::renderDiagnostic(d, &lintSources);
    errors << "hspmc plan: error: the plan written to " << files.out << " does not lint clean\n";
    return false;
  }
  return true;
}

bool readLengths(const std::string &path, int64_t longest, const std::string &longestName,
                 std::vector<int64_t> &lengths, std::ostream &errors) {
  if (std::string why = ir::notAFile(path); !why.empty()) {
    errors << path << ": error: " << why << "\n";
    return false;
  }
  std::ifstream in(path);
  if (!in) {
    errors << path << ": error: cannot read '" << path << "'\n";
    return false;
  }
  // One length per line; blank lines and # comments are skipped.
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string text = line.substr(0, line.find('#'));
    const auto first = text.find_first_not_of(" \t\r");
    if (first == std::string::npos)
      continue;
    const std::string word = text.substr(first, text.find_last_not_of(" \t\r") + 1 - first);
    int64_t length = 0;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), length);
    if (ec != std::errc() || end != word.data() + word.size() || length <= 0) {
      errors << path << ":" << number << ": error: '" << word << "' is not a sequence length\n";
      return false;
    }
    if (longest > 0 && length > longest) {
      errors << path << ":" << number << ": error: length " << length << " exceeds " << longestName << " (" << longest
             << ")\n";
      return false;
    }
    lengths.push_back(length);
  }
  if (lengths.empty()) {
    errors << path << ": error: no sequence lengths\n";
    return false;
  }
  return true;
}

int sharedLayout(const PlanFiles &longest, const PlanFiles &files, const planner::Candidate &longestPlan,
                 const PlanOutcome &outcome, LengthBucket &bucket, std::ostream &progress, std::ostream &errors) {
  const std::optional<planner::Candidate> shared = rebound(
      longestPlan, longest.tokens / longest.sequence, longest.sequence, files.tokens / files.sequence, files.sequence);
  if (!shared) {
    progress << "  the layout of the " << longest.sequence << "-position plan does not divide into " << files.sequence
             << " positions" << std::endl;
    return 0;
  }
  frontend::SourceManager sources;
  frontend::CollectingSink sink;
  frontend::DiagnosticEngine diags(sink);
  frontend::Compilation compilation(sources, diags);
  if (!elaborateBuild(compilation, files.model, {}, ""))
    return 0; // planModel compiled it: not expected
  const planner::PlanRequest request = requestOf(files);
  ir::PlanSpec spec = planner::planSpec(*shared, outcome.shape, request, planName(files.out));
  spec.clusterPath = files.cluster;
  const SimulatedPlan simulated = simulateSpec(compilation, sink, spec, outcome.cluster);
  const double own = outcome.chosen->simulated.seconds;
  char text[240];
  if (!simulated.error.empty())
    std::snprintf(text, sizeof text, "not possible (%s)", simulated.error.c_str());
  else
    std::snprintf(text, sizeof text, "simulated %.3f ms against %.3f ms, memory %s%s", simulated.seconds * 1e3,
                  own * 1e3, planner::memoryText(simulated.peakBytes).c_str(),
                  simulated.fits ? "" : " (over a device's memory)");
  // Kept where it fits and costs at most kSharedLayoutSlack more a step than the bucket's
  // own plan: every change of plan between them then moves nothing, and the set's plans can
  // run within one step (--granularity micro-batch).
  const bool kept = simulated.error.empty() && simulated.fits && simulated.seconds <= own * (1 + kSharedLayoutSlack);
  progress << "  the layout of the " << longest.sequence << "-position plan: " << text
           << (kept ? ": kept, the set's plans share one layout" : ": not kept") << std::endl;
  if (!kept)
    return 0;
  if (const std::string why = ir::writeWhole(
          files.out, planner::planText(*shared, outcome.shape, request, planName(files.out),
                                       relativeTo(files.model, files.out), relativeTo(files.cluster, files.out)));
      !why.empty()) {
    errors << "hspmc plan: error: cannot write " << files.out << " (" << why << ")\n";
    return -1;
  }
  bucket.stepSeconds = simulated.seconds;
  return 1;
}

bool planForLengths(const PlanFiles &files, const std::string &lengthsPath, LengthPlan &plan, std::ostream &progress,
                    std::ostream &errors) {
  std::vector<int64_t> lengths;
  if (!readLengths(lengthsPath, files.sequence, "--seq", lengths, errors))
    return false;
  std::map<int64_t, LengthBucket> buckets;
  for (const int64_t length : lengths) {
    int64_t bucket = files.sequence;
    while (bucket % 2 == 0 && bucket / 2 >= length)
      bucket /= 2;
    LengthBucket &b = buckets[bucket];
    b.positions = bucket;
    ++b.sequences;
    b.tokens += static_cast<double>(length);
    plan.tokens += static_cast<double>(length);
  }
  buckets[files.sequence].positions = files.sequence; // S's plan prices the padded baseline
  const auto out = std::filesystem::path(files.out);
  plan.planSet = (out.parent_path() / (out.stem().string() + ".planset.toml")).string();
  if (std::string why = ir::readByTheCommand(plan.planSet, {{files.model, "the model file"},
                                                            {files.cluster, "the cluster file (--cluster)"},
                                                            {lengthsPath, "the lengths file (--length-distribution)"}});
      !why.empty()) {
    errors << "hspmc plan: error: cannot write the plan set " << plan.planSet << ": " << why << "\n";
    return false;
  }
  // S's plan first: a shorter bucket's plan takes its layout where that costs little.
  std::vector<int64_t> order = {files.sequence};
  for (const auto &[positions, bucket] : buckets)
    if (positions != files.sequence)
      order.push_back(positions);
  std::optional<planner::Candidate> longestPlan;
  for (const int64_t positions : order) {
    LengthBucket &bucket = buckets.at(positions);
    PlanFiles f = files;
    f.lengths = lengthsPath;
    f.sequence = positions;
    f.tokens = std::max(positions, files.tokens / positions * positions);
    f.out =
        positions == files.sequence
            ? files.out
            : (out.parent_path() / (out.stem().string() + "_" + std::to_string(positions) + out.extension().string()))
                  .string();
    progress << "bucket of " << positions << " positions (" << ir::counted(bucket.sequences, "sequence")
             << "):" << std::endl;
    PlanOutcome outcome;
    if (!planModel(f, outcome, progress, errors))
      return false;
    bucket.path = f.out;
    bucket.stepSeconds = outcome.chosen->simulated.seconds;
    bucket.perStep = f.tokens / positions;
    if (positions == files.sequence) {
      longestPlan = outcome.chosen->candidate;
    } else if (longestPlan && sharedLayout(files, f, *longestPlan, outcome, bucket, progress, errors) < 0) {
      return false;
    }
    plan.bucketedSeconds +=
        static_cast<double>(bucket.sequences) / static_cast<double>(bucket.perStep) * bucket.stepSeconds;
  }
  const LengthBucket &longest = buckets.at(files.sequence);
  int64_t all = 0;
  for (const auto &[positions, bucket] : buckets) {
    all += bucket.sequences;
    plan.buckets.push_back(bucket);
  }
  plan.paddedSeconds = static_cast<double>(all) / static_cast<double>(longest.perStep) * longest.stepSeconds;
  // The plan set naming them, beside them (hspmc train SET --documents).
  std::vector<std::string> names;
  for (const LengthBucket &bucket : plan.buckets)
    names.push_back(std::filesystem::path(bucket.path).filename().string());
  if (!planner::writePlanSet(plan.planSet, names,
                             "Written by hspmc plan --length-distribution " + lengthsPath + ": a plan per bucket.")) {
    errors << plan.planSet << ": error: cannot write the plan set\n";
    return false;
  }
  return true;
}

} // namespace hspmd::driver
