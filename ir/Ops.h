// Ops.h - the registry of built-in operations: names, arity, attributes and shape rules.
//
// The frontend builds ops through inferResultTypes() and the verifier re-runs it, so a shape
// rule lives in exactly one place. Sharding and gradient rules for the same ops live in
// passes/ (one table per concern), keyed by OpKind.
#pragma once

#include "ir/Type.h"

#include <boost/container/flat_map.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace hspmd::ir {

enum class OpKind {
  Param,
  Input,
  Constant,
  MatMul,
  Add,
  Sub,
  Mul,
  Div,
  Neg,
  Gelu,
  Silu,
  Relu,
  Softmax,
  RmsNorm,
  LayerNorm,
  Embedding,
  Reshape,
  Transpose,
  Unbind,
  Split,
  Concat,
  Slice,
  Sum,
  Mean,
  Attention,
  CrossEntropy,
  // Changes a value's annotation (inserted by deduce-annotations; an identity on data).
  Reshard,
  // Backward ops, made by the autodiff pass.
  Broadcast,        // x -> shape (numpy broadcasting)
  Pad,              // zeros around x along one dim: {dim, before, after}
  GeluGrad,         // (x, dy) -> dx
  SiluGrad,         // (x, dy) -> dx
  ReluGrad,         // (x, dy) -> dx
  RmsNormGrad,      // (x, w, dy) -> dx, dw
  LayerNormGrad,    // (x, w, dy) -> dx, dw, db
  EmbeddingGrad,    // (ids, dy) -> dtable {vocab}
  AttentionGrad,    // (q, k, v, dy) -> dq, dk, dv {causal, scale}
  CrossEntropyGrad, // (logits, targets, dloss) -> dlogits
};

/// Attribute values: integers, floats, booleans, strings and lists of (symbolic) integers.
using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<SymExpr>>;
/// Sorted by name, in one allocation (boost's flat_map): every op and instruction carries
/// one, and a 32B x 48-device compilation makes and frees hundreds of thousands of them.
using AttrMap = boost::container::flat_map<std::string, AttrValue>;

std::string printAttrValue(const AttrValue &value);

/// An instruction's attributes, shared by the instructions that have the same ones and
/// copied only when one of them changes its own (copy on write). An op's instructions on its
/// devices, and the copies later passes make of them (recompute, schedule-pipeline), share one
/// map: copying a map per instruction was a quarter of specialize at 32B x 48 devices. Reads
/// as the AttrMap it holds.
class SharedAttrs {
public:
  SharedAttrs() = default;
  SharedAttrs(AttrMap attrs) : map_(std::make_shared<AttrMap>(std::move(attrs))) {} // NOLINT: converts
  operator const AttrMap &() const { return map(); }                                // NOLINT: converts
  const AttrMap &map() const {
    static const AttrMap none;
    return map_ ? *map_ : none;
  }
  AttrMap::const_iterator begin() const { return map().begin(); }
  AttrMap::const_iterator end() const { return map().end(); }
  AttrMap::const_iterator find(const std::string &name) const { return map().find(name); }
  size_t count(const std::string &name) const { return map().count(name); }
  const AttrValue &at(const std::string &name) const { return map().at(name); }
  size_t size() const { return map().size(); }
  bool empty() const { return map().empty(); }
  /// The attribute to write: the map is this instruction's own from here on.
  AttrValue &operator[](const std::string &name) { return own()[name]; }
  bool operator==(const SharedAttrs &other) const { return map_ == other.map_ || map() == other.map(); }

private:
  AttrMap &own() {
    if (!map_ || map_.use_count() > 1) // shared (or none): this one gets its own copy
      map_ = std::make_shared<AttrMap>(map());
    return *map_;
  }
  std::shared_ptr<AttrMap> map_;
};

struct OpInfo {
  OpKind kind;
  std::string_view name;
  int minOperands;
  int maxOperands; // -1: any number
  /// The op's result type is written in the IR rather than inferred (param, input, constant).
  bool explicitType;
};

const OpInfo &opInfo(OpKind kind);
std::optional<OpKind> opKindFromName(std::string_view name);
const std::vector<OpInfo> &allOps();

/// Result types of an op, or an error message naming the mismatch.
struct TypeResult {
  std::vector<TensorType> types;
  std::string error;
  bool ok() const { return error.empty(); }
};

TypeResult inferResultTypes(OpKind kind, const std::vector<TensorType> &operands, const AttrMap &attrs);

/// Helpers for reading attributes that the shape rules and later passes share.
int64_t intAttr(const AttrMap &attrs, const std::string &name, int64_t fallback = 0);
double floatAttr(const AttrMap &attrs, const std::string &name, double fallback = 0);
bool boolAttr(const AttrMap &attrs, const std::string &name, bool fallback = false);
std::vector<SymExpr> listAttr(const AttrMap &attrs, const std::string &name);

/// Numpy-style broadcast of two shapes; nullopt when they do not broadcast.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);

} // namespace hspmd::ir
