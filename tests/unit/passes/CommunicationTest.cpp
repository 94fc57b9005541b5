// The reference data-movement checker: replays a resolved plan on simulated devices holding a
// tensor of distinct values (and partial sums adding up to them), and checks that every
// device ends with exactly the region ownedRegion() gives it, with the right values.
#include "passes/Communication.h"

#include "../support/RandomAnnotation.h"
#include "ir/AnnotationText.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>

using namespace hspmd;
using passes::CommKind;

namespace {

ir::Annotation parse(const std::string &text) {
  ir::TextError error;
  auto annotation = ir::parseAnnotation(text, &error);
  EXPECT_TRUE(annotation) << text << ": " << error.str();
  return annotation.value_or(ir::Annotation{});
}

struct Buffer {
  ir::Box box;
  int partial = 0;
  std::vector<double> values;
  std::vector<char> written;
};

int64_t linear(const std::vector<int64_t> &shape, const std::vector<int64_t> &index) {
  int64_t at = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    at = at * shape[d] + index[d];
  return at;
}

template <typename F> void forEach(const ir::Box &box, F f) {
  if (box.empty())
    return;
  std::vector<int64_t> index = box.lo;
  while (true) {
    f(index);
    size_t d = index.size();
    while (d > 0) {
      --d;
      if (++index[d] < box.hi[d])
        break;
      index[d] = box.lo[d];
      if (d == 0)
        return;
    }
    if (index.empty())
      return;
  }
}

int64_t offsetIn(const ir::Box &box, const std::vector<int64_t> &index) {
  int64_t at = 0;
  for (size_t d = 0; d < index.size(); ++d)
    at = at * (box.hi[d] - box.lo[d]) + (index[d] - box.lo[d]);
  return at;
}

double global(const std::vector<int64_t> &shape, const std::vector<int64_t> &index) {
  return static_cast<double>(linear(shape, index) + 1);
}

// Partial sum p of an element held as `count` partial sums: they add up to the value.
double partValue(const std::vector<int64_t> &shape, const std::vector<int64_t> &index, int p, int count) {
  auto noise = [&](int q) { return static_cast<double>(q * 7 + linear(shape, index) % 5); };
  if (p > 0)
    return noise(p);
  double rest = global(shape, index);
  for (int q = 1; q < count; ++q)
    rest -= noise(q);
  return rest;
}

// The number of distinct partial sums an element is held as.
int partialsAt(const ir::Annotation &a, const std::vector<int64_t> &shape, const std::vector<int64_t> &index) {
  int count = 1;
  for (int device : a.devices())
    for (const auto &piece : ir::ownedRegion(a, shape, device)) {
      bool inside = true;
      for (size_t d = 0; d < index.size(); ++d)
        inside = inside && index[d] >= piece.box.lo[d] && index[d] < piece.box.hi[d];
      if (inside)
        count = std::max(count, piece.partial + 1);
    }
  return count;
}

std::map<int, Buffer> layOut(const ir::Annotation &a, const std::vector<int64_t> &shape) {
  std::map<int, Buffer> memory;
  for (int device : a.devices())
    for (const auto &piece : ir::ownedRegion(a, shape, device)) {
      Buffer &b = memory[device];
      b.box = piece.box;
      b.partial = piece.partial;
      b.values.assign(static_cast<size_t>(piece.box.numElements()), 0);
      b.written.assign(b.values.size(), 1);
      forEach(piece.box, [&](const std::vector<int64_t> &index) {
        b.values[offsetIn(b.box, index)] = partValue(shape, index, piece.partial, partialsAt(a, shape, index));
      });
    }
  return memory;
}

// Replays the plan; returns "" or what went wrong.
std::string replay(const passes::CommPlan &plan, const ir::Annotation &from, const ir::Annotation &to,
                   const std::vector<int64_t> &shape) {
  std::map<int, Buffer> memory = layOut(from, shape);
  for (const auto &step : plan.steps) {
    std::map<int, Buffer> next;
    for (int device : step.to.devices())
      for (const auto &piece : ir::ownedRegion(step.to, shape, device)) {
        Buffer &b = next[device];
        b.box = piece.box;
        b.partial = piece.partial;
        b.values.assign(static_cast<size_t>(piece.box.numElements()), 0);
        b.written.assign(b.values.size(), 0);
      }
    auto move = [&](int src, int dst, const ir::Box &box, bool add) -> std::string {
      if (!memory.count(src) || !next.count(dst))
        return "a transfer from device " + std::to_string(src) + " to " + std::to_string(dst) + " has no buffer";
      const Buffer &s = memory[src];
      Buffer &t = next[dst];
      std::string problem;
      forEach(box, [&](const std::vector<int64_t> &index) {
        bool inSource = true, inTarget = true;
        for (size_t d = 0; d < index.size(); ++d) {
          inSource = inSource && index[d] >= s.box.lo[d] && index[d] < s.box.hi[d];
          inTarget = inTarget && index[d] >= t.box.lo[d] && index[d] < t.box.hi[d];
        }
        if (!inSource || !inTarget) {
          problem =
              "device " + std::to_string(src) + " -> " + std::to_string(dst) + " moves an element outside a buffer";
          return;
        }
        double value = s.values[offsetIn(s.box, index)];
        auto at = offsetIn(t.box, index);
        if (!add && t.written[at])
          problem = "an element reaches device " + std::to_string(dst) + " twice";
        t.values[at] = add ? t.values[at] + value : value;
        t.written[at] = 1;
      });
      return problem;
    };
    for (const auto &copy : step.local)
      if (auto problem = move(copy.device, copy.device, copy.box, copy.add); !problem.empty())
        return problem;
    for (const auto &message : step.messages)
      for (const auto &box : message.boxes)
        if (auto problem = move(message.from, message.to, box, message.add); !problem.empty())
          return problem;
    memory = std::move(next);
  }
  // Every target device holds its region; whole values where the target holds no partial
  // sums, partial sums that add up otherwise.
  for (int device : to.devices()) {
    const auto pieces = ir::ownedRegion(to, shape, device);
    if (pieces.empty())
      continue;
    if (!memory.count(device) || !(memory[device].box == pieces[0].box))
      return "device " + std::to_string(device) + " does not hold its region";
  }
  std::string problem;
  forEach(ir::Box{std::vector<int64_t>(shape.size(), 0), shape}, [&](const std::vector<int64_t> &index) {
    std::map<int, double> byPartial;
    for (const auto &[device, b] : memory) {
      bool inside = true;
      for (size_t d = 0; d < index.size(); ++d)
        inside = inside && index[d] >= b.box.lo[d] && index[d] < b.box.hi[d];
      if (!inside)
        continue;
      const auto at = offsetIn(b.box, index);
      if (b.partial == 0 && !b.written[at])
        problem = "device " + std::to_string(device) + " misses an element";
      if (partialsAt(to, shape, index) == 1 && b.values[at] != global(shape, index))
        problem = "device " + std::to_string(device) + " holds a wrong value";
      byPartial[b.partial] = b.values[at];
    }
    double sum = 0;
    for (const auto &[p, v] : byPartial)
      sum += v;
    if (problem.empty() && sum != global(shape, index))
      problem = "the partial sums of an element do not add up";
  });
  return problem;
}

std::string check(const std::vector<int64_t> &shape, const std::string &from, const std::string &to,
                  CommKind *kind = nullptr) {
  auto a = parse(from), b = parse(to);
  auto plan = passes::planReshard(shape, 4, a, b);
  if (kind)
    *kind = plan.steps.front().kind;
  return replay(plan, a, b, shape);
}

struct KindCase {
  std::vector<int64_t> shape;
  const char *from, *to;
  CommKind kind;
};

TEST(Communication, EveryKindOnHandWrittenCases) {
  const KindCase cases[] = {
      {{8, 16}, "[0..4]: S0", "[0..4]: S0", CommKind::Identity},
      {{8, 16}, "[0..4]: R", "[0..4]: S1", CommKind::LocalSlice},
      {{8, 16}, "[0..4]: P", "[0..4]: R", CommKind::AllReduce},
      {{8, 16}, "[0..4]: P", "[0..4]: S0", CommKind::ReduceScatter},
      {{8, 16}, "[0..4]: R*2 x P*2", "[0..4]: R*2 x R*2", CommKind::AllReduce},
      {{8, 16}, "[0..4]: S0", "[0..4]: R", CommKind::AllGather},
      {{8, 16}, "[0..4]: S0", "[0..4]: S1", CommKind::AllToAll},
      {{8, 16}, "[0..4]: S1", "[4..8]: S1", CommKind::SendRecv},
      {{8, 16}, "{ [0, 1]: R | [2, 3]: R } partial", "{ [0, 1]: R | [2, 3]: R } dup", CommKind::SplitAllReduce},
      {{8, 16}, "{ [0, 1]: R | [2]: R } partial", "{ [0, 1]: R | [2]: R } split0 [4, 4]", CommKind::SplitReduceScatter},
      // Two tensor-parallel groups of different sizes each gather their own copy.
      {{8, 16}, "{ [0..4]: S1 | [4, 5]: S1 } dup", "{ [0..4]: R | [4, 5]: R } dup", CommKind::AllGather},
      {{8, 16},
       "{ [0, 1]: P | [2, 3]: P } split0 [5, 3]",
       "{ [0, 1]: R | [2, 3]: R } split0 [5, 3]",
       CommKind::AllReduce},
      // Unequal pieces held by different subgroups, gathered by all of them.
      {{8, 16}, "{ [0, 1]: R | [2]: R } split1 [10, 6]", "{ [0, 1]: R | [2]: R } dup", CommKind::SplitAllGather},
      {{8, 16}, "{ [0]: R | [1]: R | [2, 3]: S1 } split1 [5, 3, 8]", "[0..3]: S1", CommKind::Bsr},
  };
  for (const auto &c : cases) {
    CommKind kind;
    EXPECT_EQ(check(c.shape, c.from, c.to, &kind), "") << c.from << " -> " << c.to;
    EXPECT_EQ(passes::commKindName(kind), passes::commKindName(c.kind)) << c.from << " -> " << c.to;
  }
}

TEST(Communication, UnevenShapesAndRemoteReductions) {
  EXPECT_EQ(check({7, 5}, "[0..3]: S0", "[0..4]: S1"), "");
  EXPECT_EQ(check({7, 5}, "[0..3]: P", "[5, 6]: S0"), "");
  EXPECT_EQ(check({9}, "{ [0]: R | [1, 2]: S0 } split0 [4, 5]", "{ [3, 4]: S0 | [5]: R } split0 ratio [1, 2]"), "");
  EXPECT_EQ(check({4, 6}, "[0..4]: P*2 x S1*2", "{ [0]: R | [1, 2]: S0 } dup"), "");
}

// Minimality: without partial sums every device receives exactly the bytes it lacked, and the
// plan reports them.
TEST(Communication, NoSliceIsSentTwiceToADevice) {
  auto a = parse("{ [0..4]: S1*4 | [4, 5]: S1*2 } dup"), b = parse("{ [0, 1]: S0*2 | [2]: R } dup");
  auto plan = passes::planReshard({8, 16}, 2, a, b);
  ASSERT_EQ(plan.steps.size(), 1u);
  for (const auto &[device, lacking] : plan.lackingBytes)
    EXPECT_EQ(plan.steps[0].bytesReceived[device], lacking) << device;
  EXPECT_EQ(plan.totalBytes(), plan.lackingBytes[0] + plan.lackingBytes[1] + plan.lackingBytes[2]);
}

TEST(Communication, SendersOnTheFasterLinkThenTheLeastLoaded) {
  passes::LinkModel links;
  links.bandwidth = [](int a, int b) { return (a < 4) == (b < 4) ? 100.0 : 10.0; }; // two nodes of 4
  // Device 5 needs rows every device holds: it reads from the second node only.
  auto plan = passes::planReshard({8, 8}, 4, parse("{ [0, 1]: R*2 | [4, 5]: R*2 } dup"), parse("[5, 6]: S0"), links);
  for (const auto &m : plan.steps[0].messages)
    EXPECT_GE(m.from, 4) << "device " << m.from << " sent over the slow link";
  // Four owners of every row, one needer of all rows: the load spreads over all of them.
  auto spread = passes::planReshard({8, 8}, 4, parse("[0..4]: R"), parse("[4]: R"));
  EXPECT_EQ(spread.steps[0].messages.size(), 4u);
  for (const auto &m : spread.steps[0].messages)
    EXPECT_EQ(m.bytes, 2 * 8 * 4);
}

// Each pipeline runs its own micro-batches: a slice comes from an owner in the needer's
// pipeline whenever one holds it, even over a slower link; from any owner otherwise.
TEST(Communication, SendersInTheNeedersPipelineFirst) {
  passes::LinkModel links;
  links.bandwidth = [](int a, int b) { return a + b == 3 ? 1.0 : 10.0; }; // 1-2 is the slow link
  links.samePipeline = [](int a, int b) { return (a < 2) == (b < 2); };   // pipelines {0, 1}, {2, 3}
  // Device 3 needs wte, held split by devices 0 and 1 and whole by device 2 (hetero4_tied).
  auto plan =
      passes::planReshard({8, 8}, 4, parse("{ [0, 1]: S1 | [2]: R } dup"), parse("{ [0, 1]: S1 | [3]: R } dup"), links);
  ASSERT_EQ(plan.steps[0].messages.size(), 1u);
  EXPECT_EQ(plan.steps[0].messages[0].from, 2);
  EXPECT_EQ(plan.steps[0].messages[0].bytes, 8 * 8 * 4);
  // Device 1 needs what only device 2, in the other pipeline, holds.
  auto across = passes::planReshard({8, 8}, 4, parse("[2]: R"), parse("[1]: R"), links);
  ASSERT_EQ(across.steps[0].messages.size(), 1u);
  EXPECT_EQ(across.steps[0].messages[0].from, 2);
}

TEST(Communication, MessagesAreFusedPerDevicePair) {
  // Two tensors' worth of slices between the same pair still make one message per pair.
  auto plan = passes::planReshard({8, 8}, 4, parse("[0, 1]: S0*2"), parse("[2, 3]: S1*2"));
  std::set<std::pair<int, int>> pairs;
  for (const auto &m : plan.steps[0].messages)
    EXPECT_TRUE(pairs.insert({m.from, m.to}).second);
  EXPECT_EQ(plan.steps[0].kind, CommKind::Bsr);
}

TEST(Communication, TensorsOfOneTransferShareOneBufferPerDevicePair) {
  std::vector<passes::CommPlan> plans = {passes::planReshard({8, 8}, 4, parse("[0, 1]: S0"), parse("[2, 3]: S0")),
                                         passes::planReshard({4}, 4, parse("[0, 1]: S0"), parse("[2, 3]: S0")),
                                         passes::planReshard({6, 2}, 4, parse("[0, 1]: R"), parse("[2, 3]: S1"))};
  auto fused = passes::fuseAcrossTensors(plans);
  std::set<std::pair<int, int>> pairs;
  int64_t bytes = 0;
  for (const auto &batch : fused) {
    EXPECT_TRUE(pairs.insert({batch.from, batch.to}).second);
    bytes += batch.bytes;
  }
  EXPECT_EQ(bytes, plans[0].totalBytes() + plans[1].totalBytes() + plans[2].totalBytes());
  ASSERT_FALSE(fused.empty());
  EXPECT_TRUE(std::is_sorted(fused.begin(), fused.end(), [](const auto &a, const auto &b) {
    return std::make_pair(a.from, a.to) < std::make_pair(b.from, b.to);
  }));
  // Device 0 sends device 2 its rows of the first two tensors, and a column slice of the third.
  EXPECT_EQ(fused.front().from, 0);
  EXPECT_EQ(fused.front().to, 2);
  EXPECT_EQ(fused.front().slices.size(), 3u);
}

TEST(Communication, RandomLayoutsReplayCorrectly) {
  std::mt19937 rng(2024);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int cases = 0, minimal = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<int64_t> shape(pick(1, 3));
    for (auto &d : shape)
      d = pick(1, 7);
    auto from = hspmd::testing::randomAnnotation(rng, shape, true);
    auto to = hspmd::testing::randomAnnotation(rng, shape, true);
    if (ir::checkAnnotation(from, shape) || ir::checkAnnotation(to, shape))
      continue;
    auto plan = passes::planReshard(shape, 4, from, to);
    std::string problem = replay(plan, from, to, shape);
    ASSERT_EQ(problem, "") << ir::printAnnotation(from) << " -> " << ir::printAnnotation(to);
    ++cases;
    if (plan.steps.size() == 1 && !plan.lackingBytes.empty()) {
      int64_t received = 0, lacking = 0;
      for (const auto &[d, bytes] : plan.steps[0].bytesReceived)
        received += bytes;
      for (const auto &[d, bytes] : plan.lackingBytes)
        lacking += bytes;
      EXPECT_EQ(received, lacking) << ir::printAnnotation(from) << " -> " << ir::printAnnotation(to);
      ++minimal;
    }
  }
  EXPECT_GE(cases, 1000);
  EXPECT_GT(minimal, 100);
}

// The compiler keeps no messages of a collective (a reduction over n devices has n^2): the
// same steps, kinds, groups, slices kept, bytes and seconds as the reference plan.
TEST(Communication, CollectivesWithoutReferenceMessagesPlanAlike) {
  passes::LinkModel unkept;
  unkept.referenceMessages = false;
  auto allReduce = passes::planReshard({8, 16}, 4, parse("[0..4]: P"), parse("[0..4]: R"));
  auto compiled = passes::planReshard({8, 16}, 4, parse("[0..4]: P"), parse("[0..4]: R"), unkept);
  ASSERT_EQ(compiled.steps.size(), 1u);
  EXPECT_EQ(allReduce.steps[0].messages.size(), 12u); // every partial sum to every other device
  EXPECT_TRUE(compiled.steps[0].messages.empty());
  EXPECT_EQ(compiled.steps[0].groups, (std::vector<std::vector<int>>{{0, 1, 2, 3}}));
  std::mt19937 rng(7122026);
  int collectives = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<int64_t> shape(std::uniform_int_distribution<int>(1, 3)(rng));
    for (auto &d : shape)
      d = std::uniform_int_distribution<int>(1, 7)(rng);
    auto from = hspmd::testing::randomAnnotation(rng, shape, true);
    auto to = hspmd::testing::randomAnnotation(rng, shape, true);
    if (ir::checkAnnotation(from, shape) || ir::checkAnnotation(to, shape))
      continue;
    const std::string what = ir::printAnnotation(from) + " -> " + ir::printAnnotation(to);
    auto reference = passes::planReshard(shape, 4, from, to);
    auto plan = passes::planReshard(shape, 4, from, to, unkept);
    ASSERT_EQ(plan.steps.size(), reference.steps.size()) << what;
    for (size_t s = 0; s < plan.steps.size(); ++s) {
      const auto &a = reference.steps[s], &b = plan.steps[s];
      EXPECT_EQ(b.kind, a.kind) << what;
      EXPECT_EQ(b.groups, a.groups) << what;
      EXPECT_EQ(b.bytesSent, a.bytesSent) << what;
      EXPECT_EQ(b.bytesReceived, a.bytesReceived) << what;
      EXPECT_EQ(b.seconds, a.seconds) << what;
      ASSERT_EQ(b.local.size(), a.local.size()) << what;
      for (size_t l = 0; l < a.local.size(); ++l)
        EXPECT_TRUE(b.local[l].device == a.local[l].device && b.local[l].box == a.local[l].box &&
                    b.local[l].add == a.local[l].add)
            << what << ": local copy " << l;
      if (passes::isCollective(a.kind)) {
        EXPECT_TRUE(b.messages.empty()) << what;
        collectives += !a.messages.empty();
      } else {
        EXPECT_EQ(b.messages.size(), a.messages.size()) << what;
      }
    }
  }
  EXPECT_GT(collectives, 50);
}

// Reductions over many devices, planned by layout where the compiler keeps no messages (each
// slice of each partial sum has one owner: Planner::joinReduction), against the reference that
// visits every pair: data parallelism, tensor parallelism inside it, unequal partial groups,
// reductions that scatter, and the two-step plans whose first step must visit the pairs.
TEST(Communication, ReductionsByLayoutAreTheReferencesOverManyDevices) {
  passes::LinkModel reference, unkept;
  reference.bandwidth = unkept.bandwidth = [](int a, int b) { return a / 8 == b / 8 ? 100.0 : 25.0; };
  unkept.referenceMessages = false;
  const std::vector<std::array<std::string, 2>> cases = {
      {"[0..64]: P", "[0..64]: R"},
      {"[0..64]: P", "[0..64]: S0"},
      {"[0..64]: P*16 x S1*4", "[0..64]: R*16 x S1*4"},
      {"[0..64]: S1*4 x P*16", "[0..64]: S1*4 x R*16"},
      {"[0..64]: P*16 x S1*4", "[0..64]: S1"},
      {"{ [0..24]: P | [24..64]: P } partial", "[0..64]: R"},
      {"{ [0..48]: P | [48..64]: P*4 x S0*4 } partial", "[0..64]: S0"},
      {"[0..64]: P", "{ [0..32]: R | [32..64]: R } dup"},
      {"[0..64]: P*8 x S0*8", "[0..64]: P*4 x S1*16"},
      {"[0..64]: R*4 x P*16", "[0..64]: R"},
  };
  for (const auto &[fromText, toText] : cases) {
    const ir::Annotation from = parse(fromText), to = parse(toText);
    const std::vector<int64_t> shape = {64, 64};
    if (auto error = ir::checkAnnotation(from, shape))
      FAIL() << fromText << ": " << error->message;
    if (auto error = ir::checkAnnotation(to, shape))
      FAIL() << toText << ": " << error->message;
    const auto a = passes::planReshard(shape, 4, from, to, reference);
    const auto b = passes::planReshard(shape, 4, from, to, unkept);
    ASSERT_EQ(b.steps.size(), a.steps.size()) << fromText << " -> " << toText;
    for (size_t s = 0; s < a.steps.size(); ++s) {
      SCOPED_TRACE(fromText + " -> " + toText + ", step " + std::to_string(s));
      EXPECT_EQ(b.steps[s].kind, a.steps[s].kind);
      EXPECT_EQ(b.steps[s].groups, a.steps[s].groups);
      EXPECT_EQ(b.steps[s].seconds, a.steps[s].seconds);
      ASSERT_EQ(b.steps[s].local.size(), a.steps[s].local.size());
      for (size_t l = 0; l < a.steps[s].local.size(); ++l)
        EXPECT_TRUE(b.steps[s].local[l].device == a.steps[s].local[l].device &&
                    b.steps[s].local[l].box == a.steps[s].local[l].box &&
                    b.steps[s].local[l].add == a.steps[s].local[l].add)
            << "local copy " << l;
    }
  }
}

} // namespace
