// The verifier catches graphs that the parser accepts but that make no sense.
#include "ir/Graph.h"

#include <gtest/gtest.h>

using namespace hspmd::ir;

namespace {

std::vector<std::string> verify(const std::string &text) {
  ParseError error;
  auto graph = parseGraph(text, &error);
  EXPECT_TRUE(graph) << error.str();
  std::vector<std::string> problems;
  if (graph)
    verifyGraph(*graph, [&](const Location &loc, const std::string &message) {
      problems.push_back((loc.isKnown() ? std::to_string(loc.line) + ": " : "") + message);
    });
  return problems;
}

TEST(Verifier, AcceptsAConsistentGraph) {
  EXPECT_TRUE(
      verify("graph G {\n  %a = input : f32[4, 8]\n  %b = param : f32[8, 2]\n  %c = matmul %a, %b : f32[4, 2]\n}")
          .empty());
}

TEST(Verifier, WrongResultType) {
  EXPECT_EQ(verify("graph G {\n  %a = input : f32[4, 8]\n  %b = param : f32[8, 2]\n  %c = matmul %a, %b : f32[4, 3] "
                   "loc(\"m\":3:1)\n}"),
            (std::vector<std::string>{"3: %c has type f32[4, 3], but matmul gives f32[4, 2]"}));
}

TEST(Verifier, ShapeRuleViolation) {
  EXPECT_EQ(
      verify("graph G {\n  %a = input : f32[4, 8]\n  %b = param : f32[7, 2]\n  %c = matmul %a, %b : f32[4, 2]\n}"),
      (std::vector<std::string>{"matmul: contracted dimensions differ: f32[4, 8] @ f32[7, 2] (8 vs 7)"}));
}

TEST(Verifier, WrongArity) {
  EXPECT_EQ(verify("graph G {\n  %a = input : f32[4]\n  %c = add %a : f32[4]\n}"),
            (std::vector<std::string>{"add: add takes 2 operands, got 1"}));
  EXPECT_EQ(verify("graph G {\n  %a = input : f32[4]\n  %c = param %a : f32[4]\n}"),
            (std::vector<std::string>{"param takes no operands and has one result"}));
}

TEST(Verifier, WrongResultCount) {
  EXPECT_EQ(verify("graph G {\n  %a = input : f32[2, 3]\n  %x, %y = unbind %a {dim = 1} : f32[2], f32[2]\n}"),
            (std::vector<std::string>{"unbind should have 3 results, has 2"}));
}

TEST(Verifier, AnnotationInvalidForItsValue) {
  EXPECT_EQ(verify("graph G {\n  plans 1\n  %a = input : f32[4] <{ [0]: R | [1]: R } split0 [1, 2]>\n}"),
            (std::vector<std::string>{
                "annotation { [0]: R | [1]: R } split0 [1, 2] of %a: sizes sum to 3, but dimension 0 has size 4"}));
  EXPECT_EQ(verify("graph G {\n  plans 1\n  %a = input : f32[4] <[0, 1]: S1>\n}"),
            (std::vector<std::string>{
                "annotation [0, 1]: S1 of %a: split dimension 1 is out of range for a tensor of rank 1"}));
}

TEST(Verifier, UseBeforeDefinitionInABuiltGraph) {
  Graph graph("G");
  Op *a = graph.createOp(OpKind::Input, {}, {TensorType{DType::F32, {4}}}, {}, {}, {"a"});
  Op *late = graph.createOp(OpKind::Input, {}, {TensorType{DType::F32, {4}}}, {}, {}, {"late"});
  Op *sum = graph.createOp(OpKind::Add, {a->result(), late->result()}, {TensorType{DType::F32, {4}}}, {}, {});
  // Point the add at a value defined by a later op.
  Op *later = graph.createOp(OpKind::Input, {}, {TensorType{DType::F32, {4}}}, {}, {}, {"later"});
  sum->operands[1] = later->result();
  std::vector<std::string> problems;
  verifyGraph(graph, [&](const Location &, const std::string &message) { problems.push_back(message); });
  EXPECT_EQ(problems, (std::vector<std::string>{"add uses %later before it is defined"}));
}

} // namespace
