// CommunicationText.cpp - the text form of a communication plan's steps: what
// resolve-communication records on each reshard op (`comm_steps`), and its parser. The
// lowering in specialize turns exactly these steps into instructions.
//
//   steps   := step ('; ' step)*
//   step    := KIND (' groups' (' ' devices)+)? (' send ' message (', ' message)*)?
//                   (' keep ' copy (', ' copy)*)?
//   message := INT ' -> ' INT (' add')? (' ' box)+      one fused buffer from one device to another
//   copy    := INT (' add')? (' ' box)+                 a device's own slices (add: its partial sum)
//   box     := '[' INT ':' INT (', ' INT ':' INT)* ']'
//
// A collective's data movement follows from its kind and groups; a batched send/receive
// (`bsr`, `send-recv`) lists its messages.
#include "passes/Communication.h"

#include "ir/AnnotationText.h"

#include <cctype>

namespace hspmd::passes {

namespace {

// A cursor over the text; each method consumes what it reads or returns false.
class Reader {
public:
  explicit Reader(const std::string &text) : text_(text) {}
  bool done() const { return at_ == text_.size(); }
  bool literal(const char *word) {
    const std::string_view w(word);
    if (text_.compare(at_, w.size(), w) != 0)
      return false;
    at_ += w.size();
    return true;
  }
  bool peek(const char *word) const { return text_.compare(at_, std::string_view(word).size(), word) == 0; }
  bool integer(int64_t &value) {
    const size_t start = at_;
    if (at_ < text_.size() && text_[at_] == '-')
      ++at_;
    while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_])))
      ++at_;
    if (at_ == start || (at_ == start + 1 && text_[start] == '-'))
      return false;
    value = std::stoll(text_.substr(start, at_ - start));
    return true;
  }
  bool device(int &value) {
    int64_t v = 0;
    if (!integer(v))
      return false;
    value = static_cast<int>(v);
    return true;
  }
  bool word(std::string &out) {
    const size_t start = at_;
    while (at_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[at_])) || text_[at_] == '-'))
      ++at_;
    out = text_.substr(start, at_ - start);
    return !out.empty();
  }
  bool box(ir::Box &out) {
    if (!literal("["))
      return false;
    do {
      int64_t lo = 0, hi = 0;
      if (!integer(lo) || !literal(":") || !integer(hi))
        return false;
      out.lo.push_back(lo);
      out.hi.push_back(hi);
    } while (literal(", "));
    return literal("]");
  }
  bool boxes(std::vector<ir::Box> &out) {
    do {
      out.emplace_back();
      if (!box(out.back()))
        return false;
    } while (peek(" [") && literal(" "));
    return true;
  }
  bool devices(std::vector<int> &out) {
    if (!literal("["))
      return false;
    do {
      out.emplace_back();
      if (!device(out.back()))
        return false;
    } while (literal(", "));
    return literal("]");
  }
  size_t position() const { return at_; }

private:
  const std::string &text_;
  size_t at_ = 0;
};

} // namespace

std::string printCommSteps(const CommPlan &plan) {
  std::string text;
  for (const CommStep &step : plan.steps) {
    if (!text.empty())
      text += "; ";
    text += commKindName(step.kind);
    if (isCollective(step.kind)) {
      text += " groups";
      for (const auto &group : step.groups)
        text += " " + ir::printDeviceList(group);
    } else if (!step.messages.empty()) {
      text += " send ";
      for (size_t i = 0; i < step.messages.size(); ++i) {
        const Message &m = step.messages[i];
        text += (i ? ", " : "") + std::to_string(m.from) + " -> " + std::to_string(m.to) + (m.add ? " add" : "");
        for (const ir::Box &box : m.boxes)
          text += " " + ir::printBox(box);
      }
    }
    if (!step.local.empty()) {
      text += " keep ";
      for (size_t i = 0; i < step.local.size(); ++i) {
        const LocalCopy &copy = step.local[i];
        text += (i ? ", " : "") + std::to_string(copy.device) + (copy.add ? " add " : " ") + ir::printBox(copy.box);
      }
    }
  }
  return text;
}

std::optional<std::vector<CommStep>> parseCommSteps(const std::string &text, std::string *error) {
  Reader in(text);
  std::vector<CommStep> steps;
  size_t mark = 0; // where the element being read starts: what an error points at
  auto fail = [&](const std::string &what) -> std::optional<std::vector<CommStep>> {
    if (error)
      *error = "at offset " + std::to_string(mark) + ": " + what;
    return std::nullopt;
  };
  while (!in.done()) {
    if (!steps.empty() && !in.literal("; "))
      return fail("expected '; ' between steps");
    CommStep &step = steps.emplace_back();
    std::string kind;
    mark = in.position();
    if (!in.word(kind) || !ir::parseCommKind(kind))
      return fail("unknown communication kind '" + kind + "'");
    step.kind = *ir::parseCommKind(kind);
    if (in.literal(" groups")) {
      while (in.peek(" [") && in.literal(" ")) {
        mark = in.position();
        step.groups.emplace_back();
        if (!in.devices(step.groups.back()))
          return fail("expected a device group like [0, 1]");
      }
      if (step.groups.empty())
        return fail("expected a device group after 'groups'");
    }
    if (in.literal(" send "))
      do {
        Message &m = step.messages.emplace_back();
        mark = in.position();
        if (!in.device(m.from) || !in.literal(" -> ") || !in.device(m.to))
          return fail("expected a message like '0 -> 2 [0:4, 0:64]'");
        m.add = in.literal(" add");
        if (!in.literal(" ") || !in.boxes(m.boxes))
          return fail("expected the message's slices");
      } while (in.literal(", "));
    if (in.literal(" keep "))
      do {
        LocalCopy &copy = step.local.emplace_back();
        mark = in.position();
        if (!in.device(copy.device))
          return fail("expected a device");
        copy.add = in.literal(" add");
        if (!in.literal(" ") || !in.box(copy.box))
          return fail("expected the slice the device keeps");
      } while (in.literal(", "));
  }
  return steps;
}

} // namespace hspmd::passes
