// Type.h - element types and tensor types with (symbolic) shapes.
#pragma once

#include "ir/SymExpr.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hspmd::ir {

enum class DType { F32, BF16, F16, I32, I64 };

std::string_view dtypeName(DType dtype);
std::optional<DType> dtypeFromName(std::string_view name);
int dtypeBytes(DType dtype);
bool isFloat(DType dtype);

using Shape = std::vector<SymExpr>;

/// The largest tensor hspmd accepts, 256 TiB: byte counts of tensors, messages and memory
/// plans (sums of many tensors) stay exact in 64 bits.
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 48;
/// The bytes of a tensor of `sizes` (unknown sizes, -1 or 0-free symbols, left out), or nullopt
/// when they exceed kMaxTensorBytes or the product leaves 64 bits.
std::optional<int64_t> checkedBytes(const std::vector<int64_t> &sizes, DType dtype);

/// "[B, S, 128]"
std::string shapeStr(const Shape &shape);

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;

  int rank() const { return static_cast<int>(shape.size()); }
  /// The product of all dimensions (1 for a scalar).
  SymExpr numElements() const;
  /// "f32[B, S, 128]"
  std::string str() const;
  bool operator==(const TensorType &other) const { return dtype == other.dtype && shape == other.shape; }
};

/// Concrete sizes when every dimension is a constant.
std::optional<std::vector<int64_t>> concreteShape(const Shape &shape);

/// Concrete sizes with every symbol the plan left unbound taken as 1 (estimates, local shapes
/// of models checked without bindings).
std::vector<int64_t> sizesWithUnboundAsOne(const Shape &shape);

} // namespace hspmd::ir
