// PassSupport.h - how passes report problems: a callback taking a severity, a location, a
// stable lint code (docs/lint.md) and a message.
#pragma once

#include "ir/Location.h"

#include <functional>
#include <string>

namespace hspmd::passes {

enum class Severity { Error, Warning, Note };

struct Problem {
  Severity severity = Severity::Error;
  ir::Location loc;
  std::string code; // "HS107"
  std::string message;
  ir::Location noteLoc; // optional related location
  std::string note;
};

using ReportFn = std::function<void(const Problem &)>;

} // namespace hspmd::passes
