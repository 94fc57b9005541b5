// Communication benchmark.
//
// 1. Balance: for layout changes of real sizes, the largest volume one device sends, as a
//    ratio to the balanced lower bound (all bytes moved, spread evenly over the devices that
//    hold any of them), for hspmd's sender choice and for a naive first-owner choice.
// 2. Plan switch: the time to plan and fuse the batched send/receive of every parameter and
//    optimizer state of the 32B model from the heterogeneous 48-device plan to the
//    symmetric one (examples/llama/plans), and how many messages fusion leaves.
//
//   build/bench/bench_reshard
#include "ir/AnnotationText.h"
#include "passes/Communication.h"
#include "passes/Pipeline.h"
#include "planner/driver/Driver.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

using namespace hspmd;

namespace {

ir::Annotation parse(const std::string &text) {
  ir::TextError error;
  auto a = ir::parseAnnotation(text, &error);
  if (!a) {
    std::fprintf(stderr, "bench: %s: %s\n", text.c_str(), error.str().c_str());
    std::exit(1);
  }
  return *a;
}

struct Balance {
  double maxSent = 0, lowerBound = 0;
};

Balance balance(const std::vector<int64_t> &shape, const ir::Annotation &from, const ir::Annotation &to, bool naive) {
  passes::LinkModel links;
  links.firstOwner = naive;
  auto plan = passes::planReshard(shape, 2, from, to, links);
  Balance b;
  std::map<int, double> sent;
  double total = 0;
  std::set<int> senders;
  for (const auto &step : plan.steps)
    for (const auto &m : step.messages) {
      sent[m.from] += static_cast<double>(m.bytes);
      total += static_cast<double>(m.bytes);
    }
  // Devices that hold any slice some device lacks could share the sending.
  for (const auto &step : plan.steps)
    for (const auto &m : step.messages)
      for (const auto &box : m.boxes)
        for (int d : step.from.devices())
          for (const auto &piece : ir::ownedRegion(step.from, shape, d))
            if (!passes::intersectBox(piece.box, box).empty() && d != m.to)
              senders.insert(d);
  for (const auto &[d, bytes] : sent)
    b.maxSent = std::max(b.maxSent, bytes);
  b.lowerBound = senders.empty() ? 0 : total / static_cast<double>(senders.size());
  return b;
}

} // namespace

int main() {
  struct Case {
    const char *name;
    std::vector<int64_t> shape;
    const char *from, *to;
  };
  const Case cases[] = {
      {"TP8 -> DP8 (a 5120 x 5120 weight)", {5120, 5120}, "[0..8]: S1", "[0..8]: R"},
      {"TP4 + TP2 -> TP2 + TP1 (5120 x 5120)",
       {5120, 5120},
       "{ [0..4]: S1*4 | [4, 5]: S1*2 } dup",
       "{ [0, 1]: S1*2 | [2]: R } dup"},
      {"pipeline 4 stages -> 2 (8 layers of 1024 x 1024)",
       {8, 1024, 1024},
       "{ [0]: R | [1]: R | [2]: R | [3]: R } split0 [2, 2, 2, 2]",
       "{ [0, 1]: R | [2, 3]: R } split0 [4, 4]"},
      {"uneven CP 5:3:3 -> 4:4:3 (11264 x 4096 activations)",
       {1, 11264, 4096},
       "{ [0]: R | [1]: R | [2]: R } split1 [5120, 3072, 3072]",
       "{ [0]: R | [1]: R | [2]: R } split1 [4096, 4096, 3072]"},
      {"heads 20:12 -> 16:16 (4096 positions, 32 heads of 128)",
       {1, 4096, 32, 128},
       "{ [0]: R | [1]: R } split2 [20, 12]",
       "{ [0]: R | [1]: R } split2 [16, 16]"},
      {"DP4 copies -> one new device (4096 x 4096)", {4096, 4096}, "[0..4]: R", "[4]: R"},
  };
  std::printf("balance: largest bytes one device sends / balanced lower bound (1.00 is perfect)\n");
  std::printf("%-56s %8s %8s %12s\n", "layout change", "hspmd", "naive", "naive/hspmd");
  for (const auto &c : cases) {
    auto from = parse(c.from), to = parse(c.to);
    Balance ours = balance(c.shape, from, to, false), naive = balance(c.shape, from, to, true);
    std::printf("%-56s %8.2f %8.2f %12.2f\n", c.name, ours.maxSent / ours.lowerBound, naive.maxSent / naive.lowerBound,
                naive.maxSent / ours.maxSent);
  }

  // Plan switch for the 32B model: both plans deduced on one graph, then every parameter and
  // optimizer state (AdamW: two per parameter, laid out like the parameter unless `zero`)
  // planned, and the messages of all tensors fused per device pair.
  frontend::SourceManager sources;
  frontend::CollectingSink sink;
  frontend::DiagnosticEngine diags(sink);
  frontend::Compilation compilation(sources, diags, HSPMD_SOURCE_DIR "/stdlib");
  auto build = driver::elaborateBuild(compilation, HSPMD_SOURCE_DIR "/examples/llama/llama32b.hspmd",
                                      {HSPMD_SOURCE_DIR "/examples/llama/plans/llama32b_hetero48.hspmd",
                                       HSPMD_SOURCE_DIR "/examples/llama/plans/llama32b_sym48.hspmd"},
                                      "");
  if (!build) {
    std::fprintf(stderr, "bench: %s\n", sink.diagnostics.empty() ? "failed" : sink.diagnostics[0].message.c_str());
    return 1;
  }
  auto result = passes::runPipeline(*build->graph, build->plans, {}, [](const passes::Problem &) {});
  if (!result.ok)
    return 1;
  auto start = std::chrono::steady_clock::now();
  int64_t messages = 0;
  std::vector<passes::CommPlan> plans;
  for (const ir::Value *param : build->graph->params()) {
    auto shape = *ir::concreteShape(param->type.shape);
    auto stateOf = [&](int plan) {
      const auto &states = result.plans[static_cast<size_t>(plan)].optimizerState;
      return states.count(param->name) ? states.at(param->name) : *param->annotations[static_cast<size_t>(plan)];
    };
    plans.push_back(passes::planReshard(shape, 4, *param->annotations[0], *param->annotations[1]));
    for (int state = 0; state < 2; ++state)
      plans.push_back(passes::planReshard(shape, 4, stateOf(0), stateOf(1)));
  }
  for (const auto &plan : plans)
    for (const auto &step : plan.steps)
      messages += static_cast<int64_t>(step.messages.size());
  auto fused = passes::fuseAcrossTensors(plans);
  int64_t bytes = 0;
  for (const auto &batch : fused)
    bytes += batch.bytes;
  const int tensors = static_cast<int>(plans.size());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("\nplan switch, 32B model, hetero48 -> sym48 (48 devices): %d tensors (parameters and AdamW states)\n",
              tensors);
  std::printf("  planning time %.2f s; %.1f GiB move; %lld per-tensor messages fused into %zu device-pair buffers "
              "(%.0fx fewer)\n",
              seconds, static_cast<double>(bytes) / (1024.0 * 1024 * 1024), static_cast<long long>(messages),
              fused.size(), fused.empty() ? 0.0 : static_cast<double>(messages) / static_cast<double>(fused.size()));
  return 0;
}
