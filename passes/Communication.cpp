// Communication.cpp - planning one layout change: collectives, split collectives and batched
// send/receive messages, and their cost (passes/Communication.h).
#include "passes/Communication.h"

// GCC 12 reports a spurious -Wfree-nonheap-object in the vector code below at -O2 (GCC bug
// 105705 family); the code frees nothing but heap memory.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#endif

#include "ir/AnnotationText.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <span>

namespace hspmd::passes {

int64_t CommPlan::totalBytes() const {
  int64_t total = 0;
  for (const auto &step : steps)
    for (const auto &[device, bytes] : step.bytesReceived)
      total += bytes;
  return total;
}

double CommPlan::seconds() const {
  double total = 0;
  for (const auto &step : steps)
    total += step.seconds;
  return total;
}

std::vector<BatchedMessage> fuseAcrossTensors(const std::vector<CommPlan> &plans) {
  std::map<std::pair<int, int>, BatchedMessage> fused;
  for (size_t t = 0; t < plans.size(); ++t)
    for (const CommStep &step : plans[t].steps)
      for (const Message &m : step.messages) {
        if (m.add)
          continue;
        BatchedMessage &batch = fused[{m.from, m.to}];
        batch.from = m.from;
        batch.to = m.to;
        for (const ir::Box &box : m.boxes)
          batch.slices.emplace_back(t, box);
        batch.bytes += m.bytes;
      }
  std::vector<BatchedMessage> out;
  for (auto &[pair, batch] : fused)
    out.push_back(std::move(batch));
  return out;
}

namespace {

struct Piece {
  int device;
  ir::Box box;
  int partial;
};

std::vector<Piece> piecesOf(const ir::Annotation &annotation, const std::vector<int64_t> &shape) {
  std::vector<Piece> pieces;
  for (int device : annotation.devices())
    for (const auto &piece : ir::ownedRegion(annotation, shape, device))
      if (!piece.box.empty())
        pieces.push_back(Piece{device, piece.box, piece.partial});
  return pieces;
}

// Cuts `box` along every boundary of `cutters` that falls inside it: the finest slices.
std::vector<ir::Box> cellsOf(const ir::Box &box, const std::vector<Piece> &cutters) {
  std::vector<std::vector<int64_t>> cuts(box.lo.size());
  for (size_t d = 0; d < cuts.size(); ++d)
    for (const Piece &piece : cutters)
      cuts[d].insert(cuts[d].end(), {piece.box.lo[d], piece.box.hi[d]});
  return ir::cutBox(box, cuts);
}

int partialCount(const std::vector<Piece> &pieces) {
  int count = 0;
  for (const Piece &piece : pieces)
    count = std::max(count, piece.partial + 1);
  return count;
}

// Devices joined by the messages between them, as connected groups: a union-find by device
// id (ids are below 2^20; a reduction over n devices has n^2 messages).
class DeviceSets {
public:
  void join(int a, int b) {
    add(a);
    add(b);
    const int root = find(b);
    parent_[static_cast<size_t>(find(a))] = root;
  }
  // The groups, members in increasing order, ordered by their first member.
  std::vector<std::vector<int>> groups() {
    std::vector<std::vector<int>> groups;
    std::vector<int> index(parent_.size(), -1); // by root: its group
    for (size_t d = 0; d < parent_.size(); ++d) {
      if (parent_[d] < 0)
        continue;
      int &at = index[static_cast<size_t>(find(static_cast<int>(d)))];
      if (at < 0) {
        at = static_cast<int>(groups.size());
        groups.emplace_back();
      }
      groups[static_cast<size_t>(at)].push_back(static_cast<int>(d));
    }
    return groups;
  }

private:
  std::vector<int> parent_; // by device: -1 where it exchanges nothing
  void add(int x) {
    if (static_cast<size_t>(x) >= parent_.size())
      parent_.resize(static_cast<size_t>(x) + 1, -1);
    if (parent_[static_cast<size_t>(x)] < 0)
      parent_[static_cast<size_t>(x)] = x;
  }
  int find(int x) {
    while (parent_[static_cast<size_t>(x)] != x)
      x = parent_[static_cast<size_t>(x)] = parent_[static_cast<size_t>(parent_[static_cast<size_t>(x)])];
    return x;
  }
};

class Planner {
public:
  Planner(const std::vector<int64_t> &shape, int elementBytes, const LinkModel &links)
      : shape_(shape), elementBytes_(elementBytes), links_(links) {}

  // One step moving (and, where the source holds partial sums, adding) data from `from` to
  // `to`. `lacking` receives, per device, the bytes of the target it did not hold. `last`: no
  // later step of this planner reads the senders' loads this one adds.
  CommStep direct(const ir::Annotation &from, const ir::Annotation &to, std::map<int, int64_t> *lacking,
                  bool last = true) {
    CommStep step;
    step.from = from;
    step.to = to;
    const auto source = piecesOf(from, shape_);
    const auto target = piecesOf(to, shape_);
    const bool sourcePartial = partialCount(source) > 1;
    const bool targetPartial = partialCount(target) > 1;
    const bool reducing = sourcePartial && !targetPartial;
    // A reduction's kind follows from the layouts alone. Run as a collective whose messages
    // are not kept (LinkModel::referenceMessages), its messages only join its groups.
    const bool unkept = reducing && !links_.referenceMessages && isCollective(kindOf(from, to, true, false));
    DeviceSets joined;
    // One message per (sender, receiver, add), its slices in the order they were sent; the
    // messages in that key's order. Gathered as they come and merged at the end: a reduction
    // over n devices sends n^2 of them, too many for a map's insertions.
    std::vector<Message> sent;
    auto send = [&](const std::vector<const Piece *> &owners, int needer, const ir::Box &cell, bool add) {
      const Piece *best = links_.firstOwner ? owners.front() : nullptr;
      double bestBandwidth = -1, bestLoad = 0;
      for (const Piece *owner : owners) {
        if (links_.firstOwner)
          break;
        double bandwidth = links_.bandwidth(owner->device, needer);
        double load = loadOf(owner->device);
        if (!best || bandwidth > bestBandwidth || (bandwidth == bestBandwidth && load < bestLoad)) {
          best = owner;
          bestBandwidth = bandwidth;
          bestLoad = load;
        }
      }
      const int64_t bytes = cell.numElements() * elementBytes_;
      if (bestBandwidth <= 0)
        bestBandwidth = links_.bandwidth(best->device, needer);
      loadOf(best->device) += static_cast<double>(bytes) / bestBandwidth;
      if (unkept) {
        joined.join(best->device, needer);
        return;
      }
      if (sent.empty() || sent.back().from != best->device || sent.back().to != needer || sent.back().add != add) {
        Message &message = sent.emplace_back();
        message.from = best->device;
        message.to = needer;
        message.add = add;
      }
      sent.back().boxes.push_back(cell);
      sent.back().bytes += bytes;
    };
    std::vector<std::vector<const Piece *>> byPartial(static_cast<size_t>(partialCount(source)));
    std::vector<const Piece *> scratch; // inNeedersPipeline's answer where it is not its question
    // A reduction whose messages are not kept, where each slice of each partial sum has one
    // owner (so no choice of sender, and no later step reads the loads): its groups and local
    // adds are found by layout, without visiting every pair of devices (joinReduction).
    const bool byLayout = unkept && last && eachSliceHasOneOwner(source);
    if (byLayout)
      joinReduction(source, target, step, joined);
    for (const Piece &need : byLayout ? std::span<const Piece>() : std::span<const Piece>(target)) {
      if (targetPartial && need.partial > 0 && !sourcePartial)
        continue; // a copy becomes partial sums: index 0 keeps the value, the others hold zeros
      const Piece *own = nullptr;
      for (const Piece &piece : source)
        if (piece.device == need.device && (!sourcePartial || !targetPartial || piece.partial == need.partial))
          own = &piece;
      if (!sourcePartial || targetPartial) {
        // Movement: take what it holds, receive the rest.
        std::vector<ir::Box> missing{need.box};
        if (own) {
          ir::Box kept = intersectBox(need.box, own->box);
          if (!kept.empty())
            step.local.push_back(LocalCopy{need.device, kept, false});
          missing = subtractBox(need.box, own->box);
        }
        for (const ir::Box &box : missing) {
          if (lacking)
            (*lacking)[need.device] += box.numElements() * elementBytes_;
          for (const ir::Box &cell : cellsOf(box, source)) {
            std::vector<const Piece *> owners;
            for (const Piece &piece : source)
              if ((!targetPartial || piece.partial == need.partial) && ir::containsBox(piece.box, cell))
                owners.push_back(&piece);
            const auto &near = inNeedersPipeline(owners, need.device, scratch);
            // Several owners share one slice: cut it so that each sends a part.
            for (const ir::Box &part : spread(cell, near, need.device))
              send(near, need.device, part, false);
          }
        }
        continue;
      }
      // Reduction: one copy of every partial sum, added where it is needed. (The owners by
      // partial sum index, in increasing order; kept between cells, as a reduction over n
      // devices asks n^2 times.)
      for (const ir::Box &cell : cellsOf(need.box, source)) {
        for (auto &owners : byPartial)
          owners.clear();
        for (const Piece &piece : source)
          if (ir::containsBox(piece.box, cell))
            byPartial[static_cast<size_t>(piece.partial)].push_back(&piece);
        for (const auto &owners : byPartial) {
          if (owners.empty())
            continue;
          auto mine =
              std::find_if(owners.begin(), owners.end(), [&](const Piece *p) { return p->device == need.device; });
          if (mine != owners.end())
            step.local.push_back(LocalCopy{need.device, cell, true});
          else
            send(inNeedersPipeline(owners, need.device, scratch), need.device, cell, true);
        }
      }
    }
    // Sorted by key, then by when they were sent (the index): the messages themselves move once.
    std::vector<std::pair<uint64_t, size_t>> order(sent.size());
    auto key = [](const Message &m) {
      return (static_cast<uint64_t>(static_cast<uint32_t>(m.from)) << 33) |
             (static_cast<uint64_t>(static_cast<uint32_t>(m.to)) << 1) | static_cast<uint64_t>(m.add);
    };
    for (size_t i = 0; i < sent.size(); ++i)
      order[i] = {key(sent[i]), i};
    std::sort(order.begin(), order.end());
    step.messages.reserve(sent.size());
    for (size_t i = 0; i < order.size(); ++i) {
      Message &message = sent[order[i].second];
      if (i > 0 && order[i - 1].first == order[i].first) {
        Message &into = step.messages.back();
        into.boxes.insert(into.boxes.end(), message.boxes.begin(), message.boxes.end());
        into.bytes += message.bytes;
        continue;
      }
      step.messages.push_back(std::move(message));
    }
    for (const Message &message : step.messages) {
      step.bytesSent[message.from] += message.bytes;
      step.bytesReceived[message.to] += message.bytes;
    }
    for (const Message &message : step.messages)
      joined.join(message.from, message.to);
    step.groups = joined.groups();
    step.kind = kindOf(from, to, reducing, step.messages.empty());
    estimate(step);
    if (!links_.referenceMessages && isCollective(step.kind)) {
      step.messages.clear();
      step.messages.shrink_to_fit();
    }
    return step;
  }

private:
  // Whether no two pieces of one partial sum overlap: every slice of it has one owner.
  static bool eachSliceHasOneOwner(const std::vector<Piece> &source) {
    std::map<int, std::vector<const Piece *>> byPartial;
    for (const Piece &piece : source)
      byPartial[piece.partial].push_back(&piece);
    for (const auto &[partial, pieces] : byPartial) {
      if (pieces.size() > 64)
        return false; // not worth the pairs: direct() visits them as for any reduction
      for (size_t i = 0; i < pieces.size(); ++i)
        for (size_t j = i + 1; j < pieces.size(); ++j)
          if (!intersectBox(pieces[i]->box, pieces[j]->box).empty())
            return false;
    }
    return true;
  }

  // What direct()'s reduction loop does for such a reduction, by layout: each needer adds the
  // partial sums it holds in place (a local add per slice and sum, in the same order) and is
  // joined with the owner of every other sum of each slice. The owners of one source box are
  // joined to each other once, and a needer to one of them, which makes the same groups;
  // the slices are the same cuts, taken from the cuts of all sources sorted once. Linear in
  // the devices where the sources have few distinct boxes (data parallelism: one).
  void joinReduction(const std::vector<Piece> &source, const std::vector<Piece> &target, CommStep &step,
                     DeviceSets &joined) const {
    struct Owners {
      const ir::Box *box;
      std::vector<int> devices; // distinct, in source order
      bool joined = false;
    };
    std::vector<Owners> boxes;
    std::map<std::pair<std::vector<int64_t>, std::vector<int64_t>>, size_t> indexOf;
    std::map<int, std::vector<const Piece *>> held; // by device: its pieces
    const size_t rank = shape_.size();
    std::vector<std::vector<int64_t>> cuts(rank);
    for (const Piece &piece : source) {
      auto [it, fresh] = indexOf.try_emplace({piece.box.lo, piece.box.hi}, boxes.size());
      if (fresh)
        boxes.push_back(Owners{&piece.box, {}});
      std::vector<int> &devices = boxes[it->second].devices;
      if (std::find(devices.begin(), devices.end(), piece.device) == devices.end())
        devices.push_back(piece.device);
      held[piece.device].push_back(&piece);
      for (size_t d = 0; d < rank; ++d)
        cuts[d].insert(cuts[d].end(), {piece.box.lo[d], piece.box.hi[d]});
    }
    for (auto &c : cuts) {
      std::sort(c.begin(), c.end());
      c.erase(std::unique(c.begin(), c.end()), c.end());
    }
    static const std::vector<const Piece *> none;
    for (const Piece &need : target) {
      auto mine = held.find(need.device);
      const std::vector<const Piece *> &own = mine == held.end() ? none : mine->second;
      for (const ir::Box &cell : ir::cutBox(need.box, cuts)) {
        for (const Piece *piece : own)
          if (ir::containsBox(piece->box, cell))
            step.local.push_back(LocalCopy{need.device, cell, true});
        for (Owners &owners : boxes) {
          if (!ir::containsBox(*owners.box, cell) ||
              (owners.devices.size() == 1 && owners.devices.front() == need.device))
            continue;
          if (!owners.joined) {
            for (int device : owners.devices)
              joined.join(owners.devices.front(), device);
            owners.joined = true;
          }
          joined.join(need.device, owners.devices.front());
        }
      }
    }
  }

  // The owners in the needer's pipeline, or all of them when none is (LinkModel::samePipeline):
  // `owners` itself where that is all of them (or it has one), else `near`, filled here.
  const std::vector<const Piece *> &inNeedersPipeline(const std::vector<const Piece *> &owners, int needer,
                                                      std::vector<const Piece *> &near) const {
    if (owners.size() < 2)
      return owners;
    near.clear();
    for (const Piece *owner : owners)
      if (links_.samePipeline(owner->device, needer))
        near.push_back(owner);
    return near.empty() || near.size() == owners.size() ? owners : near;
  }

  // A slice with k equally good owners (same link speed to the needer) is cut into k parts
  // along its longest dimension, so that the least-loaded choice spreads the sending.
  std::vector<ir::Box> spread(const ir::Box &cell, const std::vector<const Piece *> &owners, int needer) const {
    if (owners.size() < 2 || links_.firstOwner)
      return owners.empty() ? std::vector<ir::Box>{} : std::vector<ir::Box>{cell};
    double best = 0;
    for (const Piece *owner : owners)
      best = std::max(best, links_.bandwidth(owner->device, needer));
    int64_t k = 0;
    for (const Piece *owner : owners)
      k += links_.bandwidth(owner->device, needer) == best;
    size_t longest = 0;
    for (size_t d = 0; d < cell.lo.size(); ++d)
      if (cell.hi[d] - cell.lo[d] > cell.hi[longest] - cell.lo[longest])
        longest = d;
    const int64_t extent = cell.lo.empty() ? 1 : cell.hi[longest] - cell.lo[longest];
    k = std::min(k, extent);
    if (k < 2)
      return {cell};
    std::vector<ir::Box> parts;
    for (int64_t i = 0; i < k; ++i) {
      auto [begin, end] = ir::chunkRange(extent, static_cast<int>(k), static_cast<int>(i));
      ir::Box part = cell;
      part.lo[longest] = cell.lo[longest] + begin;
      part.hi[longest] = cell.lo[longest] + end;
      if (!part.empty())
        parts.push_back(part);
    }
    return parts;
  }

  const std::vector<int64_t> &shape_;
  int elementBytes_;
  const LinkModel &links_;
  std::vector<double> load_; // by device: the seconds of sending chosen so far

  double &loadOf(int device) {
    if (static_cast<size_t>(device) >= load_.size())
      load_.resize(static_cast<size_t>(device) + 1, 0.0);
    return load_[static_cast<size_t>(device)];
  }

  // The collective a step from `from` to `to` amounts to, or Bsr. (`quiet`: the step sends
  // no message.) A reduction's kind depends on the layouts alone.
  ir::CommKind kindOf(const ir::Annotation &from, const ir::Annotation &to, bool reducing, bool quiet) const {
    const bool sameGroups = from.subgroups.size() == to.subgroups.size() &&
                            std::equal(from.subgroups.begin(), from.subgroups.end(), to.subgroups.begin(),
                                       [](const auto &a, const auto &b) { return a.devices == b.devices; });
    const bool sameHetero = from.subgroups.size() == 1 || from.hetero == to.hetero;
    if (quiet && !reducing)
      return from == to ? CommKind::Identity : CommKind::LocalSlice;
    if (sameGroups && sameHetero) {
      // Inside each subgroup, one axis kind turns into another: a collective per subgroup.
      auto change = axisChange(from, to);
      if (reducing && change == std::make_pair(ir::AxisKind::Partial, ir::AxisKind::Dup))
        return CommKind::AllReduce;
      if (reducing && change == std::make_pair(ir::AxisKind::Partial, ir::AxisKind::Split))
        return CommKind::ReduceScatter;
      if (!reducing && change == std::make_pair(ir::AxisKind::Split, ir::AxisKind::Dup))
        // Pieces of unequal size (a chunked split: `zero` state over replicas that do not
        // divide it) are gathered as a split all-gather, whose members contribute unequally.
        return equalPieces(from) ? CommKind::AllGather : CommKind::SplitAllGather;
      if (!reducing && change == std::make_pair(ir::AxisKind::Split, ir::AxisKind::Split))
        return CommKind::AllToAll;
      return CommKind::Bsr;
    }
    if (sameGroups && reducing && from.hetero.kind == ir::HeteroKind::Partial)
      return to.hetero.kind == ir::HeteroKind::Split ? CommKind::SplitReduceScatter : CommKind::SplitAllReduce;
    if (sameGroups && !reducing && to.hetero.kind == ir::HeteroKind::Dup && allCopies(to))
      return CommKind::SplitAllGather; // subgroups sharding differently gather the whole
    if (!sameGroups && !reducing && sameLayoutOtherDevices(from, to))
      return CommKind::SendRecv;
    return CommKind::Bsr;
  }

  // The one kind of axis change between two layouts over the same groups: (from, to) kinds,
  // or (Dup, Dup) when the axes change in more than one way.
  static std::pair<ir::AxisKind, ir::AxisKind> axisChange(const ir::Annotation &from, const ir::Annotation &to) {
    std::set<std::pair<ir::AxisKind, ir::AxisKind>> changes;
    for (size_t g = 0; g < from.subgroups.size(); ++g) {
      const auto &a = from.subgroups[g].axes, &b = to.subgroups[g].axes;
      if (a.size() != b.size())
        return {ir::AxisKind::Dup, ir::AxisKind::Dup};
      for (size_t i = 0; i < a.size(); ++i) {
        if (a[i] == b[i] || a[i].count == 1)
          continue;
        if (a[i].count != b[i].count)
          return {ir::AxisKind::Dup, ir::AxisKind::Dup};
        changes.insert({a[i].kind, b[i].kind});
      }
    }
    return changes.size() == 1 ? *changes.begin() : std::make_pair(ir::AxisKind::Dup, ir::AxisKind::Dup);
  }
  // Whether every device of each subgroup holds as many elements under `a`.
  bool equalPieces(const ir::Annotation &a) const {
    for (const auto &local : a.subgroups) {
      int64_t size = -1;
      for (int d : local.devices) {
        int64_t mine = 0;
        for (const auto &piece : ir::ownedRegion(a, shape_, d))
          mine += piece.box.numElements();
        if (size >= 0 && mine != size)
          return false;
        size = mine;
      }
    }
    return true;
  }
  static bool allCopies(const ir::Annotation &a) {
    for (const auto &local : a.subgroups)
      for (const auto &axis : local.axes)
        if (axis.kind != ir::AxisKind::Dup && axis.count > 1)
          return false;
    return true;
  }
  static bool sameLayoutOtherDevices(const ir::Annotation &from, const ir::Annotation &to) {
    if (from.subgroups.size() != to.subgroups.size() || !(from.hetero == to.hetero))
      return false;
    for (size_t g = 0; g < from.subgroups.size(); ++g)
      if (from.subgroups[g].axes != to.subgroups[g].axes ||
          from.subgroups[g].devices.size() != to.subgroups[g].devices.size())
        return false;
    return true;
  }

  // alpha-beta: every device sends and receives its messages over their links; the step
  // takes as long as its busiest device. Reductions run as ring collectives in each group:
  // all-reduce moves 2(n-1)/n of a device's buffer, reduce-scatter (n-1)/n, in 2(n-1) or
  // n-1 rounds; their messages, where kept, are the reference movement the checker replays.
  void estimate(CommStep &step) {
    const bool allReduce = step.kind == CommKind::AllReduce || step.kind == CommKind::SplitAllReduce;
    const bool reduceScatter = step.kind == CommKind::ReduceScatter || step.kind == CommKind::SplitReduceScatter;
    if (allReduce || reduceScatter) {
      step.bytesSent.clear();
      step.bytesReceived.clear();
      for (const auto &group : step.groups) {
        const double n = static_cast<double>(group.size());
        double buffer = 0, bandwidth = 1e300;
        for (int d : group) {
          for (const auto &piece : ir::ownedRegion(step.from, shape_, d))
            buffer = std::max(buffer, static_cast<double>(piece.box.numElements() * elementBytes_));
          if (!links_.leastBandwidth)
            for (int e : group)
              if (e != d)
                bandwidth = std::min(bandwidth, links_.bandwidth(d, e));
        }
        if (links_.leastBandwidth)
          bandwidth = std::min(bandwidth, links_.leastBandwidth(group));
        const int members = static_cast<int>(n);
        const double moved = allReduce ? cost::allReduceBytes(buffer, members) : cost::gatherBytes(buffer, members);
        for (int d : group) {
          step.bytesSent[d] = static_cast<int64_t>(moved);
          step.bytesReceived[d] = static_cast<int64_t>(moved);
        }
        const int rounds = allReduce ? cost::allReduceRounds(members) : cost::gatherRounds(members);
        step.seconds = std::max(step.seconds, cost::ringSeconds(moved, rounds, bandwidth, links_.alpha));
      }
      return;
    }
    std::map<int, double> sending, receiving;
    for (const Message &m : step.messages) {
      double t = cost::messageSeconds(static_cast<double>(m.bytes), links_.bandwidth(m.from, m.to), links_.alpha);
      sending[m.from] += t;
      receiving[m.to] += t;
    }
    for (const auto &[device, t] : sending)
      step.seconds = std::max(step.seconds, t);
    for (const auto &[device, t] : receiving)
      step.seconds = std::max(step.seconds, t);
  }
};

bool hasPartial(const ir::Annotation &a) {
  if (a.subgroups.size() > 1 && a.hetero.kind == ir::HeteroKind::Partial)
    return true;
  for (const auto &local : a.subgroups)
    for (const auto &axis : local.axes)
      if (axis.kind == ir::AxisKind::Partial && axis.count > 1)
        return true;
  return false;
}

// The source with its partial sums reduced in place: partial axes become copies.
ir::Annotation reducedInPlace(ir::Annotation a) {
  for (auto &local : a.subgroups)
    for (auto &axis : local.axes)
      if (axis.kind == ir::AxisKind::Partial)
        axis.kind = ir::AxisKind::Dup;
  if (a.hetero.kind == ir::HeteroKind::Partial)
    a.hetero = {ir::HeteroKind::Dup, 0, {}, false};
  return a;
}

// Whether partial sums can move index by index: every target partial sum is held, over its
// whole box, by source pieces of the same index, and both hold as many partial sums.
bool samePartials(const ir::Annotation &from, const ir::Annotation &to, const std::vector<int64_t> &shape) {
  const auto source = piecesOf(from, shape), target = piecesOf(to, shape);
  std::vector<Piece> both = source;
  both.insert(both.end(), target.begin(), target.end());
  auto partialsOver = [](const std::vector<Piece> &pieces, const ir::Box &cell) {
    std::set<int> found;
    for (const Piece &piece : pieces)
      if (ir::containsBox(piece.box, cell))
        found.insert(piece.partial);
    return found;
  };
  for (const Piece &need : target)
    for (const ir::Box &cell : cellsOf(need.box, both))
      if (partialsOver(source, cell) != partialsOver(target, cell))
        return false;
  return true;
}

} // namespace

std::shared_ptr<const CommPlan> ReshardPlans::share(const std::vector<int64_t> &shape, int elementBytes,
                                                    const ir::Annotation &from, const ir::Annotation &to) {
  std::string key = std::to_string(elementBytes);
  for (int64_t size : shape)
    key += "," + std::to_string(size);
  key += "|" + ir::printAnnotation(from) + "|" + ir::printAnnotation(to);
  auto it = plans_.find(key);
  if (it == plans_.end())
    it = plans_
             .emplace(std::move(key),
                      std::make_shared<const CommPlan>(planReshard(shape, elementBytes, from, to, links_)))
             .first;
  return it->second;
}

CommPlan planReshard(const std::vector<int64_t> &shape, int elementBytes, const ir::Annotation &from,
                     const ir::Annotation &to, const LinkModel &links) {
  if (hasPartial(from) && hasPartial(to) && !samePartials(from, to, shape)) {
    // Partial sums regrouped differently: add them up first, then split the whole anew.
    CommPlan plan;
    Planner planner(shape, elementBytes, links);
    ir::Annotation mid = reducedInPlace(from);
    plan.steps.push_back(planner.direct(from, mid, nullptr, false));
    plan.steps.push_back(planner.direct(mid, to, nullptr));
    return plan;
  }
  CommPlan direct;
  {
    Planner planner(shape, elementBytes, links);
    // The bound holds for whole values; a partial-sum target (P) could be had by zero-filling
    // in place, which no plan here does: no bound is claimed for it.
    direct.steps.push_back(
        planner.direct(from, to, hasPartial(from) || hasPartial(to) ? nullptr : &direct.lackingBytes));
  }
  // Partial sums going to other devices: reducing them where they are first (one collective)
  // and then moving the result may beat sending every partial sum to every needer.
  // (Where the reduced source is the target, an all-reduce, those two steps are one, the
  // direct plan again.)
  if (ir::Annotation mid = reducedInPlace(from); hasPartial(from) && !hasPartial(to) && !(mid == to)) {
    CommPlan twoSteps;
    Planner planner(shape, elementBytes, links);
    twoSteps.steps.push_back(planner.direct(from, mid, nullptr, false));
    twoSteps.steps.push_back(planner.direct(mid, to, &twoSteps.lackingBytes));
    if (twoSteps.seconds() < direct.seconds())
      return twoSteps;
  }
  return direct;
}

} // namespace hspmd::passes
