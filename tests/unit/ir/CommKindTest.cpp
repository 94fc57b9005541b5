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
