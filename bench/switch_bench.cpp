// bench_switch: what a plan switch costs (runtime/Switch.h), measured in one run.
//
// 1. Cluster scale, planned: the 32B, 7B and 13B example plan pairs (heterogeneous <->
//    symmetric), each way. For hspmd's owner choice (links, then load), Hetu's volume-only
//    greedy and a first-owner naive choice: bytes moved against the least possible
//    (bytes_min), the busiest sender against the balanced lower bound, messages before and
//    after fusion; the time to compile both plans and to plan the transfer; the estimated
//    switch time on the cluster against each plan's simulated step.
// 2. On this CPU, measured: the tiny models' switches and a wider GPT's (hidden 1024) on the
//    threads backend, fused (one message per device pair), per tensor (one message per tensor
//    and pair) and naive (first owner, fused): the wall time of the move against a memcpy of
//    the bytes the busiest device receives or keeps (or of all devices' bytes over this
//    machine's cores, whichever is more), and against a training step. Message buffers come
//    from one heap for every variant (mallopt in main): by default glibc maps large buffers
//    afresh at every repeat, page faults and all, while it reuses smaller ones, so the fused
//    variant's few large messages measured the allocator rather than the transfer (the wide
//    GPT: 5x slower fused than per tensor by default, even with the heap).
//
//   build/bench/bench_switch
#include "bench/Compiled.h"
#include "ir/Tags.h"
#include "passes/Pipeline.h"
#include "planner/Estimates.h"
#include "planner/Simulator.h"
#include "planner/driver/Driver.h"
#include "planner/driver/ModelInfo.h"
#include "runtime/Executor.h"
#include "runtime/Run.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <malloc.h>
#include <memory>
#include <thread>

extern "C" void openblas_set_num_threads(int);

using namespace hspmd;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

using bench::Compiled;

std::unique_ptr<Compiled> compile(const std::string &relative) {
  return bench::compilePlan(std::string(HSPMD_SOURCE_DIR) + "/" + relative);
}

double gib(int64_t bytes) {
  return static_cast<double>(bytes) / (1 << 30);
}

void clusterScale() {
  std::printf("1. cluster scale, planned (bytes in GiB; ratios: moved / least possible, busiest sender / balanced "
              "lower bound)\n");
  const std::vector<std::pair<std::string, std::string>> pairs = {{"llama32b_hetero48", "llama32b_sym48"},
                                                                  {"llama2_7b_hetero16", "llama2_7b_sym16"},
                                                                  {"llama2_13b_hetero16", "llama2_13b_sym16"}};
  for (const auto &[a, b] : pairs) {
    auto x = compile("examples/llama/plans/" + a + ".hspmd"), y = compile("examples/llama/plans/" + b + ".hspmd");
    std::vector<planner::ClusterError> errors;
    auto cluster = planner::loadCluster(HSPMD_SOURCE_DIR "/examples/clusters/" +
                                            std::filesystem::path(x->build->plans[0].clusterPath).filename().string(),
                                        HSPMD_SOURCE_DIR "/stdlib/devices.toml", errors);
    if (!cluster) {
      std::fprintf(stderr, "bench_switch: no cluster for %s\n", a.c_str());
      std::exit(1);
    }
    const passes::LinkModel model = planner::linkModel(*cluster);
    runtime::SwitchLinks links{model.bandwidth, model.sameNode, model.alpha};
    const planner::CostModel cost = planner::costModel(*cluster);
    const double stepX = planner::simulate(x->programs(), cost).stepSeconds;
    const double stepY = planner::simulate(y->programs(), cost).stepSeconds;
    for (int way = 0; way < 2; ++way) {
      const Compiled &from = way == 0 ? *x : *y, &to = way == 0 ? *y : *x;
      std::printf("  %s -> %s: compiled in %.2f s and %.2f s\n", from.build->plans[0].name.c_str(),
                  to.build->plans[0].name.c_str(), from.seconds, to.seconds);
      for (auto [choice, name] : {std::pair{runtime::OwnerChoice::Links, "hspmd (links, load)"},
                                  std::pair{runtime::OwnerChoice::Volume, "volume-only greedy"},
                                  std::pair{runtime::OwnerChoice::FirstOwner, "first owner"}}) {
        const runtime::StateSwitch plan = runtime::planSwitch(from.programs(), to.programs(), links, choice);
        if (plan.bytesMin == 0) {
          std::printf("    %-20s nothing to move: the plans lay out every parameter and optimizer state alike "
                      "(planned in %.0f ms)\n",
                      name, plan.planSeconds * 1e3);
          continue;
        }
        std::printf("    %-20s moved %.2f / min %.2f = %.2f  busiest sender %.2f / balanced %.2f = %.2f  "
                    "messages %lld -> %zu  planned in %.0f ms  estimated %.3f s (%.2f steps of the plan switched to)\n",
                    name, gib(plan.bytesMoved), gib(plan.bytesMin),
                    static_cast<double>(plan.bytesMoved) / static_cast<double>(plan.bytesMin), gib(plan.maxSendBytes),
                    gib(plan.balancedSendBytes),
                    static_cast<double>(plan.maxSendBytes) / static_cast<double>(plan.balancedSendBytes),
                    static_cast<long long>(plan.messagesUnfused), plan.messages.size(), plan.planSeconds * 1e3,
                    plan.seconds, plan.seconds / (way == 0 ? stepY : stepX));
      }
    }
    std::printf("  simulated steps: %s %.3f s, %s %.3f s\n", x->build->plans[0].name.c_str(), stepX,
                y->build->plans[0].name.c_str(), stepY);
  }
}

// One message per tensor and device pair: the transfer without fusion across tensors.
runtime::StateSwitch perTensor(const runtime::StateSwitch &fused) {
  runtime::StateSwitch out = fused;
  out.messages.clear();
  for (const runtime::SwitchMessage &message : fused.messages) {
    std::map<int, runtime::SwitchMessage> byTensor;
    for (const runtime::SwitchSlice &slice : message.slices) {
      runtime::SwitchMessage &one = byTensor[slice.tensor];
      one.from = message.from;
      one.to = message.to;
      one.slices.push_back(slice);
      one.bytes += slice.box.numElements() * 4;
    }
    for (auto &[tensor, one] : byTensor)
      out.messages.push_back(std::move(one));
  }
  return out;
}

// Carries out `plan` on threads, one per device of either plan, `repeat` times; the best wall
// time of the move (from a barrier before to a barrier after).
double measureMove(const Compiled &from, const Compiled &to, const std::vector<runtime::StateSwitch> &plans,
                   int repeat) {
  runtime::RunPlans all{{&from.programs(), &to.programs()}, {}, {}, {}};
  const std::vector<int> devices = all.devices();
  runtime::ThreadsWorld world(devices);
  const runtime::ParameterStore store = runtime::ParameterStore::initial(
      runtime::ParameterStore::fingerprint(from.model.name, from.model.params), from.model.params, 1);
  std::vector<double> best(plans.size(), 1e300);
  std::vector<std::thread> threads;
  for (int id : devices)
    threads.emplace_back([&, id] {
      runtime::Communicator &comm = world.communicator(id);
      std::unique_ptr<runtime::DeviceExecutor> before, after;
      if (from.programs().count(id)) {
        before = std::make_unique<runtime::DeviceExecutor>(from.programs().at(id), comm);
        before->load(store);
      }
      if (to.programs().count(id))
        after = std::make_unique<runtime::DeviceExecutor>(to.programs().at(id), comm);
      int64_t tag = 0;
      for (size_t p = 0; p < plans.size(); ++p)
        for (int r = 0; r < repeat; ++r) {
          comm.barrier();
          const auto start = Clock::now();
          runtime::runSwitch(plans[p], id, comm, ir::tags::planSwitch(tag++), runtime::HeldState::of(before.get()),
                             after.get());
          comm.barrier();
          if (id == devices.front())
            best[p] = std::min(best[p], since(start));
        }
    });
  for (auto &t : threads)
    t.join();
  return best[0];
}

double memcpyBandwidth() {
  std::vector<char> a(64 << 20, 1), b(64 << 20);
  double fastest = 1e300;
  for (int i = 0; i < 5; ++i) {
    const auto start = Clock::now();
    std::memcpy(b.data(), a.data(), a.size());
    fastest = std::min(fastest, since(start));
  }
  return static_cast<double>(a.size()) / fastest;
}

void onThisCpu() {
  openblas_set_num_threads(1);
  const double bandwidth = memcpyBandwidth();
  std::printf("2. on this CPU (threads backend; memcpy %.1f GB/s on one core; best of 5)\n", bandwidth / 1e9);
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"examples/gpt/plans/dp2_zero.hspmd", "examples/gpt/plans/hetero4.hspmd"},
      {"examples/gpt/plans/hetero4.hspmd", "examples/gpt/plans/pipeline2_recompute.hspmd"},
      {"examples/llama/plans/tiny_llama_dp2_tp2_zero.hspmd", "examples/llama/plans/tiny_llama_hetero4.hspmd"},
      {"bench/plans/wide_dp2_zero.hspmd", "bench/plans/wide_tp2_pipeline.hspmd"}};
  for (const auto &[a, b] : pairs) {
    auto x = compile(a), y = compile(b);
    const runtime::StateSwitch fused = runtime::planSwitch(x->programs(), y->programs());
    const runtime::StateSwitch naive =
        runtime::planSwitch(x->programs(), y->programs(), {}, runtime::OwnerChoice::FirstOwner);
    std::vector<double> times;
    for (const runtime::StateSwitch *plan : std::vector<const runtime::StateSwitch *>{&fused, nullptr, &naive}) {
      const runtime::StateSwitch one = plan ? *plan : perTensor(fused);
      times.push_back(measureMove(*x, *y, {one}, 5));
    }
    // The busiest device writes every byte of its new state once: what it receives and keeps.
    std::map<int, int64_t> written = fused.kept;
    for (const auto &m : fused.messages)
      written[m.to] += m.bytes;
    // Every device's writes share this machine's cores: the total over the cores bounds too.
    int64_t busiest = 0, total = 0;
    for (const auto &[device, bytes] : written) {
      busiest = std::max(busiest, bytes);
      total += bytes;
    }
    const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
    const double lower = static_cast<double>(std::max(busiest, total / cores)) / bandwidth;
    // A training step of the plan switched to.
    runtime::RunOptions options;
    options.steps = 3;
    options.data = HSPMD_SOURCE_DIR "/examples/data/gpl-3.txt";
    const runtime::RunResult run = runtime::runThreads(y->programs(), y->model, options);
    const double step = run.stepSeconds.back();
    std::printf("  %s -> %s: %.2f MiB moved in %zu messages (%lld per tensor), %.2f MiB kept\n",
                x->build->plans[0].name.c_str(), y->build->plans[0].name.c_str(),
                static_cast<double>(fused.bytesMoved) / (1 << 20), fused.messages.size(),
                static_cast<long long>(fused.messagesUnfused), static_cast<double>(fused.localBytes) / (1 << 20));
    std::printf("    fused %.2f ms, per tensor %.2f ms (%.2fx), first owner %.2f ms (%.2fx); memcpy bound %.2f ms "
                "(fused / bound %.2f); a step %.1f ms (the switch costs %.2f steps)\n",
                times[0] * 1e3, times[1] * 1e3, times[1] / times[0], times[2] * 1e3, times[2] / times[0], lower * 1e3,
                times[0] / lower, step * 1e3, times[0] / step);
  }
}

} // namespace

int main() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20); // glibc's largest
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 256 << 20);
  mallopt(M_ARENA_MAX, 1);
  clusterScale();
  onThisCpu();
  return 0;
}
