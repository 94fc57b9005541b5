// The threads backend: messages are moved between mailboxes; an exchange publishes each
// member's input pointer and lets every member read the others' memory directly (no copy),
// holding all members until everyone has read.
#include "runtime/Communicator.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <thread>

namespace hspmd::runtime {

std::string formatSeconds(std::chrono::milliseconds timeout) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", static_cast<double>(timeout.count()) / 1000.0);
  return text;
}

std::vector<double> gatherOverDevices(Communicator &comm, const std::vector<int> &devices, int64_t tag, double value) {
  std::vector<double> all;
  Piece mine;
  mine.data = &value;
  mine.lo = {0};
  mine.hi = {1};
  comm.exchange(devices, tag, mine, sizeof value, [&](const std::vector<Piece> &pieces) {
    for (const Piece &piece : pieces)
      all.push_back(*static_cast<const double *>(piece.data));
  });
  return all;
}

double sumOverDevices(Communicator &comm, const std::vector<int> &devices, int64_t tag, double value) {
  double sum = 0;
  for (double each : gatherOverDevices(comm, devices, tag, value))
    sum += each;
  return sum;
}

class ThreadsCommunicator : public Communicator {
public:
  ThreadsCommunicator(ThreadsWorld &world, int device) : world_(world), device_(device) {}
  int device() const override { return device_; }

  void send(int peer, int64_t tag, std::vector<char> message) override {
    std::lock_guard lock(world_.mutex_);
    world_.mailboxes_[{device_, peer, tag}].push_back(std::move(message));
    world_.waiters_.at(peer).notify();
  }

  std::vector<char> recv(int peer, int64_t tag) override {
    std::unique_lock lock(world_.mutex_);
    const auto key = std::make_tuple(peer, device_, tag);
    wait(
        lock, [&] { return world_.mailboxes_.count(key) && !world_.mailboxes_[key].empty(); },
        "a message from device " + std::to_string(peer) + " (tag " + std::to_string(tag) + ")",
        [&](int d) { return d == peer; });
    auto &box = world_.mailboxes_[key];
    std::vector<char> message = std::move(box.front());
    box.pop_front();
    if (box.empty())
      world_.mailboxes_.erase(key);
    return message;
  }

  void exchange(const std::vector<int> &group, int64_t tag, const Piece &mine, int64_t,
                const std::function<void(const std::vector<Piece> &)> &use) override {
    const auto self = std::find(group.begin(), group.end(), device_);
    if (self == group.end())
      throw CommError("device " + std::to_string(device_) + " is not in the group of tag " + std::to_string(tag));
    const size_t index = static_cast<size_t>(self - group.begin());
    const int size = static_cast<int>(group.size());
    const auto key = std::make_pair(tag, group);
    std::unique_lock lock(world_.mutex_);
    auto &r = world_.rendezvous_[key];
    if (r.pieces.empty()) {
      r.pieces.resize(group.size());
      r.posted.assign(group.size(), false);
    }
    r.pieces[index] = mine;
    r.posted[index] = true;
    ++r.arrived;
    wakeGroup(group);
    try {
      wait(
          lock, [&] { return world_.rendezvous_[key].arrived == size; }, [&] { return missing(key, group); },
          [&](int d) {
            auto member = std::find(group.begin(), group.end(), d);
            return member != group.end() &&
                   !world_.rendezvous_[key].posted[static_cast<size_t>(member - group.begin())];
          });
    } catch (const CommError &) {
      // Stopped before everyone came: take the piece back (its memory goes with this device),
      // so that no member reads it later.
      auto &left = world_.rendezvous_[key];
      left.pieces[index] = Piece{};
      left.posted[index] = false;
      --left.arrived;
      throw;
    }
    std::vector<Piece> pieces = world_.rendezvous_[key].pieces;
    lock.unlock();
    std::exception_ptr failed;
    try {
      use(pieces);
    } catch (...) {
      failed = std::current_exception();
    }
    lock.lock();
    ++world_.rendezvous_[key].finished;
    wakeGroup(group);
    // Every member stays until all have read its piece (its memory), whatever fails
    // elsewhere: each member that posted reads and finishes without waiting on anyone.
    wait(
        lock, [&] { return world_.rendezvous_[key].finished == size; },
        "the members of group tag " + std::to_string(tag) + " to finish reading", [](int) { return false; }, false);
    if (++world_.rendezvous_[key].left == size)
      world_.rendezvous_.erase(key);
    if (failed)
      std::rethrow_exception(failed);
  }

  void barrier() override {
    std::unique_lock lock(world_.mutex_);
    // After a failure no barrier completes (but in a shielded section): a device arriving
    // last must not pass one that the devices which came before it left by the failure (a
    // plan switch would hold on some devices and not on others).
    if (std::string why = stoppedLocked(); !why.empty())
      throw CommError(why);
    const int64_t generation = world_.barrierGeneration_;
    if (++world_.barrierArrived_ == static_cast<int>(world_.devices_.size() - world_.dead_.size())) {
      world_.barrierArrived_ = 0;
      ++world_.barrierGeneration_;
      for (auto &[device, waiter] : world_.waiters_)
        waiter.notify();
      return;
    }
    wait(
        lock, [&] { return world_.barrierGeneration_ != generation; }, "every device at a barrier",
        [](int) { return false; });
  }

  std::string stopped() const override {
    const std::lock_guard lock(world_.mutex_);
    return stoppedLocked();
  }

private:
  ThreadsWorld &world_;
  int device_;

  /// stopped(), the world's mutex held: this device taken for dead, or a failure elsewhere
  /// outside a shielded section.
  std::string stoppedLocked() const {
    if (world_.dead_.count(device_))
      return "device " + std::to_string(device_) + " was taken for dead by the others";
    if (!world_.failure_.empty() && !world_.shielded_.count(device_))
      return "device " + std::to_string(device_) + " stopped: " + world_.failure_;
    return {};
  }

  void wakeGroup(const std::vector<int> &group) {
    for (int member : group)
      if (member != device_)
        world_.waiters_.at(member).notify();
  }

  std::string missing(const std::pair<int64_t, std::vector<int>> &key, const std::vector<int> &group) {
    std::string who;
    const auto &posted = world_.rendezvous_[key].posted;
    for (size_t i = 0; i < group.size(); ++i)
      if (!posted[i])
        who += (who.empty() ? "" : ", ") + std::to_string(group[i]);
    return "device(s) " + who + " to join the collective (tag " + std::to_string(key.first) + ")";
  }

  /// Polls for an event while the lock is released, for up to the world's spin time; true
  /// if one came (the caller checks again).
  bool poll(std::unique_lock<std::mutex> &lock, ThreadsWorld::Waiter &me) {
    if (world_.spin_.count() <= 0)
      return false;
    const uint64_t seen = me.events.load(std::memory_order_acquire);
    lock.unlock();
    const auto until = std::chrono::steady_clock::now() + world_.spin_;
    while (me.events.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < until)
      std::this_thread::yield();
    lock.lock();
    return me.events.load(std::memory_order_relaxed) != seen; // read under the lock: none is lost before the sleep
  }

  /// Waits until `ready`, for `what`; `awaited(d)` says whether it still waits on device d
  /// (a device that died after doing its part is not waited on). A failure elsewhere stops
  /// the wait, except in a shielded section (a step's update, after its commit), which only
  /// the death of a device it waits on stops; an uninterruptible wait (members reading each
  /// other's pieces) only its timeout. (A device dies only between its operations: it
  /// finishes every exchange it has posted to.)
  template <typename Ready, typename What, typename Awaited>
  void wait(std::unique_lock<std::mutex> &lock, Ready ready, What what, Awaited awaited, bool interruptible = true) {
    const auto deadline = std::chrono::steady_clock::now() + world_.timeout_;
    auto &me = world_.waiters_.at(device_);
    while (!ready()) {
      if (interruptible && world_.dead_.count(device_))
        throw CommError(stoppedLocked());
      for (int peer : world_.dead_)
        if (awaited(peer))
          throw CommError("device " + std::to_string(device_) + " stopped: device " + std::to_string(peer) + " died");
      if (interruptible)
        if (std::string why = stoppedLocked(); !why.empty())
          throw CommError(why);
      if (poll(lock, me))
        continue;
      if (me.wakeup.wait_until(lock, deadline) == std::cv_status::timeout && !ready()) {
        std::string waitingFor;
        if constexpr (std::is_invocable_v<What>)
          waitingFor = what();
        else
          waitingFor = what;
        throw CommError("device " + std::to_string(device_) + " waited " + formatSeconds(world_.timeout_) + " s for " +
                        waitingFor);
      }
    }
  }
};

ThreadsWorld::ThreadsWorld(std::vector<int> devices, std::chrono::milliseconds timeout, std::chrono::microseconds spin)
    : devices_(std::move(devices)), timeout_(timeout), spin_(spin) {
  for (int d : devices_) {
    communicators_[d] = std::make_unique<ThreadsCommunicator>(*this, d);
    waiters_[d]; // created before the threads start: the map is not changed while they run
  }
}

Communicator &ThreadsWorld::communicator(int device) {
  return *communicators_.at(device);
}

void ThreadsWorld::fail(const std::string &reason) {
  std::lock_guard lock(mutex_);
  if (failure_.empty() || !fatal_)
    failure_ = reason;
  fatal_ = true;
  for (auto &[device, waiter] : waiters_)
    waiter.notify();
}

void ThreadsWorld::shield(int device, bool on) {
  std::lock_guard lock(mutex_);
  if (on)
    shielded_.insert(device);
  else
    shielded_.erase(device);
}

void ThreadsWorld::markDead(int device, const std::string & /*what*/) {
  std::lock_guard lock(mutex_);
  dead_.insert(device);
  if (failure_.empty())
    failure_ = "device " + std::to_string(device) + " died";
  for (auto &[d, waiter] : waiters_)
    waiter.notify();
}

void ThreadsWorld::admit(int device) {
  std::lock_guard lock(mutex_);
  dead_.erase(device);
  for (auto &[d, waiter] : waiters_)
    waiter.notify();
}

bool ThreadsWorld::awaitAdmission(int device) {
  std::unique_lock lock(mutex_);
  auto &me = waiters_.at(device);
  while (dead_.count(device) && !over_ && !fatal_)
    me.wakeup.wait(lock);
  return !dead_.count(device) && !over_ && !fatal_;
}

bool ThreadsWorld::alive(int device) {
  std::lock_guard lock(mutex_);
  return !dead_.count(device);
}

int64_t ThreadsWorld::agreements() {
  std::lock_guard lock(mutex_);
  return agreements_;
}

void ThreadsWorld::finish() {
  std::lock_guard lock(mutex_);
  over_ = true;
  for (auto &[d, waiter] : waiters_)
    waiter.notify();
}

std::vector<int> ThreadsWorld::agree(int device) {
  std::unique_lock lock(mutex_);
  const int64_t round = agreements_;
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  agreed_.insert(device);
  for (auto &[d, waiter] : waiters_)
    waiter.notify();
  auto &me = waiters_.at(device);
  while (agreements_ == round) {
    if (fatal_)
      throw CommError("device " + std::to_string(device) + " stopped: " + failure_);
    if (dead_.count(device))
      throw CommError("device " + std::to_string(device) + " was taken for dead by the others");
    std::vector<int> live;
    bool all = true;
    for (int d : devices_)
      if (!dead_.count(d)) {
        live.push_back(d);
        all = all && agreed_.count(d);
      }
    if (all) {
      // Everyone alive is here: nothing is in flight. Start afresh.
      survivors_ = live;
      failure_.clear();
      mailboxes_.clear();
      rendezvous_.clear();
      barrierArrived_ = 0;
      ++barrierGeneration_;
      agreed_.clear();
      ++agreements_;
      for (auto &[d, waiter] : waiters_)
        waiter.notify();
      break;
    }
    if (me.wakeup.wait_until(lock, deadline) == std::cv_status::timeout)
      for (int d : devices_) // who has not come within the timeout is taken for dead
        if (!agreed_.count(d))
          dead_.insert(d);
  }
  return survivors_;
}

} // namespace hspmd::runtime
