// Run.cpp - the training loop over a World of communicators, for threads and MPI (runtime/Run.h).
#include "runtime/Run.h"

#include "ir/Files.h"
#include "ir/JsonText.h"
#include "ir/KernelCost.h"
#include "ir/Words.h"
#include "runtime/Documents.h"

#include "runtime/StopReport.h"
#include "runtime/Stragglers.h"

#include "ir/Tags.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

namespace hspmd::runtime {

void Progress::step(int64_t s, const std::vector<double> &losses, bool shown) {
  const int64_t every = std::max<int64_t>(1, steps_ / 20);
  if (!out_ || !(s == 0 || (s + 1) % every == 0 || s + 1 == steps_))
    return;
  if (!shown) { // the mean of the next line starts here all the same
    printed_ = s + 1;
    return;
  }
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

std::string describeSteps(const Documents &documents, const DocumentSteps &steps, const RunPlans &plans,
                          const RunOptions &options, int64_t firstStep) {
  if (options.steps == 0)
    return "documents: " + describeDocuments(documents);
  double pieces = 0, tokens = 0, rows = 0, filled = 0, microbatches = 0, ofMicrobatches = 0;
  int64_t longest = 0, seq = 0;
  std::vector<int64_t> perShape(steps.shapes().size(), 0);
  for (const DocumentShape &shape : steps.shapes())
    seq = std::max(seq, shape.seq);
  for (int64_t s = firstStep; s < firstStep + options.steps; ++s) {
    const DocumentSteps::Step &step = steps.step(s);
    double capacity = 0;
    for (size_t k : step.shapes) {
      capacity += static_cast<double>(steps.shapes()[k].batch * steps.shapes()[k].seq);
      ++perShape[k];
      const auto [run, of] = steps.microbatchesRun(step, k);
      microbatches += static_cast<double>(run);
      ofMicrobatches += static_cast<double>(of);
    }
    pieces += static_cast<double>(step.pieces.size());
    tokens += static_cast<double>(step.tokens);
    rows += static_cast<double>(step.rows);
    filled += static_cast<double>(step.tokens) / capacity;
    longest = std::max(longest, step.longest);
  }
  const double n = static_cast<double>(std::max<int64_t>(options.steps, 1));
  const DocumentShape &first = steps.shapes().front();
  const std::string budget = options.documentOptions.tokens > 0 ? std::to_string(options.documentOptions.tokens)
                             : steps.shapes().size() == 1       ? std::to_string(first.batch * first.seq)
                                                                : "B x S";
  const std::string ofRows = steps.shapes().size() == 1 ? " of " + std::to_string(first.batch) : "";
  char text[300];
  std::snprintf(text, sizeof text,
                "; %s, up to %s tokens per step: a step takes %.1f documents (pieces of at most %lld), %.0f real "
                "tokens in %.1f%s rows (%.0f%% of %s batch), the longest %lld",
                options.documentOptions.layout == DocumentLayout::Packed ? "packed" : "padded", budget.c_str(),
                pieces / n, static_cast<long long>(seq), tokens / n, rows / n, ofRows.c_str(), 100.0 * filled / n,
                ofRows.empty() ? "its" : "the", static_cast<long long>(longest));
  std::string line = "documents: " + describeDocuments(documents) + text;
  if (ofMicrobatches > n) { // "; 2.0 of 4 micro-batches run (balanced)", where a step has several
    std::snprintf(text, sizeof text, "; %.1f of %.0f micro-batches run (%s)", microbatches / n, ofMicrobatches / n,
                  options.documentOptions.schedule == DocumentSchedule::Balanced ? "balanced" : "in corpus order");
    line += text;
  }
  if (!plans.buckets.empty()) {
    line += options.documentOptions.perMicroBatch ? "; steps using each plan:" : "; steps by plan:";
    for (size_t k = 0; k < plans.buckets.size(); ++k) {
      const size_t plan = plans.buckets[k].plan;
      line += (k ? ", " : " ") + (plan < plans.names.size() ? plans.names[plan] : "plan " + std::to_string(plan)) +
              " (" + std::to_string(plans.buckets[k].batch) + " x " + std::to_string(plans.buckets[k].seq) + ") " +
              std::to_string(perShape[k]);
    }
  }
  return line;
}

std::string runBanner(const ModelInfo &model, const std::string &plan, size_t devices, bool mpi,
                      const std::string &data, const RunPlans &plans, const std::string &planSet) {
  bool bf16 = false; // --precision bf16
  for (const auto *programs : plans.plans)
    for (const auto &[device, program] : *programs)
      for (const ir::Buffer &b : program.buffers)
        bf16 = bf16 || b.dtype == ir::DType::BF16;
  return "training " + model.name + (planSet.empty() ? " under plan '" + plan + "'" : " under plan set '" + planSet) +
         " on " + std::to_string(devices) + (devices == 1 ? " device" : " devices") +
         (mpi ? " (MPI, one process each" : " (threads") + (bf16 ? ", bf16), " : "), ") +
         (planSet.empty() ? std::to_string(model.batch) + " x " + std::to_string(model.seq) + " tokens per step, "
                          : std::string()) +
         "data " + data;
}

void writeLosses(const std::string &path, const std::string &plan, const ModelInfo &model, uint64_t seed,
                 const std::string &optimizer, const std::map<std::string, double> &optimizerArgs,
                 const RunResult &result) {
  nlohmann::json out = {{"plan", plan},
                        {"model", model.name},
                        {"batch", model.batch},
                        {"seq", model.seq},
                        {"seed", seed},
                        {"optimizer", optimizer},
                        {"optimizer_args", optimizerArgs},
                        {"losses", result.losses},
                        {"step_seconds", result.stepSeconds}, // per step, from the end of the one before
                        {"seconds", result.seconds}};
  if (!result.stepDocuments.empty()) { // --documents: what each step took
    out["documents"] = result.stepDocuments;
    out["real_tokens"] = result.stepTokens;
  }
  if (const std::string why = ir::writeWhole(path, ir::jsonText(out, 2) + "\n"); !why.empty())
    throw RunError(path + ": cannot write the losses (" + why + ")");
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
  if (const std::string why = ir::writeWhole(path, ir::jsonText(trace) + "\n"); !why.empty())
    throw RunError(path + ": cannot write the trace (" + why + ")");
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

FaultOption parseFaultOption(const std::string &option, const std::vector<int> &devices, int64_t steps) {
  FaultOption out;
  const std::string what = "--fail " + option + ": ";
  const size_t colon = option.find(':'), at = option.find('@');
  const std::string phase = at == std::string::npos ? "forward" : option.substr(at + 1);
  // Digits, their value saturated at INT64_MAX: a number too large for a step or a device is
  // named as beyond the run (before, a device of 2^32 + 1 was taken for device 1).
  auto number = [](const std::string &text, int64_t &value) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
      return false;
    const size_t first = std::min(text.find_first_not_of('0'), text.size() - 1);
    value = text.size() - first > 18 ? INT64_MAX : std::stoll(text.substr(first));
    return true;
  };
  int64_t step = 0, device = 0;
  const std::string deviceText =
      colon == std::string::npos
          ? ""
          : option.substr(colon + 1, at == std::string::npos ? std::string::npos : at - colon - 1);
  if (colon == std::string::npos || !number(option.substr(0, colon), step) || step < 1 || !number(deviceText, device)) {
    out.error = what + "expected STEP:DEVICE[@PHASE], a step from 1, a device and a phase (forward, backward, update, "
                       "switch or recovery)";
    return out;
  }
  out.fault.step = step;
  out.fault.device = device > INT_MAX ? -1 : static_cast<int>(device);
  out.fault.origin = "--fail " + option;
  if (phase == "forward")
    out.fault.phase = FaultPhase::Forward;
  else if (phase == "backward")
    out.fault.phase = FaultPhase::Backward;
  else if (phase == "update")
    out.fault.phase = FaultPhase::Update;
  else if (phase == "switch")
    out.fault.phase = FaultPhase::Switch;
  else if (phase == "recovery")
    out.fault.phase = FaultPhase::Recovery;
  else
    out.error = what + "no phase '" + phase + "' (forward, backward, update, switch or recovery)";
  if (out.error.empty() && step > steps)
    out.error = what + "step " + option.substr(0, colon) + " is beyond the run (--steps " + std::to_string(steps) + ")";
  if (out.error.empty() && !std::binary_search(devices.begin(), devices.end(), out.fault.device)) {
    std::string list;
    for (int d : devices)
      list += (list.empty() ? "" : ", ") + std::to_string(d);
    out.error = what + "no device " + deviceText + " in the run (its devices: " + list + ")";
  }
  return out;
}

std::string unwritableOutputs(const RunOptions &run, const std::string &losses, std::vector<ir::ReadFile> inputs) {
  inputs.push_back({run.data, "the training data (--data)"});
  std::vector<std::pair<const char *, std::string>> written; // the outputs checked so far
  for (const auto &[option, path] : {std::pair<const char *, const std::string *>{"--save", &run.save},
                                     {"--losses", &losses},
                                     {"--trace", &run.trace}})
    if (!path->empty()) {
      std::string why = ir::unwritable(*path);
      std::error_code ec;
      if (why.empty() && path == &run.save && std::filesystem::exists(*path, ec) &&
          !std::filesystem::is_regular_file(*path, ec))
        why = "it is not a regular file, and a checkpoint replaces the file at its path";
      std::vector<ir::ReadFile> read = inputs;
      if (path != &run.save)
        read.push_back({run.load, "the checkpoint loaded (--load)"});
      if (why.empty())
        why = ir::readByTheCommand(*path, read);
      const std::filesystem::path where = std::filesystem::weakly_canonical(std::filesystem::absolute(*path, ec), ec);
      for (const auto &[other, otherPath] : written)
        if (why.empty() && !where.empty() && where == otherPath)
          why = std::string(other) + " writes it too";
      if (!why.empty())
        return "cannot write " + *path + " (" + option + "): " + why;
      written.emplace_back(option, where.string());
    }
  return "";
}

std::string readFaultTrace(const std::string &path, const std::vector<int> &devices, int64_t steps,
                           std::vector<Fault> &faults) {
  if (std::string why = ir::notAFile(path); !why.empty())
    return path + ": " + why;
  std::ifstream in(path);
  if (!in)
    return path + ": cannot read the fault trace";
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string origin = path + ":" + std::to_string(number), where = origin + ": ";
    if (size_t hash = line.find('#'); hash != std::string::npos)
      line.resize(hash);
    std::istringstream words(line);
    std::string step, device, event, phase, extra;
    // A --fail option's error, in the trace's words.
    auto traceError = [&](const std::string &error) {
      return error.find("expected STEP:DEVICE") != std::string::npos
                 ? where + "expected a step from 1 and a device: STEP DEVICE fail [PHASE], STEP DEVICE join or "
                           "STEP DEVICE slow FACTOR"
                 : where + error.substr(error.find(": ") + 2);
    };
    if (!(words >> step))
      continue;
    words >> device >> event >> phase >> extra;
    if (event == "slow") {
      FaultOption parsed = parseFaultOption(step + ":" + device, devices, steps);
      if (!parsed.error.empty())
        return traceError(parsed.error);
      char *end = nullptr;
      const double factor = phase.empty() ? 0 : std::strtod(phase.c_str(), &end);
      if (phase.empty() || *end != '\0' || !std::isfinite(factor) || factor < 1 || factor > 1000 || !extra.empty())
        return where + "expected STEP DEVICE slow FACTOR, a factor from 1 to 1000 (the device's kernels take FACTOR "
                       "times as long; 1: its own speed again)";
      parsed.fault.phase = FaultPhase::Slow;
      parsed.fault.factor = factor;
      parsed.fault.origin = origin;
      faults.push_back(parsed.fault);
      continue;
    }
    if (event == "join" && phase.empty()) {
      FaultOption parsed = parseFaultOption(step + ":" + device, devices, steps);
      if (!parsed.error.empty())
        return traceError(parsed.error);
      // It must have died before, and not come back since.
      int64_t died = 0;
      for (const Fault &f : faults)
        if (f.device == parsed.fault.device && f.step < parsed.fault.step)
          died = f.phase == FaultPhase::Join ? 0 : std::max(died, f.step);
      if (died == 0)
        return where + "device " + device + " joins before step " + step + " but has not died before it";
      parsed.fault.phase = FaultPhase::Join;
      parsed.fault.origin = origin;
      faults.push_back(parsed.fault);
      continue;
    }
    if (event != "fail" || !extra.empty())
      return where + "expected STEP DEVICE fail [PHASE], STEP DEVICE join or STEP DEVICE slow FACTOR";
    FaultOption parsed = parseFaultOption(step + ":" + device + (phase.empty() ? "" : "@" + phase), devices, steps);
    if (!parsed.error.empty())
      return traceError(parsed.error);
    parsed.fault.origin = origin;
    faults.push_back(parsed.fault);
  }
  return "";
}

std::string deathsOfTheDead(const std::vector<Fault> &faults) {
  static const char *const phases[] = {"forward", "backward", "update", "switch", "recovery"};
  std::map<int, std::vector<const Fault *>> byDevice; // deaths and joins
  for (const Fault &f : faults)
    if (f.phase != FaultPhase::Slow)
      byDevice[f.device].push_back(&f);
  for (auto &[device, events] : byDevice) {
    // By step; a join comes back before its step's work, and so before that step's deaths.
    std::stable_sort(events.begin(), events.end(), [](const Fault *a, const Fault *b) {
      if (a->step != b->step)
        return a->step < b->step;
      if ((a->phase == FaultPhase::Join) != (b->phase == FaultPhase::Join))
        return a->phase == FaultPhase::Join;
      return a->phase < b->phase; // forward, backward, update, ...: the step's order
    });
    const Fault *died = nullptr;
    for (const Fault *f : events) {
      if (f->phase == FaultPhase::Join) {
        died = nullptr;
        continue;
      }
      if (died)
        return (f->origin.empty() ? "" : f->origin + ": ") + "device " + std::to_string(device) +
               " would die twice, in step " + std::to_string(died->step) + " (" +
               phases[static_cast<int>(died->phase)] + (died->origin.empty() ? "" : ", " + died->origin) +
               ") and in step " + std::to_string(f->step) + " (" + phases[static_cast<int>(f->phase)] +
               "), without joining in between: a dead device cannot fail";
      died = f;
    }
  }
  return "";
}

bool killsDevices(const std::vector<Fault> &faults) {
  return std::any_of(faults.begin(), faults.end(), [](const Fault &f) { return f.phase != FaultPhase::Slow; });
}

std::vector<int> RunPlans::devices() const {
  std::set<int> all;
  for (const auto *programs : plans)
    for (const auto &[device, program] : *programs)
      all.insert(device);
  return std::vector<int>(all.begin(), all.end());
}

RunResult train(World &world, const std::map<int, ir::DeviceProgram> &programs, const ModelInfo &model,
                const RunOptions &options) {
  return train(world, RunPlans{{&programs}, {}, {}, {}}, model, options);
}

void skipEmptyMicrobatches(Batch &batch, const std::map<int, ir::DeviceProgram> &programs) {
  if (batch.realRows.empty())
    return;
  int most = 0;
  for (const auto &[device, program] : programs)
    most = std::max(most, program.microbatches);
  // Micro-batch 0 always runs: a pipeline of one micro-batch writes its gradients rather
  // than adding to accumulators zeroed at the start of the step.
  batch.skipMicrobatch.assign(static_cast<size_t>(most), 1);
  batch.skipMicrobatch[0] = 0;
  for (const auto &[device, program] : programs)
    for (int k = 0; k < program.microbatches; ++k)
      for (int64_t row = program.batchStart + k * program.microbatchSize;
           row < program.batchStart + (k + 1) * program.microbatchSize; ++row)
        if (row < 0 || row >= static_cast<int64_t>(batch.realRows.size()) || batch.realRows[static_cast<size_t>(row)])
          batch.skipMicrobatch[static_cast<size_t>(k)] = 0;
}

DocumentShape documentShape(const std::map<int, ir::DeviceProgram> &programs, int64_t batch, int64_t seq) {
  DocumentShape shape{batch, seq, {}, 0};
  std::set<std::tuple<int64_t, int64_t, int64_t>> pipelines;
  double attention = 0, other = 0; // FLOPs of the forward and backward passes
  for (const auto &[device, program] : programs) {
    if (program.microbatchSize > 0)
      pipelines.insert({program.batchStart, program.microbatches, program.microbatchSize});
    for (const ir::Instruction &in : program.body)
      if (in.kind == ir::InstrKind::Kernel && in.phase != ir::Phase::Update)
        (in.op == "attention" || in.op == "attention_grad" ? attention : other) += cost::kernelCost(in, program).flops;
  }
  // Every kernel covers the same rows: a token is one of S positions of a row, a pair one
  // of its S(S + 1) / 2 causal pairs.
  if (other > 0 && seq > 0)
    shape.pairCost = attention / other * 2 / static_cast<double>(seq + 1);
  int64_t next = 0; // pipelines in order of their rows, each beginning where the last ends
  for (const auto &[start, microbatches, size] : pipelines) {
    if (start != next) {
      shape.pipelines.clear();
      return shape;
    }
    shape.pipelines.push_back({start, microbatches, size});
    next = start + microbatches * size;
  }
  if (next != batch)
    shape.pipelines.clear();
  return shape;
}

RunResult train(World &world, const RunPlans &given, const ModelInfo &model, const RunOptions &options) {
  RunPlans plans = given; // a plan set adds the switches its steps make
  const std::vector<int> &devices = world.devices();
  const std::vector<int> local = world.localDevices();
  const std::vector<int> planDevices = plans.devices(); // the world may hold more (MPI's spare processes)
  const std::string fingerprint = ParameterStore::fingerprint(model.name, model.params);
  ParameterStore store = options.load.empty() ? ParameterStore::initial(fingerprint, model.params, options.seed)
                                              : ParameterStore::load(options.load, fingerprint);
  // Step numbers are int64: the run's last must be one (a checkpoint's step plus --steps
  // overflowed, and the progress line counted to a negative step).
  if (options.steps > std::numeric_limits<int64_t>::max() - store.step)
    throw RunError("--steps " + std::to_string(options.steps) + " after the checkpoint's step " +
                   std::to_string(store.step) + " passes the largest step number (" +
                   std::to_string(std::numeric_limits<int64_t>::max()) + ")");
  // The data: a token stream cut into sequences, or documents laid into each step's batch.
  std::optional<Dataset> stream;
  std::optional<Documents> documents;
  std::optional<DocumentSteps> documentSteps;
  if (!plans.buckets.empty() && !options.documents)
    throw RunError("a plan set trains on documents: add --documents (docs/mixed-lengths.md)");
  if (options.documents) {
    if (options.steps > kMostDocumentSteps - store.step)
      throw RunError("--documents lays out the documents of every step from the first before the run starts: at "
                     "most " +
                     std::to_string(kMostDocumentSteps) + " steps in all (this run ends at step " +
                     std::to_string(store.step + options.steps) + ")");
    documents = Documents::load(options.data, model.vocab, options.documentOptions.eod);
    std::vector<DocumentShape> shapes;
    for (const RunPlans::Bucket &bucket : plans.buckets)
      shapes.push_back(documentShape(*plans.plans[bucket.plan], bucket.batch, bucket.seq));
    if (shapes.empty())
      shapes.push_back(documentShape(*plans.plans.front(), model.batch, model.seq));
    documentSteps.emplace(*documents, shapes, options.documentOptions);
    documentSteps->prepare(store.step + options.steps);
  } else {
    stream = Dataset::load(options.data, model.vocab);
  }
  auto batchOf = [&](int64_t step) { // from 1
    return documentSteps ? documentSteps->batchFor(step - 1) : stream->batchFor(step - 1, model.batch, model.seq);
  };
  // One pool of threads for the kernels, the matmuls included (runtime/kernels/Parallel.h):
  // the devices of the plan share the cores.
  kernels::quietBlas();
  kernels::setKernelThreads(options.kernelThreads > 0 ? options.kernelThreads
                                                      : std::max(1, kernels::processThreads() /
                                                                        std::max(1, static_cast<int>(devices.size()))));

  RunResult result;
  result.tokensPerStep = model.batch * model.seq;
  const int64_t firstStep = store.step;
  if (documentSteps) { // real tokens, in the mean over the run's steps
    int64_t real = 0;
    for (int64_t s = firstStep; s < firstStep + options.steps; ++s) {
      real += documentSteps->step(s).tokens;
      result.stepDocuments.push_back(static_cast<int64_t>(documentSteps->step(s).pieces.size()));
      result.stepTokens.push_back(documentSteps->step(s).tokens);
    }
    result.tokensPerStep = options.steps > 0 ? real / options.steps : 0;
    if (options.progress && !local.empty() && local.front() == devices.front())
      *options.progress << describeSteps(*documents, *documentSteps, plans, options, firstStep) << std::endl;
  }
  // A switch outside the run would silently never happen (a checkpoint moves the first step).
  for (const PlanSwitch &change : plans.switches)
    if (change.beforeStep <= firstStep || change.beforeStep > firstStep + options.steps)
      throw RunError("a switch before step " + std::to_string(change.beforeStep) + " is outside this run (steps " +
                     std::to_string(firstStep + 1) + " to " + std::to_string(firstStep + options.steps) +
                     (firstStep > 0 ? ", after the " + ir::counted(firstStep, "step") + " of the checkpoint loaded"
                                    : std::string()) +
                     ")");
  // So would a failure outside it, or at a switch the run does not make.
  for (const Fault &f : options.faults) {
    const std::string what = (f.origin.empty() ? "" : f.origin + ": ") + "a failure of device " +
                             std::to_string(f.device) + " at step " + std::to_string(f.step);
    if (f.step <= firstStep || f.step > firstStep + options.steps)
      throw RunError(what + " is outside this run (steps " + std::to_string(firstStep + 1) + " to " +
                     std::to_string(firstStep + options.steps) + ")");
    if (f.phase == FaultPhase::Switch &&
        std::none_of(plans.switches.begin(), plans.switches.end(),
                     [&](const PlanSwitch &change) { return change.beforeStep == f.step; }))
      throw RunError(what + " is at a switch, but the run switches plans before no such step");
    // ... or in a recovery no other device's failure in that step starts.
    if (f.phase == FaultPhase::Recovery &&
        (plans.recoveries.empty() || std::none_of(options.faults.begin(), options.faults.end(), [&](const Fault &o) {
           return o.step == f.step && o.device != f.device && o.phase != FaultPhase::Join &&
                  o.phase != FaultPhase::Recovery && o.phase != FaultPhase::Slow;
         })))
      throw RunError(what + " is in a recovery, but no other device fails in that step" +
                     (plans.recoveries.empty() ? " and the run has no --recover plan" : ""));
  }
  const auto start = std::chrono::steady_clock::now();
  const auto since = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  Progress progress(options.progress, firstStep, options.steps, result.tokensPerStep);
  // A plan set: each step runs under the plan of its documents' bucket, the run switching
  // (the state moved as --switch moves it) where the next step's plan is another.
  size_t initialPlan = 0;
  std::map<std::pair<size_t, size_t>, std::unique_ptr<StateSwitch>> bucketSwitches;
  const bool perMicroBatch = !plans.buckets.empty() && options.documentOptions.perMicroBatch;
  if (perMicroBatch && options.steps > 0) {
    // Several plans within a step: the last of a step's plans updates (and holds the state).
    initialPlan = plans.buckets[documentSteps->step(firstStep).shapes.back()].plan;
  } else if (!plans.buckets.empty() && options.steps > 0) {
    auto planOfStep = [&](int64_t s) { return plans.buckets[documentSteps->step(s).shape].plan; };
    // "step 3 under plan 'long' (2 documents, the longest 190 of 256 positions)"
    auto underPlan = [&](int64_t s) {
      const DocumentSteps::Step &step = documentSteps->step(s);
      const size_t plan = planOfStep(s);
      const std::string name = plan < plans.names.size() ? plans.names[plan] : "plan " + std::to_string(plan);
      char text[300];
      std::snprintf(text, sizeof text, "step %lld under plan '%s' (%zu document%s, the longest %lld of %lld positions)",
                    static_cast<long long>(s + 1), name.c_str(), step.pieces.size(), step.pieces.size() == 1 ? "" : "s",
                    static_cast<long long>(step.longest), static_cast<long long>(plans.buckets[step.shape].seq));
      return std::string(text);
    };
    size_t current = initialPlan = planOfStep(firstStep);
    if (options.progress && !local.empty() && local.front() == devices.front())
      *options.progress << underPlan(firstStep) << std::endl;
    for (int64_t s = firstStep + 1; s < firstStep + options.steps; ++s) {
      const size_t next = planOfStep(s);
      if (next == current)
        continue;
      auto &transfer = bucketSwitches[{current, next}];
      if (!transfer)
        transfer = std::make_unique<StateSwitch>(planSwitch(*plans.plans[current], *plans.plans[next]));
      char text[100];
      std::snprintf(text, sizeof text, ": transfer planned in %.1f ms", transfer->planSeconds * 1e3);
      plans.switches.push_back(PlanSwitch{s + 1, next, transfer.get(), underPlan(s) + text});
      current = next;
    }
  }
  // The run's plans: those it was given, then those made for the live devices (--recover
  // auto), appended as agreements need them (under `plansMutex`: the devices read them).
  std::mutex plansMutex;
  std::vector<const std::map<int, ir::DeviceProgram> *> allPlans = plans.plans;
  std::vector<std::string> allNames = plans.names;
  allNames.resize(allPlans.size());
  std::map<int64_t, std::pair<size_t, Replanned>> replanned; // by agreement: the plan made
  auto planAt = [&](size_t p) {
    std::lock_guard lock(plansMutex);
    return allPlans[p];
  };
  auto nameOf = [&](size_t p) {
    std::lock_guard lock(plansMutex);
    return !allNames[p].empty() ? allNames[p] : "plan " + std::to_string(p);
  };
  // The plan made for the live devices after agreement k (once; the others wait for it).
  auto replanAfter = [&](int64_t k, const std::vector<int> &live) {
    std::lock_guard lock(plansMutex);
    if (auto made = replanned.find(k); made != replanned.end())
      return made->second;
    Replanned made = plans.replan ? plans.replan(live) : Replanned{nullptr, "", "", "the run cannot plan anew", 0, 0};
    size_t index = allPlans.size();
    if (made.programs) {
      allPlans.push_back(made.programs);
      allNames.push_back(made.name);
    }
    return replanned[k] = {index, made};
  };
  // --stragglers: the plan made after step k for the devices' measured speeds (once).
  std::map<int64_t, std::pair<size_t, Replanned>> reSped;
  auto replanForSpeedsAfter = [&](int64_t step, const std::vector<int> &live, const std::map<int, double> &speeds,
                                  size_t current) {
    std::lock_guard lock(plansMutex);
    if (auto made = reSped.find(step); made != reSped.end())
      return made->second;
    Replanned made = plans.replanForSpeeds(live, speeds, *allPlans[current]);
    size_t index = allPlans.size();
    if (made.programs) {
      allPlans.push_back(made.programs);
      allNames.push_back(made.name);
    }
    return reSped[step] = {index, made};
  };
  std::map<int, std::vector<TraceEvent>> events;
  std::mutex mutex;
  std::string firstError;
  int64_t failedSwitch = -1;                                      // the switch that failed first
  std::map<int, std::pair<size_t, std::vector<char>>> keptStates; // device -> (plan, packed state)
  std::vector<std::string> deaths;                                // what each injected death said
  int finished = 0;                                               // devices that reached the end of the run
  size_t last = initialPlan;                                      // the plan the run ends under: --save writes it

  // One device's run: its steps (switching plans where the run does, going on without a
  // device that died), then its report to the first live device, which gathers them.
  auto device = [&](int id) {
    // What the device holds, for a switch that fails: its executor (and, moving in buckets,
    // its old state packed), under which plan; whether it is inside a switch or a step.
    std::unique_ptr<DeviceExecutor> executor;
    const ir::DeviceProgram *holding = nullptr;
    size_t holdingPlan = initialPlan;
    std::vector<char> packedOld;
    bool switching = false, inStep = false;
    size_t next = 0; // the next switch
    std::vector<int> live = devices;
    double slowFactor = 1; // a `slow` event of the fault trace: its kernels take this many times as long
    StragglerWatch watch;  // --stragglers
    const DeviceExecutor *measured = nullptr;
    double busyBefore = 0; // the measured executor's kernel time at the end of the last step
    double moveRate = 0;   // bytes per second of this run's last move (the first device's)
    try {
      Communicator &comm = world.communicator(id);
      // The device's executor under plan p; none where p does not use the device.
      auto executorFor = [&](size_t p) -> std::unique_ptr<DeviceExecutor> {
        const std::map<int, ir::DeviceProgram> *programs = planAt(p);
        auto program = programs->find(id);
        if (program == programs->end())
          return nullptr;
        auto made = std::make_unique<DeviceExecutor>(program->second, comm);
        if (options.offload)
          made->offloadTo(options.offload(OffloadSite{program->second, *programs, comm, options.timeout}));
        made->slowDown(slowFactor);
        if (options.stragglers)
          made->measureCpu();
        if (p < options.generated.size())
          if (auto generated = options.generated[p].find(id); generated != options.generated[p].end())
            made->setPhases(generated->second);
        if (!options.trace.empty())
          made->trace(start);
        return made;
      };
      executor = executorFor(initialPlan);
      if (executor)
        executor->load(store);
      holding = executor ? &executor->program() : nullptr;
      int64_t updated = firstStep; // the last step whose update this device finished
      DeviceTimes times;
      std::vector<TraceEvent> traced;
      auto retire = [&](DeviceExecutor &done) {
        times.busy += done.times().busy;
        times.communicating += done.times().communicating;
        traced.insert(traced.end(), done.events().begin(), done.events().end());
      };
      // What the device holds now, for a move: its executor, or its state packed out of it.
      auto held = [&] {
        return !packedOld.empty() && holding ? HeldState::packed(*holding, packedOld) : HeldState::of(executor.get());
      };
      // Moves the state to plan `target` by `transfer` and trains on under it.
      auto moveTo = [&](size_t target, const StateSwitch &transfer, int64_t tag) {
        std::unique_ptr<DeviceExecutor> after = executorFor(target);
        runSwitch(transfer, id, comm, tag, held(), after.get());
        comm.barrier(); // every device holds its new state
        if (after)
          after->setStepsTaken(updated);
        if (executor)
          retire(*executor);
        executor = std::move(after);
        holding = executor ? &executor->program() : nullptr;
        holdingPlan = target;
        packedOld.clear();
        packedOld.shrink_to_fit();
        watch.restart(); // a new plan: new baselines
        measured = nullptr;
      };
      // The batch of `step` under plan p: its micro-batches of padding only skipped.
      auto batchUnder = [&](int64_t step, size_t p) {
        Batch batch = batchOf(step);
        skipEmptyMicrobatches(batch, *planAt(p));
        return batch;
      };
      // Per micro-batch (a plan set, --granularity micro-batch): the step's batch of each plan
      // runs under that plan's executor (its parameters copied from the holder's), their
      // gradients added into the executor of the step's last plan, which then holds the state
      // and updates. Every plan's executor is kept; each runs with tags of its own.
      std::map<size_t, std::unique_ptr<DeviceExecutor>> parked; // plan -> its executor, not holding
      auto executorOf = [&](size_t p) -> DeviceExecutor * {
        auto &made = parked[p];
        if (!made) {
          made = executorFor(p);
          if (made)
            made->setTagOffset(static_cast<int64_t>(p + 1) << 36);
        }
        return made.get();
      };
      auto microBatchPlans = [&](int64_t step) {
        auto batches = documentSteps->batchesFor(step - 1);
        for (auto &[shape, batch] : batches)
          skipEmptyMicrobatches(batch, *planAt(plans.buckets[shape].plan));
        const size_t updating = plans.buckets[batches.back().first].plan;
        if (updating != holdingPlan) { // the updating plan's executor takes the state over
          DeviceExecutor *taking = executorOf(updating);
          if (taking && executor)
            taking->copyStateFrom(*executor, false);
          std::swap(parked[holdingPlan], executor);
          executor = std::move(parked[updating]);
          holdingPlan = updating;
          holding = executor ? &executor->program() : nullptr;
          watch.restart();
          measured = nullptr;
        }
        if (executor)
          executor->setTagOffset(static_cast<int64_t>(updating + 1) << 36);
        double loss = 0;
        std::vector<DeviceExecutor *> others;
        for (const auto &[shape, batch] : batches) {
          const size_t p = plans.buckets[shape].plan;
          DeviceExecutor *runner = p == holdingPlan ? executor.get() : executorOf(p);
          if (!runner)
            continue;
          if (runner != executor.get()) {
            if (executor)
              runner->copyStateFrom(*executor, true);
            others.push_back(runner);
          }
          loss += runner->forwardBackward(batch, step);
        }
        for (DeviceExecutor *other : others)
          if (executor)
            executor->addGradientsFrom(*other);
        return loss;
      };
      // After a death: the survivors agree, then go on under the first recovery plan whose
      // devices are all alive, the state moved from their copies.
      // `why`: how the device noticed (a death: what the death said is used instead), or a
      // join. Returns the step every survivor's state is at.
      auto faultAt = [&](int64_t step, FaultPhase phase) {
        return std::any_of(options.faults.begin(), options.faults.end(),
                           [&](const Fault &f) { return f.step == step && f.device == id && f.phase == phase; });
      };
      size_t deathsSeen = 0; // of `deaths`, those told by a recovery already
      auto recover = [&](std::string why, bool death = true,
                         std::optional<std::pair<size_t, Replanned>> chosen = std::nullopt) -> int64_t {
        if (death) {
          std::lock_guard lock(mutex);
          if (!deaths.empty()) // what the death said, rather than how a survivor noticed it
            why = deaths.back();
        }
        if (plans.recoveries.empty() && !chosen)
          throw RunError(why + "; the run stops (no --recover plan to go on with)");
        // After a death the plan's communication is given up (the NCCL backend aborts its
        // communicators: their calls with the dead device would never end, nor would their
        // finalization); its state stays in the offload's memory to be moved, and the recovery
        // plan makes communicators of its own among the survivors.
        if (death && executor)
          executor->abandon();
        const double began = since();
        live = world.agree(id);
        const double agreed = since();
        size_t told = deathsSeen;
        if (death) { // every death since the last recovery (each dead device said so before it was marked)
          std::lock_guard lock(mutex);
          std::vector<std::string> fresh(deaths.begin() + static_cast<std::ptrdiff_t>(deathsSeen), deaths.end());
          std::sort(fresh.begin(), fresh.end()); // by device, whichever died first
          std::string all;
          for (const std::string &text : fresh)
            all += (all.empty() ? "" : "; ") + text;
          told = deaths.size();
          if (!all.empty())
            why = all;
        }
        // Every survivor that holds state must hold it at the same step: an update that one
        // finished and another did not (or did in part) cannot be repaired.
        const int64_t k = world.agreements(); // the same on every survivor, whoever missed earlier ones
        const bool holds = holding != nullptr;
        const double holders = sumOverDevices(comm, live, ir::tags::recoveryCheck(k, 0), holds ? 1 : 0);
        const double at =
            sumOverDevices(comm, live, ir::tags::recoveryCheck(k, 1), holds ? static_cast<double>(updated) : 0.0);
        const double planSum =
            sumOverDevices(comm, live, ir::tags::recoveryCheck(k, 3), holds ? static_cast<double>(holdingPlan) : 0.0);
        const bool mine =
            holds && ((executor && executor->partlyUpdated()) || static_cast<double>(updated) * holders != at ||
                      static_cast<double>(holdingPlan) * holders != planSum);
        const double torn = sumOverDevices(comm, live, ir::tags::recoveryCheck(k, 2), mine ? 1 : 0);
        if (torn > 0 || holders == 0)
          throw RunError(why + "; the survivors' states are not at one step (an update had begun when it died): "
                               "the run stops");
        const int64_t goOn = static_cast<int64_t>(std::llround(at / holders)); // the step every state is at
        updated = goOn;
        const auto from = static_cast<size_t>(std::llround(planSum / holders)); // the plan they hold it under
        std::optional<size_t> target;
        Replanned made; // --recover auto
        if (chosen) {
          target = chosen->first;
          made = chosen->second;
        }
        for (size_t p : chosen ? std::vector<size_t>{} : plans.recoveries) {
          if (p == RunPlans::kReplan) {
            auto [index, replan] = replanAfter(k, live);
            if (!replan.programs)
              throw RunError(why + "; --recover auto: " + replan.error);
            target = index;
            made = replan;
            break;
          }
          bool alive = true;
          for (const auto &[d, program] : *planAt(p))
            alive = alive && std::binary_search(live.begin(), live.end(), d);
          if (alive) {
            target = p;
            break;
          }
        }
        std::string who; // the run's devices (not MPI's spare processes)
        for (int d : live)
          if (std::binary_search(planDevices.begin(), planDevices.end(), d))
            who += (who.empty() ? "" : ", ") + std::to_string(d);
        if (!target)
          throw RunError(why + "; no --recover plan uses only the live devices (" + who + ")");
        std::map<int, ir::DeviceProgram> survivors;
        for (const auto &[d, program] : *planAt(from))
          if (std::binary_search(live.begin(), live.end(), d))
            survivors.emplace(d, program);
        const double moveStart = since();
        StateSwitch transfer;
        try {
          transfer = planSwitch(survivors, *planAt(*target));
        } catch (const SwitchError &e) {
          const std::string lost =
              why + "; the survivors (" + who + ") cannot rebuild the state, every copy of a part died: " + e.what();
          if (options.saveEvery == 0 || options.save.empty())
            throw RunError(lost + " (with --save FILE --save-every K the run would resume from its last checkpoint)");
          // Resume from the last checkpoint this run wrote: every survivor loads it under the
          // recovery plan, and the steps after it are run again.
          ParameterStore saved;
          try {
            saved = ParameterStore::load(options.save, fingerprint);
          } catch (const std::exception &missing) {
            throw RunError(lost + "; no checkpoint to resume from: " + missing.what());
          }
          if (saved.step <= firstStep || saved.step > goOn)
            throw RunError(lost + "; no checkpoint of this run to resume from (" + options.save + " is at step " +
                           std::to_string(saved.step) + ")");
          std::unique_ptr<DeviceExecutor> after = executorFor(*target);
          if (after) {
            after->load(saved);
            after->setStepsTaken(saved.step);
          }
          if (executor)
            retire(*executor);
          executor = std::move(after);
          holding = executor ? &executor->program() : nullptr;
          holdingPlan = *target;
          packedOld.clear();
          updated = saved.step;
          next = plans.switches.size();
          if (id == live.front() && options.progress) {
            std::lock_guard lock(mutex);
            char agreement[64];
            std::snprintf(agreement, sizeof agreement, " agreed in %.1f ms", (agreed - began) * 1e3);
            *options.progress << why << "; devices " << who << agreement << lost.substr(why.size())
                              << "; resumed from the checkpoint of step " << saved.step << " (" << options.save
                              << ") under plan '" << nameOf(*target) << "': " << goOn - saved.step
                              << (goOn - saved.step == 1 ? " step" : " steps") << " lost; step " << saved.step + 1
                              << " is run again" << std::endl;
          }
          deathsSeen = told;
          return saved.step;
        }
        if (faultAt(goOn + 1, FaultPhase::Recovery))
          throw DeviceDeath("device " + std::to_string(id) +
                            " died at the start of the move of the recovery before step " + std::to_string(goOn + 1));
        moveTo(*target, transfer, ir::tags::planSwitch(static_cast<int64_t>(plans.switches.size()) + k));
        deathsSeen = told;
        const size_t dropped = next;
        next = plans.switches.size();
        if (id == live.front()) {
          result.recoveries.push_back({goOn + 1, agreed - began, transfer.planSeconds,
                                       since() - moveStart - transfer.planSeconds, made.planSeconds,
                                       made.compileSeconds});
          if (result.recoveries.back().moveSeconds > 0 && transfer.bytesMoved > 0)
            moveRate = static_cast<double>(transfer.bytesMoved) / result.recoveries.back().moveSeconds;
          if (options.progress) {
            std::lock_guard lock(mutex);
            std::string planned; // --recover auto: how the plan came
            if (made.programs) {
              char text[120];
              std::snprintf(text, sizeof text,
                            " (planned for them in %.0f ms, compiled in %.0f ms: ", made.planSeconds * 1e3,
                            made.compileSeconds * 1e3);
              planned = text + made.path + ")";
            }
            char text[1000];
            std::snprintf(text, sizeof text,
                          "%s; devices %s agreed in %.1f ms; %s plan '%s'%s: transfer planned in %.1f ms, "
                          "moved %.2f MiB in %.1f ms (%zu messages; %.2f MiB kept in place); %s",
                          why.c_str(), who.c_str(), (agreed - began) * 1e3, death ? "recovered onto" : "went on under",
                          nameOf(*target).c_str(), planned.c_str(), transfer.planSeconds * 1e3,
                          static_cast<double>(transfer.bytesMoved) / (1 << 20),
                          result.recoveries.back().moveSeconds * 1e3, transfer.messages.size(),
                          static_cast<double>(transfer.localBytes) / (1 << 20),
                          goOn >= firstStep + options.steps
                              ? "the run had finished its steps"
                              : ("step " + std::to_string(goOn + 1) + (death ? " is run again" : " runs")).c_str());
            *options.progress << text << std::endl;
            if (dropped < plans.switches.size())
              *options.progress << "the run's switches from step " << plans.switches[dropped].beforeStep
                                << " on are dropped: it recovered onto another plan" << std::endl;
          }
        }
        return goOn;
      };
      // --save-every: every device's state to the first live one, which writes the checkpoint.
      auto saveCheckpoint = [&](int64_t step) {
        const int64_t tag = ir::tags::ofStep(ir::tags::kCheckpoint, step);
        std::vector<char> state = executor ? executor->packState() : std::vector<char>{};
        const int leader = live.front();
        if (id != leader) {
          comm.send(leader, tag, std::move(state));
          return;
        }
        const std::map<int, ir::DeviceProgram> *programs = planAt(holdingPlan);
        for (int other : live) {
          const std::vector<char> theirs = other == id ? std::move(state) : comm.recv(other, tag);
          if (!theirs.empty() && programs->count(other))
            unpackState(programs->at(other), theirs, store);
        }
        store.save(options.save);
        StopReport::saved(options.save, step);
      };
      // recover(), again as long as a further death interrupts it (this device's own death
      // there is a DeviceDeath, thrown on).
      auto recoverAfter = [&](std::string why) -> int64_t {
        for (size_t attempt = 0;; ++attempt) {
          try {
            return recover(why);
          } catch (const CommError &again) {
            if (!world.alive(id) || attempt >= devices.size())
              throw;
            why += std::string("; ") + again.what(); // both, where the deaths are not known by name
          }
        }
      };
      // --stragglers, after each step: every device's kernel time to all; each device's watch
      // reaches the same verdict. For a straggler the run plans anew at the measured speeds,
      // and the first device decides (for all) whether the predicted gain over the steps left
      // exceeds the switch's cost: planning and compiling as measured, the move priced at the
      // rate of this run's last move. Returns the step the state is at after a switch.
      auto watchStragglers = [&](int64_t step, int64_t s) -> std::optional<int64_t> {
        const double busy = executor ? executor->kernelCpuSeconds() : 0;
        const double mine = executor.get() == measured ? busy - busyBefore : busy;
        measured = executor.get();
        busyBefore = busy;
        const std::vector<double> all =
            gatherOverDevices(comm, live, ir::tags::ofStep(ir::tags::kComputeTimes, step), executor ? mine : -1);
        std::map<int, double> seconds;
        for (size_t i = 0; i < live.size(); ++i)
          if (all[i] >= 0)
            seconds[live[i]] = all[i];
        const StragglerWatch::Verdict verdict = watch.observe(step, seconds);
        const bool leader = id == live.front();
        auto stepsText = [](const StragglerWatch::Streak &streak) {
          return streak.first == streak.last
                     ? "in step " + std::to_string(streak.first) + " only"
                     : "in steps " + std::to_string(streak.first) + "-" + std::to_string(streak.last);
        };
        if (leader && options.progress)
          for (const StragglerWatch::Streak &flicker : verdict.flickers) {
            char text[300];
            std::snprintf(text, sizeof text,
                          "device %d ran %.1fx its usual compute time %s: no re-plan (that takes %d steps in a row)",
                          flicker.device, flicker.ratio, stepsText(flicker).c_str(),
                          StragglerWatch::Options{}.persistence);
            std::lock_guard lock(mutex);
            *options.progress << text << std::endl;
          }
        if (!verdict.straggler)
          return std::nullopt;
        const StragglerWatch::Streak straggler = *verdict.straggler;
        const int64_t left = options.steps - s - 1;
        std::map<int, double> speeds = watch.speeds();
        speeds[straggler.device] = watch.speed(straggler.device) / straggler.ratio;
        std::pair<size_t, Replanned> made{0, Replanned{}};
        if (left > 0)
          made = replanForSpeedsAfter(step, live, speeds, holdingPlan);
        double vote = 0;
        char text[1000];
        std::snprintf(text, sizeof text, "device %d ran %.1fx its usual compute time %s (speed %.2f of its type's)",
                      straggler.device, straggler.ratio, stepsText(straggler).c_str(), speeds[straggler.device]);
        std::string line = text;
        if (leader && left == 0) {
          line += ": the run has no step left to gain";
        } else if (leader && !made.second.programs) {
          line +=
              "; no plan for its speed: " + made.second.error + "; the run stays on plan '" + nameOf(holdingPlan) + "'";
        } else if (leader) {
          // The streak's steps as they ran, and the simulator's ratio of the new plan to this one.
          double now = 0;
          int counted = 0;
          for (int64_t k = straggler.first; k <= straggler.last; ++k)
            if (k - firstStep - 1 >= 0 && k - firstStep - 1 < static_cast<int64_t>(result.stepSeconds.size())) {
              now += result.stepSeconds[static_cast<size_t>(k - firstStep - 1)];
              ++counted;
            }
          now = counted ? now / counted : 0;
          const Replanned &r = made.second;
          const double predicted = r.predictedNowSeconds > 0 ? now * r.predictedSeconds / r.predictedNowSeconds : now;
          const StateSwitch transfer = planSwitch(*planAt(holdingPlan), *r.programs);
          const double rate = moveRate > 0 ? moveRate : double{1 << 30};
          const double move = static_cast<double>(transfer.bytesMoved) / rate;
          const double cost = r.planSeconds + r.compileSeconds + move;
          const double gain = (now - predicted) * static_cast<double>(left);
          vote = gain > cost ? 1 : 0;
          std::snprintf(text, sizeof text,
                        "; planned for its speed in %.0f ms, compiled in %.0f ms: plan '%s' (%s) is predicted at "
                        "%.1f ms a step against %.1f ms now; over the %lld steps left it would save %.2f s %s the "
                        "switch's %.2f s (%.2f MiB to move at %.2f GiB/s%s)",
                        r.planSeconds * 1e3, r.compileSeconds * 1e3, r.name.c_str(), r.path.c_str(), predicted * 1e3,
                        now * 1e3, static_cast<long long>(left), gain, vote > 0 ? "against" : "but that is less than",
                        cost, static_cast<double>(transfer.bytesMoved) / (1 << 20), rate / (1 << 30),
                        moveRate > 0 ? ", as the last move ran" : ", assumed");
          line += text;
          line += vote > 0 ? ": switching" : ": the run stays on plan '" + nameOf(holdingPlan) + "'";
        }
        if (leader && options.progress) {
          std::lock_guard lock(mutex);
          *options.progress << line << std::endl;
        }
        const bool go =
            sumOverDevices(comm, live, ir::tags::ofStep(ir::tags::kStragglerVote, step), leader ? vote : 0) > 0;
        if (!go) {
          watch.accept(straggler); // its speed now is its normal: no switch until it changes again
          return std::nullopt;
        }
        watch.adopt(straggler);
        return recover("device " + std::to_string(straggler.device) + " is a straggler", false, made);
      };
      double stepStart = since();
      // Step by step; after a recovery, on from the step the survivors' state is at.
      std::set<std::pair<int64_t, int>> joined; // (step, device): joins carried out
      for (int64_t s = 0; s < options.steps;) {
        const int64_t step = firstStep + s + 1;
        try {
          try {
            for (const Fault &f : options.faults)
              if (f.phase == FaultPhase::Slow && f.device == id && f.step == step && executor)
                executor->slowDown(slowFactor = f.factor);
              else if (f.phase == FaultPhase::Slow && f.device == id && f.step == step)
                slowFactor = f.factor;
            // Devices that come back before this step: let them in, agree, and move the state
            // to the first --recover plan whose devices are all alive.
            std::string joins;
            for (const Fault &f : options.faults)
              if (f.phase == FaultPhase::Join && f.step == step && joined.insert({f.step, f.device}).second) {
                world.admit(f.device);
                joins += (joins.empty() ? "device " : ", ") + std::to_string(f.device);
              }
            if (!joins.empty()) {
              // MPI: a spare process takes the place of a device that comes back.
              if (const std::vector<int> mine = world.localDevices(); mine.size() == 1 && mine.front() != id)
                id = mine.front();
              s = recover(joins + " joined again before step " + std::to_string(step), false) - firstStep;
              continue;
            }
            for (; next < plans.switches.size() && plans.switches[next].beforeStep == step; ++next) {
              const PlanSwitch &change = plans.switches[next];
              const double moveStart = since();
              // The old state stays whole until every device holds its new state: a switch
              // that fails leaves the run on the old plan. In buckets, the old arena is
              // released first, its state packed out of it.
              switching = true;
              if (faultAt(step, FaultPhase::Switch))
                throw DeviceDeath("device " + std::to_string(id) + " died at the start of the switch before step " +
                                  std::to_string(step));
              if (change.transfer->byLayer && executor) {
                packedOld = executor->packState();
                retire(*executor);
                executor.reset();
              }
              moveTo(change.plan, *change.transfer, ir::tags::planSwitch(static_cast<int64_t>(next)));
              switching = false;
              if (id == live.front()) {
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
            if (executor && faultAt(step, FaultPhase::Forward))
              executor->dieAt(ir::Phase::Forward);
            if (executor && faultAt(step, FaultPhase::Backward))
              executor->dieAt(ir::Phase::Backward);
            if (!executor && (faultAt(step, FaultPhase::Forward) || faultAt(step, FaultPhase::Backward)))
              throw DeviceDeath("device " + std::to_string(id) + " died at the start of step " + std::to_string(step) +
                                " (no plan's work on it)");
            inStep = true;
            if (perMicroBatch && id == live.front() && options.progress) { // which plan runs what
              const DocumentSteps::Step &laid = documentSteps->step(step - 1);
              std::string line = "step " + std::to_string(step) + ":";
              for (size_t k : laid.shapes) {
                int64_t count = 0, real = 0;
                for (const auto &piece : laid.pieces)
                  if (piece.shape == k) {
                    ++count;
                    real += piece.length;
                  }
                const size_t p = plans.buckets[k].plan;
                line += (k == laid.shapes.front() ? " " : ", ") + nameOf(p) + " " + std::to_string(count) +
                        (count == 1 ? " document (" : " documents (") + std::to_string(real) + " tokens";
                if (const auto [run, of] = documentSteps->microbatchesRun(laid, k); of > 1)
                  line += " in " + std::to_string(run) + " of " + std::to_string(of) + " micro-batches";
                line += ")";
              }
              *options.progress << line << std::endl;
            }
            const double mine = perMicroBatch ? microBatchPlans(step)
                                : executor    ? executor->forwardBackward(batchUnder(step, holdingPlan), step)
                                              : 0.0;
            if (faultAt(step, FaultPhase::Update))
              throw DeviceDeath("device " + std::to_string(id) + " died at the start of its update of step " +
                                std::to_string(step));
            if (executor)
              executor->updateExchange(); // the gradients' reductions: nothing of the state changes
            // The commit: every device has finished its backward and reduced its gradients,
            // and the step's loss is known. Nothing of the state has changed before it. The tag
            // is the step's: a device a plan does not use reaches the next step's sum while the
            // others still leave this one's.
            const double loss = sumOverDevices(comm, live, ir::tags::ofStep(kLossTag, step), mine);
            if (executor) {
              world.shield(id, true);
              executor->update();
              comm.flush(); // the others' updates may still need what this one sent
              world.shield(id, false);
            }
            updated = step;
            inStep = false;
            if (options.saveEvery > 0 && !options.save.empty() && step % options.saveEvery == 0)
              saveCheckpoint(step);
            if (s + 1 == kTracedSteps && executor)
              executor->stopTracing();
            // The first live device of each process records the loss (on MPI every process:
            // whichever is first alive at the end reports); the first of all prints it.
            const std::vector<int> ours = world.localDevices(); // MPI: a spare's changes when it comes in
            const int recorder = *std::find_if(
                live.begin(), live.end(), [&](int d) { return std::find(ours.begin(), ours.end(), d) != ours.end(); });
            if (id == recorder && result.losses.size() == static_cast<size_t>(s)) {
              result.losses.push_back(loss);
              result.stepSeconds.push_back(since() - stepStart);
              stepStart = since();
              progress.step(s, result.losses, id == live.front());
            }
            if (options.stragglers)
              if (std::optional<int64_t> at = watchStragglers(step, s)) {
                s = *at - firstStep;
                continue;
              }
          } catch (const CommError &e) {
            world.shield(id, false);
            switching = inStep = false;
            s = recoverAfter(e.what()) - firstStep;
            continue;
          }
        } catch (const DeviceDeath &e) {
          {
            std::lock_guard lock(mutex);
            deaths.push_back(e.what());
          }
          world.markDead(id, e.what()); // the thread stops dead: its state is lost
          // A device that comes back (a join in the fault trace) waits to be let in, then
          // takes part in the agreement with nothing held.
          int64_t back = 0;
          for (const Fault &f : options.faults)
            if (f.device == id && f.phase == FaultPhase::Join && f.step > step && (back == 0 || f.step < back))
              back = f.step;
          if (back == 0 || !world.awaitAdmission(id))
            return;
          if (executor)
            retire(*executor);
          executor.reset();
          holding = nullptr;
          packedOld.clear();
          switching = inStep = false;
          joined.insert({back, id});
          s = recover("device " + std::to_string(id) + " joined again before step " + std::to_string(back), false) -
              firstStep;
          continue;
        }
        ++s;
      }
      // The end of the run is a step boundary too: a device that died in the last update is
      // noticed here, and its state rebuilt on the survivors for the checkpoint.
      for (bool done = false; !done;) {
        try {
          sumOverDevices(comm, live, ir::tags::ofStep(kLossTag, firstStep + options.steps + 1), 0.0);
          done = true;
        } catch (const CommError &e) {
          if (recoverAfter(e.what()) < firstStep + options.steps)
            throw RunError("the survivors' state is not at the run's last step after a death at its end");
        }
      }
      {
        std::lock_guard lock(mutex);
        ++finished;
      }
      if (executor)
        retire(*executor);
      for (auto &[p, other] : parked)
        if (other)
          retire(*other);
      DeviceReport report{times, traced, {}};
      if (!options.save.empty() && executor)
        report.state = executor->packState();
      const int leader = live.front();
      if (id != leader) {
        comm.send(leader, kReportTag, packReport(report));
        return;
      }
      last = holdingPlan;
      result.reported = true;
      result.seconds = since();
      std::map<int, DeviceReport> reports; // all of them before the store is written: by then every device has loaded
      for (int other : live)
        reports[other] = other == id ? std::move(report) : unpackReport(comm.recv(other, kReportTag));
      world.finish(); // a device still waiting to come back does not
      for (const auto &[other, theirs] : reports) {
        if (std::binary_search(planDevices.begin(), planDevices.end(), other))
          result.times[other] = theirs.times;
        events[other] = theirs.events;
        if (!options.save.empty() && planAt(last)->count(other))
          unpackState(planAt(last)->at(other), theirs.state, store);
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
      if (executor)
        executor->abandon();
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
  if (finished == 0 && !deaths.empty()) { // every device of this process died: nobody went on
    std::string all;
    for (const std::string &death : deaths)
      all += (all.empty() ? "" : "; ") + death;
    throw RunError(all + "; no device is left to go on");
  }
  if (!result.reported)
    return result; // the first live device's process reports
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

std::optional<int64_t> hostMemoryFree() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0, available = -1, swap = -1;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:")
      available = kib;
    else if (key == "SwapFree:")
      swap = kib;
  }
  if (available < 0)
    return std::nullopt;
  return (available + std::max<int64_t>(swap, 0)) * 1024;
}

std::string hostMemoryProblem(const RunPlans &plans, std::optional<int64_t> free, HostRun run) {
  if (!free)
    return "";
  int64_t most = 0;
  size_t at = 0;
  for (size_t i = 0; i < plans.plans.size(); ++i) {
    int64_t sum = 0;
    for (const auto &[device, program] : *plans.plans[i])
      sum += std::max<int64_t>(program.peakBytes, 0);
    if (sum > most) {
      most = sum;
      at = i;
    }
  }
  if (most <= *free)
    return "";
  auto gib = [](int64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
    return std::string(text);
  };
  const std::string name =
      at < plans.names.size() && !plans.names[at].empty() ? "plan '" + plans.names[at] + "'" : "the plan";
  const std::string devices = ir::counted(static_cast<int64_t>(plans.plans[at]->size()), "device");
  return (run == HostRun::Threads ? "a threads run holds every device's memory in this process"
                                  : "hspmc starts mpirun with every process on this machine") +
         std::string(": the arenas of ") + name + " (" + devices + ") need " + gib(most) + ", but this machine has " +
         gib(*free) + " free (MemAvailable and SwapFree in /proc/meminfo); " +
         (run == HostRun::Threads
              ? "train it where the memory is (--backend mpi, a process per device, over several machines)"
              : "start mpirun yourself over machines that have the memory (mpirun -np " +
                    std::to_string(plans.devices().size()) + " --hostfile FILE hspmc train ...)");
}

RunResult runThreads(const RunPlans &plans, const ModelInfo &model, const RunOptions &options) {
  if (std::string problem = hostMemoryProblem(plans, hostMemoryFree()); !problem.empty())
    throw RunError(problem);
  StopReport stopReport(options.program);
  ThreadsWorld world(plans.devices(), options.timeout);
  return train(world, plans, model, options);
}

} // namespace hspmd::runtime
