// PlanFuzzer.cpp - the plan-mutation fuzzer: grammar-aware mutations of the tiny example plans
// (device lists, layer ranges, degrees and shares, annotations, numbers at the int64 edges,
// lines dropped or repeated) through the whole gate (driver::checkPlan: lint's checks, the
// passes and the verifier on the training programs). A mutant that passes the gate is
// compiled for training, trained one step on the threads runtime and compared with the same
// model, bindings and data on one device (up to 4096 tokens a step). A finding is an uncaught exception, an internal
// error (HS199), a hang (a mutant over --hang seconds), or a plan that passes the gate and then
// fails, trains to a non-finite loss or to another loss than one device does. Findings are
// written to --findings DIR (to be checked in under tests/fuzz/plans/ once fixed); the mutants
// of tests/fuzz/plans/ are replayed first, every run.
//
//   plan_fuzzer [--seconds N] [--seed S] [--findings DIR] [--hang S]
#include "planner/driver/Driver.h"
#include "planner/driver/ModelInfo.h"
#include "runtime/Run.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <regex>
#include <sstream>
#include <unistd.h>

using namespace hspmd;
namespace fs = std::filesystem;

namespace {

const char *const kData = "examples/data/gpl-3.txt";

std::string readFile(const fs::path &path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// ---------------------------------------------------------------- mutations

struct Mutator {
  std::mt19937_64 rng;
  explicit Mutator(uint64_t seed) : rng(seed) {}

  size_t below(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng); }
  template <class T> const T &pick(const std::vector<T> &items) { return items[below(items.size())]; }

  // The spans of `text` (after the `plan` line) that match `pattern`.
  static std::vector<std::pair<size_t, size_t>> spans(const std::string &text, const std::regex &pattern) {
    std::vector<std::pair<size_t, size_t>> out;
    const size_t body = text.find("\nplan ");
    if (body == std::string::npos)
      return out;
    for (auto it = std::sregex_iterator(text.begin() + static_cast<long>(body), text.end(), pattern);
         it != std::sregex_iterator(); ++it)
      out.emplace_back(body + static_cast<size_t>(it->position()), static_cast<size_t>(it->length()));
    return out;
  }

  bool replaceOne(std::string &text, const std::regex &pattern, const std::vector<std::string> &with) {
    const auto found = spans(text, pattern);
    if (found.empty())
      return false;
    const auto [at, length] = pick(found);
    text.replace(at, length, pick(with));
    return true;
  }

  // The lines of the plan's body (between `plan ... {` and its closing brace).
  std::vector<std::pair<size_t, size_t>> bodyLines(const std::string &text) {
    std::vector<std::pair<size_t, size_t>> lines;
    size_t at = text.find("\nplan ");
    if (at == std::string::npos)
      return lines;
    at = text.find('\n', at + 1);
    while (at != std::string::npos && at + 1 < text.size()) {
      const size_t end = text.find('\n', at + 1);
      if (end == std::string::npos)
        break;
      const std::string line = text.substr(at + 1, end - at - 1);
      if (line != "}")
        lines.emplace_back(at + 1, end - at);
      at = end;
    }
    return lines;
  }

  std::string mutate(std::string text) {
    static const std::vector<std::string> kNumbers = {"0",          "1",
                                                      "2",          "3",
                                                      "5",          "7",
                                                      "16",         "1023",
                                                      "1024",       "2147483648",
                                                      "4294967297", "9223372036854775807",
                                                      "-1",         "-9223372036854775807 - 1"};
    static const std::vector<std::string> kDevices = {"[0]",       "[0, 0]", "[1, 0]", "[0..4]", "[3, 2]",
                                                      "[0, 1, 2]", "[9]",    "[0..2]", "[2..4]", "[1]"};
    static const std::vector<std::string> kAxes = {"R", "P", "S0", "S1", "S2", "S7", "R*2", "S0*2", "P*2", "S1*4"};
    static const std::vector<std::string> kClauses = {" zero",
                                                      " recompute",
                                                      " tp 2",
                                                      " tp 4",
                                                      " tp 3",
                                                      " cp [0: 1, 1: 1]",
                                                      " hp [0: 1, 1: 3]",
                                                      " cp [[0]: 48, [1]: 16]",
                                                      " with wte",
                                                      " with lnf",
                                                      " layers blocks[0:1]",
                                                      " layers blocks"};
    static const std::vector<std::string> kPlanLines = {
        "  zero\n",
        "  recompute\n",
        "  chunked\n",
        "  schedule gpipe\n",
        "  annotate wte = [0, 1]: S0\n",
        "  annotate tokens = [0, 1]: S0\n",
        "  annotate tokens = { [0]: R | [1]: R } split0 [3, 5]\n",
        "  annotate targets = [0..4]: S1*4\n",
        "  reshard blocks[0].forward.h to [0, 1]: S1\n",
        "  optimizer sgd(lr = 0.1, momentum = 0.9)\n",
        "  pipeline z share 1 microbatches 1 {\n    stage devices [2, 3] layers blocks with wte, lnf\n  }\n"};
    const int count = 1 + static_cast<int>(below(3));
    for (int m = 0; m < count; ++m) {
      switch (below(8)) {
      case 0: // a number at an edge
        replaceOne(text, std::regex(R"(\b\d+\b)"), kNumbers);
        break;
      case 1: // a device list
        replaceOne(text, std::regex(R"(\[\d+(\s*(,|\.\.)\s*\d+)*\])"), kDevices);
        break;
      case 2: // an axis word of an annotation
        replaceOne(text, std::regex(R"(\b(R|P|S\d)(\*\d+)?\b)"), kAxes);
        break;
      case 3: // a layer range
        replaceOne(text, std::regex(R"(blocks(\[\d*:\d*\])?)"),
                   {"blocks", "blocks[0:1]", "blocks[1:8]", "blocks[0:9]", "blocks[2:1]", "blocks[0:0]"});
        break;
      case 4: { // a clause added to a stage
        const auto lines = spans(text, std::regex(R"(stage [^\n]*)"));
        if (!lines.empty()) {
          const auto [at, length] = pick(lines);
          text.insert(at + length, pick(kClauses));
        }
        break;
      }
      case 5: { // a line dropped
        const auto lines = bodyLines(text);
        if (!lines.empty()) {
          const auto [at, length] = pick(lines);
          text.erase(at, length);
        }
        break;
      }
      case 6: { // a line repeated
        const auto lines = bodyLines(text);
        if (!lines.empty()) {
          const auto [at, length] = pick(lines);
          text.insert(at, text.substr(at, length));
        }
        break;
      }
      default: { // a plan line added
        const size_t end = text.rfind('}');
        if (end != std::string::npos)
          text.insert(end, pick(kPlanLines));
        break;
      }
      }
    }
    return text;
  }
};

// ---------------------------------------------------------------- one mutant

// The mutant being tried, for the hang handler (a signal handler may only write).
char gCurrent[65536];
size_t gCurrentSize = 0;
int gHangSeconds = 60;

void onHang(int) {
  const char header[] = "plan fuzzer: FINDING: a mutant ran past the hang limit:\n";
  (void)!write(2, header, sizeof header - 1);
  (void)!write(2, gCurrent, gCurrentSize);
  _exit(1);
}

struct Outcome {
  bool passedGate = false, trained = false;
  std::string finding; // empty: none
};

// The mutant's model, bindings and optimizer on device 0 alone: what every plan must train to.
ir::PlanSpec oneDevice(const ir::PlanSpec &spec, const ir::Graph &graph) {
  ir::PlanSpec single;
  single.name = "one_device";
  single.model = spec.model;
  single.modelArgs = spec.modelArgs;
  single.bindings = spec.bindings;
  single.optimizer = spec.optimizer;
  single.optimizerArgs = spec.optimizerArgs;
  ir::PipelineSpec pipeline;
  pipeline.name = "one";
  ir::StageSpec stage;
  stage.devices = {0};
  std::map<std::string, int> layers;
  for (const ir::Value *param : graph.params())
    if (auto position = ir::stackPosition(param->name))
      layers[position->stack] = std::max(layers[position->stack], static_cast<int>(position->layer) + 1);
    else
      stage.extraParams.push_back(param->name);
  stage.stack = layers.empty() ? "" : layers.begin()->first;
  stage.layerEnd = layers.empty() ? 0 : layers.begin()->second;
  stage.extraParamLocs.resize(stage.extraParams.size());
  pipeline.stages.push_back(stage);
  single.pipelines.push_back(pipeline);
  return single;
}

double firstLoss(const ir::Graph &graphIn, const std::map<int, ir::DeviceProgram> &programs) {
  runtime::RunOptions options;
  options.steps = 1;
  options.data = kData;
  options.timeout = std::chrono::seconds(30);
  return runtime::runThreads(programs, driver::modelInfo(graphIn), options).losses.at(0);
}

Outcome tryMutant(const std::string &seedPath, const std::string &text) {
  Outcome outcome;
  frontend::SourceManager sources;
  frontend::CollectingSink sink;
  frontend::DiagnosticEngine diags(sink);
  frontend::Compilation compilation(sources, diags, "stdlib");
  auto internal = [&]() -> std::string {
    for (const auto &d : sink.diagnostics)
      if (d.code == "HS199" || d.message.rfind("internal error", 0) == 0)
        return "an internal error: " + frontend::diagnosticHeader(d);
    return "";
  };
  try {
    // Named as its seed, so that its imports and cluster resolve as the seed's do.
    const frontend::FileAst *ast = compilation.loadText(seedPath, text);
    if (!ast || ast->plans.empty())
      return outcome;
    outcome.passedGate = driver::checkPlan(compilation, seedPath, {});
    if (std::string error = internal(); !error.empty()) {
      outcome.finding = error;
      return outcome;
    }
    if (!outcome.passedGate)
      return outcome;
    // Passed the gate: it must compile, train and agree with one device.
    auto build = driver::elaborateBuild(compilation, seedPath, {seedPath}, "");
    if (!build) {
      outcome.finding = "passed the gate, then did not elaborate";
      return outcome;
    }
    passes::PipelineOptions options;
    options.train = true;
    std::string failed;
    auto result = passes::runPipeline(*build->graph, build->plans, options, [&](const passes::Problem &p) {
      if (p.severity == passes::Severity::Error && failed.empty())
        failed = p.code + " " + p.message;
    });
    if (!result.ok || !failed.empty()) {
      outcome.finding = "passed the gate, then failed to compile: " + failed;
      return outcome;
    }
    // Training is the slow part: mutants of more than 4096 tokens a step stop at compiling.
    int64_t tokens = 1;
    for (const auto &[symbol, value] : build->plans[0].bindings)
      tokens = value > 4096 || tokens * value > 4096 ? 4097 : tokens * value;
    if (tokens > 4096)
      return outcome;
    const double loss = firstLoss(*build->graph, result.programs.at(0));
    ir::PlanSpec single = oneDevice(build->plans[0], *build->graph);
    auto graph = compilation.elaborateSpec(single);
    passes::PipelineResult reference;
    if (graph)
      reference = passes::runPipeline(*graph, {single}, options, [](const passes::Problem &) {});
    if (!graph || !reference.ok) {
      outcome.finding = "passed the gate, but its model does not compile on one device";
      return outcome;
    }
    const double want = firstLoss(*graph, reference.programs.at(0));
    outcome.trained = true;
    if (!std::isfinite(loss) || std::abs(loss - want) > 1e-3 * std::max(1.0, std::abs(want))) {
      char line[160];
      std::snprintf(line, sizeof line, "passed the gate and trained to loss %.6f; one device trains to %.6f", loss,
                    want);
      outcome.finding = line;
    }
  } catch (const std::exception &e) {
    outcome.finding = std::string("an uncaught exception: ") + e.what();
  }
  return outcome;
}

} // namespace

int main(int argc, char **argv) {
  double seconds = 30;
  uint64_t seed = 1;
  std::string findings;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--seconds")
      seconds = std::stod(value);
    else if (flag == "--seed")
      seed = std::stoull(value);
    else if (flag == "--findings")
      findings = value;
    else if (flag == "--hang")
      gHangSeconds = std::stoi(value);
    else {
      std::cerr << "plan fuzzer: unknown option " << flag << "\n";
      return 2;
    }
  }
  std::signal(SIGALRM, onHang);
  // Seeds: the example plans of the tiny models (the cluster-scale ones compile too slowly for
  // many mutants a second). Replayed first: the checked-in mutants of tests/fuzz/plans/.
  std::vector<std::pair<std::string, std::string>> seeds, replay; // (path it is named as, text)
  for (const char *folder : {"examples/gpt/plans", "examples/llama/plans"})
    for (const auto &entry : fs::directory_iterator(folder)) {
      const std::string name = entry.path().filename().string();
      if (entry.path().extension() == ".hspmd" && (folder[9] == 'g' || name.rfind("tiny_", 0) == 0))
        seeds.emplace_back(entry.path().string(), readFile(entry.path()));
    }
  std::sort(seeds.begin(), seeds.end());
  if (fs::is_directory("tests/fuzz/plans"))
    for (const auto &entry : fs::directory_iterator("tests/fuzz/plans"))
      if (entry.path().extension() == ".hspmd") {
        // First line: "// seed: examples/gpt/plans/x.hspmd", the path the mutant is named as.
        const std::string text = readFile(entry.path());
        const std::string first = text.substr(0, text.find('\n'));
        if (first.rfind("// seed: ", 0) == 0)
          replay.emplace_back(first.substr(9), text);
      }
  std::sort(replay.begin(), replay.end());

  Mutator mutator(seed);
  const auto start = std::chrono::steady_clock::now();
  int tried = 0, passed = 0, trained = 0, found = 0;
  for (size_t i = 0;; ++i) {
    const bool replaying = i < replay.size();
    if (!replaying && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= seconds)
      break;
    const auto &[path, original] = replaying ? replay[i] : mutator.pick(seeds);
    const std::string text = replaying ? original : mutator.mutate(original);
    gCurrentSize = std::min(text.size(), sizeof gCurrent);
    std::memcpy(gCurrent, text.data(), gCurrentSize);
    alarm(static_cast<unsigned>(gHangSeconds));
    const Outcome outcome = tryMutant(path, text);
    alarm(0);
    ++tried;
    passed += outcome.passedGate;
    trained += outcome.trained;
    if (!outcome.finding.empty()) {
      ++found;
      std::cerr << "plan fuzzer: FINDING: " << outcome.finding << "\n--- mutant of " << path << "\n" << text << "---\n";
      if (!findings.empty()) {
        fs::create_directories(findings);
        std::ofstream(fs::path(findings) / ("finding_" + std::to_string(seed) + "_" + std::to_string(i) + ".hspmd"))
            << (replaying ? "" : "// seed: " + path + "\n") << text;
      }
    }
  }
  std::cout << "plan fuzzer: " << tried << " mutants (" << replay.size() << " replayed) of " << seeds.size()
            << " seed plans in "
            << static_cast<int>(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count())
            << " s: " << passed << " passed the gate, " << trained << " trained and matched one device; " << found
            << (found == 1 ? " finding" : " findings") << "\n";
  return found == 0 ? 0 : 1;
}
