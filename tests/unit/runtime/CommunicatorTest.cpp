// The threads backend's communicator: exchanges see every member's piece; a peer that never
// comes, or one that fails, ends the wait with an error naming it instead of a hang.
#include "runtime/Communicator.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>

using namespace hspmd::runtime;

TEST(ThreadsCommunicator, ExchangeShowsEveryMembersPiece) {
  ThreadsWorld world({0, 1, 2});
  std::vector<float> sums(3, 0);
  std::vector<std::thread> threads;
  for (int d = 0; d < 3; ++d)
    threads.emplace_back([&, d] {
      float value = static_cast<float>(d + 1);
      Piece mine;
      mine.data = &value;
      world.communicator(d).exchange({0, 1, 2}, 7, mine, 4, [&](const std::vector<Piece> &pieces) {
        for (const Piece &p : pieces)
          sums[static_cast<size_t>(d)] += *static_cast<const float *>(p.data);
      });
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(sums, (std::vector<float>{6, 6, 6}));
}

TEST(ThreadsCommunicator, MessagesArriveInOrderPerTag) {
  ThreadsWorld world({0, 1});
  world.communicator(0).send(1, 5, {'a'});
  world.communicator(0).send(1, 6, {'b'});
  EXPECT_EQ(world.communicator(1).recv(0, 6), std::vector<char>{'b'});
  EXPECT_EQ(world.communicator(1).recv(0, 5), std::vector<char>{'a'});
}

TEST(ThreadsCommunicator, AMissingPeerIsATimeoutNamingIt) {
  ThreadsWorld world({0, 1, 2}, std::chrono::milliseconds(200));
  Piece mine;
  try {
    world.communicator(0).exchange({0, 2}, 11, mine, 0, [](const std::vector<Piece> &) {});
    ADD_FAILURE() << "device 2 never comes";
  } catch (const CommError &e) {
    EXPECT_EQ(std::string(e.what()), "device 0 waited 0.2 s for device(s) 2 to join the collective (tag 11)");
  }
  try {
    world.communicator(1).recv(2, 3);
    ADD_FAILURE() << "device 2 never sends";
  } catch (const CommError &e) {
    EXPECT_EQ(std::string(e.what()), "device 1 waited 0.2 s for a message from device 2 (tag 3)");
  }
}

TEST(ThreadsCommunicator, AFailedDeviceStopsTheOthers) {
  ThreadsWorld world({0, 1});
  std::string error;
  std::thread waiting([&] {
    try {
      world.communicator(0).recv(1, 1);
    } catch (const CommError &e) {
      error = e.what();
    }
  });
  world.fail("device 1 failed: out of memory");
  waiting.join();
  EXPECT_EQ(error, "device 0 stopped: device 1 failed: out of memory");
}

// A wait outside the communicator (NCCL's on a GPU: runtime/gpu/GpuNccl.h) asks it whether the
// run stopped, and ends with the text the communicator's own waits end with: nothing before a
// failure, the failure after it, nothing in a shielded section, and being taken for dead.
TEST(ThreadsCommunicator, StoppedSaysWhatItsOwnWaitsWouldSay) {
  ThreadsWorld world({0, 1, 2}, std::chrono::milliseconds(300));
  EXPECT_EQ(world.communicator(0).stopped(), "");
  world.fail("device 1 failed: out of memory");
  EXPECT_EQ(world.communicator(0).stopped(), "device 0 stopped: device 1 failed: out of memory");
  try {
    world.communicator(0).recv(2, 1);
    ADD_FAILURE() << "the failure stops the wait";
  } catch (const CommError &e) {
    EXPECT_EQ(world.communicator(0).stopped(), e.what());
  }
  world.shield(2, true);
  EXPECT_EQ(world.communicator(2).stopped(), "");
  world.shield(2, false);
  EXPECT_EQ(world.communicator(2).stopped(), "device 2 stopped: device 1 failed: out of memory");
}

TEST(ThreadsCommunicator, StoppedSaysADeviceWasTakenForDead) {
  ThreadsWorld world({0, 1}, std::chrono::milliseconds(200));
  world.markDead(1, "device 1 died");
  EXPECT_EQ(world.agree(0), (std::vector<int>{0}));
  EXPECT_EQ(world.communicator(0).stopped(), ""); // the survivors go on afresh
  EXPECT_EQ(world.communicator(1).stopped(), "device 1 was taken for dead by the others");
}

// A death stops the waits on the dead device, and any wait outside a shielded section; the
// survivors agree on the same list, and talk afresh after it (what was in flight is dropped).
TEST(ThreadsCommunicator, SurvivorsOfADeathAgreeAndTalkAfresh) {
  ThreadsWorld world({0, 1, 2, 3}, std::chrono::seconds(10));
  world.communicator(2).send(0, 7, {'s', 't', 'a', 'l', 'e'}); // in flight at the death
  std::vector<std::string> errors(4);
  std::vector<std::vector<int>> agreed(4);
  std::vector<std::vector<char>> got(4);
  std::vector<std::thread> threads;
  for (int d : {0, 1, 2})
    threads.emplace_back([&, d] {
      try {
        world.communicator(d).recv(3, 1); // waits on the device that dies
      } catch (const CommError &e) {
        errors[static_cast<size_t>(d)] = e.what();
      }
      agreed[static_cast<size_t>(d)] = world.agree(d);
      if (d == 2)
        world.communicator(2).send(0, 7, {'n', 'e', 'w'});
      if (d == 0)
        got[0] = world.communicator(0).recv(2, 7);
    });
  world.markDead(3, "device 3 died");
  for (auto &t : threads)
    t.join();
  for (int d : {0, 1, 2}) {
    EXPECT_EQ(errors[static_cast<size_t>(d)], "device " + std::to_string(d) + " stopped: device 3 died");
    EXPECT_EQ(agreed[static_cast<size_t>(d)], (std::vector<int>{0, 1, 2}));
  }
  EXPECT_EQ(got[0], (std::vector<char>{'n', 'e', 'w'}));
}

// A device that does not come to the agreement within the timeout is taken for dead; a
// shielded wait is not stopped by a death it does not wait on.
TEST(ThreadsCommunicator, AnAbsentDeviceIsTakenForDeadAndShieldedWaitsGoOn) {
  ThreadsWorld world({0, 1, 2}, std::chrono::milliseconds(300));
  std::vector<int> agreed;
  std::vector<char> shielded;
  std::thread survivor([&] {
    world.shield(1, true);
    shielded = world.communicator(1).recv(0, 5); // device 0 sends after device 2's death
    world.shield(1, false);
  });
  world.markDead(2, "device 2 died");
  std::this_thread::sleep_for(std::chrono::milliseconds(50)); // device 1 waits, shielded, through the failure
  world.communicator(0).send(1, 5, {'o', 'k'});
  survivor.join();
  EXPECT_EQ(shielded, (std::vector<char>{'o', 'k'}));
  agreed = world.agree(0); // device 1 never comes
  EXPECT_EQ(agreed, (std::vector<int>{0}));
  EXPECT_THROW(world.communicator(1).recv(0, 6), CommError); // it was taken for dead
}

// Waiters poll for `spin`, then sleep: with arrivals spread around the spin time, every
// handoff between the two (an event just as the polling ends) must still wake the waiter.
// A lost wake-up fails here by timing out.
TEST(ThreadsCommunicator, NoWakeUpIsLostBetweenPollingAndSleeping) {
  for (auto spin : {std::chrono::microseconds(0), std::chrono::microseconds(20)}) {
    ThreadsWorld world({0, 1, 2}, std::chrono::milliseconds(5000), spin);
    std::vector<float> sums(3, 0);
    std::vector<std::string> errors(3);
    std::vector<std::thread> threads;
    for (int d = 0; d < 3; ++d)
      threads.emplace_back([&, d] {
        std::mt19937 random(static_cast<unsigned>(d));
        for (int64_t tag = 0; tag < 2000 && errors[static_cast<size_t>(d)].empty(); ++tag)
          try {
            const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(random() % 40);
            while (std::chrono::steady_clock::now() < until) {
            }
            float value = 1;
            Piece mine;
            mine.data = &value;
            world.communicator(d).exchange({0, 1, 2}, tag, mine, 4, [&](const std::vector<Piece> &pieces) {
              for (const Piece &p : pieces)
                sums[static_cast<size_t>(d)] += *static_cast<const float *>(p.data);
            });
            if (d == 0)
              world.communicator(0).send(1, tag, {1});
            else if (d == 1)
              world.communicator(1).recv(0, tag);
          } catch (const CommError &e) {
            errors[static_cast<size_t>(d)] = e.what();
            world.fail(e.what());
          }
      });
    for (auto &t : threads)
      t.join();
    EXPECT_EQ(errors, std::vector<std::string>(3)) << spin.count() << " us polling";
    EXPECT_EQ(sums, (std::vector<float>{6000, 6000, 6000})) << spin.count() << " us polling";
  }
}

// After a death no barrier completes: the survivors that came first leave it by the failure,
// and the one that comes last must not pass it alone (a plan switch would hold on it and not
// on the others).
TEST(ThreadsCommunicator, NoBarrierCompletesAfterADeath) {
  ThreadsWorld world({0, 1, 2, 3}, std::chrono::seconds(10));
  world.markDead(3, "device 3 died");
  for (int device : {0, 1, 2})
    EXPECT_THROW(world.communicator(device).barrier(), CommError) << "device " << device;
  // After the survivors agree, barriers work again among them.
  std::vector<std::thread> survivors;
  for (int device : {0, 1, 2})
    survivors.emplace_back([&world, device] {
      world.agree(device);
      world.communicator(device).barrier();
    });
  for (std::thread &t : survivors)
    t.join();
}
