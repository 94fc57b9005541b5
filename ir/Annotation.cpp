// Annotation.cpp - HSPMD annotations: validity checks, each device's box of a global tensor
// (ir/Annotation.h).
#include "ir/Annotation.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <set>

namespace hspmd::ir {

std::vector<int> Annotation::devices() const {
  size_t count = 0;
  for (const auto &subgroup : subgroups)
    count += subgroup.devices.size();
  std::vector<int> all;
  all.reserve(count);
  for (const auto &subgroup : subgroups)
    all.insert(all.end(), subgroup.devices.begin(), subgroup.devices.end());
  return all;
}

bool Annotation::contains(int device) const {
  for (const auto &subgroup : subgroups)
    if (devicePosition(subgroup.devices, device) >= 0)
      return true;
  return false;
}

int64_t devicePosition(const std::vector<int> &devices, int device) {
  if (devices.empty())
    return -1;
  if (const int64_t guess = static_cast<int64_t>(device) - devices.front();
      guess >= 0 && guess < static_cast<int64_t>(devices.size()) && devices[static_cast<size_t>(guess)] == device)
    return guess;
  auto found = std::find(devices.begin(), devices.end(), device);
  return found == devices.end() ? -1 : found - devices.begin();
}

int64_t Box::numElements() const {
  int64_t total = 1;
  for (size_t i = 0; i < lo.size(); ++i)
    total *= std::max<int64_t>(0, hi[i] - lo[i]);
  return total;
}

Box intersectBox(const Box &a, const Box &b) {
  Box out{a.lo, a.hi};
  for (size_t d = 0; d < a.lo.size(); ++d) {
    out.lo[d] = std::max(a.lo[d], b.lo[d]);
    out.hi[d] = std::max(out.lo[d], std::min(a.hi[d], b.hi[d]));
  }
  return out;
}

std::vector<Box> subtractBox(const Box &a, const Box &b) {
  const Box inter = intersectBox(a, b);
  if (inter.empty())
    return a.empty() ? std::vector<Box>{} : std::vector<Box>{a};
  std::vector<Box> out;
  Box rest = a;
  for (size_t d = 0; d < a.lo.size(); ++d) {
    if (rest.lo[d] < inter.lo[d]) {
      Box below = rest;
      below.hi[d] = inter.lo[d];
      out.push_back(below);
    }
    if (inter.hi[d] < rest.hi[d]) {
      Box above = rest;
      above.lo[d] = inter.hi[d];
      out.push_back(above);
    }
    rest.lo[d] = inter.lo[d];
    rest.hi[d] = inter.hi[d];
  }
  return out;
}

std::vector<Box> subtractBox(const std::vector<Box> &boxes, const Box &cut) {
  std::vector<Box> out;
  for (const Box &box : boxes)
    for (Box &part : subtractBox(box, cut))
      out.push_back(std::move(part));
  return out;
}

bool containsBox(const Box &outer, const Box &inner) {
  for (size_t d = 0; d < inner.lo.size(); ++d)
    if (inner.lo[d] < outer.lo[d] || inner.hi[d] > outer.hi[d])
      return false;
  return true;
}

std::vector<Box> cutBox(const Box &box, const std::vector<std::vector<int64_t>> &cuts) {
  std::vector<Box> cells;
  if (box.empty())
    return cells;
  const size_t rank = box.lo.size();
  std::vector<std::vector<int64_t>> edges(rank);
  for (size_t d = 0; d < rank; ++d) {
    std::set<int64_t> points{box.lo[d], box.hi[d]};
    for (int64_t c : cuts[d])
      if (c > box.lo[d] && c < box.hi[d])
        points.insert(c);
    edges[d].assign(points.begin(), points.end());
  }
  std::vector<size_t> at(rank, 0);
  while (true) {
    Box cell{std::vector<int64_t>(rank), std::vector<int64_t>(rank)};
    for (size_t d = 0; d < rank; ++d) {
      cell.lo[d] = edges[d][at[d]];
      cell.hi[d] = edges[d][at[d] + 1];
    }
    cells.push_back(std::move(cell));
    size_t d = rank;
    while (d > 0 && ++at[d - 1] + 1 >= edges[d - 1].size())
      at[--d] = 0;
    if (d == 0)
      return cells;
  }
}

std::vector<int64_t> boxExtent(const Box &box) {
  std::vector<int64_t> out(box.lo.size());
  for (size_t d = 0; d < out.size(); ++d)
    out[d] = box.hi[d] - box.lo[d];
  return out;
}

std::vector<int64_t> boxOffset(const Box &box, const std::vector<int64_t> &origin) {
  std::vector<int64_t> out(box.lo.size());
  for (size_t d = 0; d < out.size(); ++d)
    out[d] = box.lo[d] - origin[d];
  return out;
}

std::pair<int64_t, int64_t> chunkRange(int64_t size, int count, int index) {
  const int64_t chunk = (size + count - 1) / count;
  const int64_t begin = std::min(size, chunk * index);
  return {begin, std::min(size, begin + chunk)};
}

std::vector<int64_t> resolveHeteroSizes(const HeteroPlacement &hetero, size_t subgroups, int64_t size) {
  std::vector<int64_t> sizes(subgroups);
  if (hetero.sizes.empty()) {
    for (size_t g = 0; g < subgroups; ++g) {
      auto [begin, end] = chunkRange(size, static_cast<int>(subgroups), static_cast<int>(g));
      sizes[g] = end - begin;
    }
    return sizes;
  }
  if (!hetero.ratio)
    return hetero.sizes;
  // In 128 bits: ratios and sizes come from plans (a pipeline's `share` may be any int64).
  __int128 total = 0;
  for (int64_t ratio : hetero.sizes)
    total += ratio;
  if (total <= 0)
    return sizes;
  int64_t assigned = 0;
  for (size_t g = 0; g < subgroups && g < hetero.sizes.size(); ++g)
    assigned += sizes[g] = static_cast<int64_t>(static_cast<__int128>(size) * hetero.sizes[g] / total);
  for (size_t g = 0; assigned < size; g = (g + 1) % subgroups, ++assigned)
    ++sizes[g];
  return sizes;
}

static int axisProduct(const LocalAnnotation &local, AxisKind kind) {
  int product = 1;
  for (const auto &axis : local.axes)
    if (axis.kind == kind)
      product *= axis.count;
  return product;
}

std::vector<OwnedPiece> ownedRegion(const Annotation &annotation, std::span<const int64_t> shape, int device) {
  OwnedPiece piece;
  piece.box.lo.assign(shape.size(), 0);
  piece.box.hi.assign(shape.begin(), shape.end());
  const auto &subgroups = annotation.subgroups;
  const auto &hetero = annotation.hetero;
  for (size_t g = 0; g < subgroups.size(); ++g) {
    const auto &devices = subgroups[g].devices;
    const int64_t index = devicePosition(devices, device);
    if (index < 0)
      continue;
    int replicaOffset = 0, partialOffset = 0;
    if (hetero.kind == HeteroKind::Split) {
      // Even parts (no sizes) and given sizes without building the list of every part.
      if (hetero.sizes.empty()) {
        auto [begin, end] = chunkRange(shape[hetero.dim], static_cast<int>(subgroups.size()), static_cast<int>(g));
        piece.box.lo[hetero.dim] = begin;
        piece.box.hi[hetero.dim] = end;
      } else {
        std::vector<int64_t> resolved;
        const std::vector<int64_t> &sizes =
            hetero.ratio ? resolved = resolveHeteroSizes(hetero, subgroups.size(), shape[hetero.dim]) : hetero.sizes;
        int64_t offset = std::accumulate(sizes.begin(), sizes.begin() + static_cast<long>(g), int64_t{0});
        piece.box.lo[hetero.dim] = offset;
        piece.box.hi[hetero.dim] = offset + sizes[g];
      }
    }
    for (size_t h = 0; h < g; ++h) {
      if (hetero.kind == HeteroKind::Dup)
        replicaOffset += axisProduct(subgroups[h], AxisKind::Dup);
      if (hetero.kind == HeteroKind::Partial)
        partialOffset += axisProduct(subgroups[h], AxisKind::Partial);
    }
    // Mixed-radix coordinates of the device in its group, outermost axis first: on axis a,
    // its index divided by the product of the later axes' counts, modulo a's count.
    const auto &axes = subgroups[g].axes;
    int64_t later = 1;
    for (const MeshAxis &axis : axes)
      later *= axis.count;
    int replica = 0, partial = 0;
    for (size_t a = 0; a < axes.size(); ++a) {
      const MeshAxis &axis = axes[a];
      later /= axis.count;
      const int coord = static_cast<int>(index / later % axis.count);
      if (axis.kind == AxisKind::Split) {
        int64_t lo = piece.box.lo[axis.dim], hi = piece.box.hi[axis.dim];
        auto [begin, end] = chunkRange(hi - lo, axis.count, coord);
        piece.box.lo[axis.dim] = lo + begin;
        piece.box.hi[axis.dim] = lo + end;
      } else if (axis.kind == AxisKind::Dup) {
        replica = replica * axis.count + coord;
      } else {
        partial = partial * axis.count + coord;
      }
    }
    piece.replica = replicaOffset + replica;
    piece.partial = partialOffset + partial;
    std::vector<OwnedPiece> owned; // moved in: `return {piece}` copies its boxes
    owned.push_back(std::move(piece));
    return owned;
  }
  return {};
}

static AnnotationError error(AnnotationError::Part part, int subgroup, int item, std::string message) {
  // The lint code follows from what is wrong (docs/lint.md).
  std::string code = message.find("listed twice") != std::string::npos                                        ? "HS102"
                     : message.find("negative") != std::string::npos && part == AnnotationError::Part::Device ? "HS101"
                     : message.find("out of range") != std::string::npos                                      ? "HS116"
                     : part == AnnotationError::Part::Hetero                                                  ? "HS105"
                                                                                                              : "HS103";
  return AnnotationError{part, subgroup, item, std::move(message), std::move(code)};
}

std::optional<AnnotationError> checkAnnotation(const Annotation &annotation) {
  using Part = AnnotationError::Part;
  if (annotation.subgroups.empty())
    return error(Part::Whole, 0, 0, "an annotation needs at least one device group");
  // device -> the subgroup where it is first listed (-1: not yet); one allocation, since the
  // deduction checks every candidate annotation it builds
  int largest = -1;
  for (const auto &local : annotation.subgroups)
    for (int device : local.devices)
      largest = std::max(largest, device);
  std::vector<int> seen(static_cast<size_t>(largest + 1), -1);
  for (size_t g = 0; g < annotation.subgroups.size(); ++g) {
    const auto &local = annotation.subgroups[g];
    const int sg = static_cast<int>(g);
    if (local.devices.empty())
      return error(Part::Subgroup, sg, 0, "a device group must not be empty");
    for (size_t i = 0; i < local.devices.size(); ++i) {
      const int device = local.devices[i];
      if (device < 0)
        return error(Part::Device, sg, static_cast<int>(i), "device ids must not be negative");
      int &first = seen[static_cast<size_t>(device)];
      if (first >= 0)
        return error(Part::Device, sg, static_cast<int>(i),
                     "device " + std::to_string(device) + " is listed twice" +
                         (first == sg ? std::string(" in one device group") : " (subgroups must be disjoint)"));
      first = sg;
    }
    if (local.axes.empty())
      return error(Part::Subgroup, sg, 0, "a device group needs at least one mesh axis");
    int64_t product = 1;
    bool overflow = false; // counts of up to 2^20 each: a few axes pass 2^63
    for (size_t a = 0; a < local.axes.size(); ++a) {
      if (local.axes[a].count < 1)
        return error(Part::Axis, sg, static_cast<int>(a), "a mesh axis count must be at least 1");
      overflow = overflow || __builtin_mul_overflow(product, int64_t{local.axes[a].count}, &product);
    }
    if (overflow || product != static_cast<int64_t>(local.devices.size())) {
      std::string counts;
      for (const auto &axis : local.axes)
        counts += (counts.empty() ? "" : " x ") + std::to_string(axis.count);
      return error(Part::Subgroup, sg, 0,
                   "mesh axis counts " + counts + " multiply to " +
                       (overflow ? "more than " + std::to_string(INT64_MAX) : std::to_string(product)) +
                       ", but the group has " + std::to_string(local.devices.size()) + " devices");
    }
  }
  const auto &hetero = annotation.hetero;
  if (hetero.kind == HeteroKind::Split && !hetero.sizes.empty()) {
    if (hetero.sizes.size() != annotation.subgroups.size())
      return error(Part::Hetero, 0, 0,
                   std::to_string(hetero.sizes.size()) + " sizes given for " +
                       std::to_string(annotation.subgroups.size()) + " subgroups");
    for (int64_t size : hetero.sizes) {
      if (size < 0 || (hetero.ratio && size == 0))
        return error(Part::Hetero, 0, 0, hetero.ratio ? "ratios must be positive" : "sizes must not be negative");
    }
  }
  return std::nullopt;
}

std::optional<AnnotationError> checkAnnotation(const Annotation &annotation, std::span<const int64_t> shape) {
  using Part = AnnotationError::Part;
  if (auto problem = checkAnnotation(annotation))
    return problem;
  const int rank = static_cast<int>(shape.size());
  auto rankMessage = [&](int dim) {
    return "split dimension " + std::to_string(dim) + " is out of range for a tensor of rank " + std::to_string(rank);
  };
  for (size_t g = 0; g < annotation.subgroups.size(); ++g) {
    const auto &axes = annotation.subgroups[g].axes;
    for (size_t a = 0; a < axes.size(); ++a)
      if (axes[a].kind == AxisKind::Split && (axes[a].dim < 0 || axes[a].dim >= rank))
        return error(Part::Axis, static_cast<int>(g), static_cast<int>(a), rankMessage(axes[a].dim));
  }
  const auto &hetero = annotation.hetero;
  if (hetero.kind != HeteroKind::Split)
    return std::nullopt;
  if (hetero.dim < 0 || hetero.dim >= rank)
    return error(Part::Hetero, 0, 0, rankMessage(hetero.dim));
  const int64_t size = shape[hetero.dim];
  if (!hetero.ratio && !hetero.sizes.empty() && size >= 0) {
    int64_t total = 0;
    bool overflow = false;
    for (int64_t part : hetero.sizes)
      overflow = overflow || __builtin_add_overflow(total, part, &total);
    if (overflow || total != size)
      return error(Part::Hetero, 0, 0,
                   "sizes sum to " + (overflow ? std::string("more than 2^63 - 1") : std::to_string(total)) +
                       ", but dimension " + std::to_string(hetero.dim) + " has size " + std::to_string(size));
  }
  return std::nullopt;
}

} // namespace hspmd::ir
