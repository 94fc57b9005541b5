// The ANTLR grammar and the textual-IR parser read the annotation notation the same way.
#include "frontend/Parser.h"
#include "ir/AnnotationText.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

using namespace hspmd;

namespace {

std::optional<ir::Annotation> viaGrammar(const std::string &text, std::string *error) {
  frontend::CollectingSink sink;
  frontend::DiagnosticEngine diags(sink);
  auto ast = frontend::parseFile("p.hspmd", "plan p for M {\n  annotate x = " + text + "\n}\n", diags);
  if (!ast || ast->plans.empty() || ast->plans[0]->annotates.empty()) {
    *error = sink.diagnostics.empty() ? "no annotation" : sink.diagnostics[0].message;
    return std::nullopt;
  }
  return ast->plans[0]->annotates[0].annotation.annotation;
}

ir::Annotation randomAnnotation(std::mt19937 &rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<int> ids(24);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  ir::Annotation annotation;
  size_t next = 0;
  for (int g = pick(1, 3); g > 0; --g) {
    ir::LocalAnnotation local;
    int size = pick(1, 6);
    local.devices.assign(ids.begin() + next, ids.begin() + next + size);
    if (pick(0, 1))
      std::sort(local.devices.begin(), local.devices.end()); // makes ranges appear
    next += size;
    for (int left = size; left > 1 || local.axes.empty();) {
      int count = left % 2 == 0 && pick(0, 1) ? 2 : left;
      local.axes.push_back(ir::MeshAxis{static_cast<ir::AxisKind>(pick(0, 2)), pick(0, 3), count});
      left /= count;
    }
    annotation.subgroups.push_back(local);
  }
  annotation.hetero.kind = static_cast<ir::HeteroKind>(pick(0, 2));
  if (annotation.hetero.kind == ir::HeteroKind::Split) {
    annotation.hetero.dim = pick(0, 3);
    annotation.hetero.ratio = pick(0, 1);
    if (pick(0, 2))
      for (size_t g = 0; g < annotation.subgroups.size(); ++g)
        annotation.hetero.sizes.push_back(pick(1, 9));
  }
  return annotation;
}

TEST(Grammar, AnnotationsParseTheSameInPlansAndInTheIR) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    ir::Annotation annotation = randomAnnotation(rng);
    const std::string text = ir::printAnnotation(annotation);
    std::string grammarError;
    ir::TextError textError;
    auto fromGrammar = viaGrammar(text, &grammarError);
    auto fromText = ir::parseAnnotation(text, &textError);
    ASSERT_TRUE(fromGrammar) << text << ": " << grammarError;
    ASSERT_TRUE(fromText) << text << ": " << textError.str();
    EXPECT_EQ(*fromGrammar, *fromText) << text;
    EXPECT_EQ(ir::printAnnotation(*fromGrammar), text);
  }
}

TEST(Grammar, HandWrittenFormsAgree) {
  for (const char *text :
       {"[0..4]: S1*4", "[0, 1, 2,3]:S0", "{ [0..4]: S1*4 | [4..6]: S1*2 } dup", "{[0,1]:R*2|[2]:R} split0 [12, 4]",
        "{ [0,1]: R | [2,3]: R } split0 ratio [3, 1]", "[0..8]: R*2 x S1*4", "{ [0]: P | [1]: P } partial"}) {
    std::string grammarError;
    ir::TextError textError;
    auto fromGrammar = viaGrammar(text, &grammarError);
    auto fromText = ir::parseAnnotation(text, &textError);
    ASSERT_TRUE(fromGrammar) << text << ": " << grammarError;
    ASSERT_TRUE(fromText) << text << ": " << textError.str();
    EXPECT_EQ(*fromGrammar, *fromText) << text;
  }
}

TEST(Grammar, PlanWordsAreStillNamesElsewhere) {
  frontend::CollectingSink sink;
  frontend::DiagnosticEngine diags(sink);
  auto ast = frontend::parseFile("m.hspmd", R"(
layer L(layers: int, devices: int, x: int) {
  let stage = layers * devices
  fn forward(x: f32[B, x]) -> f32[B, x] { let zero = x
    return zero }
}
plan p for M(layers = 2) {
  pipeline with share 1 microbatches 2 {
    stage devices [0] tp 1 layers blocks[0:2] with wte, tp
  }
  schedule gpipe
  reshard blocks[1].forward.x to { [0]: R | [1]: R } split0
})",
                                 diags);
  ASSERT_TRUE(ast) << (sink.diagnostics.empty() ? "" : sink.diagnostics[0].message);
  EXPECT_EQ(ast->modules[0]->params[0].name, "layers");
  EXPECT_EQ(ast->plans[0]->pipelines[0].name, "with");
  EXPECT_EQ(ast->plans[0]->pipelines[0].stages[0].with.size(), 2u);
  EXPECT_EQ(ast->plans[0]->schedule, "gpipe");
  EXPECT_EQ(ast->plans[0]->reshards[0].path.str(), "blocks[1].forward.x");
}

TEST(Grammar, MalformedBytesAreReportedNotThrown) {
  frontend::CollectingSink sink;
  frontend::DiagnosticEngine diags(sink);
  // Found by the fuzzer: ANTLR throws on invalid UTF-8.
  EXPECT_FALSE(frontend::parseFile("m.hspmd", "layer L(d: int) {\n  param w = one\xf3[d]\n}\n", diags));
  ASSERT_EQ(sink.diagnostics.size(), 1u);
  EXPECT_EQ(frontend::diagnosticHeader(sink.diagnostics[0]), "m.hspmd:2:16: error: invalid UTF-8 (byte 0xf3)");
  sink.diagnostics.clear();
  // Valid multi-byte characters are fine in comments.
  EXPECT_TRUE(frontend::parseFile("m.hspmd", "// \xc3\xa9t\xc3\xa9\nlayer L(d: int) {\n}\n", diags));
  EXPECT_TRUE(sink.diagnostics.empty());
}

} // namespace
