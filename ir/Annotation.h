// Annotation.h - HSPMD annotations (shared/DESIGN.md section 4) and their one semantic
// function, ownedRegion().
//
// A LocalAnnotation places a tensor on an ordered device group as a mesh of axes, outermost
// first: [0..8]: R*2 x S1*4 is two replicas, each splitting dim 1 four ways. A device's mesh
// coordinates are its index in the group in mixed radix over the axis counts.
// An Annotation is a list of disjoint subgroups, each with its own LocalAnnotation, plus a
// HeteroPlacement saying how the logical tensor is divided among the subgroups.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace hspmd::ir {

/// Device ids are below this (2^20), in plans, cluster files and annotation text alike.
constexpr int64_t kMostDevices = int64_t{1} << 20;

enum class AxisKind { Split, Dup, Partial };

struct MeshAxis {
  AxisKind kind = AxisKind::Dup;
  int dim = 0;   // the split dimension (Split only)
  int count = 1; // number of devices along this axis
  bool operator==(const MeshAxis &) const = default;
};

struct LocalAnnotation {
  std::vector<int> devices;
  std::vector<MeshAxis> axes;
  bool operator==(const LocalAnnotation &) const = default;
};

enum class HeteroKind { Dup, Partial, Split };

struct HeteroPlacement {
  HeteroKind kind = HeteroKind::Dup;
  int dim = 0;                // Split only
  std::vector<int64_t> sizes; // Split: one per subgroup; empty means even (chunked) pieces
  bool ratio = false;         // sizes are ratios, resolved against the dimension's size
  bool operator==(const HeteroPlacement &) const = default;
};

struct Annotation {
  std::vector<LocalAnnotation> subgroups;
  HeteroPlacement hetero;
  bool operator==(const Annotation &) const = default;

  /// All devices, subgroup by subgroup.
  std::vector<int> devices() const;
  bool contains(int device) const;
};

/// A half-open box [lo, hi) per dimension of the global tensor.
struct Box {
  std::vector<int64_t> lo, hi;
  int64_t numElements() const;
  bool empty() const { return numElements() == 0; }
  bool operator==(const Box &) const = default;
};

// The box algebra that communication planning and the runtime share.
/// The intersection of two boxes of one rank (possibly empty: hi = lo where they miss).
Box intersectBox(const Box &a, const Box &b);
/// The parts of `a` outside `b`: slabs below and above `b`, dimension by dimension (at most
/// two per dimension). Given [0:4, 0:4] and [1:3, 0:2]: [0:1, 0:4], [3:4, 0:4], [1:3, 2:4].
std::vector<Box> subtractBox(const Box &a, const Box &b);
/// The parts of each of `boxes` outside `cut`.
std::vector<Box> subtractBox(const std::vector<Box> &boxes, const Box &cut);
/// Whether `outer` covers all of `inner`.
bool containsBox(const Box &outer, const Box &inner);
/// `box` cut at every boundary of `cuts` (per dimension, in any order) that falls strictly
/// inside it: the cells, in row-major order; none for an empty box. Given [0:4, 0:2] and
/// cuts {{1, 4, 9}, {1}}: [0:1, 0:1], [0:1, 1:2], [1:4, 0:1], [1:4, 1:2].
std::vector<Box> cutBox(const Box &box, const std::vector<std::vector<int64_t>> &cuts);
/// The extent of `box` per dimension, and where it starts inside a region starting at `origin`.
std::vector<int64_t> boxExtent(const Box &box);
std::vector<int64_t> boxOffset(const Box &box, const std::vector<int64_t> &origin);

/// What one device holds. Two devices whose pieces have the same box and partial index
/// hold identical data when their replica indices differ. The full tensor is the sum, over
/// distinct partial indices, of one replica's pieces.
/// Numbering: inside a subgroup, replica (partial) index is the mixed-radix index over its
/// R (P) axes. Under a `dup` placement subgroup g's replica indices are offset by the
/// replica counts of subgroups 0..g-1; under `partial` its partial indices are offset
/// likewise; under `split` subgroups hold disjoint boxes and keep their local indices.
struct OwnedPiece {
  Box box;
  int replica = 0;
  int partial = 0;
};

/// Even ("chunked") split of `size` into `count` pieces: every piece has ceil(size/count)
/// elements except the trailing ones, which get what is left (possibly nothing).
/// Returns [begin, end) of piece `index`.
std::pair<int64_t, int64_t> chunkRange(int64_t size, int count, int index);

/// Resolves a hetero split's sizes against the dimension's concrete size: explicit sizes
/// are returned as they are; ratios r_i give floor(size * r_i / sum(r)), and the units
/// left over go one each to the first subgroups; no sizes means chunked pieces.
std::vector<int64_t> resolveHeteroSizes(const HeteroPlacement &hetero, size_t subgroups, int64_t size);

/// The index of `device` in a subgroup's device list (its devices distinct), or -1. Where the
/// list runs through consecutive ids from its first (most layouts) the answer needs no search:
/// the estimates and ownedRegion ask it for every device of every value.
int64_t devicePosition(const std::vector<int> &devices, int device);

/// The pieces of a tensor of `shape` that `device` owns: empty when the device is not in
/// the annotation, one piece otherwise. The annotation must be valid for the shape.
std::vector<OwnedPiece> ownedRegion(const Annotation &annotation, std::span<const int64_t> shape, int device);

/// Where a problem was found, so callers can point at the right source text.
struct AnnotationError {
  enum class Part { Whole, Subgroup, Device, Axis, Hetero };
  Part part = Part::Whole;
  int subgroup = 0; // Subgroup, Device, Axis
  int item = 0;     // Device: index in the subgroup's device list; Axis: axis index
  std::string message;
  std::string code; // the lint code (docs/lint.md): HS101, HS102, HS103, HS105 or HS116
};

/// Checks an annotation on its own (no shape): devices distinct across the whole
/// annotation, axis counts multiply to each group's size, hetero sizes match the subgroups.
std::optional<AnnotationError> checkAnnotation(const Annotation &annotation);
/// Checks it against a tensor: split dims within the rank, and, where a dimension is known
/// (`shape[i] >= 0`), explicit hetero split sizes that sum to it.
std::optional<AnnotationError> checkAnnotation(const Annotation &annotation, std::span<const int64_t> shape);

} // namespace hspmd::ir
