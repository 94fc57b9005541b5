// Expressions.cpp - evaluating expressions: integers and floats at compile time, tensor
// arithmetic into graph ops.
#include "frontend/ElaboratorImpl.h"

#include <cmath>

namespace hspmd::frontend {

std::string Elaborator::describe(const EValue &value) {
  struct Describe {
    std::string operator()(std::monostate) const { return "nothing"; }
    std::string operator()(const ir::SymExpr &v) const { return "the integer " + v.str(); }
    std::string operator()(double) const { return "a float"; }
    std::string operator()(bool) const { return "a bool"; }
    std::string operator()(const std::string &) const { return "a string"; }
    std::string operator()(ir::Value *v) const { return "a tensor " + v->type.str(); }
    std::string operator()(Instance *v) const { return "the layer '" + v->decl->name + "'"; }
    std::string operator()(Stack *v) const { return "the stack '" + v->path + "'"; }
    std::string operator()(const BoundFn &v) const { return "the function '" + v.fn->name + "'"; }
    std::string operator()(const BuiltinRef &v) const { return "the built-in '" + v.name + "'"; }
    std::string operator()(const std::shared_ptr<EList> &v) const {
      return "a list of " + std::to_string(v->items.size());
    }
  };
  return std::visit(Describe{}, value);
}

ir::SymExpr Elaborator::expectInt(const EValue &value, const Location &at, const std::string &what) {
  if (auto *i = std::get_if<ir::SymExpr>(&value))
    return *i;
  fail(at, what + " must be an integer, got " + describe(value));
}

int64_t Elaborator::expectConstInt(const EValue &value, const Location &at, const std::string &what) {
  ir::SymExpr i = expectInt(value, at, what);
  if (auto c = i.constant())
    return *c;
  fail(at, what + " must be a constant, got the symbolic " + i.str());
}

double Elaborator::expectFloat(const EValue &value, const Location &at, const std::string &what) {
  if (auto *d = std::get_if<double>(&value))
    return *d;
  if (auto *i = std::get_if<ir::SymExpr>(&value); i && i->constant())
    return static_cast<double>(*i->constant());
  fail(at, what + " must be a number, got " + describe(value));
}

ir::Value *Elaborator::expectTensor(const EValue &value, const Location &at, const std::string &what) {
  if (auto *v = std::get_if<ir::Value *>(&value))
    return *v;
  fail(at, what + " must be a tensor, got " + describe(value));
}

std::vector<ir::Value *> Elaborator::makeMultiOp(ir::OpKind kind, std::vector<ir::Value *> operands, ir::AttrMap attrs,
                                                 const Location &at) {
  std::vector<ir::TensorType> types;
  for (ir::Value *operand : operands)
    types.push_back(operand->type);
  ir::TypeResult result = ir::inferResultTypes(kind, types, attrs);
  if (!result.ok())
    fail(at, std::string(ir::opInfo(kind).name) + ": " + result.error);
  for (const ir::TensorType &type : result.types)
    checkSize(type, at, std::string("the result of ") + std::string(ir::opInfo(kind).name));
  ir::Op *op = graph_.createOp(kind, std::move(operands), result.types, std::move(attrs), at);
  return op->results;
}

void Elaborator::checkSize(const ir::TensorType &type, const Location &at, const std::string &what) {
  std::vector<int64_t> sizes;
  for (const ir::SymExpr &dim : type.shape)
    sizes.push_back(dim.constant().value_or(-1)); // a symbol: checked once it is bound
  if (!ir::checkedBytes(sizes, type.dtype))
    fail(at, what + " is too large: " + type.str() + " is more than 256 TiB");
}

ir::Value *Elaborator::makeOp(ir::OpKind kind, std::vector<ir::Value *> operands, ir::AttrMap attrs,
                              const Location &at) {
  return makeMultiOp(kind, std::move(operands), std::move(attrs), at).front();
}

ir::Value *Elaborator::scalarConstant(double value, ir::DType dtype, const Location &at) {
  ir::Op *op = graph_.createOp(ir::OpKind::Constant, {}, {ir::TensorType{dtype, {}}}, {{"value", value}}, at);
  return op->result();
}

std::vector<ArgValue> Elaborator::evalArgs(const Expr &call, Scope &scope) {
  std::vector<ArgValue> args;
  for (size_t i = 1; i < call.children.size(); ++i)
    args.push_back(
        ArgValue{call.argNames[i - 1], eval(*call.children[i], scope), call.argLocs[i - 1], call.children[i]->loc});
  return args;
}

std::vector<ArgValue> Elaborator::evalArgs(const std::vector<Arg> &args, Scope &scope) {
  std::vector<ArgValue> values;
  for (const Arg &arg : args)
    values.push_back(ArgValue{arg.name, eval(*arg.value, scope), arg.loc, arg.value->loc});
  return values;
}

EValue Elaborator::evalConstant(const Expr &expr) {
  Scope empty;
  try {
    return eval(expr, empty);
  } catch (const ElaborationAbort &) {
    return std::monostate{};
  }
}

EValue Elaborator::eval(const Expr &expr, Scope &scope) {
  switch (expr.kind) {
  case ExprKind::Int:
    return ir::SymExpr(expr.intValue);
  case ExprKind::Float:
    return expr.floatValue;
  case ExprKind::Bool:
    return expr.boolValue;
  case ExprKind::String:
    return expr.text;
  case ExprKind::Name: {
    if (const EValue *value = scope.find(expr.text))
      return *value;
    if (isBuiltin(expr.text))
      return BuiltinRef{expr.text};
    fail(expr.loc, "unknown name '" + expr.text + "'");
  }
  case ExprKind::List: {
    auto list = std::make_shared<EList>();
    for (const ExprPtr &child : expr.children)
      list->items.push_back(eval(*child, scope));
    return list;
  }
  case ExprKind::Member:
    return evalMember(expr, scope);
  case ExprKind::Index:
    return evalIndex(expr, scope);
  case ExprKind::Call: {
    EValue callee = eval(*expr.children[0], scope);
    return call(callee, evalArgs(expr, scope), expr.loc);
  }
  case ExprKind::Neg: {
    EValue operand = eval(*expr.children[0], scope);
    if (auto *i = std::get_if<ir::SymExpr>(&operand)) {
      ir::SymExpr negated = ir::SymExpr(0) - *i;
      if (negated.overflowed())
        fail(expr.loc, "integer overflow: -(" + i->str() + ") does not fit in 64 bits");
      return negated;
    }
    if (auto *d = std::get_if<double>(&operand))
      return -*d;
    return makeOp(ir::OpKind::Neg, {expectTensor(operand, expr.loc, "the operand of '-'")}, {}, expr.loc);
  }
  case ExprKind::Binary:
    return evalBinary(expr, scope);
  }
  fail(expr.loc, "unsupported expression");
}

EValue Elaborator::evalMember(const Expr &expr, Scope &scope) {
  EValue base = eval(*expr.children[0], scope);
  if (auto *instance = std::get_if<Instance *>(&base)) {
    if (auto it = (*instance)->scope.names.find(expr.text); it != (*instance)->scope.names.end())
      return it->second;
    fail(expr.loc, "layer '" + (*instance)->decl->name + "' has no member '" + expr.text + "'");
  }
  if (auto *tensor = std::get_if<ir::Value *>(&base); tensor && expr.text == "T") {
    int rank = (*tensor)->type.rank();
    if (rank < 2)
      fail(expr.loc, "'.T' needs a tensor of rank 2 or more, got " + (*tensor)->type.str());
    return makeOp(ir::OpKind::Transpose, {*tensor}, {{"dim0", int64_t{rank - 2}}, {"dim1", int64_t{rank - 1}}},
                  expr.loc);
  }
  fail(expr.loc, describe(base) + " has no member '" + expr.text + "'");
}

EValue Elaborator::evalIndex(const Expr &expr, Scope &scope) {
  EValue base = eval(*expr.children[0], scope);
  auto bound = [&](size_t child, int64_t fallback) {
    const ExprPtr &e = expr.children[child];
    return e ? expectConstInt(eval(*e, scope), e->loc, "an index") : fallback;
  };
  if (auto *stack = std::get_if<Stack *>(&base)) {
    const int64_t size = static_cast<int64_t>((*stack)->items.size());
    if (!expr.isSlice) {
      int64_t index = bound(1, 0);
      if (index < 0 || index >= size)
        fail(expr.loc, "index " + std::to_string(index) + " is out of range for '" + (*stack)->path + "' (" +
                           std::to_string(size) + " layers)");
      return (*stack)->items[index];
    }
    int64_t lo = bound(1, 0), hi = bound(2, size);
    if (lo < 0 || hi > size || lo >= hi)
      fail(expr.loc, "slice [" + std::to_string(lo) + ":" + std::to_string(hi) + "] is out of range for '" +
                         (*stack)->path + "' (" + std::to_string(size) + " layers)");
    auto sub = std::make_unique<Stack>();
    sub->path = (*stack)->path;
    sub->items.assign((*stack)->items.begin() + lo, (*stack)->items.begin() + hi);
    stacks_.push_back(std::move(sub));
    return stacks_.back().get();
  }
  if (auto *list = std::get_if<std::shared_ptr<EList>>(&base); list && !expr.isSlice) {
    int64_t index = bound(1, 0), size = static_cast<int64_t>((*list)->items.size());
    if (index < 0)
      index += size;
    if (index < 0 || index >= size)
      fail(expr.loc, "index is out of range for " + describe(base));
    return (*list)->items[index];
  }
  fail(expr.loc,
       "cannot index " + describe(base) + (std::holds_alternative<ir::Value *>(base) ? "; use slice(...)" : ""));
}

EValue Elaborator::evalBinary(const Expr &expr, Scope &scope) {
  EValue lhs = eval(*expr.children[0], scope), rhs = eval(*expr.children[1], scope);
  const std::string &op = expr.text;
  auto *li = std::get_if<ir::SymExpr>(&lhs), *ri = std::get_if<ir::SymExpr>(&rhs);
  if (li && ri) {
    // Integer arithmetic is checked: a result outside 64 bits is an error here, with its operands.
    auto checked = [&](ir::SymExpr result) -> EValue {
      if (result.overflowed())
        fail(expr.loc, "integer overflow: " + li->str() + " " + op + " " + ri->str() + " does not fit in 64 bits");
      return result;
    };
    if (op == "+")
      return checked(*li + *ri);
    if (op == "-")
      return checked(*li - *ri);
    if (op == "*")
      return checked(*li * *ri);
    if (op == "/") {
      if (*ri == ir::SymExpr(0))
        fail(expr.loc, "division by zero");
      if (auto quotient = li->divide(*ri))
        return checked(*quotient);
      fail(expr.loc, li->str() + " / " + ri->str() + " is not a whole number");
    }
    if (op == "%") {
      auto a = li->constant(), b = ri->constant();
      if (!a || !b || *b == 0)
        fail(expr.loc, "'%' needs constant integers and a non-zero divisor");
      return ir::SymExpr(*b == -1 ? 0 : *a % *b); // INT64_MIN % -1 traps
    }
    fail(expr.loc, "'" + op + "' is not defined on integers");
  }
  const bool lNum = li || std::holds_alternative<double>(lhs), rNum = ri || std::holds_alternative<double>(rhs);
  if (lNum && rNum) {
    if (op == "@" || op == "%")
      fail(expr.loc, "'" + op + "' is not defined on numbers");
    double a = expectFloat(lhs, expr.children[0]->loc, "the left operand");
    double b = expectFloat(rhs, expr.children[1]->loc, "the right operand");
    return op == "+" ? a + b : op == "-" ? a - b : op == "*" ? a * b : a / b;
  }
  auto *lt = std::get_if<ir::Value *>(&lhs), *rt = std::get_if<ir::Value *>(&rhs);
  if (!(lt || lNum) || !(rt || rNum) || op == "%")
    fail(expr.loc, "'" + op + "' is not defined on " + describe(lhs) + " and " + describe(rhs));
  if (op == "@") {
    if (!lt || !rt)
      fail(expr.loc, "'@' needs two tensors, got " + describe(lhs) + " and " + describe(rhs));
    return makeOp(ir::OpKind::MatMul, {*lt, *rt}, {}, expr.loc);
  }
  // A number next to a tensor becomes a scalar constant of the tensor's type.
  ir::DType dtype = lt ? (*lt)->type.dtype : (*rt)->type.dtype;
  ir::Value *a = lt ? *lt : scalarConstant(expectFloat(lhs, expr.loc, "a scalar"), dtype, expr.children[0]->loc);
  ir::Value *b = rt ? *rt : scalarConstant(expectFloat(rhs, expr.loc, "a scalar"), dtype, expr.children[1]->loc);
  ir::OpKind kind = op == "+"   ? ir::OpKind::Add
                    : op == "-" ? ir::OpKind::Sub
                    : op == "*" ? ir::OpKind::Mul
                                : ir::OpKind::Div;
  return makeOp(kind, {a, b}, {}, expr.loc);
}

} // namespace hspmd::frontend
