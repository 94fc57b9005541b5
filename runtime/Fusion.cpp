// Fusion.cpp - the executor's matmul fusion (runtime/Fusion.h).
#include "runtime/Fusion.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>

namespace hspmd::runtime {

namespace {

struct Analysis {
  const ir::DeviceProgram &program;
  bool bf16 = false;         // bf16 tensors fuse too
  std::vector<int> writer;   // by buffer: the one body index writing it (-1: none, -2: several)
  std::vector<int> readers;  // by buffer: instructions reading it
  std::vector<int> lastRead; // by buffer: the last body index reading it

  Analysis(const ir::DeviceProgram &p, bool withBf16)
      : program(p), bf16(withBf16), writer(p.buffers.size(), -1), readers(p.buffers.size(), 0),
        lastRead(p.buffers.size(), -1) {
    for (size_t i = 0; i < p.body.size(); ++i) {
      for (int b : p.body[i].inputs) {
        ++readers[static_cast<size_t>(b)];
        lastRead[static_cast<size_t>(b)] = static_cast<int>(i);
      }
      for (int b : p.body[i].outputs)
        writer[static_cast<size_t>(b)] = writer[static_cast<size_t>(b)] == -1 ? static_cast<int>(i) : -2;
    }
  }

  const ir::Buffer &buffer(int b) const { return program.buffers[static_cast<size_t>(b)]; }
  bool fusable(int b) const {
    const ir::DType t = buffer(b).dtype;
    return t == ir::DType::F32 || (bf16 && t == ir::DType::BF16);
  }
  const ir::Instruction &at(int i) const { return program.body[static_cast<size_t>(i)]; }
  bool samePass(int i, int j) const { return ir::passOf(at(i).phase) == ir::passOf(at(j).phase); }

  bool overlap(int x, int y) const {
    const ir::Buffer &a = buffer(x), &b = buffer(y);
    return a.offset < b.offset + b.arenaBytes() && b.offset < a.offset + a.arenaBytes();
  }
  // Whether an instruction of the pass strictly between body indices `from` and `to` touches
  // bytes of buffer `b`: writes them (`reads` false) or reads or writes them.
  bool touched(int b, int from, int to, bool reads) const {
    for (int k = from + 1; k < to; ++k) {
      if (!samePass(k, to))
        continue;
      for (int o : at(k).outputs)
        if (overlap(o, b))
          return true;
      if (reads)
        for (int o : at(k).inputs)
          if (overlap(o, b))
            return true;
    }
    return false;
  }

  // The transpose of the last two dimensions that alone feeds operand buffer `b` of the matmul
  // at `use`, when it can be folded: its body index, else -1.
  int foldableTranspose(int b, int use) const {
    const int t = writer[static_cast<size_t>(b)];
    if (t < 0 || t >= use || readers[static_cast<size_t>(b)] != 1 || !samePass(t, use))
      return -1;
    const ir::Instruction &in = at(t);
    if (in.kind != ir::InstrKind::Kernel || in.op != "transpose" || !in.group.empty() || in.inputs.size() != 1)
      return -1;
    const ir::Buffer &x = buffer(in.inputs[0]);
    const auto rank = static_cast<int64_t>(x.shape.size());
    const int64_t d0 = ir::intAttr(in.attrs, "dim0"), d1 = ir::intAttr(in.attrs, "dim1");
    if (!fusable(in.inputs[0]) || rank < 2 || std::min(d0, d1) != rank - 2 || std::max(d0, d1) != rank - 1)
      return -1;
    // The untransposed buffer must still hold its values when the matmul runs.
    return touched(in.inputs[0], t, use, false) ? -1 : t;
  }
};

int64_t product(const std::vector<int64_t> &shape, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t d = from; d < to; ++d)
    n *= shape[d];
  return n;
}

} // namespace

Fusion fuseMatmuls(const ir::DeviceProgram &program, bool bf16) {
  Fusion fusion;
  fusion.skipped.assign(program.body.size(), false);
  fusion.matmuls.resize(program.body.size());
  const Analysis an(program, bf16);
  for (int i = 0; i < static_cast<int>(program.body.size()); ++i) {
    const ir::Instruction &in = an.at(i);
    if (in.kind != ir::InstrKind::Kernel || in.op != "matmul" || !in.group.empty() || in.inputs.size() != 2 ||
        in.inputs[0] == in.inputs[1] || in.outputs.size() != 1)
      continue;
    const ir::Buffer &a = an.buffer(in.inputs[0]), &b = an.buffer(in.inputs[1]), &y = an.buffer(in.outputs[0]);
    if (!an.fusable(in.inputs[0]) || !an.fusable(in.inputs[1]) || !an.fusable(in.outputs[0]) || a.shape.size() < 2 ||
        b.shape.size() < 2)
      continue;
    const int ta = an.foldableTranspose(in.inputs[0], i), tb = an.foldableTranspose(in.inputs[1], i);
    const size_t rank = a.shape.size();
    if (b.shape.size() == 2) { // every row of a against one matrix, either transposed
      const bool transA = ta >= 0 && rank == 2, transB = tb >= 0;
      if (!transA && !transB)
        continue;
      FusedMatmul f;
      f.a = transA ? an.at(ta).inputs[0] : in.inputs[0];
      f.b = transB ? an.at(tb).inputs[0] : in.inputs[1];
      f.out = in.outputs[0];
      f.transA = transA;
      f.transB = transB;
      f.K = a.shape.back();
      f.M = f.K == 0 ? 0 : product(a.shape, 0, rank) / f.K;
      f.N = b.shape.back();
      if (f.M * f.N * f.K == 0 || product(y.shape, 0, y.shape.size()) != f.M * f.N || b.shape[0] != f.K ||
          an.overlap(f.out, f.a) || an.overlap(f.out, f.b)) // the result may take the bytes of a folded input
        continue;
      fusion.matmuls[static_cast<size_t>(i)] = f;
      if (transA)
        fusion.skipped[static_cast<size_t>(ta)] = true;
      if (transB)
        fusion.skipped[static_cast<size_t>(tb)] = true;
      ++fusion.fused;
      continue;
    }
    // A weight's gradient: sum over dimension 0 of transpose(x) @ dy, both [Bt, ., .].
    const int s =
        an.readers[static_cast<size_t>(in.outputs[0])] == 1 ? an.lastRead[static_cast<size_t>(in.outputs[0])] : -1;
    if (ta < 0 || tb >= 0 || rank != 3 || b.shape.size() != 3 || a.shape[0] != b.shape[0] || s <= i ||
        !an.samePass(i, s))
      continue;
    const ir::Instruction &sum = an.at(s);
    if (sum.kind != ir::InstrKind::Kernel || sum.op != "sum" || !sum.group.empty() || sum.outputs.size() != 1 ||
        ir::boolAttr(sum.attrs, "keepdim"))
      continue;
    const auto dims = ir::listAttr(sum.attrs, "dims");
    if (dims.size() != 1 || dims[0].constant() != 0)
      continue;
    const int x = an.at(ta).inputs[0], g = sum.outputs[0];
    // The sum's result is now written at the matmul: its bytes must be free from there to the
    // sum. Where they are those of an input (free after the matmul), the product goes through
    // the executor's scratch.
    if (an.touched(g, i, s, true) || !an.fusable(g))
      continue;
    FusedMatmul f;
    f.a = x;
    f.b = in.inputs[1];
    f.out = g;
    f.transA = true;
    f.scratch = an.overlap(g, x) || an.overlap(g, in.inputs[1]);
    f.M = a.shape[1];
    f.K = a.shape[0] * a.shape[2];
    f.N = b.shape[2];
    if (f.M * f.N * f.K == 0 || an.buffer(g).shape != std::vector<int64_t>{f.M, f.N})
      continue;
    fusion.matmuls[static_cast<size_t>(i)] = f;
    fusion.skipped[static_cast<size_t>(ta)] = true;
    fusion.skipped[static_cast<size_t>(s)] = true;
    ++fusion.fused;
  }
  return fusion;
}

Fusion noFusion(const ir::DeviceProgram &program) {
  return Fusion{std::vector<bool>(program.body.size(), false),
                std::vector<std::optional<FusedMatmul>>(program.body.size()), 0};
}

Fusion fusionFor(const ir::DeviceProgram &program, bool bf16) {
  const char *fuse = std::getenv("HSPMD_FUSION");
  return fuse && std::string(fuse) == "0" ? noFusion(program) : fuseMatmuls(program, bf16);
}

bool bf16Product(const ir::DeviceProgram &program, size_t i, const Fusion &fusion) {
  auto bf16 = [&](int id) { return program.buffers[static_cast<size_t>(id)].dtype == ir::DType::BF16; };
  const ir::Instruction &in = program.body[i];
  const std::optional<FusedMatmul> &fused = fusion.matmuls[i];
  return std::any_of(in.inputs.begin(), in.inputs.end(), bf16) ||
         std::any_of(in.outputs.begin(), in.outputs.end(), bf16) ||
         (fused && (bf16(fused->a) || bf16(fused->b) || bf16(fused->out)));
}

std::vector<int> bf16ParameterCopies(const ir::DeviceProgram &program, const Fusion &fusion) {
  auto buffer = [&](int id) -> const ir::Buffer & { return program.buffers[static_cast<size_t>(id)]; };
  std::set<int> copies;
  for (size_t i = 0; i < program.body.size(); ++i) {
    const ir::Instruction &in = program.body[i];
    if (in.kind != ir::InstrKind::Kernel || in.op != "matmul" || !bf16Product(program, i, fusion))
      continue;
    const std::optional<FusedMatmul> &fused = fusion.matmuls[i];
    for (int id : fused ? std::vector<int>{fused->a, fused->b} : in.inputs)
      if (const ir::Buffer &b = buffer(id); b.role == ir::BufferRole::Parameter && b.dtype == ir::DType::F32 &&
                                            b.slots == 1 && b.offset >= 0 && b.bytes() > 0)
        copies.insert(id);
  }
  // The GPU finds a copy by its parameter's offset, which needs them disjoint: any that overlap
  // another get none.
  std::vector<std::pair<int64_t, int>> byOffset;
  for (int id : copies)
    byOffset.push_back({buffer(id).offset, id});
  std::sort(byOffset.begin(), byOffset.end());
  for (size_t i = 1; i < byOffset.size(); ++i)
    if (const ir::Buffer &before = buffer(byOffset[i - 1].second); before.offset + before.bytes() > byOffset[i].first) {
      copies.erase(byOffset[i - 1].second);
      copies.erase(byOffset[i].second);
    }
  return {copies.begin(), copies.end()};
}

} // namespace hspmd::runtime
