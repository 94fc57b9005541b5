// The collective kinds: one name each, parsed back, and which of them add partial sums (what
// the executor, the simulator and the verifier ask of an instruction).
#include "ir/DeviceProgram.h"

#include <gtest/gtest.h>

#include <set>

using namespace hspmd;

TEST(CommKind, NamesParseBackAndReductionsAreTheFourThatAdd) {
  std::set<std::string_view> names, reductions;
  for (int i = 0; i <= static_cast<int>(ir::CommKind::Bsr); ++i) {
    const auto kind = static_cast<ir::CommKind>(i);
    const std::string_view name = ir::commKindName(kind);
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(ir::parseCommKind(name), kind) << name;
    if (ir::isReduction(kind))
      reductions.insert(name);
  }
  EXPECT_EQ(reductions,
            (std::set<std::string_view>{"all-reduce", "reduce-scatter", "split-all-reduce", "split-reduce-scatter"}));
  EXPECT_EQ(ir::parseCommKind("matmul"), std::nullopt);

  ir::Instruction collective;
  collective.kind = ir::InstrKind::Collective;
  collective.op = "split-reduce-scatter";
  EXPECT_EQ(collective.collective(), ir::CommKind::SplitReduceScatter);
  ir::Instruction kernel; // a kernel named like a collective is no collective
  kernel.op = "all-reduce";
  EXPECT_EQ(kernel.collective(), std::nullopt);
}

// Instructions share their attributes until one writes its own (ir::SharedAttrs): the
// others keep theirs, and reads see the map either way.
TEST(SharedAttrs, CopiesShareUntilOneWrites) {
  ir::Instruction a;
  EXPECT_TRUE(a.attrs.empty());
  a.attrs = ir::AttrMap{{"causal", true}, {"scale", 0.25}};
  ir::Instruction b = a, c = a;
  EXPECT_EQ(&b.attrs.map(), &a.attrs.map()); // one map for the three
  b.attrs["query_offset"] = int64_t{32};
  EXPECT_NE(&b.attrs.map(), &a.attrs.map());
  EXPECT_EQ(a.attrs.size(), 2u);
  EXPECT_EQ(c.attrs.count("query_offset"), 0u);
  EXPECT_EQ(ir::intAttr(b.attrs, "query_offset"), 32);
  EXPECT_TRUE(ir::boolAttr(b.attrs, "causal"));
  EXPECT_FALSE(b.attrs == a.attrs);
  c.attrs["query_offset"] = int64_t{32}; // equal by content, not by map
  EXPECT_TRUE(b.attrs == c.attrs);
  const ir::AttrMap *own = &b.attrs.map();
  b.attrs["key_offset"] = int64_t{0}; // its own already: written in place
  EXPECT_EQ(&b.attrs.map(), own);
  EXPECT_EQ(ir::intAttr(c.attrs, "key_offset", -1), -1);
}
