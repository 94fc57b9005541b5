#include "passes/PlanMemory.h"

#include <algorithm>
#include <limits>

namespace hspmd::passes {

int64_t planMemory(ir::DeviceProgram &program) {
  const size_t n = program.buffers.size();
  const int end = static_cast<int>(program.body.size());
  std::vector<int> first(n, std::numeric_limits<int>::max()), last(n, -1);
  std::vector<bool> written(n, false);
  for (int i = 0; i < end; ++i) {
    for (int b : program.body[static_cast<size_t>(i)].outputs) {
      first[b] = std::min(first[b], i);
      last[b] = std::max(last[b], i);
      written[b] = true;
    }
    for (int b : program.body[static_cast<size_t>(i)].inputs)
      last[b] = std::max(last[b], i);
  }
  for (size_t b = 0; b < n; ++b)
    if (!written[b]) { // parameters and inputs: the whole program
      first[b] = -1;
      last[b] = end;
    }
  std::vector<size_t> order(n);
  for (size_t b = 0; b < n; ++b)
    order[b] = b;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return program.buffers[a].bytes() != program.buffers[b].bytes()
               ? program.buffers[a].bytes() > program.buffers[b].bytes()
               : a < b;
  });
  std::vector<size_t> placed;
  int64_t peak = 0;
  for (size_t b : order) {
    const int64_t size = program.buffers[b].bytes();
    // Offsets of live-overlapping buffers, sorted; take the first gap that fits.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t other : placed)
      if (first[other] <= last[b] && first[b] <= last[other])
        busy.push_back({program.buffers[other].offset, program.buffers[other].offset + program.buffers[other].bytes()});
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto &[lo, hi] : busy) {
      if (offset + size <= lo)
        break;
      offset = std::max(offset, hi);
    }
    program.buffers[b].offset = offset;
    peak = std::max(peak, offset + size);
    placed.push_back(b);
  }
  program.peakBytes = peak;
  return peak;
}

} // namespace hspmd::passes
