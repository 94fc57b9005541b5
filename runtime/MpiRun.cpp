// MpiRun.cpp - the MPI backend: one device per process (runtime/MpiRun.h).
#include "runtime/MpiRun.h"

#define OMPI_SKIP_MPICXX 1 // the C API only
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include "ir/Tags.h"
#include "ir/Words.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <list>
#include <memory>
#include <mutex>
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

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// Who is alive, as this process sees it (runs that go on after a death, --recover): each
// process's heartbeat thread records when it last heard from every other, and a process not
// heard from for `limit` is dead. `gone`: dead by an agreement (no longer watched).
struct Liveness {
  Liveness(int ranks, int self, std::chrono::milliseconds silence)
      : me(self), limit(silence), lastHeard(static_cast<size_t>(ranks)), gone(static_cast<size_t>(ranks)) {
    for (auto &heard : lastHeard)
      heard = nowNs();
  }
  int me;
  std::chrono::milliseconds limit;
  std::vector<std::atomic<int64_t>> lastHeard;
  std::vector<std::atomic<bool>> gone;
  std::atomic<bool> shielded{false};

  bool silent(int rank) const {
    const auto r = static_cast<size_t>(rank);
    return rank != me && !gone[r] &&
           nowNs() - lastHeard[r].load() > std::chrono::duration_cast<std::chrono::nanoseconds>(limit).count();
  }
  // The first process that fell silent, or -1.
  int suspect() const {
    for (int r = 0; r < static_cast<int>(gone.size()); ++r)
      if (silent(r))
        return r;
    return -1;
  }
};

class MpiCommunicator : public Communicator {
public:
  // `comm`: the run's communicator (one process per device, ranks in device order);
  // `liveness`: null where the run does not watch for deaths.
  MpiCommunicator(std::vector<int> devices, int rank, MPI_Comm comm, std::chrono::milliseconds timeout,
                  const Liveness *liveness)
      : devices_(std::move(devices)), rank_(rank), comm_(comm), timeout_(timeout), liveness_(liveness) {
    for (size_t r = 0; r < devices_.size(); ++r)
      members_.push_back(static_cast<int>(r));
  }
  ~MpiCommunicator() override { drain(); }

  /// A spare process took a device's place (a return on MPI): `devices` by world rank.
  void remap(std::vector<int> devices) { devices_ = std::move(devices); }

  int device() const override { return devices_[static_cast<size_t>(rank_)]; }

  /// After an agreement: talks only to `survivors` (world ranks, increasing) on `comm`, a
  /// communicator of them; what was in flight on the old one is dropped (and what arrives
  /// there from now on is received and thrown away, so that no sender waits on it).
  void adopt(std::vector<int> survivors, MPI_Comm comm) {
    retiredSends_.splice(retiredSends_.end(), pending_); // MPI may still read them: kept until done

    for (Pending &p : receiving_) // unfinished: from a sender that died; their buffers stay
      abandoned_.push_back(std::move(p));
    receiving_.clear();
    early_.clear();
    retired_.push_back(comm_);
    comm_ = comm;
    members_ = std::move(survivors);
    barriers_ = 0;
  }

  void send(int peer, int64_t tag, std::vector<char> message) override {
    Pending &p = pending_.emplace_back();
    p.peer = peer;
    p.buffer.resize(8 + message.size());
    std::memcpy(p.buffer.data(), &tag, 8);
    if (!message.empty()) // a barrier's message is empty
      std::memcpy(p.buffer.data() + 8, message.data(), message.size());
    MPI_Isend(p.buffer.data(), static_cast<int>(p.buffer.size()), MPI_BYTE, rankOf(peer), 0, comm_, &p.request);
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
      watch({peer});
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
        watch(waiting);
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

  // Point to point through the first member (no collective: one that includes a dead
  // process never ends).
  void barrier() override {
    const int64_t tag = ir::tags::barrier(barriers_++);
    const int first = devices_[static_cast<size_t>(members_.front())];
    if (device() != first) {
      send(first, tag, {});
      recv(first, tag);
      return;
    }
    std::vector<int> others;
    for (int r : members_)
      if (devices_[static_cast<size_t>(r)] != first)
        others.push_back(devices_[static_cast<size_t>(r)]);
    recvEach(others, tag, [](int, std::vector<char>) {});
    for (int other : others)
      send(other, tag, {});
  }

  // Waits until every message this device sent has been taken by its receiver, or the
  // receiver died (OpenMPI reads a large message from the sender's memory: a sender that
  // dies first leaves it unread).
  void flush() override {
    const auto deadline = Clock::now() + timeout_;
    int spins = 0;
    for (;;) {
      progress();
      for (auto it = pending_.begin(); it != pending_.end();) {
        const auto r = std::find(devices_.begin(), devices_.end(), it->peer) - devices_.begin();
        const auto next = std::next(it);
        if (liveness_ && liveness_->silent(static_cast<int>(r)))
          retiredSends_.splice(retiredSends_.end(), pending_, it); // never done: MPI may still read it
        it = next;
      }
      if (pending_.empty())
        return;
      if (Clock::now() > deadline)
        throw CommError("device " + std::to_string(device()) + " waited " + formatSeconds(timeout_) + " s for device " +
                        std::to_string(pending_.front().peer) + " to take its message");
      pause(spins);
    }
  }

  void drain() {
    const auto deadline = Clock::now() + timeout_;
    int spins = 0;
    while (!pending_.empty() && Clock::now() < deadline) {
      progress();
      pause(spins);
    }
  }

  // The rank of `device` in the communicator now in use.
  int rankOf(int device) const {
    auto it = std::find(devices_.begin(), devices_.end(), device);
    if (it == devices_.end())
      throw CommError("device " + std::to_string(device) + " is not in this run");
    auto member = std::find(members_.begin(), members_.end(), static_cast<int>(it - devices_.begin()));
    if (member == members_.end())
      throw CommError("device " + std::to_string(device) + " is no longer in the run (it died)");
    return static_cast<int>(member - members_.begin());
  }

private:
  struct Pending {
    std::vector<char> buffer;
    MPI_Request request;
    int peer = -1; // sends: the receiving device
  };
  std::vector<int> devices_;
  int rank_; // in MPI_COMM_WORLD
  MPI_Comm comm_;
  std::chrono::milliseconds timeout_;
  const Liveness *liveness_;
  std::vector<int> members_;      // the world ranks of comm_, increasing
  std::vector<MPI_Comm> retired_; // communicators of earlier agreements
  int64_t barriers_ = 0;
  std::list<Pending> pending_;      // sends
  std::list<Pending> receiving_;    // receives under way (the last), or left unfinished by a death
  std::list<Pending> dropping_;     // receives on retired communicators
  std::list<Pending> abandoned_;    // receives from senders that died (MPI may still hold them)
  std::list<Pending> retiredSends_; // sends on retired communicators (to a dead process: never done)
  std::map<std::pair<int, int64_t>, std::vector<std::vector<char>>> early_; // (rank in comm_, tag)

  // A wait notices a death: where a process it waits on fell silent, or any did and the
  // device is not in a shielded section (a step's update goes on unless its own peers die).
  void watch(const std::vector<int> &awaited) const {
    if (!liveness_)
      return;
    int dead = -1;
    if (!liveness_->shielded) {
      dead = liveness_->suspect();
    } else {
      for (int peer : awaited) {
        const int r = static_cast<int>(std::find(devices_.begin(), devices_.end(), peer) - devices_.begin());
        if (liveness_->silent(r)) {
          dead = r;
          break;
        }
      }
    }
    if (dead >= 0)
      throw CommError(silentOne(dead));
  }

  std::string silentOne(int rank) const {
    return "device " + std::to_string(devices_[static_cast<size_t>(rank)]) + " stopped answering (no heartbeat for " +
           formatSeconds(liveness_->limit) + " s)";
  }

public:
  // A death that the heartbeats know of, outside a shielded section: what ends the NCCL
  // backend's waits on the GPU (GpuNccl.h), whose peers the host does not know, at once rather
  // than at the timeout, so that the survivors recover.
  std::string stopped() const override {
    if (!liveness_ || liveness_->shielded)
      return {};
    const int dead = liveness_->suspect();
    return dead < 0 ? std::string() : silentOne(dead);
  }

private:
  // Receives one message that has arrived from `source` (or any rank), if there is one, and
  // files it by its sender and tag. The receive is matched to the probe and polled: a sender
  // that dies halfway through a large message leaves it unfinished, and the wait notices.
  bool takeArrived(int source) {
    int flag = 0;
    MPI_Message matched;
    MPI_Status status;
    MPI_Improbe(source, 0, comm_, &flag, &matched, &status);
    if (!flag)
      return false;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    Pending &receive = receiving_.emplace_back();
    receive.buffer.resize(static_cast<size_t>(count));
    MPI_Imrecv(receive.buffer.data(), count, MPI_BYTE, &matched, &receive.request);
    const auto deadline = Clock::now() + timeout_;
    const int from = devices_[static_cast<size_t>(members_[static_cast<size_t>(status.MPI_SOURCE)])];
    int done = 0, spins = 0;
    while (!done) {
      MPI_Test(&receive.request, &done, MPI_STATUS_IGNORE);
      if (done)
        break;
      progress();
      watch({from}); // on a throw the receive stays in receiving_, never finished
      if (Clock::now() > deadline)
        throw CommError("device " + std::to_string(device()) + " waited " + formatSeconds(timeout_) +
                        " s for the rest of a message from device " + std::to_string(from));
      pause(spins);
    }
    std::vector<char> buffer = std::move(receive.buffer);
    receiving_.pop_back();
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
    for (MPI_Comm old : retired_) { // what the survivors sent before an agreement, thrown away
      int flag = 0;
      MPI_Message matched;
      MPI_Status status;
      MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, old, &flag, &matched, &status);
      if (flag) {
        int count = 0;
        MPI_Get_count(&status, MPI_BYTE, &count);
        Pending &dropped = dropping_.emplace_back();
        dropped.buffer.resize(static_cast<size_t>(count));
        MPI_Imrecv(dropped.buffer.data(), count, MPI_BYTE, &matched, &dropped.request);
      }
    }
    for (auto it = retiredSends_.begin(); it != retiredSends_.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? retiredSends_.erase(it) : std::next(it);
    }
    for (auto it = dropping_.begin(); it != dropping_.end();) { // one from a dead sender never ends
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? dropping_.erase(it) : std::next(it);
    }
  }
};

// The run's world in this process: MPI initialised, its one device and communicator. A run
// that goes on after a death (`elastic`) also runs a heartbeat thread (MPI_THREAD_MULTIPLE)
// and agrees on the survivors through a coordinator (docs/elastic.md, "On MPI").
class MpiWorld : public World {
public:
  // `devices`: the run's, one process each in order; then one spare process per return (a
  // `join` in the fault trace), which takes part in every step with nothing to do (a device
  // id of its own past the run's) until it takes the place of the device that comes back.
  MpiWorld(std::vector<int> devices, const RunOptions &options, bool switches, bool elastic)
      : devices_(std::move(devices)), timeout_(options.timeout) {
    const size_t runDevices = devices_.size();
    for (const Fault &f : options.faults)
      if (f.phase == FaultPhase::Join)
        joins_.push_back(f);
    std::stable_sort(joins_.begin(), joins_.end(), [](const Fault &a, const Fault &b) { return a.step < b.step; });
    served_.assign(joins_.size(), false);
    const int last = devices_.empty() ? -1 : devices_.back();
    for (size_t k = 0; k < joins_.size(); ++k)
      devices_.push_back(last + 1 + static_cast<int>(k));
    ids_ = devices_;
    firstSpare_ = static_cast<int>(runDevices);
    int provided = 0, size = 0;
    MPI_Init_thread(nullptr, nullptr, elastic ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != static_cast<int>(devices_.size()))
      throw SameEverywhereError( // MPI is closed once the first process has said it
          "mpirun started " + ir::counted(size, "process", "processes") + " but the " +
          (switches ? "plans of the run have " : "plan has ") +
          ir::counted(static_cast<int64_t>(runDevices), "device") +
          (joins_.empty() ? std::string()
                          : " and the fault trace " + std::to_string(joins_.size()) +
                                (joins_.size() == 1 ? " return" : " returns") + " (a spare process each)") +
          ": run it with mpirun -np " + std::to_string(devices_.size()));
    if (elastic && provided < MPI_THREAD_MULTIPLE) {
      MPI_Finalize();
      throw RunError("going on after a death on MPI needs MPI_THREAD_MULTIPLE (a heartbeat thread beside the "
                     "device's), which this MPI library does not offer");
    }
    // A call that involves a dead process returns an error instead of ending this one.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm data = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &data);
    if (elastic) {
      MPI_Comm_dup(MPI_COMM_WORLD, &control_);
      MPI_Comm_dup(MPI_COMM_WORLD, &beats_);
      liveness_ = std::make_unique<Liveness>(size, rank_, options.heartbeat);
      heartbeat_ = std::thread([this] { beat(); });
    }
    comm_ = std::make_unique<MpiCommunicator>(devices_, rank_, data, timeout_, liveness_.get());
  }
  ~MpiWorld() override {
    // The heartbeat first: its MPI calls progress every send, the retired ones too.
    if (heartbeat_.joinable()) {
      {
        std::lock_guard lock(beatMutex_);
        stopping_ = true;
      }
      beatWake_.notify_all();
      heartbeat_.join();
    }
    comm_.reset(); // its sends are drained first
    // OpenMPI 4.1 (no ULFM) at times waits forever in MPI_Finalize after a process of the job
    // died (about one run in five here): after a death the survivors, their messages
    // delivered (the barrier at the end of runMpi), leave without it. (An agreement with every
    // process alive, a switch for a straggler, leaves MPI whole.)
    if (!lostAny_)
      MPI_Finalize();
  }
  const std::vector<int> &devices() const override { return ids_; }
  std::vector<int> localDevices() const override { return {devices_[static_cast<size_t>(rank_)]}; }
  // A device comes back: the spare process of its return takes its place (its old process is
  // dead). Every process makes the same change: the k-th return is the k-th spare's.
  void admit(int device) override {
    for (size_t k = 0; k < joins_.size(); ++k)
      if (!served_[k] && joins_[k].device == device) {
        served_[k] = true;
        for (int &d : devices_)
          if (d == device)
            d = -1 - d; // the dead process's: no device now
        devices_[static_cast<size_t>(firstSpare_) + k] = device;
        comm_->remap(devices_);
        return;
      }
  }
  Communicator &communicator(int) override { return *comm_; }
  void fail(const std::string &) override {} // this process's one device is the one that failed

  // An injected death (hspmc train --fail): the process ends as a killed one would, at once.
  void markDead(int, const std::string &what) override {
    std::fprintf(stderr, "hspmc train: %s (--fail): its process kills itself (SIGKILL)\n", what.c_str());
    std::fflush(stderr);
    std::raise(SIGKILL);
  }
  void shield(int, bool on) override {
    if (liveness_)
      liveness_->shielded = on;
  }
  int64_t agreements() override { return agreements_; }
  bool alive(int) override { return !gaveUp_; }

  // The survivors agree: the lowest process alive (as each sees it) coordinates; each other
  // tells it that it is alive and waits for its decision, taking the next lowest where the
  // coordinator falls silent. The coordinator waits for every process not silent, up to the
  // timeout, and sends the list of those that came. Then they build a communicator of their
  // own and talk only on it.
  std::vector<int> agree(int device) override {
    if (!liveness_)
      throw CommError("device " + std::to_string(device) +
                      " cannot go on after a death: the run was not started "
                      "with --recover");
    const int round = static_cast<int>(agreements_);
    const int aliveTag = 2 * round, decisionTag = 2 * round + 1;
    const auto deadline = Clock::now() + timeout_;
    const int size = static_cast<int>(devices_.size());
    std::vector<int> decision;
    int told = -1, spins = 0; // the coordinator this process told it is alive
    while (decision.empty()) {
      int coordinator = 0;
      while (liveness_->gone[static_cast<size_t>(coordinator)] || liveness_->silent(coordinator))
        ++coordinator; // this process is never silent to itself
      if (coordinator == rank_) {
        decision = coordinate(aliveTag, decisionTag, deadline);
        break;
      }
      if (coordinator != told) {
        MPI_Request request;
        MPI_Isend(&kAlive, 1, MPI_INT, coordinator, aliveTag, control_, &request);
        MPI_Request_free(&request);
        told = coordinator;
      }
      int flag = 0;
      MPI_Status status;
      MPI_Iprobe(coordinator, decisionTag, control_, &flag, &status);
      if (flag) {
        int count = 0;
        MPI_Get_count(&status, MPI_INT, &count);
        decision.resize(static_cast<size_t>(count));
        MPI_Recv(decision.data(), count, MPI_INT, coordinator, decisionTag, control_, MPI_STATUS_IGNORE);
        break;
      }
      if (Clock::now() > deadline)
        giveUp("device " + std::to_string(device) + " heard nothing from device " +
               std::to_string(devices_[static_cast<size_t>(coordinator)]) + ", which coordinates the survivors, for " +
               formatSeconds(timeout_) + " s: it gives up");
      pause(spins);
    }
    if (std::find(decision.begin(), decision.end(), rank_) == decision.end())
      giveUp("device " + std::to_string(device) +
             " was taken for dead by the others (it did not join their agreement in time): it gives up");
    for (int r = 0; r < size; ++r)
      if (std::find(decision.begin(), decision.end(), r) == decision.end())
        liveness_->gone[static_cast<size_t>(r)] = true;
    // The survivors' communicator. MPI_Comm_create_group waits for every survivor: it runs
    // beside a wait with the deadline, in case one dies now.
    struct Making {
      MPI_Comm comm = MPI_COMM_NULL;
      std::atomic<bool> done{false};
    };
    auto making = std::make_shared<Making>();
    MPI_Group world = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, static_cast<int>(decision.size()), decision.data(), &group);
    std::thread maker([making, group, round] {
      MPI_Comm_create_group(MPI_COMM_WORLD, group, round, &making->comm);
      making->done = true;
    });
    while (!making->done && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (!making->done) {
      maker.detach();
      giveUp("device " + std::to_string(device) + " could not build the survivors' communicator in " +
             formatSeconds(timeout_) + " s (did a survivor die during the agreement?): it gives up");
    }
    maker.join();
    MPI_Group_free(&group);
    MPI_Group_free(&world);
    comm_->adopt(decision, making->comm);
    ++agreements_;
    lostAny_ = lostAny_ || decision.size() < devices_.size();
    std::vector<int> live;
    for (int r : decision)
      live.push_back(devices_[static_cast<size_t>(r)]);
    std::sort(live.begin(), live.end()); // a spare in a device's place has a higher rank
    return live;
  }

  /// This process left the run (taken for dead, or it could not reach the survivors): it
  /// ends without ending theirs.
  bool gaveUp() const { return gaveUp_; }

private:
  static constexpr int kAlive = 1;
  static constexpr char kBeat = 1;
  std::vector<int> devices_; // by world rank: the device each process runs now
  std::vector<int> ids_;     // the run's devices, then the spares' ids (devices())
  std::vector<Fault> joins_; // the returns, in step order: the k-th is served by the k-th spare
  std::vector<bool> served_;
  int firstSpare_ = 0;
  std::chrono::milliseconds timeout_;
  int rank_ = 0;
  std::unique_ptr<MpiCommunicator> comm_;
  std::unique_ptr<Liveness> liveness_;
  MPI_Comm control_ = MPI_COMM_NULL, beats_ = MPI_COMM_NULL;
  std::thread heartbeat_;
  std::mutex beatMutex_;
  std::condition_variable beatWake_;
  bool stopping_ = false;
  int64_t agreements_ = 0;
  bool lostAny_ = false; // an agreement left a process out
  bool gaveUp_ = false;
  std::list<std::vector<int>> decisions_; // sent: their buffers live as long as the world

  [[noreturn]] void giveUp(const std::string &why) {
    gaveUp_ = true;
    throw CommError(why);
  }

  // The coordinator's side of an agreement: the world ranks of the survivors, increasing.
  std::vector<int> coordinate(int aliveTag, int decisionTag, Clock::time_point deadline) {
    std::vector<int> members = {rank_}, waiting;
    for (int r = 0; r < static_cast<int>(devices_.size()); ++r)
      if (r != rank_ && !liveness_->gone[static_cast<size_t>(r)])
        waiting.push_back(r);
    int spins = 0;
    while (!waiting.empty() && Clock::now() < deadline) { // those that do not come in time are dead
      for (auto r = waiting.begin(); r != waiting.end();) {
        int flag = 0, alive = 0;
        MPI_Iprobe(*r, aliveTag, control_, &flag, MPI_STATUS_IGNORE);
        if (flag) {
          MPI_Recv(&alive, 1, MPI_INT, *r, aliveTag, control_, MPI_STATUS_IGNORE);
          members.push_back(*r);
          r = waiting.erase(r);
        } else if (liveness_->silent(*r)) {
          r = waiting.erase(r);
        } else {
          ++r;
        }
      }
      pause(spins);
    }
    std::sort(members.begin(), members.end());
    const std::vector<int> &sent = decisions_.emplace_back(members);
    for (int r : members)
      if (r != rank_) {
        MPI_Request request;
        MPI_Isend(sent.data(), static_cast<int>(sent.size()), MPI_INT, r, decisionTag, control_, &request);
        MPI_Request_free(&request);
      }
    return members;
  }

  // Every tenth of the heartbeat period: a beat to each process not known dead, and every
  // beat that came recorded.
  void beat() {
    std::unique_lock lock(beatMutex_);
    while (!stopping_) {
      for (int r = 0; r < static_cast<int>(devices_.size()); ++r)
        if (r != rank_ && !liveness_->gone[static_cast<size_t>(r)]) {
          MPI_Request request;
          MPI_Isend(&kBeat, 1, MPI_BYTE, r, 0, beats_, &request);
          MPI_Request_free(&request);
        }
      for (int flag = 1; flag;) {
        MPI_Status status;
        MPI_Iprobe(MPI_ANY_SOURCE, 0, beats_, &flag, &status);
        if (flag) {
          char got = 0;
          MPI_Recv(&got, 1, MPI_BYTE, status.MPI_SOURCE, 0, beats_, MPI_STATUS_IGNORE);
          liveness_->lastHeard[static_cast<size_t>(status.MPI_SOURCE)] = nowNs();
        }
      }
      beatWake_.wait_for(lock, liveness_->limit / 10, [this] { return stopping_; });
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

void reportRunError(const std::string &program, const std::exception &error) {
  const bool everywhere = dynamic_cast<const SameEverywhereError *>(&error) != nullptr;
  if (!everywhere || launcherRank() <= 0) {
    const std::string line = program + ": error: " + error.what() + "\n";
    std::cerr << line; // one write; std::cout, tied to it, is flushed first
  }
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (everywhere && initialised && !finalised) {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
  }
}

RunResult runMpi(const std::map<int, ir::DeviceProgram> &programs, const ModelInfo &model, const RunOptions &options) {
  return runMpi(RunPlans{{&programs}, {}, {}, {}}, model, options);
}

RunResult runMpi(const RunPlans &plans, const ModelInfo &model, const RunOptions &options) {
  // An agreement needs the elastic world: after a death, or to switch for a straggler.
  const bool elastic = !plans.recoveries.empty() || killsDevices(options.faults) || options.stragglers;
  MpiWorld world(plans.devices(), options, plans.plans.size() > 1, elastic);
  try {
    RunResult result = train(world, plans, model, options);
    world.communicator(0).barrier(); // every survivor's heartbeat goes on until all are done
    return result;
  } catch (const std::exception &e) {
    recordExit(1, false);
    if (world.gaveUp()) { // the survivors go on without this process
      std::fprintf(stderr, "hspmc train: error: %s\n", e.what());
      std::fflush(stderr);
      std::_Exit(1);
    }
    // The other processes may wait on this one: end them all.
    std::fprintf(stderr, "hspmc train: error: %s\n", e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return {};
}

} // namespace hspmd::runtime
