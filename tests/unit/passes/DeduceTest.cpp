// deduce-annotations on small graphs written in the textual IR: leaves carry the annotations
// a plan would give them (or none: deduction decides), and each test checks what follows.
#include "passes/DeduceAnnotations.h"
#include "passes/LowerPlan.h"

#include "../support/Tiling.h"

#include <gtest/gtest.h>

#include <random>

using namespace hspmd;

namespace {

struct Deduced {
  std::unique_ptr<ir::Graph> graph;
  ir::PlanSpec spec;
  passes::LoweredPlan plan;
  std::vector<std::string> problems;

  std::string of(const std::string &name) const {
    const ir::Value *value = graph->findValue(name);
    if (!value || !value->annotations.at(0))
      return "none";
    return ir::printAnnotation(*value->annotations[0]);
  }
  // "value: from -> to (reason)" for each reshard.
  std::vector<std::string> reshards() const {
    static const char *reasons[] = {"pinned", "pipeline", "reduction", "local", "layout"};
    std::vector<std::string> out;
    for (const auto &r : plan.reshards)
      out.push_back(r.value + ": " + ir::printAnnotation(r.from) + " -> " + ir::printAnnotation(r.to) + " (" +
                    reasons[static_cast<int>(r.reason)] + ")");
    return out;
  }
};

// Deduces a raw plan: leaves with an annotation in the text are the plan's `annotate` lines;
// `pins` are its `reshard` lines.
std::unique_ptr<Deduced> deduce(const std::string &body, const std::map<std::string, std::string> &pins = {}) {
  auto d = std::make_unique<Deduced>();
  ir::ParseError error;
  d->graph = ir::parseGraph("graph G {\n  plans 1\n" + body + "\n}\n", &error);
  EXPECT_TRUE(d->graph) << error.str();
  if (!d->graph)
    return d;
  for (const auto &op : d->graph->ops())
    if (op->kind == ir::OpKind::Param || op->kind == ir::OpKind::Input)
      if (op->result()->annotations[0])
        d->spec.annotations.push_back({op->result()->name, *op->result()->annotations[0], {}});
  for (const auto &[value, text] : pins) {
    ir::TextError textError;
    d->spec.reshards.push_back({value, *ir::parseAnnotation(text, &textError), {}});
  }
  auto report = [&](const passes::Problem &p) { d->problems.push_back(p.code + " " + p.message); };
  d->plan = *passes::lowerPlan(*d->graph, d->spec, 0, report);
  d->plan.spec = &d->spec;
  passes::deduceAnnotations(*d->graph, d->plan, report);
  EXPECT_TRUE(ir::verifyGraph(*d->graph, [&](const ir::Location &, const std::string &m) { ADD_FAILURE() << m; }));
  return d;
}

using Strings = std::vector<std::string>;

TEST(Deduce, ColumnParallelMatMul) {
  auto d = deduce("%x = input : f32[4, 8] <[0, 1]: R>\n%w = param : f32[8, 6]\n%y = matmul %x, %w : f32[4, 6]");
  EXPECT_EQ(d->of("w"), "[0, 1]: S1");
  EXPECT_EQ(d->of("y"), "[0, 1]: S1");
  EXPECT_EQ(d->reshards(), Strings{});
}

TEST(Deduce, RowParallelMatMulLeavesPartialSums) {
  auto d = deduce("%x = input : f32[4, 8] <[0, 1]: S1>\n%w = param : f32[8, 6]\n%y = matmul %x, %w : f32[4, 6]");
  EXPECT_EQ(d->of("w"), "[0, 1]: S0");
  EXPECT_EQ(d->of("y"), "[0, 1]: P");
}

TEST(Deduce, NonlinearOpsReducePartialSumsFirst) {
  auto d = deduce("%x = input : f32[4, 8] <[0, 1]: P>\n%y = gelu %x : f32[4, 8]\n%z = add %x, %x : f32[4, 8]");
  EXPECT_EQ(d->of("y"), "[0, 1]: R");
  EXPECT_EQ(d->of("z"), "[0, 1]: P"); // sums of partial sums stay partial
  EXPECT_EQ(d->reshards(), Strings{"x: [0, 1]: P -> [0, 1]: R (reduction)"});
}

// Ops that agree on kind, attributes and types share one search only where they also read
// the same layouts on the same devices: each of these decides as it would alone.
TEST(Deduce, IdenticalOpsDecideByWhatTheyRead) {
  auto d = deduce("%a = input : f32[4, 8] <[0, 1]: R>\n%b = input : f32[4, 8] <[0, 1]: S1>\n"
                  "%c = input : f32[4, 8] <[2, 3]: R>\n%e = input : f32[4, 8] <[0..4]: S0*2 x R*2>\n"
                  "%w1 = param : f32[8, 6]\n%w2 = param : f32[8, 6]\n%w3 = param : f32[8, 6]\n"
                  "%w4 = param : f32[8, 6]\n%w5 = param : f32[8, 6]\n"
                  "%y1 = matmul %a, %w1 : f32[4, 6]\n%y2 = matmul %b, %w2 : f32[4, 6]\n"
                  "%y3 = matmul %c, %w3 : f32[4, 6]\n%y4 = matmul %a, %w4 : f32[4, 6]\n"
                  "%y5 = matmul %e, %w5 : f32[4, 6]");
  EXPECT_EQ(d->of("y1"), "[0, 1]: S1");
  EXPECT_EQ(d->of("y2"), "[0, 1]: P");
  EXPECT_EQ(d->of("w2"), "[0, 1]: S0");
  EXPECT_EQ(d->of("y3"), "[2, 3]: S1");
  EXPECT_EQ(d->of("w3"), "[2, 3]: S1");
  EXPECT_EQ(d->of("y4"), "[0, 1]: S1");
  EXPECT_EQ(d->of("w4"), "[0, 1]: S1");
  EXPECT_EQ(d->of("y5"), "[0..4]: S0*2 x S1*2");
}

TEST(Deduce, SoftmaxGathersItsDimension) {
  auto d = deduce("%x = input : f32[4, 8] <[0, 1]: S1>\n%y = softmax %x {dim = 1} : f32[4, 8]\n"
                  "%z = softmax %x {dim = 0} : f32[4, 8]");
  EXPECT_EQ(d->of("y"), "[0, 1]: R");
  EXPECT_EQ(d->of("z"), "[0, 1]: S1");
  EXPECT_EQ(d->reshards(), Strings{"x: [0, 1]: S1 -> [0, 1]: R (layout)"});
}

TEST(Deduce, ReshapeCarriesMajorFactorSplits) {
  auto even = deduce("%x = input : f32[8, 12] <[0..3]: S1>\n%y = reshape %x {shape = [8, 3, 4]} : f32[8, 3, 4]");
  EXPECT_EQ(even->of("y"), "[0..3]: S1");
  // 12 = 3 * 4 split two ways: the major factor 3 cannot be halved, so the split is undone.
  auto odd = deduce("%x = input : f32[8, 12] <[0, 1]: S1>\n%y = reshape %x {shape = [8, 3, 4]} : f32[8, 3, 4]");
  EXPECT_EQ(odd->of("y"), "[0, 1]: R");
  EXPECT_EQ(odd->reshards(), Strings{"x: [0, 1]: S1 -> [0, 1]: R (layout)"});
}

TEST(Deduce, EmbeddingIsVocabularyParallel) {
  auto d = deduce("%w = param : f32[256, 8]\n%t = input : i32[2, 5] <[0, 1]: R>\n%e = embedding %w, %t : f32[2, 5, 8]");
  EXPECT_EQ(d->of("w"), "[0, 1]: S0");
  EXPECT_EQ(d->of("e"), "[0, 1]: P");
}

TEST(Deduce, AttentionHeadsPassQuerySequenceNeedsWholeKeys) {
  auto heads = deduce("%q = input : f32[2, 6, 4, 8] <[0, 1]: S2>\n%k = input : f32[2, 6, 2, 8] <[0, 1]: S2>\n"
                      "%v = input : f32[2, 6, 2, 8] <[0, 1]: S2>\n"
                      "%o = attention %q, %k, %v {causal = true} : f32[2, 6, 4, 8]");
  EXPECT_EQ(heads->of("o"), "[0, 1]: S2");
  EXPECT_EQ(heads->reshards(), Strings{});
  auto sequence = deduce("%q = input : f32[2, 6, 4, 8] <[0, 1]: S1>\n%k = input : f32[2, 6, 4, 8] <[0, 1]: S1>\n"
                         "%o = attention %q, %k, %k {causal = true} : f32[2, 6, 4, 8]");
  EXPECT_EQ(sequence->of("o"), "[0, 1]: S1");
  EXPECT_EQ(sequence->reshards(), Strings{"k: [0, 1]: S1 -> [0, 1]: R (layout)"});
}

TEST(Deduce, CrossEntropySplitsClassesAndReducesPositions) {
  auto d = deduce("%l = input : f32[2, 5, 16] <[0, 1]: S2>\n%t = input : i32[2, 5] <[0, 1]: R>\n"
                  "%c = cross_entropy %l, %t : f32[]\n%b = input : f32[2, 5, 16] <[0, 1]: S0>\n"
                  "%c2 = cross_entropy %b, %t : f32[]");
  EXPECT_EQ(d->of("c"), "[0, 1]: R");  // vocabulary-parallel: whole loss on both
  EXPECT_EQ(d->of("c2"), "[0, 1]: P"); // batch split: partial sums of the mean
}

TEST(Deduce, ReductionsOverSplitDimensionsArePartial) {
  auto d = deduce("%x = input : f32[4, 8] <[0, 1]: S1>\n%s = sum %x {dims = [1], keepdim = false} : f32[4]\n"
                  "%m = mean %x {dims = [0], keepdim = false} : f32[8]");
  EXPECT_EQ(d->of("s"), "[0, 1]: P");
  EXPECT_EQ(d->of("m"), "[0, 1]: S0");
}

TEST(Deduce, HeteroSplitsFollowTheirFactor) {
  auto d = deduce("%x = input : f32[8, 4] <{ [0, 1]: R | [2]: R } split0 [6, 2]>\n%w = param : f32[4, 4]\n"
                  "%y = matmul %x, %w : f32[8, 4]\n%r = reshape %y {shape = [2, 4, 4]} : f32[2, 4, 4]\n"
                  "%s = sum %y {dims = [], keepdim = false} : f32[]");
  EXPECT_EQ(d->of("w"), "{ [0, 1]: S1 | [2]: R } dup");
  EXPECT_EQ(d->of("y"), "{ [0, 1]: S1 | [2]: R } split0 [6, 2]");
  EXPECT_EQ(d->of("s"), "{ [0, 1]: P | [2]: R } partial");
  // 8 rows -> [2, 4]: the 6 + 2 row split is not a split of the new major dimension.
  EXPECT_EQ(d->of("r"), "{ [0, 1]: S2 | [2]: R } dup");
}

// Context parallelism's backward: a gradient summed over the groups (g, as the keys' gradient
// is), split over tp on the contraction. Carrying the partial sums through the matmul would
// leave every device the whole result (8 x 16, against 8 x 2 of g) to reduce later; reducing
// g first, to the sequence shares the plan gave x, leaves each group its rows.
TEST(Deduce, PartialSumsAreReducedBeforeTheyGrow) {
  auto d = deduce("%x = input : f32[8, 4] <{ [0, 1]: R | [2, 3]: R } split0 [6, 2]>\n"
                  "%g = input : f32[8, 4] <{ [0, 1]: S1 | [2, 3]: S1 } partial>\n"
                  "%w = param : f32[4, 16] <{ [0, 1]: S0 | [2, 3]: S0 } dup>\n"
                  "%y = matmul %g, %w : f32[8, 16]");
  EXPECT_EQ(d->of("y"), "{ [0, 1]: P | [2, 3]: P } split0 [6, 2]");
  EXPECT_EQ(d->reshards(),
            Strings{"g: { [0, 1]: S1 | [2, 3]: S1 } partial -> { [0, 1]: S1 | [2, 3]: S1 } split0 [6, 2] (reduction)"});
  // Where the result does not outgrow g (a square w, g's rows split), the sums are carried.
  auto carried = deduce("%x = input : f32[8, 4] <{ [0, 1]: R | [2, 3]: R } split0 [6, 2]>\n"
                        "%g = input : f32[8, 4] <{ [0, 1]: S0 | [2, 3]: S0 } partial>\n"
                        "%w = param : f32[4, 4] <{ [0, 1]: R | [2, 3]: R } dup>\n"
                        "%y = matmul %g, %w : f32[8, 4]");
  EXPECT_EQ(carried->of("y"), "{ [0, 1]: S0 | [2, 3]: S0 } partial");
  EXPECT_EQ(carried->reshards(), Strings{});
}

TEST(Deduce, OperandsOnOtherDevicesAreMoved) {
  auto d = deduce("%x = input : f32[4, 8] <[0, 1]: S1>\n%w = param : f32[8, 6] <[2, 3]: S0>\n"
                  "%y = matmul %x, %w : f32[4, 6]");
  EXPECT_EQ(d->of("y"), "[0, 1]: P");
  EXPECT_EQ(d->reshards(), Strings{"w: [2, 3]: S0 -> [0, 1]: S0 (layout)"});
}

TEST(Deduce, PinnedValuesAreResharded) {
  auto d = deduce("%x = input : f32[4, 8] <[0, 1]: S0>\n%y = gelu %x : f32[4, 8]\n%z = relu %y : f32[4, 8]",
                  {{"y", "[0, 1]: S1"}});
  EXPECT_EQ(d->of("z"), "[0, 1]: S1");
  EXPECT_EQ(d->reshards(), Strings{"y: [0, 1]: S0 -> [0, 1]: S1 (pinned)"});
}

TEST(Deduce, UndecidedChainsTakeTheirConsumersCells) {
  // transpose(w) depends on a parameter alone: it waits for the matmul and runs where it does.
  auto d = deduce("%w = param : f32[6, 8]\n%t = transpose %w {dim0 = 0, dim1 = 1} : f32[8, 6]\n"
                  "%x = input : f32[4, 8] <[0, 1]: R>\n%y = matmul %x, %t : f32[4, 6]");
  EXPECT_EQ(d->of("t"), "[0, 1]: S1");
  EXPECT_EQ(d->of("w"), "[0, 1]: S0");
  EXPECT_EQ(d->of("y"), "[0, 1]: S1");
}

// Random small graphs with random valid annotations on their inputs: every deduced
// annotation is valid for its value and tiles it, and the graph verifies.
TEST(Deduce, RandomGraphsGetValidAnnotations) {
  std::mt19937 rng(99);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const std::vector<std::string> layouts = {"[0..4]: R",
                                            "[0..4]: S0",
                                            "[0..4]: S1",
                                            "[0..4]: P",
                                            "[0..4]: R*2 x S1*2",
                                            "[0..4]: S0*2 x P*2",
                                            "{ [0, 1]: R | [2, 3]: S1 } dup",
                                            "{ [0, 1]: S1 | [2, 3]: R } split0 [2, 2]",
                                            "{ [0, 1]: P | [2, 3]: R } partial",
                                            "[0, 1]: S0",
                                            "[2]: R"};
  int checked = 0;
  for (int trial = 0; trial < 150; ++trial) {
    std::string body;
    std::vector<std::pair<std::string, std::vector<int>>> values; // name, shape
    auto shapeText = [](const std::vector<int> &s) {
      std::string t = "f32[";
      for (size_t i = 0; i < s.size(); ++i)
        t += (i ? ", " : "") + std::to_string(s[i]);
      return t + "]";
    };
    const int inputs = pick(1, 2);
    for (int i = 0; i < inputs; ++i) {
      std::vector<int> shape = {4, 6};
      std::string layout = layouts[pick(0, static_cast<int>(layouts.size()) - 1)];
      body += "%in" + std::to_string(i) + " = input : " + shapeText(shape) + " <" + layout + ">\n";
      values.push_back({"in" + std::to_string(i), shape});
    }
    for (int n = 0; n < 6; ++n) {
      auto [a, shape] = values[pick(0, static_cast<int>(values.size()) - 1)];
      std::string name = "v" + std::to_string(n);
      const int kind = pick(0, 6);
      if (kind == 0 && shape.size() == 2) {
        std::string w = "w" + std::to_string(n);
        body += "%" + w + " = param : " + shapeText({shape[1], 4}) + "\n";
        body += "%" + name + " = matmul %" + a + ", %" + w + " : " + shapeText({shape[0], 4}) + "\n";
        values.push_back({name, {shape[0], 4}});
      } else if (kind == 1) {
        body += "%" + name + " = gelu %" + a + " : " + shapeText(shape) + "\n";
        values.push_back({name, shape});
      } else if (kind == 2) {
        auto [b, other] = values[pick(0, static_cast<int>(values.size()) - 1)];
        if (other != shape)
          b = a;
        body += "%" + name + " = add %" + a + ", %" + b + " : " + shapeText(shape) + "\n";
        values.push_back({name, shape});
      } else if (kind == 3 && shape.size() == 2) {
        body += "%" + name + " = transpose %" + a + " {dim0 = 0, dim1 = 1} : " + shapeText({shape[1], shape[0]}) + "\n";
        values.push_back({name, {shape[1], shape[0]}});
      } else if (kind == 4 && shape.size() == 2 && shape[1] % 2 == 0) {
        std::vector<int> to = {shape[0], 2, shape[1] / 2};
        body += "%" + name + " = reshape %" + a + " {shape = [" + std::to_string(to[0]) + ", 2, " +
                std::to_string(to[2]) + "]} : " + shapeText(to) + "\n";
        values.push_back({name, to});
      } else if (kind == 5 && shape.size() >= 2) {
        std::vector<int> to(shape.begin() + 1, shape.end());
        body += "%" + name + " = sum %" + a + " {dims = [0], keepdim = false} : " + shapeText(to) + "\n";
        values.push_back({name, to});
      } else if (!shape.empty()) {
        body += "%" + name + " = softmax %" + a + " {dim = " + std::to_string(shape.size() - 1) +
                "} : " + shapeText(shape) + "\n";
        values.push_back({name, shape});
      }
    }
    auto d = deduce(body);
    ASSERT_TRUE(d->graph) << body;
    ASSERT_TRUE(d->problems.empty()) << body << d->problems[0];
    for (const auto &op : d->graph->ops())
      for (const ir::Value *value : op->results) {
        ASSERT_TRUE(value->annotations[0]) << body << "%" << value->name;
        std::vector<int64_t> shape;
        for (const auto &dim : value->type.shape)
          shape.push_back(*dim.constant());
        auto bad = ir::checkAnnotation(*value->annotations[0], shape);
        ASSERT_FALSE(bad) << body << "%" << value->name << ": " << bad->message;
        EXPECT_EQ(hspmd::testing::tilingProblem(*value->annotations[0], shape), "") << body << "%" << value->name;
        ++checked;
      }
  }
  EXPECT_GT(checked, 1000);
}

} // namespace
