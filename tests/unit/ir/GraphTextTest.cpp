// The textual IR round-trips: print -> parse -> print is the identity.
#include "ir/Graph.h"

#include <gtest/gtest.h>

using namespace hspmd::ir;

namespace {

const char *kSmallGraph = R"(graph Small {
  plans 2
  symbols B, S
  %w = param {init = "normal", std = 0.02} : f32[8, 16] <[0, 1]: S1; ?> loc("m.hspmd":2:9)
  %x = input : f32[B, S, 8] <{ [0]: R | [1]: R } split0 ratio [3, 1]; [0..4]: R*2 x S1*2> loc("m.hspmd":4:14)
  %0 = matmul %x, %w : f32[B, S, 16] loc("m.hspmd":5:14)
  %half = constant {value = 0.5} : f32[]
  %1 = mul %0, %half : f32[B, S, 16]
  %parts.0, %parts.1 = split %1 {dim = 2, sizes = [4, 12]} : f32[B, S, 4], f32[B, S, 12]
  %r = reshape %parts.1 {shape = [B, 3*S, 4]} : f32[B, 3*S, 4]
  %s = sum %r {dims = [1], keepdim = false} : f32[B, 4]
  %neg = constant {value = -1e-08} : f32[]
  %loss = mean %s {dims = [], keepdim = false} : f32[]
  return %loss
}
)";

TEST(GraphText, HandWrittenGraphRoundTrips) {
  ParseError error;
  auto graph = parseGraph(kSmallGraph, &error);
  ASSERT_TRUE(graph) << error.str();
  EXPECT_EQ(printGraph(*graph), kSmallGraph);
  EXPECT_EQ(graph->numPlans, 2);
  EXPECT_EQ(graph->symbols, (std::vector<std::string>{"B", "S"}));
  Value *x = graph->findValue("x");
  ASSERT_TRUE(x);
  ASSERT_TRUE(x->annotations[0]);
  EXPECT_EQ(x->annotations[0]->hetero.sizes, (std::vector<int64_t>{3, 1}));
  EXPECT_FALSE(graph->findValue("w")->annotations[1].has_value());
  EXPECT_EQ(graph->findValue("r")->type.shape[1].str(), "3*S");
  bool ok = verifyGraph(*graph, [](const Location &, const std::string &message) { ADD_FAILURE() << message; });
  EXPECT_TRUE(ok);
}

TEST(GraphText, FloatsKeepTheirExactValue) {
  ParseError error;
  auto graph = parseGraph(
      "graph G {\n  %c = constant {value = 0.1} : f32[]\n  %d = constant {value = 3.0} : f32[]\n}\n", &error);
  ASSERT_TRUE(graph) << error.str();
  EXPECT_EQ(floatAttr(graph->findValue("c")->def->attrs, "value"), 0.1);
  EXPECT_EQ(printGraph(*graph),
            "graph G {\n  %c = constant {value = 0.1} : f32[]\n  %d = constant {value = 3.0} : f32[]\n}\n");
}

struct BadIR {
  const char *text;
  const char *error;
};

TEST(GraphText, ParseErrorsHaveLineAndColumn) {
  const BadIR cases[] = {
      {"graf G {}", "1:1: expected 'graph', found 'graf'"},
      {"graph G {\n  %a = frob : f32[]\n}", "2:8: unknown op 'frob'"},
      {"graph G {\n  %a = neg %b : f32[]\n}", "2:12: use of undefined value %b"},
      {"graph G {\n  %a = input : f33[4]\n}", "2:16: expected an element type (f32, bf16, f16, i32, i64), found 'f33'"},
      {"graph G {\n  %a = input : f32[4]\n  %a = input : f32[4]\n}", "3:3: value %a is defined twice"},
      {"graph G {\n  %a = input : f32[4] <[0, 1]: S0>\n}", "2:23: 1 annotations given, but the graph has 0 plans"},
      {"graph G {\n  plans 1\n  %a = input : f32[4] <[0, 1]: S0*3>\n}",
       "3:24: mesh axis counts 3 multiply to 3, but the group has 2 devices"},
      {"graph G {\n  %a = input : f32[4]\n  return %b\n}", "3:10: expected a defined value after 'return', found '%b'"},
      {"graph G {\n  %a = input : f32[4]\n} extra", "3:3: unexpected 'extra' after the graph"},
      {"graph G {\n  %a = input {k = } : f32[4]\n}", "2:19: expected an attribute value, found '}'"},
      {"graph G {\n  %a = input : f32[4 +]\n}", "2:23: expected a dimension, found ']'"},
  };
  for (const BadIR &bad : cases) {
    ParseError error;
    EXPECT_FALSE(parseGraph(bad.text, &error)) << bad.text;
    EXPECT_EQ(error.str(), bad.error) << bad.text;
  }
}

} // namespace

// A parameter path's place in a stack of layers is read in one place.
TEST(StackPosition, ReadsTheLayerOfAStackPath) {
  auto position = hspmd::ir::stackPosition("blocks[12].attn.wqkv");
  ASSERT_TRUE(position);
  EXPECT_EQ(position->stack, "blocks");
  EXPECT_EQ(position->layer, 12);
  EXPECT_EQ(hspmd::ir::stackPosition("layers[0]")->layer, 0);
  for (const char *outside : {"wte", "grad.blocks[3].wqkv", "[3].w", "blocks[].w", "blocks[x].w", "blocks[3"})
    EXPECT_FALSE(hspmd::ir::stackPosition(outside)) << outside;
}
