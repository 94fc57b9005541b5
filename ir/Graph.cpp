// Graph.cpp - the graph IR: building, looking up and printing ops and values (ir/Graph.h).
#include "ir/Graph.h"

#include "ir/AnnotationText.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace hspmd::ir {

std::optional<StackPosition> stackPosition(std::string_view name) {
  const size_t open = name.find('[');
  if (open == std::string_view::npos || open == 0 || name.substr(0, open).find('.') != std::string_view::npos)
    return std::nullopt;
  size_t end = open + 1;
  int64_t layer = 0;
  while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end])) && layer < (int64_t{1} << 40))
    layer = layer * 10 + (name[end++] - '0');
  if (end == open + 1 || end >= name.size() || name[end] != ']')
    return std::nullopt;
  return StackPosition{std::string(name.substr(0, open)), layer};
}

std::string ParseError::str() const {
  return std::to_string(line) + ":" + std::to_string(col) + ": " + message;
}

std::string Graph::uniqueName(const std::string &base) {
  if (!byName_.count(base))
    return base;
  for (int suffix = 1;; ++suffix) {
    std::string candidate = base + "." + std::to_string(suffix);
    if (!byName_.count(candidate))
      return candidate;
  }
}

Op *Graph::createOp(OpKind kind, std::vector<Value *> operands, std::vector<TensorType> resultTypes, AttrMap attrs,
                    Location loc, const std::vector<std::string> &names) {
  auto op = std::make_unique<Op>();
  op->id = static_cast<int>(ops_.size());
  op->kind = kind;
  op->operands = std::move(operands);
  op->attrs = std::move(attrs);
  op->loc = std::move(loc);
  for (size_t i = 0; i < resultTypes.size(); ++i) {
    auto value = std::make_unique<Value>();
    value->id = static_cast<int>(values_.size());
    value->type = std::move(resultTypes[i]);
    value->def = op.get();
    value->index = static_cast<int>(i);
    value->annotations.resize(numPlans);
    std::string base = i < names.size() && !names[i].empty() ? names[i] : std::to_string(nextTemp_++);
    value->name = uniqueName(base);
    byName_[value->name] = value.get();
    op->results.push_back(value.get());
    values_.push_back(std::move(value));
  }
  ops_.push_back(std::move(op));
  return ops_.back().get();
}

Op *Graph::insertOpBefore(const Op *before, OpKind kind, std::vector<Value *> operands,
                          std::vector<TensorType> resultTypes, AttrMap attrs, Location loc,
                          const std::vector<std::string> &names) {
  createOp(kind, std::move(operands), std::move(resultTypes), std::move(attrs), std::move(loc), names);
  std::unique_ptr<Op> op = std::move(ops_.back());
  ops_.pop_back();
  // Ops are numbered by position (ids kept so below), so `before`'s id is where it is; only
  // the ops from there on are renumbered (all of them if the numbers were ever off).
  const auto position = static_cast<size_t>(before->id);
  const bool numbered = position < ops_.size() && ops_[position].get() == before;
  auto at = numbered ? ops_.begin() + static_cast<std::ptrdiff_t>(position)
                     : std::find_if(ops_.begin(), ops_.end(), [&](const auto &o) { return o.get() == before; });
  const size_t from = numbered ? position : 0;
  Op *inserted = ops_.insert(at, std::move(op))->get();
  for (size_t i = from; i < ops_.size(); ++i)
    ops_[i]->id = static_cast<int>(i);
  return inserted;
}

void Graph::replaceOperand(Op *user, const Value *old, Value *replacement) {
  for (Value *&operand : user->operands)
    if (operand == old)
      operand = replacement;
}

void Graph::rename(Value *value, const std::string &name) {
  if (value->name == name)
    return;
  byName_.erase(value->name);
  value->name = uniqueName(name);
  byName_[value->name] = value;
}

Value *Graph::findValue(const std::string &name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : it->second;
}

void Graph::setNumPlans(int count) {
  numPlans = count;
  for (auto &value : values_)
    value->annotations.resize(count);
}

std::vector<Value *> Graph::valuesOf(OpKind kind) const {
  std::vector<Value *> found;
  for (const auto &op : ops_)
    if (op->kind == kind)
      found.push_back(op->result());
  return found;
}

bool verifyGraph(const Graph &graph, const VerifyReport &report) {
  bool ok = true;
  auto problem = [&](const Location &loc, const std::string &message) {
    ok = false;
    report(loc, message);
  };
  std::set<const Value *> defined;
  std::set<std::string> names;
  for (const auto &op : graph.ops()) {
    const OpInfo &info = opInfo(op->kind);
    std::vector<TensorType> operandTypes;
    for (const Value *operand : op->operands) {
      if (!defined.count(operand))
        problem(op->loc, std::string(info.name) + " uses %" + operand->name + " before it is defined");
      operandTypes.push_back(operand->type);
    }
    for (const Value *result : op->results) {
      if (!names.insert(result->name).second)
        problem(op->loc, "value name %" + result->name + " is defined twice");
      defined.insert(result);
    }
    if (info.explicitType) {
      if (op->results.size() != 1 || !op->operands.empty())
        problem(op->loc, std::string(info.name) + " takes no operands and has one result");
    } else {
      TypeResult inferred = inferResultTypes(op->kind, operandTypes, op->attrs);
      if (!inferred.ok()) {
        problem(op->loc, std::string(info.name) + ": " + inferred.error);
      } else if (inferred.types.size() != op->results.size()) {
        problem(op->loc, std::string(info.name) + " should have " + std::to_string(inferred.types.size()) +
                             " results, has " + std::to_string(op->results.size()));
      } else {
        for (size_t i = 0; i < inferred.types.size(); ++i)
          if (!(inferred.types[i] == op->results[i]->type))
            problem(op->loc, "%" + op->results[i]->name + " has type " + op->results[i]->type.str() + ", but " +
                                 std::string(info.name) + " gives " + inferred.types[i].str());
      }
    }
    for (const Value *result : op->results) {
      if (static_cast<int>(result->annotations.size()) != graph.numPlans)
        problem(op->loc, "%" + result->name + " has " + std::to_string(result->annotations.size()) +
                             " annotation slots for " + std::to_string(graph.numPlans) + " plans");
      std::vector<int64_t> sizes;
      for (const auto &dim : result->type.shape)
        sizes.push_back(dim.constant().value_or(-1));
      for (const auto &annotation : result->annotations)
        if (annotation)
          if (auto bad = checkAnnotation(*annotation, sizes))
            problem(op->loc,
                    "annotation " + printAnnotation(*annotation) + " of %" + result->name + ": " + bad->message);
    }
  }
  for (const Value *output : graph.outputs)
    if (!defined.count(output))
      problem(Location{}, "output %" + output->name + " is not defined");
  return ok;
}

} // namespace hspmd::ir
