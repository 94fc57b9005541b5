// Communicator.h - how the devices of a run talk: point-to-point messages and a collective
// "exchange" on which every collective of a DeviceProgram is built (docs/cli.md: each member's
// output element is the sum, or the copy, of the members' input elements with that global
// index). Backends: threads (ThreadsWorld, every device a thread of one process) and MPI.
//
// No call waits forever: each wait has a deadline, and a device that fails stops the
// others' waits. Both end in a CommError naming the peer that did not come.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace hspmd::runtime {

struct CommError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A device's death, injected (hspmc train --fail): its thread stops where it is thrown.
struct DeviceDeath : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// "120", "0.2": a timeout as the messages print it (seconds).
std::string formatSeconds(std::chrono::milliseconds timeout);

/// One member's contribution to an exchange: its input buffer (null when it has none) and
/// the global region it holds.
struct Piece {
  const void *data = nullptr;
  std::vector<int64_t> lo, hi;
  int partial = 0; // reductions: which partial sum it holds
};

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int device() const = 0;
  /// Queues a message (the call returns without waiting for the receiver).
  virtual void send(int peer, int64_t tag, std::vector<char> message) = 0;
  /// The message `peer` sent with `tag`.
  virtual std::vector<char> recv(int peer, int64_t tag) = 0;
  /// The message each of `peers` (distinct) sent with `tag`, handed to `use` in the order
  /// they arrive: every receive is in flight at once (on MPI, whichever peer's message comes
  /// first is taken first). One deadline covers them all.
  virtual void recvEach(const std::vector<int> &peers, int64_t tag,
                        const std::function<void(int peer, std::vector<char> message)> &use) {
    for (int peer : peers)
      use(peer, recv(peer, tag));
  }
  /// Every member of `group` (the same list, in the same order, on every member) offers its
  /// piece; `use` sees all of them, in group order, and may read their data; the call
  /// returns once every member's `use` has returned. `bytes` is the size of `mine.data`.
  virtual void exchange(const std::vector<int> &group, int64_t tag, const Piece &mine, int64_t bytes,
                        const std::function<void(const std::vector<Piece> &)> &use) = 0;
  /// Waits for every device of the run.
  virtual void barrier() = 0;
  /// Waits until every message this device sent has been taken by its receiver (or the
  /// receiver is dead), so that a death right after leaves no message unread. Threads: a
  /// sent message is already in the receiver's hands.
  virtual void flush() {}
  /// Why this device's waits would end now though nothing they wait for failed (a failure
  /// elsewhere in the run: the CommError text they would throw), or empty while it goes on.
  /// For waits outside the communicator (NCCL's on a GPU, runtime/gpu/GpuNccl.h), so that they
  /// end as its own do. Threads: the world's failure, but in a shielded section. MPI: none yet (its
  /// waits learn of a death by heartbeats, which run only where a run goes on after one, and
  /// the NCCL backend refuses that).
  virtual std::string stopped() const { return {}; }
};

/// Where the devices of a run live, as one process sees them: what the one training loop
/// (runtime/Training.h) needs of a backend beyond each device's Communicator. Threads: every
/// device is local; MPI: one device per process.
class World {
public:
  virtual ~World() = default;
  /// Every device of the run, in increasing id order (the same list in every process).
  virtual const std::vector<int> &devices() const = 0;
  /// The devices this process runs.
  virtual std::vector<int> localDevices() const = 0;
  /// A local device's communicator (owned by the world).
  virtual Communicator &communicator(int device) = 0;
  /// Stops every wait of this process's devices: they throw CommError with `reason`.
  virtual void fail(const std::string &reason) = 0;
  /// Shields `device`'s waits from failures elsewhere while `on` (a step's update, after its
  /// commit: it completes unless one of its own peers dies).
  virtual void shield(int /*device*/, bool /*on*/) {}
  /// A device of this process has died (`what`: how, for the user): every wait of the others
  /// throws CommError, and they may agree() to go on without it. On MPI its process ends.
  virtual void markDead(int device, const std::string & /*what*/) {
    fail("device " + std::to_string(device) + " died");
  }
  /// After a death, each live device calls this: it returns, on every one of them, the same
  /// list of the devices alive (increasing), once each has called it; a device that does not
  /// come within the timeout is taken for dead. Every message and collective in flight is
  /// dropped: the survivors start afresh. Throws CommError after a failure that is not a
  /// death, or where the backend cannot agree.
  /// A device that died comes back: the next agreement waits for it too (threads: its thread
  /// is let in; MPI: the spare process of that return takes its place).
  virtual void admit(int /*device*/) {}
  /// Called by a device that died and will come back: waits until it is admitted (true), or
  /// the run ends or fails (false).
  virtual bool awaitAdmission(int /*device*/) { return false; }
  /// The run is over: devices waiting to come back give up.
  virtual void finish() {}
  /// Agreements completed so far (after agree() returns, the same on every survivor).
  virtual int64_t agreements() { return 0; }
  /// Whether `device` may still agree: not dead, not taken for dead (a failed recovery is
  /// tried again only then).
  virtual bool alive(int /*device*/) { return true; }
  virtual std::vector<int> agree(int device) {
    throw CommError("device " + std::to_string(device) +
                    " cannot go on after a device's death: recovery needs the threads backend (not yet on MPI)");
  }
};

/// The sum of `value` over every device of `devices` (each calls it with the same list),
/// added in list order: the same bits on every device and on every backend.
double sumOverDevices(Communicator &comm, const std::vector<int> &devices, int64_t tag, double value);
/// Every device's `value`, in the order of `devices`, on every device of them.
std::vector<double> gatherOverDevices(Communicator &comm, const std::vector<int> &devices, int64_t tag, double value);

/// The shared state of a threads run: mailboxes and rendezvous, guarded by one mutex. Each
/// device waits on its own condition variable and is woken only by what concerns it (a
/// message to it, its group's rendezvous, a barrier, a failure): with more devices than
/// cores, waking every waiter on every event cost measurable time. Before it sleeps, a
/// waiting device polls its event counter for up to `spin` (yielding the core between polls):
/// a sleeping thread's wake-up took 25-60 us on the 2-core machine, and an exchange has two
/// rendezvous (bench_simulate's dp2_zero spent most of its collectives' time in them).
class ThreadsWorld : public World {
public:
  /// How long a waiting device polls before it sleeps, by default.
  static constexpr std::chrono::microseconds kSpin{50};
  explicit ThreadsWorld(std::vector<int> devices, std::chrono::milliseconds timeout = std::chrono::seconds(120),
                        std::chrono::microseconds spin = kSpin);
  Communicator &communicator(int device) override;
  void fail(const std::string &reason) override;
  void shield(int device, bool on) override;
  void markDead(int device, const std::string &what) override;
  void admit(int device) override;
  bool awaitAdmission(int device) override;
  void finish() override;
  int64_t agreements() override;
  bool alive(int device) override;
  std::vector<int> agree(int device) override;
  const std::vector<int> &devices() const override { return devices_; }
  std::vector<int> localDevices() const override { return devices_; }

private:
  friend class ThreadsCommunicator;
  struct Rendezvous {
    std::vector<Piece> pieces;
    std::vector<bool> posted;
    int arrived = 0, finished = 0, left = 0;
  };
  struct Waiter {
    std::condition_variable wakeup;
    std::atomic<uint64_t> events{0}; // bumped (under the mutex) with every notify
    void notify() {
      events.fetch_add(1, std::memory_order_release);
      wakeup.notify_all();
    }
  };
  std::vector<int> devices_;
  std::chrono::milliseconds timeout_;
  std::chrono::microseconds spin_;
  std::mutex mutex_;
  std::map<int, Waiter> waiters_; // per device
  std::string failure_;
  bool fatal_ = false;         // failure_ is not a death: no agreement goes on from it
  std::set<int> dead_;         // devices that died
  std::set<int> shielded_;     // devices in a shielded section
  bool over_ = false;          // the run has ended
  std::set<int> agreed_;       // devices in the current agreement
  int64_t agreements_ = 0;     // agreements completed
  std::vector<int> survivors_; // the last agreement's outcome
  std::map<std::tuple<int, int, int64_t>, std::deque<std::vector<char>>> mailboxes_; // (from, to, tag)
  std::map<std::pair<int64_t, std::vector<int>>, Rendezvous> rendezvous_;            // (tag, group)
  int barrierArrived_ = 0;
  int64_t barrierGeneration_ = 0;
  std::map<int, std::unique_ptr<Communicator>> communicators_;
};

} // namespace hspmd::runtime
