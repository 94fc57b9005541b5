// Autodiff.cpp - reverse-mode differentiation at the IR level: ops are visited in reverse,
// each one's gradient rule emits ordinary ops (matmul, transpose, sum, ...) or a fused
// backward op (gelu_grad, rmsnorm_grad, attention_grad, ...), and gradients reaching a value
// from several uses are added.
#include "passes/Autodiff.h"

#include <algorithm>

namespace hspmd::passes {

namespace {

using ir::OpKind;
using ir::SymExpr;
using ir::Value;

class Differentiator {
public:
  explicit Differentiator(ir::Graph &graph) : graph_(graph) {}

  Gradients run(Value *loss) {
    std::vector<ir::Op *> forward;
    for (const auto &op : graph_.ops())
      forward.push_back(op.get());
    loc_ = loss->def->loc;
    current_ = loss->def;
    grads_[loss] = emit(OpKind::Constant, {}, {{"value", 1.0}}, {ir::TensorType{loss->type.dtype, {}}});
    for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
      ir::Op &op = **it;
      bool any = false;
      for (Value *result : op.results)
        any = any || grads_.count(result);
      if (!any || op.kind == OpKind::Param || op.kind == OpKind::Input || op.kind == OpKind::Constant)
        continue;
      loc_ = op.loc;
      current_ = &op;
      backward(op);
    }
    Gradients out;
    out.origin = std::move(origin_);
    for (Value *param : graph_.params())
      if (auto it = grads_.find(param); it != grads_.end()) {
        graph_.rename(it->second, "grad." + param->name);
        out.params[param->name] = it->second;
      }
    return out;
  }

private:
  ir::Graph &graph_;
  std::map<const Value *, Value *> grads_;
  ir::Location loc_;
  const ir::Op *current_ = nullptr; // the forward op being differentiated
  std::map<const ir::Op *, const ir::Op *> origin_;

  std::vector<Value *> emitMulti(OpKind kind, std::vector<Value *> operands, ir::AttrMap attrs,
                                 std::vector<ir::TensorType> types = {}) {
    if (types.empty()) {
      std::vector<ir::TensorType> in;
      for (Value *v : operands)
        in.push_back(v->type);
      types = ir::inferResultTypes(kind, in, attrs).types;
    }
    ir::Op *op = graph_.createOp(kind, std::move(operands), std::move(types), std::move(attrs), loc_);
    origin_[op] = current_;
    return op->results;
  }
  Value *emit(OpKind kind, std::vector<Value *> operands, ir::AttrMap attrs = {},
              std::vector<ir::TensorType> types = {}) {
    return emitMulti(kind, std::move(operands), std::move(attrs), std::move(types)).front();
  }

  void accumulate(Value *value, Value *grad) {
    auto [it, inserted] = grads_.emplace(value, grad);
    if (!inserted)
      it->second = emit(OpKind::Add, {it->second, grad});
  }

  Value *zeros(const ir::TensorType &type) {
    Value *zero = emit(OpKind::Constant, {}, {{"value", 0.0}}, {ir::TensorType{type.dtype, {}}});
    return emit(OpKind::Broadcast, {zero}, {{"shape", type.shape}});
  }

  Value *gradOf(Value *result) {
    auto it = grads_.find(result);
    return it != grads_.end() ? it->second : zeros(result->type);
  }

  // Sums a broadcast gradient back to the shape of the operand it came from.
  Value *unbroadcast(Value *grad, const ir::Shape &shape) {
    const ir::Shape &g = grad->type.shape;
    if (g == shape)
      return grad;
    const size_t extra = g.size() - shape.size();
    if (extra > 0) {
      std::vector<SymExpr> dims;
      for (size_t d = 0; d < extra; ++d)
        dims.push_back(static_cast<int64_t>(d));
      grad = emit(OpKind::Sum, {grad}, {{"dims", dims}, {"keepdim", false}});
    }
    std::vector<SymExpr> ones;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] == SymExpr(1) && grad->type.shape[d] != SymExpr(1))
        ones.push_back(static_cast<int64_t>(d));
    if (!ones.empty())
      grad = emit(OpKind::Sum, {grad}, {{"dims", ones}, {"keepdim", true}});
    return grad;
  }

  Value *swapLast(Value *x) {
    const int64_t r = x->type.rank();
    return emit(OpKind::Transpose, {x}, {{"dim0", r - 2}, {"dim1", r - 1}});
  }

  void backward(ir::Op &op) {
    Value *dy = op.results.size() == 1 ? gradOf(op.result()) : nullptr;
    auto operand = [&](size_t i) { return op.operands[i]; };
    switch (op.kind) {
    case OpKind::Add:
      accumulate(operand(0), unbroadcast(dy, operand(0)->type.shape));
      accumulate(operand(1), unbroadcast(dy, operand(1)->type.shape));
      break;
    case OpKind::Sub:
      accumulate(operand(0), unbroadcast(dy, operand(0)->type.shape));
      accumulate(operand(1), unbroadcast(emit(OpKind::Neg, {dy}), operand(1)->type.shape));
      break;
    case OpKind::Mul:
      accumulate(operand(0), unbroadcast(emit(OpKind::Mul, {dy, operand(1)}), operand(0)->type.shape));
      accumulate(operand(1), unbroadcast(emit(OpKind::Mul, {dy, operand(0)}), operand(1)->type.shape));
      break;
    case OpKind::Div: {
      accumulate(operand(0), unbroadcast(emit(OpKind::Div, {dy, operand(1)}), operand(0)->type.shape));
      // d(a/b)/db = -a/b^2 = -(y / b)
      Value *db = emit(OpKind::Neg, {emit(OpKind::Mul, {dy, emit(OpKind::Div, {op.result(), operand(1)})})});
      accumulate(operand(1), unbroadcast(db, operand(1)->type.shape));
      break;
    }
    case OpKind::Neg:
      accumulate(operand(0), emit(OpKind::Neg, {dy}));
      break;
    case OpKind::Gelu:
      accumulate(operand(0), emit(OpKind::GeluGrad, {operand(0), dy}));
      break;
    case OpKind::Silu:
      accumulate(operand(0), emit(OpKind::SiluGrad, {operand(0), dy}));
      break;
    case OpKind::Relu:
      accumulate(operand(0), emit(OpKind::ReluGrad, {operand(0), dy}));
      break;
    case OpKind::MatMul: {
      Value *a = operand(0), *b = operand(1);
      accumulate(a, unbroadcast(emit(OpKind::MatMul, {dy, swapLast(b)}), a->type.shape));
      accumulate(b, unbroadcast(emit(OpKind::MatMul, {swapLast(a), dy}), b->type.shape));
      break;
    }
    case OpKind::Softmax: {
      // dx = y * (dy - sum(dy * y, dim, keepdim))
      Value *y = op.result();
      Value *dot = emit(OpKind::Sum, {emit(OpKind::Mul, {dy, y})},
                        {{"dims", std::vector<SymExpr>{SymExpr(ir::intAttr(op.attrs, "dim"))}}, {"keepdim", true}});
      accumulate(operand(0), emit(OpKind::Mul, {y, emit(OpKind::Sub, {dy, dot})}));
      break;
    }
    case OpKind::RmsNorm: {
      auto g = emitMulti(OpKind::RmsNormGrad, {operand(0), operand(1), dy}, {{"eps", ir::floatAttr(op.attrs, "eps")}});
      accumulate(operand(0), g[0]);
      accumulate(operand(1), g[1]);
      break;
    }
    case OpKind::LayerNorm: {
      auto g =
          emitMulti(OpKind::LayerNormGrad, {operand(0), operand(1), dy}, {{"eps", ir::floatAttr(op.attrs, "eps")}});
      accumulate(operand(0), g[0]);
      accumulate(operand(1), g[1]);
      accumulate(operand(2), g[2]);
      break;
    }
    case OpKind::Embedding:
      accumulate(operand(0),
                 emit(OpKind::EmbeddingGrad, {operand(1), dy}, {{"vocab", *operand(0)->type.shape[0].constant()}}));
      break;
    case OpKind::Reshape:
      accumulate(operand(0), emit(OpKind::Reshape, {dy}, {{"shape", operand(0)->type.shape}}));
      break;
    case OpKind::Transpose:
      accumulate(operand(0), emit(OpKind::Transpose, {dy}, op.attrs));
      break;
    case OpKind::Unbind:
    case OpKind::Split: {
      const int64_t dim = ir::intAttr(op.attrs, "dim");
      std::vector<Value *> parts;
      for (Value *result : op.results) {
        Value *g = gradOf(result);
        if (op.kind == OpKind::Unbind) { // put the removed dimension back, of size 1
          ir::Shape shape = g->type.shape;
          shape.insert(shape.begin() + dim, SymExpr(1));
          g = emit(OpKind::Reshape, {g}, {{"shape", shape}});
        }
        parts.push_back(g);
      }
      accumulate(operand(0), emit(OpKind::Concat, parts, {{"dim", dim}}));
      break;
    }
    case OpKind::Concat: {
      const int64_t dim = ir::intAttr(op.attrs, "dim");
      int64_t start = 0;
      for (Value *in : op.operands) {
        const int64_t size = *in->type.shape[dim].constant();
        accumulate(in, emit(OpKind::Slice, {dy}, {{"dim", dim}, {"start", start}, {"end", start + size}}));
        start += size;
      }
      break;
    }
    case OpKind::Slice: {
      const int64_t dim = ir::intAttr(op.attrs, "dim");
      const int64_t size = *operand(0)->type.shape[dim].constant();
      accumulate(operand(0), emit(OpKind::Pad, {dy},
                                  {{"dim", dim},
                                   {"before", ir::intAttr(op.attrs, "start")},
                                   {"after", size - ir::intAttr(op.attrs, "end")}}));
      break;
    }
    case OpKind::Sum:
    case OpKind::Mean: {
      const ir::TensorType &x = operand(0)->type;
      auto dims = ir::listAttr(op.attrs, "dims");
      ir::Shape kept;
      SymExpr count(1);
      for (int64_t d = 0; d < x.rank(); ++d) {
        bool reduced = dims.empty() || std::find(dims.begin(), dims.end(), SymExpr(d)) != dims.end();
        kept.push_back(reduced ? SymExpr(1) : x.shape[d]);
        if (reduced)
          count = count * x.shape[d];
      }
      Value *g = emit(OpKind::Reshape, {dy}, {{"shape", kept}});
      g = emit(OpKind::Broadcast, {g}, {{"shape", x.shape}});
      if (op.kind == OpKind::Mean) {
        // Symbolic counts stay exact only when constant; a mean over a symbolic size is
        // scaled when the plan binds it.
        double n = static_cast<double>(count.constant().value_or(1));
        g = emit(OpKind::Mul, {g, emit(OpKind::Constant, {}, {{"value", 1.0 / n}}, {ir::TensorType{x.dtype, {}}})});
      }
      accumulate(operand(0), g);
      break;
    }
    case OpKind::Attention: {
      auto g = emitMulti(OpKind::AttentionGrad, {operand(0), operand(1), operand(2), dy}, op.attrs);
      accumulate(operand(0), g[0]);
      accumulate(operand(1), g[1]);
      accumulate(operand(2), g[2]);
      break;
    }
    case OpKind::CrossEntropy:
      accumulate(operand(0), emit(OpKind::CrossEntropyGrad, {operand(0), operand(1), dy}));
      break;
    case OpKind::Reshard:
    case OpKind::Broadcast:
      accumulate(operand(0), unbroadcast(dy, operand(0)->type.shape));
      break;
    case OpKind::Param: // leaves: their gradients are what the loop above collects
    case OpKind::Input:
    case OpKind::Constant:
    case OpKind::Pad: // backward ops are not differentiated again
    case OpKind::GeluGrad:
    case OpKind::SiluGrad:
    case OpKind::ReluGrad:
    case OpKind::RmsNormGrad:
    case OpKind::LayerNormGrad:
    case OpKind::EmbeddingGrad:
    case OpKind::AttentionGrad:
    case OpKind::CrossEntropyGrad:
      break;
    } // no default: a new op kind is a compile error here (-Wswitch) until it has a gradient
  }
};

} // namespace

Gradients buildGradients(ir::Graph &graph, ir::Value *loss) {
  return Differentiator(graph).run(loss);
}

} // namespace hspmd::passes
