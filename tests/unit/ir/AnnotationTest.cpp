// ownedRegion() against a brute-force, element-by-element reading of the same semantics.
#include "ir/Annotation.h"
#include "ir/AnnotationText.h"

#include "../support/RandomAnnotation.h"
#include "../support/Tiling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

using namespace hspmd::ir;

namespace {

Annotation parse(const std::string &text) {
  TextError error;
  auto annotation = parseAnnotation(text, &error);
  EXPECT_TRUE(annotation) << text << ": " << error.str();
  return annotation.value_or(Annotation{});
}

// Brute force: does `device` hold element `index`, and as which (replica, partial)?
// Walks the element down the hierarchy one axis at a time instead of computing boxes.
std::optional<std::pair<int, int>> bruteOwner(const Annotation &annotation, const std::vector<int64_t> &shape,
                                              const std::vector<int64_t> &index, int device) {
  std::vector<int64_t> pos = index, size = shape;
  int replicaBase = 0, partialBase = 0;
  for (size_t g = 0; g < annotation.subgroups.size(); ++g) {
    const LocalAnnotation &local = annotation.subgroups[g];
    auto found = std::find(local.devices.begin(), local.devices.end(), device);
    int localReplicas = 1, localPartials = 1;
    for (const MeshAxis &axis : local.axes) {
      localReplicas *= axis.kind == AxisKind::Dup ? axis.count : 1;
      localPartials *= axis.kind == AxisKind::Partial ? axis.count : 1;
    }
    if (found == local.devices.end()) {
      if (annotation.hetero.kind == HeteroKind::Dup)
        replicaBase += localReplicas;
      if (annotation.hetero.kind == HeteroKind::Partial)
        partialBase += localPartials;
      continue;
    }
    if (annotation.hetero.kind == HeteroKind::Split) {
      const int d = annotation.hetero.dim;
      auto sizes = resolveHeteroSizes(annotation.hetero, annotation.subgroups.size(), shape[d]);
      int64_t begin = 0;
      for (size_t h = 0; h < g; ++h)
        begin += sizes[h];
      if (pos[d] < begin || pos[d] >= begin + sizes[g])
        return std::nullopt;
      pos[d] -= begin;
      size[d] = sizes[g];
    }
    int rank = static_cast<int>(found - local.devices.begin());
    std::vector<int> coords(local.axes.size());
    for (size_t a = local.axes.size(); a-- > 0;) {
      coords[a] = rank % local.axes[a].count;
      rank /= local.axes[a].count;
    }
    int replica = 0, partial = 0;
    for (size_t a = 0; a < local.axes.size(); ++a) {
      const MeshAxis &axis = local.axes[a];
      if (axis.kind == AxisKind::Split) {
        const int64_t chunk = (size[axis.dim] + axis.count - 1) / axis.count;
        if (chunk == 0 || pos[axis.dim] / chunk != coords[a])
          return std::nullopt;
        pos[axis.dim] -= chunk * coords[a];
        size[axis.dim] = std::min(chunk, size[axis.dim] - chunk * coords[a]);
      } else if (axis.kind == AxisKind::Dup) {
        replica = replica * axis.count + coords[a];
      } else {
        partial = partial * axis.count + coords[a];
      }
    }
    return std::make_pair(replicaBase + replica, partialBase + partial);
  }
  return std::nullopt;
}

bool inBox(const Box &box, const std::vector<int64_t> &index) {
  for (size_t d = 0; d < index.size(); ++d)
    if (index[d] < box.lo[d] || index[d] >= box.hi[d])
      return false;
  return true;
}

// Checks ownedRegion against the brute force for every element and device, and that the
// pieces tile the tensor: each element is held at least once, its partial sums are numbered
// 0..k-1 without gaps (k may differ between the regions of a hetero split), and no two
// devices hold the same (replica, partial) copy of it.
void checkAgainstBruteForce(const Annotation &annotation, const std::vector<int64_t> &shape) {
  hspmd::testing::forEachIndex(shape, [&](const std::vector<int64_t> &index) {
    std::set<std::pair<int, int>> holders;
    std::set<int> partialsHere;
    for (int device = 0; device < 20; ++device) {
      auto expected = bruteOwner(annotation, shape, index, device);
      auto pieces = ownedRegion(annotation, shape, device);
      bool owns = !pieces.empty() && inBox(pieces[0].box, index);
      ASSERT_EQ(owns, expected.has_value()) << printAnnotation(annotation) << " device " << device;
      if (!owns)
        continue;
      EXPECT_EQ(pieces[0].replica, expected->first);
      EXPECT_EQ(pieces[0].partial, expected->second);
      EXPECT_TRUE(holders.insert(*expected).second) << "two devices hold the same copy";
      partialsHere.insert(expected->second);
    }
    ASSERT_FALSE(partialsHere.empty()) << printAnnotation(annotation) << ": an element has no holder";
    EXPECT_EQ(*partialsHere.rbegin() + 1, static_cast<int>(partialsHere.size()))
        << printAnnotation(annotation) << ": an element misses a partial sum";
  });
}

TEST(OwnedRegion, DesignExamples) {
  // [0..8]: R*2 x S1*4 on a 4x8 tensor: device 5 is replica 1, column shard 1.
  Annotation mesh = parse("[0..8]: R*2 x S1*4");
  auto piece = ownedRegion(mesh, std::vector<int64_t>{4, 8}, 5).at(0);
  EXPECT_EQ(piece.box, (Box{{0, 2}, {4, 4}}));
  EXPECT_EQ(piece.replica, 1);

  // { [0,1]: R*2 | [2]: R } split0 [12, 4]: rows 0-11 on devices 0 and 1, rows 12-15 on 2.
  Annotation split = parse("{ [0, 1]: R*2 | [2]: R } split0 [12, 4]");
  EXPECT_EQ(ownedRegion(split, std::vector<int64_t>{16, 2}, 1).at(0).box, (Box{{0, 0}, {12, 2}}));
  EXPECT_EQ(ownedRegion(split, std::vector<int64_t>{16, 2}, 2).at(0).box, (Box{{12, 0}, {16, 2}}));
  EXPECT_TRUE(ownedRegion(split, std::vector<int64_t>{16, 2}, 3).empty());

  // Asymmetric CP: { [0]: R | [1]: R | [2..4]: S1*2 } split1 [5, 3, 3] over 11 positions.
  Annotation cp = parse("{ [0]: R | [1]: R | [2..4]: S1*2 } split1 [5, 3, 3]");
  std::vector<int64_t> shape{1, 11};
  EXPECT_EQ(ownedRegion(cp, shape, 1).at(0).box, (Box{{0, 5}, {1, 8}}));
  EXPECT_EQ(ownedRegion(cp, shape, 2).at(0).box, (Box{{0, 8}, {1, 10}}));
  EXPECT_EQ(ownedRegion(cp, shape, 3).at(0).box, (Box{{0, 10}, {1, 11}}));

  // One weight, two TP layouts: replicas are numbered across subgroups.
  Annotation tp = parse("{ [0..4]: S1*4 | [4, 5]: S1*2 } dup");
  EXPECT_EQ(ownedRegion(tp, std::vector<int64_t>{8, 8}, 5).at(0).box, (Box{{0, 4}, {8, 8}}));
  EXPECT_EQ(ownedRegion(tp, std::vector<int64_t>{8, 8}, 5).at(0).replica, 1);

  for (const char *text : {"[0..8]: R*2 x S1*4", "{ [0, 1]: R*2 | [2]: R } split0 [12, 4]",
                           "{ [0]: R | [1]: R | [2..4]: S1*2 } split1 [5, 3, 3]", "{ [0..4]: S1*4 | [4, 5]: S1*2 } dup",
                           "{ [0, 1]: P*2 | [2]: S0 } partial", "[0..6]: S0*2 x P*3", "[0..4]: S0*2 x S0*2"})
    checkAgainstBruteForce(parse(text), {16, 11});
}

TEST(OwnedRegion, ChunkedSplitsLeaveTheTailShort) {
  // 10 over 4: chunks of 3, 3, 3, 1.
  EXPECT_EQ(chunkRange(10, 4, 0), std::make_pair(int64_t{0}, int64_t{3}));
  EXPECT_EQ(chunkRange(10, 4, 3), std::make_pair(int64_t{9}, int64_t{10}));
  // 5 over 4: chunks of 2, 2, 1 and nothing.
  EXPECT_EQ(chunkRange(5, 4, 3), std::make_pair(int64_t{5}, int64_t{5}));
  checkAgainstBruteForce(parse("[0..4]: S0"), {5, 2});
}

TEST(OwnedRegion, RatiosRoundDownThenGiveLeftoversToTheFirst) {
  HeteroPlacement hetero{HeteroKind::Split, 0, {3, 1}, true};
  EXPECT_EQ(resolveHeteroSizes(hetero, 2, 8), (std::vector<int64_t>{6, 2}));
  EXPECT_EQ(resolveHeteroSizes(hetero, 2, 10), (std::vector<int64_t>{8, 2})); // 7.5 -> 7+1, 2.5 -> 2
  HeteroPlacement thirds{HeteroKind::Split, 0, {1, 1, 1}, true};
  EXPECT_EQ(resolveHeteroSizes(thirds, 3, 5), (std::vector<int64_t>{2, 2, 1}));
  HeteroPlacement even{HeteroKind::Split, 0, {}, false};
  EXPECT_EQ(resolveHeteroSizes(even, 3, 7), (std::vector<int64_t>{3, 3, 1}));
}

// Random annotations on up to 16 devices against the brute force.
TEST(OwnedRegion, RandomAnnotationsMatchBruteForce) {
  std::mt19937 rng(1234);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<int64_t> shape(pick(1, 3));
    for (auto &d : shape)
      d = pick(1, 7);
    const Annotation annotation = hspmd::testing::randomAnnotation(rng, shape);
    ASSERT_FALSE(checkAnnotation(annotation, shape).has_value()) << printAnnotation(annotation);
    checkAgainstBruteForce(annotation, shape);
  }
}

// A device's place in a subgroup's list: found without a search where the list runs through
// consecutive ids from its first, and by one where it does not.
TEST(OwnedRegion, DevicePositionsInConsecutiveAndScatteredLists) {
  EXPECT_EQ(devicePosition({4, 5, 6, 7}, 6), 2);
  EXPECT_EQ(devicePosition({4, 5, 6, 7}, 3), -1);
  EXPECT_EQ(devicePosition({4, 5, 6, 7}, 8), -1);
  EXPECT_EQ(devicePosition({5, 2, 7}, 7), 2);  // where a run would put it, by chance
  EXPECT_EQ(devicePosition({5, 2, 7}, 2), 1);  // before the first id
  EXPECT_EQ(devicePosition({5, 9, 6}, 6), 2);  // a run would put it at 1
  EXPECT_EQ(devicePosition({5, 9, 6}, 7), -1); // a run would put it at 2
  EXPECT_EQ(devicePosition({}, 0), -1);
  EXPECT_EQ(devicePosition({0}, -1), -1);
}

TEST(CheckAnnotation, ReportsThePartAtFault) {
  auto problem = [](const std::string &text, std::vector<int64_t> shape) {
    TextError error;
    auto annotation = parseAnnotation(text, &error);
    if (!annotation)
      return error.str();
    auto found = checkAnnotation(*annotation, shape);
    return found ? found->message : std::string("ok");
  };
  EXPECT_EQ(problem("{ [0, 1]: S0 | [2]: R } split0 [3, 5]", {8}), "ok");
  EXPECT_EQ(problem("{ [0, 1]: S0 | [2]: R } split0 [3, 4]", {8}), "sizes sum to 7, but dimension 0 has size 8");
  // A sum past int64 said it summed to -9223372036854775808.
  EXPECT_EQ(problem("{ [0, 1]: S0 | [2]: R } split0 [9223372036854775807, 1]", {8}),
            "sizes sum to more than 2^63 - 1, but dimension 0 has size 8");
  EXPECT_EQ(problem("[0, 1]: S2", {8, 8}), "split dimension 2 is out of range for a tensor of rank 2");
  EXPECT_EQ(problem("{ [0]: R | [1]: R } split3", {8}), "split dimension 3 is out of range for a tensor of rank 1");
  EXPECT_EQ(problem("{ [0, 1]: S0 | [2]: R } split0 [3, 5]", {-1}), "ok"); // unknown size: not checked
}

} // namespace

// The box algebra communication planning and the runtime share: the parts of a box outside
// another cover exactly the difference (counted by elements), never overlap, and match the
// worked example of ir/Annotation.h.
TEST(BoxAlgebra, SubtractAndIntersect) {
  using hspmd::ir::Box;
  const Box a{{0, 0}, {4, 4}}, b{{1, 0}, {3, 2}};
  EXPECT_EQ(hspmd::ir::intersectBox(a, b), b);
  const std::vector<Box> parts = hspmd::ir::subtractBox(a, b);
  EXPECT_EQ(parts, (std::vector<Box>{{{0, 0}, {1, 4}}, {{3, 0}, {4, 4}}, {{1, 2}, {3, 4}}}));
  // Disjoint boxes: nothing to cut; an empty intersection has hi = lo.
  const Box far{{5, 5}, {6, 6}};
  EXPECT_TRUE(hspmd::ir::intersectBox(a, far).empty());
  EXPECT_EQ(hspmd::ir::subtractBox(a, far), std::vector<Box>{a});
  // Every cut of a 6 x 5 box by every box inside a 7 x 7 grid: the parts and the
  // intersection add up to the box, and no two parts overlap.
  const Box whole{{0, 0}, {6, 5}};
  for (int64_t r0 = 0; r0 < 7; ++r0)
    for (int64_t r1 = r0; r1 < 7; ++r1)
      for (int64_t c0 = 0; c0 < 7; ++c0)
        for (int64_t c1 = c0; c1 < 7; ++c1) {
          const Box cut{{r0, c0}, {r1, c1}};
          const auto rest = hspmd::ir::subtractBox(std::vector<Box>{whole}, cut);
          int64_t covered = hspmd::ir::intersectBox(whole, cut).numElements();
          for (size_t i = 0; i < rest.size(); ++i) {
            covered += rest[i].numElements();
            EXPECT_TRUE(hspmd::ir::intersectBox(rest[i], cut).empty());
            for (size_t j = i + 1; j < rest.size(); ++j)
              EXPECT_TRUE(hspmd::ir::intersectBox(rest[i], rest[j]).empty());
          }
          EXPECT_EQ(covered, whole.numElements());
        }
}

// Cutting a box at boundaries: the worked example of ir/Annotation.h, cuts outside the box
// ignored, the cells tile the box without overlap, each inside it, none for an empty box.
TEST(BoxAlgebra, CutContainsExtentOffset) {
  using hspmd::ir::Box;
  const Box box{{0, 0}, {4, 2}};
  EXPECT_EQ(hspmd::ir::cutBox(box, {{1, 4, 9}, {1}}),
            (std::vector<Box>{{{0, 0}, {1, 1}}, {{0, 1}, {1, 2}}, {{1, 0}, {4, 1}}, {{1, 1}, {4, 2}}}));
  EXPECT_TRUE(hspmd::ir::cutBox(Box{{2, 0}, {2, 3}}, {{}, {1}}).empty());
  EXPECT_EQ(hspmd::ir::cutBox(Box{{}, {}}, {}).size(), 1u); // a scalar is one cell
  const Box wide{{3, 1}, {9, 8}};
  const auto cells = hspmd::ir::cutBox(wide, {{0, 4, 4, 7, 12}, {2, 5, 8}});
  EXPECT_EQ(cells.size(), 9u);
  int64_t covered = 0;
  for (size_t i = 0; i < cells.size(); ++i) {
    EXPECT_TRUE(hspmd::ir::containsBox(wide, cells[i]));
    covered += cells[i].numElements();
    for (size_t j = i + 1; j < cells.size(); ++j)
      EXPECT_TRUE(hspmd::ir::intersectBox(cells[i], cells[j]).empty());
  }
  EXPECT_EQ(covered, wide.numElements());
  EXPECT_FALSE(hspmd::ir::containsBox(Box{{3, 1}, {9, 7}}, wide));
  EXPECT_EQ(hspmd::ir::boxExtent(wide), (std::vector<int64_t>{6, 7}));
  EXPECT_EQ(hspmd::ir::boxOffset(wide, {1, 1}), (std::vector<int64_t>{2, 0}));
}
