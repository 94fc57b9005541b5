// Layout.cpp - reading annotations as meanings through a sharding rule, and writing chosen meanings
// back as annotations (passes/Layout.h).
#include "passes/Layout.h"

#include <algorithm>

namespace hspmd::passes {

namespace {

using Kind = Meaning::Kind;

int64_t constantOr(const ir::SymExpr &size, int64_t fallback) {
  return size.constant().value_or(fallback);
}

// Remaining (unsplit) size of each factor occurrence of one tensor: [dim][position]; -1 when
// not known.
struct Remaining {
  std::vector<std::vector<int64_t>> sizes;

  Remaining(const OpShardingRule &rule, const std::vector<std::vector<int>> &dims, int operandIndex) {
    for (size_t d = 0; d < dims.size(); ++d) {
      sizes.emplace_back();
      for (int f : dims[d]) {
        int64_t size = constantOr(rule.factors[f].size, -1);
        if (operandIndex >= 0 && size > 0) {
          auto [num, den] = rule.scaleOf(operandIndex, static_cast<int>(d));
          size = size * num / den;
        }
        sizes.back().push_back(size);
      }
    }
  }
  // The first occurrence in `dim` that is not already whole-split (remaining 1).
  int majorPosition(int dim) const {
    for (size_t k = 0; k < sizes[dim].size(); ++k)
      if (sizes[dim][k] != 1)
        return static_cast<int>(k);
    return -1;
  }
  int significant(int dim) const {
    int count = 0;
    for (int64_t size : sizes[dim])
      count += size != 1;
    return count;
  }
  // Where factor f sits, as (dim, position); (-1, -1) when absent.
  static std::pair<int, int> find(const std::vector<std::vector<int>> &dims, int f) {
    for (size_t d = 0; d < dims.size(); ++d)
      for (size_t k = 0; k < dims[d].size(); ++k)
        if (dims[d][k] == f)
          return {static_cast<int>(d), static_cast<int>(k)};
    return {-1, -1};
  }
};

// Product of the constant sizes of the factors after `position` in a dim; nullopt if symbolic.
std::optional<int64_t> minorProduct(const OpShardingRule &rule, const std::vector<int> &dim, int position) {
  int64_t product = 1;
  for (size_t k = position + 1; k < dim.size(); ++k) {
    auto size = rule.factors[dim[k]].size.constant();
    if (!size)
      return std::nullopt;
    product *= *size;
  }
  return product;
}

} // namespace

double valueBytes(const ir::Value &value) {
  double elements = 1;
  for (int64_t size : ir::sizesWithUnboundAsOne(value.type.shape))
    elements *= static_cast<double>(size);
  return elements * ir::dtypeBytes(value.type.dtype);
}

std::vector<Cell> cellsOf(const ir::Annotation &annotation) {
  std::vector<Cell> cells;
  for (const auto &local : annotation.subgroups) {
    Cell cell{local.devices, {}};
    for (const auto &axis : local.axes)
      cell.mesh.push_back(axis.count);
    cells.push_back(cell);
  }
  return cells;
}

OperandView viewOf(const OpShardingRule &rule, int operand, const ir::Value &value, const ir::Annotation &annotation) {
  const auto &dims = rule.operands[operand];
  OperandView view;
  view.bytes = valueBytes(value);
  const ir::HeteroPlacement &hetero = annotation.hetero;
  int heteroDim = -1, heteroPos = -1;
  if (annotation.subgroups.size() <= 1 || hetero.kind == ir::HeteroKind::Dup) {
    view.hetero.kind = Kind::Dup;
  } else if (hetero.kind == ir::HeteroKind::Partial) {
    view.hetero.kind = Kind::Partial;
  } else {
    view.hetero.kind = Kind::Opaque;
    Remaining remaining(rule, dims, operand);
    if (hetero.dim < static_cast<int>(dims.size())) {
      int k = remaining.majorPosition(hetero.dim);
      auto minor = k >= 0 ? minorProduct(rule, dims[hetero.dim], k) : std::nullopt;
      if (k >= 0 && minor) {
        auto [num, den] = rule.scaleOf(operand, hetero.dim);
        std::vector<int64_t> units;
        bool exact = true;
        for (int64_t size : hetero.sizes) {
          int64_t scaled = hetero.ratio ? size : size * den;
          int64_t divisor = hetero.ratio ? 1 : *minor * num;
          exact = exact && scaled % divisor == 0;
          units.push_back(scaled / divisor);
        }
        if (exact) {
          view.hetero = Meaning{Kind::Split, dims[hetero.dim][k], units, hetero.ratio};
          heteroDim = hetero.dim;
          heteroPos = k;
        }
      }
    }
  }
  for (size_t g = 0; g < annotation.subgroups.size(); ++g) {
    Remaining remaining(rule, dims, operand);
    if (heteroDim >= 0) {
      const auto &sizes = view.hetero.sizes;
      remaining.sizes[heteroDim][heteroPos] = sizes.empty() || view.hetero.ratio ? -1 : sizes[g];
    }
    std::vector<Meaning> axes;
    for (const ir::MeshAxis &axis : annotation.subgroups[g].axes) {
      if (axis.kind == ir::AxisKind::Dup || axis.count == 1) {
        axes.push_back(Meaning{Kind::Dup});
      } else if (axis.kind == ir::AxisKind::Partial) {
        axes.push_back(Meaning{Kind::Partial});
      } else if (axis.dim >= static_cast<int>(dims.size())) {
        axes.push_back(Meaning{Kind::Opaque});
      } else {
        int k = remaining.majorPosition(axis.dim);
        if (k < 0) {
          axes.push_back(Meaning{Kind::Opaque});
          continue;
        }
        int64_t &rest = remaining.sizes[axis.dim][k];
        if (rest > 0 && rest % axis.count != 0 && remaining.significant(axis.dim) > 1) {
          axes.push_back(Meaning{Kind::Opaque});
          continue;
        }
        axes.push_back(Meaning{Kind::Split, dims[axis.dim][k]});
        if (rest > 0)
          rest = (rest + axis.count - 1) / axis.count;
      }
    }
    view.axes.push_back(axes);
  }
  return view;
}

std::optional<ir::Annotation> buildAnnotation(const OpShardingRule &rule, const std::vector<std::vector<int>> &dims,
                                              int operandIndex, const ir::Value &value, const std::vector<Cell> &cells,
                                              const Meaning &hetero, const std::vector<std::vector<Meaning>> &axes) {
  ir::Annotation annotation;
  // What is left of each dimension's factors before any split; each subgroup starts from it
  // (assigned into one copy: the deduction builds many candidates).
  const Remaining whole(rule, dims, operandIndex);
  Remaining remaining = whole;
  int heteroDim = -1, heteroPos = -1;
  if (cells.size() > 1) {
    if (hetero.kind == Kind::Partial) {
      annotation.hetero.kind = ir::HeteroKind::Partial;
    } else if (hetero.kind == Kind::Split) {
      auto [d, k] = Remaining::find(dims, hetero.factor);
      if (d < 0 || whole.majorPosition(d) != k)
        return std::nullopt;
      auto minor = minorProduct(rule, dims[d], k);
      if (!minor)
        return std::nullopt;
      auto [num, den] = operandIndex >= 0 ? rule.scaleOf(operandIndex, d) : std::pair<int64_t, int64_t>{1, 1};
      annotation.hetero = {ir::HeteroKind::Split, d, {}, hetero.ratio};
      for (int64_t size : hetero.sizes) {
        if (!hetero.ratio && (size * num * *minor) % den != 0)
          return std::nullopt;
        annotation.hetero.sizes.push_back(hetero.ratio ? size : size * num * *minor / den);
      }
      heteroDim = d;
      heteroPos = k;
    }
  }
  for (size_t g = 0; g < cells.size(); ++g) {
    ir::LocalAnnotation local;
    local.devices = cells[g].devices;
    remaining.sizes = whole.sizes;
    if (heteroDim >= 0) {
      auto [num, den] = operandIndex >= 0 ? rule.scaleOf(operandIndex, heteroDim) : std::pair<int64_t, int64_t>{1, 1};
      remaining.sizes[heteroDim][heteroPos] = hetero.sizes.empty() || hetero.ratio ? -1 : hetero.sizes[g] * num / den;
    }
    for (size_t a = 0; a < cells[g].mesh.size(); ++a) {
      const int count = cells[g].mesh[a];
      const Meaning &meaning = axes[g][a];
      if (count == 1 || meaning.kind == Kind::Dup || meaning.kind == Kind::Free) {
        local.axes.push_back({ir::AxisKind::Dup, 0, count});
      } else if (meaning.kind == Kind::Partial) {
        local.axes.push_back({ir::AxisKind::Partial, 0, count});
      } else if (meaning.kind == Kind::Split) {
        auto [d, k] = Remaining::find(dims, meaning.factor);
        if (d < 0 || remaining.majorPosition(d) != k)
          return std::nullopt;
        int64_t &rest = remaining.sizes[d][k];
        if (rest > 0 && rest % count != 0 && remaining.significant(d) > 1)
          return std::nullopt;
        if (rest > 0)
          rest = (rest + count - 1) / count;
        local.axes.push_back({ir::AxisKind::Split, d, count});
      } else {
        return std::nullopt;
      }
    }
    annotation.subgroups.push_back(std::move(local));
  }
  std::vector<int64_t> shape;
  for (const auto &dim : value.type.shape)
    shape.push_back(dim.constant().value_or(-1));
  if (ir::checkAnnotation(annotation, shape))
    return std::nullopt;
  return annotation;
}

double conversionCost(const Meaning &from, const Meaning &to, int count, double bytes) {
  if (from.kind == Kind::Free || from == to || count <= 1)
    return 0;
  const double piece = bytes / count, others = count - 1;
  switch (from.kind) {
  case Kind::Dup:
    return 0; // slicing a copy, or keeping it as one partial sum, moves nothing
  case Kind::Split:
    if (to.kind == Kind::Partial)
      return 0;
    return to.kind == Kind::Dup ? piece * others : piece * others / count; // all-gather, all-to-all
  case Kind::Partial:
    return to.kind == Kind::Dup ? 2 * piece * others : piece * others; // all-reduce, reduce-scatter
  case Kind::Opaque:
  case Kind::Free:
    return piece * others;
  }
  return 0;
}

} // namespace hspmd::passes
