// Run.cpp - the training loop over a World of communicators, for threads and MPI (runtime/Run.h).
#include "runtime/Run.h"

#include "ir/Tags.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

extern "C" void openblas_set_num_threads(int);

namespace hspmd::runtime {

void Progress::step(int64_t s, const std::vector<double> &losses) {
  const int64_t every = std::max<int64_t>(1, steps_ / 20);
  if (!out_ || !(s == 0 || (s + 1) % every == 0 || s + 1 == steps_))
    return;
  double sum = 0;
  for (int64_t i = printed_; i <= s; ++i)
    sum += losses[static_cast<size_t>(i)];
  const double loss = sum / static_cast<double>(s + 1 - printed_);
  printed_ = s + 1;
  const double perStep =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() / static_cast<double>(s + 1);
  char text[160];
  std::snprintf(text, sizeof text, "step %lld/%lld  loss %.4f  %.0f tokens/s  ETA %.0f s",
                static_cast<long long>(firstStep_ + s + 1), static_cast<long long>(firstStep_ + steps_), loss,
                static_cast<double>(tokensPerStep_) / perStep, perStep * static_cast<double>(steps_ - s - 1));
  *out_ << text << std::endl;
}

std::string runBanner(const ModelInfo &model, const std::string &plan, size_t devices, bool mpi,
                      const std::string &data) {
  return "training " + model.name + " under plan '" + plan + "' on " + std::to_string(devices) +
         (devices == 1 ? " device" : " devices") + (mpi ? " (MPI, one process each), " : " (threads), ") +
         std::to_string(model.batch) + " x " + std::to_string(model.seq) + " tokens per step, data " + data;
}

void writeLosses(const std::string &path, const std::string &plan, const ModelInfo &model, uint64_t seed,
                 const std::string &optimizer, const std::map<std::string, double> &optimizerArgs,
                 const RunResult &result) {
  const nlohmann::json out = {{"plan", plan},
                              {"model", model.name},
                              {"batch", model.batch},
                              {"seq", model.seq},
                              {"seed", seed},
                              {"optimizer", optimizer},
                              {"optimizer_args", optimizerArgs},
                              {"losses", result.losses},
                              {"seconds", result.seconds}};
  std::ofstream file(path);
  file << out.dump(2) << "\n";
  if (!file)
    throw RunError(path + ": cannot write the losses");
}

void printSummary(std::ostream &out, const std::map<int, DeviceTimes> &times, double seconds) {
  out << "device  busy       communicating  idle\n";
  for (const auto &[device, t] : times) {
    const double idle = std::max(0.0, seconds - t.busy - t.communicating);
    char line[160];
    std::snprintf(line, sizeof line, "%-6d  %5.2f s %3.0f%%  %5.2f s %3.0f%%    %5.2f s %3.0f%%\n", device, t.busy,
                  100 * t.busy / seconds, t.communicating, 100 * t.communicating / seconds, idle, 100 * idle / seconds);
    out << line;
  }
}

void writeTrace(const std::string &path, const std::map<int, std::vector<TraceEvent>> &events) {
  nlohmann::json trace;
  trace["traceEvents"] = nlohmann::json::array();
  for (const auto &[device, list] : events) {
    trace["traceEvents"].push_back({{"name", "thread_name"},
                                    {"ph", "M"},
                                    {"pid", 0},
                                    {"tid", device},
                                    {"args", {{"name", "device " + std::to_string(device)}}}});
    for (const TraceEvent &e : list)
      trace["traceEvents"].push_back({{"name", e.name},
                                      {"cat", e.communication ? "communication" : "compute"},
                                      {"ph", "X"},
                                      {"pid", 0},
                                      {"tid", device},
                                      {"ts", e.start * 1e6},
                                      {"dur", e.seconds * 1e6}});
  }
  std::ofstream out(path);
  if (!out)
    throw RunError(path + ": cannot write the trace");
  out << trace.dump() << "\n";
}

namespace {

// Run-level messages, apart from every program's instructions (ir/Tags.h): each step's loss
// sum, and each device's report to the first device at the end.
constexpr int64_t kLossTag = ir::tags::kLossSum;
constexpr int64_t kReportTag = ir::tags::kReport;

// What a device tells the first device after its last step: its times, its trace and, with
// --save, its state (DeviceExecutor::packState).
struct DeviceReport {
  DeviceTimes times;
  std::vector<TraceEvent> events;
  std::vector<char> state;
};

template <typename T> void put(std::vector<char> &out, const T &value) {
  const char *bytes = reinterpret_cast<const char *>(&value);
  out.insert(out.end(), bytes, bytes + sizeof value);
}
void putBytes(std::vector<char> &out, const char *data, size_t size) {
  put(out, static_cast<uint64_t>(size));
  out.insert(out.end(), data, data + size);
}

std::vector<char> packReport(const DeviceReport &report) {
  std::vector<char> out;
  put(out, report.times.busy);
  put(out, report.times.communicating);
  put(out, static_cast<uint64_t>(report.events.size()));
  for (const TraceEvent &e : report.events) {
    putBytes(out, e.name.data(), e.name.size());
    put(out, e.communication);
    put(out, e.start);
    put(out, e.seconds);
  }
  putBytes(out, report.state.data(), report.state.size());
  return out;
}

class ReportReader {
public:
  explicit ReportReader(const std::vector<char> &bytes) : bytes_(bytes) {}
  template <typename T> T get() {
    T value;
    std::memcpy(&value, take(sizeof value), sizeof value);
    return value;
  }
  std::vector<char> getBytes() {
    const auto size = static_cast<size_t>(get<uint64_t>());
    const char *data = take(size);
    return std::vector<char>(data, data + size);
  }

private:
  const std::vector<char> &bytes_;
  size_t at_ = 0;
  const char *take(size_t size) {
    if (size > bytes_.size() - at_)
      throw RunError("a device's report to the first device is cut short");
    at_ += size;
    return bytes_.data() + at_ - size;
  }
};

DeviceReport unpackReport(const std::vector<char> &bytes) {
  ReportReader in(bytes);
  DeviceReport report;
  report.times.busy = in.get<double>();
  report.times.communicating = in.get<double>();
  const auto events = in.get<uint64_t>();
  for (uint64_t i = 0; i < events; ++i) {
    TraceEvent e;
    const std::vector<char> name = in.getBytes();
    e.name.assign(name.begin(), name.end());
    e.communication = in.get<bool>();
    e.start = in.get<double>();
    e.seconds = in.get<double>();
    report.events.push_back(std::move(e));
  }
  report.state = in.getBytes();
  return report;
}

} // namespace

std::vector<int> RunPlans::devices() const {
  std::set<int> all;
  for (const auto *programs : plans)
    for (const auto &[device, program] : *programs)
      all.insert(device);
  return std::vector<int>(all.begin(), all.end());
}

RunResult train(World &world, const std::map<int, ir::DeviceProgram> &programs, const ModelInfo &model,
                const RunOptions &options) {
  return train(world, RunPlans{{&programs}, {}}, model, options);
}

RunResult train(World &world, const RunPlans &plans, const ModelInfo &model, const RunOptions &options) {
  const std::vector<int> &devices = world.devices();
  const std::vector<int> local = world.localDevices();
  const int first = devices.front(); // gathers the losses, times, trace and checkpoint
  const bool leads = std::find(local.begin(), local.end(), first) != local.end();
  const std::string fingerprint = ParameterStore::fingerprint(model.name, model.params);
  ParameterStore store = options.load.empty() ? ParameterStore::initial(fingerprint, model.params, options.seed)
                                              : ParameterStore::load(options.load, fingerprint);
  const Dataset data = Dataset::load(options.data, model.vocab);
  if (devices.size() > 1)
    openblas_set_num_threads(1); // the devices are the parallelism

  RunResult result;
  result.tokensPerStep = model.batch * model.seq;
  const int64_t firstStep = store.step;
  // A switch outside the run would silently never happen (a checkpoint moves the first step).
  for (const PlanSwitch &change : plans.switches)
    if (change.beforeStep <= firstStep || change.beforeStep > firstStep + options.steps)
      throw RunError("a switch before step " + std::to_string(change.beforeStep) + " is outside this run (steps " +
                     std::to_string(firstStep + 1) + " to " + std::to_string(firstStep + options.steps) +
                     (firstStep > 0 ? ", after the " + std::to_string(firstStep) + " steps of the checkpoint loaded"
                                    : std::string()) +
                     ")");
  const auto start = std::chrono::steady_clock::now();
  const auto since = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  Progress progress(options.progress, firstStep, options.steps, result.tokensPerStep);
  std::map<int, std::vector<TraceEvent>> events;
  std::mutex mutex;
  std::string firstError;
  int64_t failedSwitch = -1;                                      // the switch that failed first
  std::map<int, std::pair<size_t, std::vector<char>>> keptStates; // device -> (plan, packed state)
  // The plan each device ends under: its state is what --save writes.
  const size_t last = plans.switches.empty() ? 0 : plans.switches.back().plan;

  // One device's run: its steps (switching plans where the run does), then its report to the
  // first device, which gathers them.
  auto device = [&](int id) {
    // What the device holds, for a switch that fails: its executor (and, moving in buckets,
    // its old state packed), under which plan; whether it is inside a switch.
    std::unique_ptr<DeviceExecutor> executor;
    const ir::DeviceProgram *holding = nullptr;
    size_t holdingPlan = 0;
    std::vector<char> packedOld;
    bool switching = false, inStep = false;
    size_t next = 0; // the next switch
    try {
      Communicator &comm = world.communicator(id);
      // The device's executor under plan p; none where p does not use the device.
      auto executorFor = [&](size_t p) -> std::unique_ptr<DeviceExecutor> {
        auto program = plans.plans[p]->find(id);
        if (program == plans.plans[p]->end())
          return nullptr;
        auto made = std::make_unique<DeviceExecutor>(program->second, comm);
        if (p < options.generated.size())
          if (auto generated = options.generated[p].find(id); generated != options.generated[p].end())
            made->setPhases(generated->second);
        if (!options.trace.empty())
          made->trace(start);
        return made;
      };
      executor = executorFor(0);
      if (executor)
        executor->load(store);
      holding = executor ? &executor->program() : nullptr;
      DeviceTimes times;
      std::vector<TraceEvent> traced;
      auto retire = [&](DeviceExecutor &done) {
        times.busy += done.times().busy;
        times.communicating += done.times().communicating;
        traced.insert(traced.end(), done.events().begin(), done.events().end());
      };
      double stepStart = since();
      for (int64_t s = 0; s < options.steps; ++s) {
        const int64_t step = firstStep + s + 1;
        for (; next < plans.switches.size() && plans.switches[next].beforeStep == step; ++next) {
          const PlanSwitch &change = plans.switches[next];
          const double moveStart = since();
          // The old state stays whole until every device holds its new state: a switch that
          // fails leaves the run on the old plan. In buckets, the old arena is released
          // first, its state packed out of it.
          switching = true;
          if (change.transfer->byLayer && executor) {
            packedOld = executor->packState();
            retire(*executor);
            executor.reset();
          }
          std::unique_ptr<DeviceExecutor> after = executorFor(change.plan);
          runSwitch(*change.transfer, id, comm, ir::tags::planSwitch(static_cast<int64_t>(next)),
                    holding && change.transfer->byLayer ? HeldState::packed(*holding, packedOld)
                                                        : HeldState::of(executor.get()),
                    after.get());
          comm.barrier(); // every device holds its new state
          if (after)
            after->setStepsTaken(step - 1);
          if (executor)
            retire(*executor);
          executor = std::move(after);
          holding = executor ? &executor->program() : nullptr;
          holdingPlan = change.plan;
          packedOld.clear();
          packedOld.shrink_to_fit();
          switching = false;
          if (id == first) {
            const double moved = since() - moveStart;
            result.switchSeconds.push_back(moved);
            if (options.progress) {
              char text[200];
              std::snprintf(text, sizeof text, ", moved %.2f MiB in %.1f ms (%zu messages; %.2f MiB kept in place)",
                            static_cast<double>(change.transfer->bytesMoved) / (1 << 20), moved * 1e3,
                            change.transfer->messages.size(),
                            static_cast<double>(change.transfer->localBytes) / (1 << 20));
              *options.progress << change.report << text << std::endl;
            }
          }
        }
        inStep = true;
        const double mine = executor ? executor->step(data.batchFor(step - 1, model.batch, model.seq), step) : 0.0;
        inStep = false;
        // Every device has finished the step. The tag is the step's: a device a plan does not
        // use reaches the next step's sum while the others still leave this one's.
        const double loss = sumOverDevices(comm, devices, ir::tags::ofStep(kLossTag, step), mine);
        if (s + 1 == kTracedSteps && executor)
          executor->stopTracing();
        if (id == first) {
          result.losses.push_back(loss);
          result.stepSeconds.push_back(since() - stepStart);
          stepStart = since();
          progress.step(s, result.losses);
        }
      }
      if (executor)
        retire(*executor);
      DeviceReport report{times, traced, {}};
      if (!options.save.empty() && executor)
        report.state = executor->packState();
      if (id != first) {
        comm.send(first, kReportTag, packReport(report));
        return;
      }
      result.seconds = since();
      std::map<int, DeviceReport> reports; // all of them before the store is written: by then every device has loaded
      for (int other : devices)
        reports[other] = other == id ? std::move(report) : unpackReport(comm.recv(other, kReportTag));
      for (const auto &[other, theirs] : reports) {
        result.times[other] = theirs.times;
        events[other] = theirs.events;
        if (!options.save.empty() && plans.plans[last]->count(other))
          unpackState(plans.plans[last]->at(other), theirs.state, store);
      }
    } catch (const std::exception &e) {
      // Between steps (in a switch, or waiting on one) the old plan's state is whole: kept
      // for --save.
      std::vector<char> state;
      const bool between = switching || !inStep;
      if (!options.save.empty() && holding && between) {
        try {
          state = !packedOld.empty() ? std::move(packedOld) : executor->packState();
        } catch (const std::exception &) {
        }
      }
      {
        std::lock_guard lock(mutex);
        if (firstError.empty()) {
          firstError = e.what();
          if (switching)
            failedSwitch = static_cast<int64_t>(next);
        }
        if (!state.empty())
          keptStates[id] = {holdingPlan, std::move(state)};
      }
      world.fail("device " + std::to_string(id) + " failed: " + e.what());
    }
  };
  if (local.size() == 1) {
    device(local.front());
  } else {
    std::vector<std::thread> threads;
    for (int id : local)
      threads.emplace_back(device, id);
    for (auto &t : threads)
      t.join();
  }
  if (!firstError.empty() && failedSwitch >= 0) {
    // A failed switch leaves the run on the plan before it, after the step before it: with
    // --save, every device of that plan has kept its state (one process: threads).
    const PlanSwitch &change = plans.switches[static_cast<size_t>(failedSwitch)];
    const size_t held = failedSwitch == 0 ? 0 : plans.switches[static_cast<size_t>(failedSwitch) - 1].plan;
    std::string outcome =
        "; the run stopped on the plan before it, after step " + std::to_string(change.beforeStep - 1);
    if (!options.save.empty()) {
      bool whole = true;
      for (const auto &[member, program] : *plans.plans[held]) {
        auto kept = keptStates.find(member);
        whole = whole && kept != keptStates.end() && kept->second.first == held;
      }
      if (whole) {
        for (const auto &[member, program] : *plans.plans[held])
          unpackState(program, keptStates.at(member).second, store);
        store.save(options.save);
        outcome += ", its state saved to " + options.save + " (--load it to go on)";
      } else {
        outcome += ", its state not saved (" +
                   std::string(local.size() < devices.size() ? "on MPI the devices cannot gather it after a failure"
                                                             : "a device lost it") +
                   ")";
      }
    }
    throw RunError("the switch before step " + std::to_string(change.beforeStep) + " failed: " + firstError + outcome);
  }
  if (!firstError.empty())
    throw RunError(firstError);
  if (!leads)
    return result; // the first device's process reports
  if (!options.save.empty())
    store.save(options.save);
  if (!options.trace.empty())
    writeTrace(options.trace, events);
  if (options.progress)
    printSummary(*options.progress, result.times, result.seconds);
  return result;
}

RunResult runThreads(const std::map<int, ir::DeviceProgram> &programs, const ModelInfo &model,
                     const RunOptions &options) {
  std::vector<int> devices;
  for (const auto &[device, program] : programs)
    devices.push_back(device);
  ThreadsWorld world(devices, options.timeout);
  return train(world, programs, model, options);
}

RunResult runThreads(const RunPlans &plans, const ModelInfo &model, const RunOptions &options) {
  ThreadsWorld world(plans.devices(), options.timeout);
  return train(world, plans, model, options);
}

} // namespace hspmd::runtime
