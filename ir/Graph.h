// Graph.h - the graph IR: ops and values in elaboration (topological) order.
//
// Every value has a unique name: parameters use their stable path ("blocks[3].wqkv"), named
// locals use "<instance path>.<fn>.<let name>" ("blocks[2].forward.h"), the rest are numbered.
// A value may carry one annotation per plan of the build (Graph::numPlans).
#pragma once

#include "ir/Annotation.h"
#include "ir/Location.h"
#include "ir/Ops.h"
#include "ir/Type.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hspmd::ir {

struct Op;

struct Value {
  int id = 0;
  std::string name;
  TensorType type;
  Op *def = nullptr;                                  // the op that produces it
  int index = 0;                                      // which of def's results
  std::vector<std::optional<Annotation>> annotations; // one slot per plan
};

/// Where a parameter path lies in a stack of layers: "blocks[3].wqkv" is layer 3 of the stack
/// "blocks". Parameter paths are the names plans use (docs/language.md), so the path is what
/// the layer is read from, here and nowhere else. Nothing for a name outside a stack
/// ("wte", "grad.blocks[3].wqkv").
struct StackPosition {
  std::string stack;
  int64_t layer = 0;
};
std::optional<StackPosition> stackPosition(std::string_view name);

/// Orders values by id: maps keyed by values iterate in a deterministic order.
struct ValueById {
  bool operator()(const Value *a, const Value *b) const { return a->id < b->id; }
};

struct Op {
  int id = 0;
  OpKind kind = OpKind::Input;
  std::vector<Value *> operands;
  std::vector<Value *> results;
  AttrMap attrs;
  Location loc;
  Value *result() const { return results.front(); }
};

class Graph {
public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  const std::string &name() const { return name_; }

  /// Appends an op. Results get `names` where given (made unique), else a number.
  Op *createOp(OpKind kind, std::vector<Value *> operands, std::vector<TensorType> resultTypes, AttrMap attrs,
               Location loc, const std::vector<std::string> &names = {});
  /// Inserts an op right before `before` (same contract as createOp). Op ids are positions
  /// in the graph and are renumbered.
  Op *insertOpBefore(const Op *before, OpKind kind, std::vector<Value *> operands, std::vector<TensorType> resultTypes,
                     AttrMap attrs, Location loc, const std::vector<std::string> &names = {});
  /// Makes `user` read `replacement` wherever it read `old`.
  static void replaceOperand(Op *user, const Value *old, Value *replacement);
  /// Gives a value a new name, made unique with a ".1", ".2" ... suffix when taken.
  void rename(Value *value, const std::string &name);
  Value *findValue(const std::string &name) const;

  const std::vector<std::unique_ptr<Op>> &ops() const { return ops_; }
  /// Values are numbered 0 .. numValues() - 1 (Value::id).
  size_t numValues() const { return values_.size(); }
  std::vector<Value *> params() const { return valuesOf(OpKind::Param); }
  std::vector<Value *> inputs() const { return valuesOf(OpKind::Input); }

  /// Free symbolic dimensions (bound by a plan or at run time), in order of appearance.
  std::vector<std::string> symbols;
  std::vector<Value *> outputs;
  /// How many plans annotate this graph; every value has this many annotation slots.
  int numPlans = 0;
  void setNumPlans(int count);

private:
  std::string name_;
  std::vector<std::unique_ptr<Op>> ops_;
  std::vector<std::unique_ptr<Value>> values_;
  std::map<std::string, Value *> byName_;
  int nextTemp_ = 0;
  std::string uniqueName(const std::string &base);
  std::vector<Value *> valuesOf(OpKind kind) const;
};

/// The textual IR (round-trips through parseGraph).
std::string printGraph(const Graph &graph);
/// One op as a line of the textual IR, without indentation.
std::string printOp(const Op &op);

struct ParseError {
  uint32_t line = 0, col = 0;
  std::string message;
  std::string str() const;
};
/// Parses the textual IR. Runs no verifier.
std::unique_ptr<Graph> parseGraph(const std::string &text, ParseError *error);

/// Checks the graph: operands defined before use, op arity and result types (re-inferred),
/// unique names, outputs defined, annotations valid for their values. Reports each problem
/// through `report` and returns whether the graph is valid.
using VerifyReport = std::function<void(const Location &, const std::string &)>;
bool verifyGraph(const Graph &graph, const VerifyReport &report);

} // namespace hspmd::ir
