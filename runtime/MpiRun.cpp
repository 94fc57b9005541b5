#include "runtime/MpiRun.h"

#define OMPI_SKIP_MPICXX 1 // the C API only
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <list>
#include <thread>

extern "C" void openblas_set_num_threads(int);

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
      int flag = 0;
      MPI_Status status;
      MPI_Iprobe(source, 0, MPI_COMM_WORLD, &flag, &status);
      if (flag) {
        int count = 0;
        MPI_Get_count(&status, MPI_BYTE, &count);
        std::vector<char> buffer(static_cast<size_t>(count));
        MPI_Recv(buffer.data(), count, MPI_BYTE, source, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int64_t got = 0;
        std::memcpy(&got, buffer.data(), 8);
        early_[{source, got}].emplace_back(buffer.begin() + 8, buffer.end());
        continue;
      }
      progress();
      if (Clock::now() > deadline)
        throw CommError("device " + std::to_string(device()) + " waited " + formatSeconds(timeout_) +
                        " s for a message from device " + std::to_string(peer) + " (tag " + std::to_string(tag) + ")");
      pause(spins);
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
      std::memcpy(message.data() + 16, mine.lo.data(), 8 * mine.lo.size());
      std::memcpy(message.data() + 16 + 8 * mine.lo.size(), mine.hi.data(), 8 * mine.hi.size());
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
      std::memcpy(pieces[i].lo.data(), received[i].data() + 16, 8 * rank);
      std::memcpy(pieces[i].hi.data(), received[i].data() + 16 + 8 * rank, 8 * rank);
      pieces[i].data = received[i].data() + 16 + 16 * rank;
    }
    use(pieces);
  }

  void barrier() override {
    MPI_Request request;
    MPI_Ibarrier(MPI_COMM_WORLD, &request);
    wait(request, "every device at a barrier");
  }

  // Sums one value over all processes.
  double sum(double value) {
    double total = 0;
    MPI_Request request;
    MPI_Iallreduce(&value, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &request);
    wait(request, "every device to report its loss");
    return total;
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
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<int> devices;
  for (const auto &[device, program] : programs)
    devices.push_back(device);
  if (size != static_cast<int>(devices.size())) {
    MPI_Finalize();
    throw RunError("mpirun started " + std::to_string(size) + " processes but the plan has " +
                   std::to_string(devices.size()) + " devices: run it with mpirun -np " +
                   std::to_string(devices.size()));
  }
  openblas_set_num_threads(1);
  RunResult result;
  result.tokensPerStep = model.batch * model.seq;
  try {
    MpiCommunicator comm(devices, rank, options.timeout);
    const std::string fingerprint = ParameterStore::fingerprint(model.name, model.params);
    ParameterStore store = options.load.empty() ? ParameterStore::initial(fingerprint, model.params, options.seed)
                                                : ParameterStore::load(options.load, fingerprint);
    const Dataset data = Dataset::load(options.data, model.vocab);
    DeviceExecutor executor(programs.at(devices[static_cast<size_t>(rank)]), comm);
    if (auto generated = options.generated.find(devices[static_cast<size_t>(rank)]);
        generated != options.generated.end())
      executor.setPhases(generated->second);
    executor.load(store);
    if (!options.trace.empty())
      executor.trace(Clock::now());
    const int64_t firstStep = store.step;
    const auto start = Clock::now();
    Progress progress(options.progress, firstStep, options.steps, result.tokensPerStep);
    for (int64_t s = 0; s < options.steps; ++s) {
      const int64_t step = firstStep + s + 1;
      const double loss = comm.sum(executor.step(data.batchFor(step - 1, model.batch, model.seq), step));
      result.losses.push_back(loss);
      if (s + 1 == kTracedSteps)
        executor.stopTracing();
      if (rank == 0)
        progress.step(s, result.losses);
    }
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    // Times and checkpoint regions go to rank 0.
    double mine[2] = {executor.times().busy, executor.times().communicating};
    std::vector<double> all(static_cast<size_t>(2 * size));
    MPI_Gather(mine, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (int r = 0; r < size; ++r)
      result.times[devices[static_cast<size_t>(r)]] = {all[static_cast<size_t>(2 * r)],
                                                       all[static_cast<size_t>(2 * r + 1)]};
    if (!options.save.empty()) {
      // Every rank writes its regions into its copy of the store; rank 0 takes each other
      // rank's copy, one tensor at a time, where that rank holds it.
      // The same tensors on every rank: the optimizer state of every program, not only this one's.
      for (const auto &[device, program] : programs)
        for (const ir::Buffer &b : program.buffers)
          if (b.role == ir::BufferRole::State && !store.tensors.count(ir::storeName(b))) {
            const std::string name = ir::storeName(b);
            const GlobalTensor &param = store.tensors.at(name.substr(0, name.rfind('.')));
            store.tensors[name] = {param.shape, std::vector<float>(param.data.size(), 0.0f)};
          }
      executor.save(store);
      for (int r = 1; r < size; ++r)
        for (auto &[name, tensor] : store.tensors) {
          std::vector<float> theirs(tensor.data.size());
          if (rank == r)
            MPI_Send(tensor.data.data(), static_cast<int>(tensor.data.size()), MPI_FLOAT, 0, 1, MPI_COMM_WORLD);
          if (rank == 0) {
            MPI_Recv(theirs.data(), static_cast<int>(theirs.size()), MPI_FLOAT, r, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            copyRegions(programs.at(devices[static_cast<size_t>(r)]), name, {tensor.shape, theirs}, tensor);
          }
        }
      if (rank == 0)
        store.save(options.save);
    }
    if (!options.trace.empty()) {
      // Every rank's events go to rank 0: names joined by newlines, then (communication,
      // start, seconds) per event.
      std::string names;
      std::vector<double> numbers;
      for (const TraceEvent &e : executor.events()) {
        names += e.name + "\n";
        numbers.insert(numbers.end(), {e.communication ? 1.0 : 0.0, e.start, e.seconds});
      }
      std::map<int, std::vector<TraceEvent>> traced;
      for (int r = 0; r < size; ++r) {
        if (r == 0 && rank == 0) {
          traced[devices[0]] = executor.events();
          continue;
        }
        int64_t counts[2] = {static_cast<int64_t>(names.size()), static_cast<int64_t>(numbers.size())};
        if (rank == r) {
          MPI_Send(counts, 2, MPI_INT64_T, 0, 2, MPI_COMM_WORLD);
          MPI_Send(names.data(), static_cast<int>(names.size()), MPI_CHAR, 0, 3, MPI_COMM_WORLD);
          MPI_Send(numbers.data(), static_cast<int>(numbers.size()), MPI_DOUBLE, 0, 4, MPI_COMM_WORLD);
        } else if (rank == 0) {
          MPI_Recv(counts, 2, MPI_INT64_T, r, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          std::string theirNames(static_cast<size_t>(counts[0]), '\0');
          std::vector<double> theirNumbers(static_cast<size_t>(counts[1]));
          MPI_Recv(theirNames.data(), static_cast<int>(counts[0]), MPI_CHAR, r, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          MPI_Recv(theirNumbers.data(), static_cast<int>(counts[1]), MPI_DOUBLE, r, 4, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
          auto &list = traced[devices[static_cast<size_t>(r)]];
          size_t at = 0;
          for (size_t i = 0; i + 2 < theirNumbers.size(); i += 3) {
            const size_t end = theirNames.find('\n', at);
            list.push_back(
                {theirNames.substr(at, end - at), theirNumbers[i] != 0, theirNumbers[i + 1], theirNumbers[i + 2]});
            at = end + 1;
          }
        }
      }
      if (rank == 0)
        writeTrace(options.trace, traced);
    }
    if (rank == 0 && options.progress)
      printSummary(*options.progress, result.times, result.seconds);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "hspmc train: error: %s\n", e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  if (rank != 0)
    result.losses.clear(); // only rank 0 reports
  return result;
}

} // namespace hspmd::runtime
