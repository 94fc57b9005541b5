// Parallel.h - the program passes' per-device work spread over the machine's cores: each
// device's program is recomputed, ordered and given its arena independently of the others.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace hspmd::passes {

/// The threads `threads` asks for: itself when positive, the machine's cores when 0.
inline size_t workerCount(int threads) {
  return threads > 0 ? static_cast<size_t>(threads) : std::max(1u, std::thread::hardware_concurrency());
}

/// Calls `work(i)` for every i in [0, n), on up to workerCount(threads) threads (the calling
/// one among them), each taking the next index when it is free; returns once every call has.
/// The calls must touch disjoint data. An exception a call throws is rethrown here, after the
/// other calls have finished (one of them, when several throw).
template <class Work> void parallelFor(size_t n, int threads, const Work &work) {
  const size_t count = std::min(workerCount(threads), n);
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failureMutex;
  auto loop = [&] {
    for (size_t i = next++; i < n; i = next++)
      try {
        work(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failureMutex);
        if (!failure)
          failure = std::current_exception();
      }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < count; ++t)
    pool.emplace_back(loop);
  loop();
  for (std::thread &thread : pool)
    thread.join();
  if (failure)
    std::rethrow_exception(failure);
}

} // namespace hspmd::passes
