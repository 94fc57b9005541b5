// Location.cpp - interned file names (ir/Location.h).
#include "ir/Location.h"

#include <mutex>
#include <unordered_set>

namespace hspmd::ir {

const std::string FileName::none_;

FileName::FileName(const std::string &name) {
  if (name.empty())
    return;
  // Never freed: the names outlive everything that holds one, static objects included.
  static auto *names = new std::unordered_set<std::string>();
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  name_ = &*names->insert(name).first;
}

} // namespace hspmd::ir
