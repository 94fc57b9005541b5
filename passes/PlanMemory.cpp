// PlanMemory.cpp - plan-memory: buffer lifetimes and their placement in one arena per device
// (passes/PlanMemory.h).
#include "passes/PlanMemory.h"

#include "passes/Parallel.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <tuple>

namespace hspmd::passes {

int64_t planMemory(ir::DeviceProgram &program) {
  const size_t n = program.buffers.size();
  const int end = static_cast<int>(program.body.size());
  // One micro-batch's passes in execution order: forward, backward (recomputation inside
  // it), update.
  std::vector<size_t> order(program.body.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ir::passOf(program.body[a].phase) < ir::passOf(program.body[b].phase);
  });
  std::vector<int> first(n, std::numeric_limits<int>::max()), last(n, -1);
  // `written` ends up false for a buffer read before anything writes it: a parameter, an
  // input or optimizer state, which lives across steps (the optimizer step updates it in
  // place at the end).
  std::vector<bool> written(n, false), read(n, false);
  for (int i = 0; i < end; ++i) {
    const ir::Instruction &in = program.body[order[static_cast<size_t>(i)]];
    for (int b : in.inputs) {
      last[b] = std::max(last[b], i);
      read[b] = true;
    }
    for (int b : in.outputs) {
      first[b] = std::min(first[b], i);
      last[b] = std::max(last[b], i);
      written[b] = written[b] || !read[b];
    }
  }
  // Buffers that outlive one pass live for the whole step: those read before they are
  // written, stashed activations (one copy per micro-batch in flight) and gradient
  // accumulators.
  std::vector<bool> wholeStep(n, false);
  for (size_t b = 0; b < n; ++b) {
    const ir::Buffer &buffer = program.buffers[b];
    // The loss is read by the runtime after each forward pass, not by an instruction.
    wholeStep[b] = !written[b] || buffer.slots > 1 || buffer.zeroed || buffer.id == program.lossBuffer;
    if (wholeStep[b]) {
      first[b] = -1;
      last[b] = end;
    }
  }
  // Buffers live for the whole program (parameters, inputs) overlap every other buffer: they
  // go at the bottom of the arena, one after another. The rest are placed in the order they
  // come alive, first fit in the free gaps above, and give their bytes back after their last
  // use (gaps coalesce). A buffer never shares bytes with one whose lifetime it overlaps.
  // Every buffer starts at a multiple of 64 bytes (a cache line, the kernels' widest vector).
  auto aligned = [](int64_t bytes) { return (bytes + 63) / 64 * 64; };
  std::vector<int64_t> sizeOf(n); // each buffer's aligned bytes, computed once
  int64_t base = 0;
  order.clear();
  for (size_t b = 0; b < n; ++b) {
    sizeOf[b] = aligned(program.buffers[b].bytes());
    if (wholeStep[b]) {
      program.buffers[b].offset = base;
      base += aligned(program.buffers[b].arenaBytes());
    } else {
      order.push_back(b);
    }
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return first[a] != first[b] ? first[a] < first[b] : a < b; });
  std::map<int64_t, int64_t> gaps; // offset -> size, below `top`
  int64_t top = base, peak = base;
  auto release = [&](int64_t offset, int64_t size) {
    auto next = gaps.lower_bound(offset);
    if (next != gaps.end() && next->first == offset + size) {
      size += next->second;
      next = gaps.erase(next);
    }
    if (next != gaps.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        prev->second += size;
        offset = prev->first;
        size = prev->second;
        gaps.erase(prev);
      }
    }
    if (offset + size == top)
      top = offset;
    else
      gaps[offset] = size;
  };
  using Live = std::pair<int, size_t>; // (last use, buffer)
  std::priority_queue<Live, std::vector<Live>, std::greater<>> live;
  for (size_t b : order) {
    while (!live.empty() && live.top().first < first[b]) {
      const size_t dead = live.top().second;
      live.pop();
      release(program.buffers[dead].offset, sizeOf[dead]);
    }
    int64_t offset = -1;
    for (auto it = gaps.begin(); it != gaps.end(); ++it)
      if (it->second >= sizeOf[b]) {
        offset = it->first;
        if (it->second > sizeOf[b])
          gaps[offset + sizeOf[b]] = it->second - sizeOf[b];
        gaps.erase(it);
        break;
      }
    if (offset < 0) {
      offset = top;
      top += sizeOf[b];
    }
    program.buffers[b].offset = offset;
    peak = std::max(peak, offset + sizeOf[b]);
    live.push({last[b], b});
  }
  program.peakBytes = peak;
  return peak;
}

namespace {

// Whether planMemory reads the same of `a` and `b`.
bool sameLayout(const ir::DeviceProgram &a, const ir::DeviceProgram &b) {
  if (a.buffers.size() != b.buffers.size() || a.body.size() != b.body.size() || a.lossBuffer != b.lossBuffer)
    return false;
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    const ir::Buffer &x = a.buffers[i], &y = b.buffers[i];
    if (x.id != y.id || x.slots != y.slots || x.zeroed != y.zeroed || x.bytes() != y.bytes())
      return false;
  }
  for (size_t i = 0; i < a.body.size(); ++i) {
    const ir::Instruction &x = a.body[i], &y = b.body[i];
    if (ir::passOf(x.phase) != ir::passOf(y.phase) || x.inputs != y.inputs || x.outputs != y.outputs)
      return false;
  }
  return true;
}

} // namespace

void planMemories(const std::vector<ir::DeviceProgram *> &programs, int threads) {
  // Each program's candidate: the first of the same size (buffers, instructions, loss). Those
  // whose layout is the candidate's take its plan; the rest are planned. (Reading a program
  // costs about what planning it does: a hash of each layout first was no faster.)
  std::map<std::tuple<size_t, size_t, int>, size_t> firstOfSize;
  std::vector<size_t> candidate(programs.size());
  for (size_t i = 0; i < programs.size(); ++i)
    candidate[i] =
        firstOfSize
            .emplace(std::tuple{programs[i]->buffers.size(), programs[i]->body.size(), programs[i]->lossBuffer}, i)
            .first->second;
  std::vector<char> same(programs.size(), 0);
  parallelFor(programs.size(), threads,
              [&](size_t i) { same[i] = candidate[i] != i && sameLayout(*programs[candidate[i]], *programs[i]); });
  parallelFor(programs.size(), threads, [&](size_t i) {
    if (!same[i])
      planMemory(*programs[i]);
  });
  parallelFor(programs.size(), threads, [&](size_t i) {
    if (!same[i])
      return;
    const ir::DeviceProgram &from = *programs[candidate[i]];
    ir::DeviceProgram &to = *programs[i];
    for (size_t b = 0; b < to.buffers.size(); ++b)
      to.buffers[b].offset = from.buffers[b].offset;
    to.peakBytes = from.peakBytes;
  });
}

} // namespace hspmd::passes
