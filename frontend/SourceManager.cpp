// SourceManager.cpp - the text of every file read, by name, and its lines for diagnostics
// (frontend/SourceManager.h).
#include "frontend/SourceManager.h"

#include <fstream>
#include <sstream>

namespace hspmd::frontend {

const std::string *SourceManager::load(const std::string &path) {
  if (auto it = buffers_.find(path); it != buffers_.end())
    return &it->second;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return nullptr;
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad())
    return nullptr;
  return &addBuffer(path, contents.str());
}

const std::string &SourceManager::addBuffer(const std::string &name, std::string text) {
  return buffers_[name] = std::move(text);
}

std::vector<std::string> SourceManager::names() const {
  std::vector<std::string> out;
  for (const auto &[name, text] : buffers_)
    out.push_back(name);
  return out;
}

const std::string *SourceManager::text(const std::string &name) const {
  auto it = buffers_.find(name);
  return it == buffers_.end() ? nullptr : &it->second;
}

std::optional<std::string_view> SourceManager::line(const std::string &name, uint32_t line) const {
  const std::string *contents = text(name);
  if (!contents || line == 0)
    return std::nullopt;
  size_t start = 0;
  for (uint32_t current = 1; current < line; ++current) {
    start = contents->find('\n', start);
    if (start == std::string::npos)
      return std::nullopt;
    ++start;
  }
  size_t end = contents->find('\n', start);
  std::string_view view(*contents);
  view = view.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (!view.empty() && view.back() == '\r')
    view.remove_suffix(1);
  return view;
}

} // namespace hspmd::frontend
