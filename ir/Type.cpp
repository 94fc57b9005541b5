// Type.cpp - element types and tensor types: names, sizes and printing (ir/Type.h).
#include "ir/Type.h"

#include <map>

namespace hspmd::ir {

namespace {
struct DTypeInfo {
  DType dtype;
  std::string_view name;
  int bytes;
  bool isFloat;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "f32", 4, true},  {DType::BF16, "bf16", 2, true}, {DType::F16, "f16", 2, true},
    {DType::I32, "i32", 4, false}, {DType::I64, "i64", 8, false},
};
const DTypeInfo &info(DType dtype) {
  for (const auto &entry : kDTypes)
    if (entry.dtype == dtype)
      return entry;
  return kDTypes[0];
}
} // namespace

std::string_view dtypeName(DType dtype) {
  return info(dtype).name;
}
int dtypeBytes(DType dtype) {
  return info(dtype).bytes;
}
bool isFloat(DType dtype) {
  return info(dtype).isFloat;
}

std::optional<int64_t> checkedBytes(const std::vector<int64_t> &sizes, DType dtype) {
  int64_t bytes = dtypeBytes(dtype);
  for (int64_t size : sizes)
    if (size >= 0 && __builtin_mul_overflow(bytes, size, &bytes))
      return std::nullopt;
  return bytes <= kMaxTensorBytes ? std::optional<int64_t>(bytes) : std::nullopt;
}

std::optional<DType> dtypeFromName(std::string_view name) {
  for (const auto &entry : kDTypes)
    if (entry.name == name)
      return entry.dtype;
  return std::nullopt;
}

std::string shapeStr(const Shape &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + shape[i].str();
  return text + "]";
}

SymExpr TensorType::numElements() const {
  SymExpr total(1);
  for (const auto &dim : shape)
    total = total * dim;
  return total;
}

std::string TensorType::str() const {
  return std::string(dtypeName(dtype)) + shapeStr(shape);
}

std::optional<std::vector<int64_t>> concreteShape(const Shape &shape) {
  std::vector<int64_t> sizes;
  for (const auto &dim : shape) {
    auto value = dim.constant();
    if (!value)
      return std::nullopt;
    sizes.push_back(*value);
  }
  return sizes;
}

std::vector<int64_t> sizesWithUnboundAsOne(const Shape &shape) {
  std::vector<int64_t> sizes;
  sizes.reserve(shape.size());
  for (const auto &dim : shape)
    sizes.push_back(dim.valueWithSymbolsAsOne());
  return sizes;
}

} // namespace hspmd::ir
