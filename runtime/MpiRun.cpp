// MpiRun.cpp - the MPI backend: one device per process (runtime/MpiRun.h).
#include "runtime/MpiRun.h"

#define OMPI_SKIP_MPICXX 1 // the C API only
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <list>
#include <memory>
#include <thread>

namespace hspmd::runtime {

namespace {

using Clock = std::chrono::steady_clock;

// Polls spin briefly, then sleep a little: processes may share cores (mpirun --oversubscribe).
void pause(int &spins) {
  if (++spins < 5000)
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(std::chrono::microseconds(20));
}

class MpiCommunicator : public Communicator {
public:
  MpiCommunicator(std::vector<int> devices, int rank, std::chrono::milliseconds timeout)
      : devices_(std::move(devices)), rank_(rank), timeout_(timeout) {}
  ~MpiCommunicator() override { drain(); }

  int device() const override { return devices_[static_cast<size_t>(rank_)]; }

  void send(int peer, int64_t tag, std::vector<char> message) override {
    Pending &p = pending_.emplace_back();
    p.buffer.resize(8 + message.size());
    std::memcpy(p.buffer.data(), &tag, 8);
    std::memcpy(p.buffer.data() + 8, message.data(), message.size());
    MPI_Isend(p.buffer.data(), static_cast<int>(p.buffer.size()), MPI_BYTE, rankOf(peer), 0, MPI_COMM_WORLD,
              &p.request);
    progress();
  }

  std::vector<char> recv(int peer, int64_t tag) override {
    const int source = rankOf(peer);
    const auto key = std::make_pair(source, tag);
    const auto deadline = Clock::now() + timeout_;
    int spins = 0;
    while (true) {
      if (auto it = early_.find(key); it != early_.end() && !it->second.empty()) {
        std::vector<char> message = std::move(it->second.front());
        it->second.erase(it->second.begin());
        return message;
      }
      if (takeArrived(source))
        continue;
      progress();
      if (Clock::now() > deadline)
        throw CommError("device " + std::to_string(device()) + " waited " + formatSeconds(timeout_) +
                        " s for a message from device " + std::to_string(peer) + " (tag " + std::to_string(tag) + ")");
      pause(spins);
    }
  }

  void recvEach(const std::vector<int> &peers, int64_t tag,
                const std::function<void(int peer, std::vector<char> message)> &use) override {
    std::vector<int> waiting = peers;
    const auto deadline = Clock::now() + timeout_;
    int spins = 0;
    while (!waiting.empty()) {
      bool used = false;
      for (auto peer = waiting.begin(); peer != waiting.end();) {
        auto it = early_.find({rankOf(*peer), tag});
        if (it == early_.end() || it->second.empty()) {
          ++peer;
          continue;
        }
        std::vector<char> message = std::move(it->second.front());
        it->second.erase(it->second.begin());
        const int from = *peer;
        peer = waiting.erase(peer);
        use(from, std::move(message));
        used = true;
      }
      if (waiting.empty() || used)
        continue;
      if (!takeArrived(MPI_ANY_SOURCE)) {
        progress();
        pause(spins);
      }
      if (Clock::now() > deadline)
        throw CommError("device " + std::to_string(device()) + " waited " + formatSeconds(timeout_) +
                        " s for a message from device " + std::to_string(waiting.front()) + " (tag " +
                        std::to_string(tag) + ")");
    }
  }

  void exchange(const std::vector<int> &group, int64_t tag, const Piece &mine, int64_t bytes,
                const std::function<void(const std::vector<Piece> &)> &use) override {
    // Each member sends every other member its piece: [partial, rank, lo..., hi..., data].
    const int64_t exchangeTag = tag | (int64_t{1} << 62);
    std::vector<char> message(static_cast<size_t>(8 + 8 + 16 * mine.lo.size()) + (mine.data ? bytes : 0));
    int64_t header[2] = {mine.partial, mine.data ? static_cast<int64_t>(mine.lo.size()) : -1};
    std::memcpy(message.data(), header, 16);
    if (mine.data) {
      // A scalar's piece has no bounds (lo and hi empty: no pointer to copy from).
      if (!mine.lo.empty()) {
        std::memcpy(message.data() + 16, mine.lo.data(), 8 * mine.lo.size());
        std::memcpy(message.data() + 16 + 8 * mine.lo.size(), mine.hi.data(), 8 * mine.hi.size());
      }
      if (bytes > 0)
        std::memcpy(message.data() + 16 + 16 * mine.lo.size(), mine.data, static_cast<size_t>(bytes));
    }
    for (int member : group)
      if (member != device())
        send(member, exchangeTag, message);
    std::vector<std::vector<char>> received(group.size());
    std::vector<Piece> pieces(group.size());
    for (size_t i = 0; i < group.size(); ++i) {
      if (group[i] == device()) {
        pieces[i] = mine;
        continue;
      }
      received[i] = recv(group[i], exchangeTag);
      int64_t head[2];
      std::memcpy(head, received[i].data(), 16);
      pieces[i].partial = static_cast<int>(head[0]);
      if (head[1] < 0)
        continue;
      const auto rank = static_cast<size_t>(head[1]);
      pieces[i].lo.resize(rank);
      pieces[i].hi.resize(rank);
      if (rank > 0) {
        std::memcpy(pieces[i].lo.data(), received[i].data() + 16, 8 * rank);
        std::memcpy(pieces[i].hi.data(), received[i].data() + 16 + 8 * rank, 8 * rank);
      }
      pieces[i].data = received[i].data() + 16 + 16 * rank;
    }
    use(pieces);
  }

  void barrier() override {
    MPI_Request request;
    MPI_Ibarrier(MPI_COMM_WORLD, &request);
    wait(request, "every device at a barrier");
  }

  void drain() {
    const auto deadline = Clock::now() + timeout_;
    int spins = 0;
    while (!pending_.empty() && Clock::now() < deadline) {
      progress();
      pause(spins);
    }
  }

  int rankOf(int device) const {
    auto it = std::find(devices_.begin(), devices_.end(), device);
    if (it == devices_.end())
      throw CommError("device " + std::to_string(device) + " is not in this run");
    return static_cast<int>(it - devices_.begin());
  }

private:
  struct Pending {
    std::vector<char> buffer;
    MPI_Request request;
  };
  std::vector<int> devices_;
  int rank_;
  std::chrono::milliseconds timeout_;
  std::list<Pending> pending_;
  std::map<std::pair<int, int64_t>, std::vector<std::vector<char>>> early_; // (rank, tag)

  // Receives one message that has arrived from `source` (or any rank), if there is one, and
  // files it by its sender and tag.
  bool takeArrived(int source) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(source, 0, MPI_COMM_WORLD, &flag, &status);
    if (!flag)
      return false;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    std::vector<char> buffer(static_cast<size_t>(count));
    MPI_Recv(buffer.data(), count, MPI_BYTE, status.MPI_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int64_t got = 0;
    std::memcpy(&got, buffer.data(), 8);
    early_[{status.MPI_SOURCE, got}].emplace_back(buffer.begin() + 8, buffer.end());
    return true;
  }

  void progress() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? pending_.erase(it) : std::next(it);
    }
  }

  void wait(MPI_Request &request, const std::string &what) {
    const auto deadline = Clock::now() + timeout_;
    int done = 0, spins = 0;
    while (!done) {
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      progress();
      if (!done && Clock::now() > deadline)
        throw CommError("device " + std::to_string(device()) + " waited " + formatSeconds(timeout_) + " s for " + what);
      if (!done)
        pause(spins);
    }
  }
};

// The run's world in this process: MPI initialised, its one device and communicator.
class MpiWorld : public World {
public:
  MpiWorld(std::vector<int> devices, std::chrono::milliseconds timeout, bool switches = false)
      : devices_(std::move(devices)) {
    int provided = 0, size = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != static_cast<int>(devices_.size())) {
      MPI_Finalize();
      throw RunError("mpirun started " + std::to_string(size) + " processes but the " +
                     (switches ? "plans of the run have " : "plan has ") + std::to_string(devices_.size()) +
                     " devices: run it with mpirun -np " + std::to_string(devices_.size()));
    }
    comm_ = std::make_unique<MpiCommunicator>(devices_, rank_, timeout);
  }
  ~MpiWorld() override {
    comm_.reset(); // its sends are drained first
    MPI_Finalize();
  }
  const std::vector<int> &devices() const override { return devices_; }
  std::vector<int> localDevices() const override { return {devices_[static_cast<size_t>(rank_)]}; }
  Communicator &communicator(int) override { return *comm_; }
  void fail(const std::string &) override {} // this process's one device is the one that failed

private:
  std::vector<int> devices_;
  int rank_ = 0;
  std::unique_ptr<MpiCommunicator> comm_;
};

} // namespace

bool mpiAvailable() {
  return true;
}

int launcherRank() {
  for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char *value = std::getenv(name))
      return std::atoi(value);
  return -1;
}

RunResult runMpi(const std::map<int, ir::DeviceProgram> &programs, const ModelInfo &model, const RunOptions &options) {
  return runMpi(RunPlans{{&programs}, {}, {}, {}}, model, options);
}

RunResult runMpi(const RunPlans &plans, const ModelInfo &model, const RunOptions &options) {
  MpiWorld world(plans.devices(), options.timeout, plans.plans.size() > 1);
  try {
    return train(world, plans, model, options);
  } catch (const std::exception &e) {
    // The other processes may wait on this one: end them all.
    std::fprintf(stderr, "hspmc train: error: %s\n", e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return {};
}

} // namespace hspmd::runtime
