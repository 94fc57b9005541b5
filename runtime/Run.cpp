#include "runtime/Run.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

extern "C" void openblas_set_num_threads(int);

namespace hspmd::runtime {

namespace {} // namespace

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

RunResult runThreads(const std::map<int, ir::DeviceProgram> &programs, const ModelInfo &model,
                     const RunOptions &options) {
  const std::string fingerprint = ParameterStore::fingerprint(model.name, model.params);
  ParameterStore store = options.load.empty() ? ParameterStore::initial(fingerprint, model.params, options.seed)
                                              : ParameterStore::load(options.load, fingerprint);
  const Dataset data = Dataset::load(options.data, model.vocab);
  std::vector<int> devices;
  for (const auto &[device, program] : programs)
    devices.push_back(device);
  if (devices.size() > 1)
    openblas_set_num_threads(1); // the devices are the parallelism
  ThreadsWorld world(devices, options.timeout);

  RunResult result;
  result.tokensPerStep = model.batch * model.seq;
  result.losses.assign(static_cast<size_t>(options.steps), 0.0);
  std::mutex mutex;
  std::string firstError;
  std::map<int, std::vector<TraceEvent>> events;
  const int64_t firstStep = store.step;
  const auto start = std::chrono::steady_clock::now();
  Progress progress(options.progress, firstStep, options.steps, result.tokensPerStep);
  auto device = [&](int id) {
    try {
      Communicator &comm = world.communicator(id);
      DeviceExecutor executor(programs.at(id), comm);
      if (auto generated = options.generated.find(id); generated != options.generated.end())
        executor.setPhases(generated->second);
      executor.load(store);
      if (!options.trace.empty())
        executor.trace(start);
      double stepStart = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      for (int64_t s = 0; s < options.steps; ++s) {
        const int64_t step = firstStep + s + 1;
        const Batch batch = data.batchFor(step - 1, model.batch, model.seq);
        const double loss = executor.step(batch, step);
        {
          std::lock_guard lock(mutex);
          result.losses[static_cast<size_t>(s)] += loss;
        }
        comm.barrier();
        if (id == devices.front()) {
          const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          result.stepSeconds.push_back(now - stepStart);
          stepStart = now;
        }
        if (s + 1 == kTracedSteps)
          executor.stopTracing();
        if (id == devices.front())
          progress.step(s, result.losses);
      }
      comm.barrier(); // every device has loaded and stepped before any saves into the store
      std::lock_guard lock(mutex);
      result.times[id] = executor.times();
      events[id] = executor.events();
      if (!options.save.empty())
        executor.save(store);
    } catch (const std::exception &e) {
      {
        std::lock_guard lock(mutex);
        if (firstError.empty())
          firstError = e.what();
      }
      world.fail("device " + std::to_string(id) + " failed: " + e.what());
    }
  };
  std::vector<std::thread> threads;
  for (int id : devices)
    threads.emplace_back(device, id);
  for (auto &t : threads)
    t.join();
  if (!firstError.empty())
    throw RunError(firstError);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!options.save.empty())
    store.save(options.save);
  if (!options.trace.empty())
    writeTrace(options.trace, events);
  if (options.progress)
    printSummary(*options.progress, result.times, result.seconds);
  return result;
}

} // namespace hspmd::runtime
