// Data.cpp - training data: text and token files into batches (runtime/Data.h).
#include "runtime/Data.h"

#include "ir/Files.h"
#include "ir/Words.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

namespace hspmd::runtime {

namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

std::string readDataFile(const std::string &path) {
  if (std::string why = ir::notAFile(path); !why.empty())
    throw DataError(path + ": " + why);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw DataError(path + ": cannot open the data file");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

size_t tokenWidth(const std::string &path) {
  return endsWith(path, ".u32.bin") ? 4 : endsWith(path, ".bin") ? 2 : 0;
}

bool isJsonl(const std::string &path) {
  return endsWith(path, ".jsonl");
}

std::vector<uint32_t> decodeTokens(const std::string &path, const std::string &bytes, size_t width) {
  if (bytes.size() % width != 0)
    throw DataError(path + ": a token file of " + std::to_string(width * 8) + "-bit tokens has " +
                    std::to_string(bytes.size()) + " bytes, not a multiple of " + std::to_string(width));
  std::vector<uint32_t> tokens;
  tokens.reserve(bytes.size() / width);
  for (size_t i = 0; i < bytes.size(); i += width) {
    uint32_t token = 0;
    for (size_t b = 0; b < width; ++b) // little-endian
      token |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + b])) << (8 * b);
    tokens.push_back(token);
  }
  return tokens;
}

void forEachJsonlText(const std::string &path, const std::string &bytes,
                      const std::function<void(const std::string &text, int line)> &each) {
  std::istringstream lines(bytes);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    const std::string at = path + ":" + std::to_string(number) + ": ";
    nlohmann::json document;
    try {
      document = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error &e) {
      // "[json.exception.parse_error.101] parse error at line 1, column 11: syntax error ...;
      // last read: '...'" -> "PATH:LINE:11: not JSON: syntax error ...", with the bytes it
      // quotes that are not printable ASCII (ill-formed UTF-8, controls) written as \xNN.
      const std::string what = e.what();
      const size_t column = what.find("column "), reason = what.find(": ", column);
      const std::string text =
          ir::printable(column == std::string::npos || reason == std::string::npos ? what : what.substr(reason + 2));
      throw DataError(path + ":" + std::to_string(number) + ":" + std::to_string(e.byte) + ": not JSON: " + text);
    }
    if (!document.is_object() || !document.contains("text") || !document["text"].is_string())
      throw DataError(at + "expected an object with a string field \"text\"");
    each(document["text"].get<std::string>(), number);
  }
}

Dataset Dataset::load(const std::string &path, int64_t vocab) {
  const std::string bytes = readDataFile(path);
  auto outside = [&](uint64_t token, size_t at) {
    return DataError(path + ": token " + std::to_string(token) + " at position " + std::to_string(at) +
                     " is outside the model's vocabulary of " + std::to_string(vocab));
  };
  std::vector<int32_t> tokens;
  if (const size_t width = tokenWidth(path); width > 0) {
    const std::vector<uint32_t> decoded = decodeTokens(path, bytes, width);
    for (size_t i = 0; i < decoded.size(); ++i) { // checked as read: 4e9 is not an int32_t
      if (decoded[i] >= static_cast<uint64_t>(vocab))
        throw outside(decoded[i], i);
      tokens.push_back(static_cast<int32_t>(decoded[i]));
    }
  } else if (isJsonl(path)) {
    forEachJsonlText(path, bytes, [&](const std::string &text, int) {
      for (unsigned char c : text)
        tokens.push_back(c);
      tokens.push_back('\n');
    });
  } else {
    for (unsigned char c : bytes)
      tokens.push_back(c);
  }
  for (size_t i = 0; i < tokens.size(); ++i) // bytes, for a vocabulary of fewer than 256
    if (tokens[i] >= vocab)
      throw outside(static_cast<uint64_t>(tokens[i]), i);
  return Dataset(std::move(tokens), path);
}

Batch Dataset::batchFor(int64_t step, int64_t batch, int64_t seq) const {
  const int64_t usable = size() - seq; // the starts that leave room for the last target
  if (usable <= 0)
    throw DataError((source_.empty() ? "" : source_ + ": ") + "the data has " + ir::counted(size(), "token") +
                    "; a sequence needs " + std::to_string(seq + 1));
  Batch out{batch, seq, {}, {}, 0, {}, {}};
  auto &tokens = out.inputs["tokens"];
  auto &targets = out.inputs["targets"];
  tokens.resize(static_cast<size_t>(batch * seq));
  targets.resize(tokens.size());
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t start = ((step * batch + b) * seq) % usable;
    for (int64_t s = 0; s < seq; ++s) {
      tokens[static_cast<size_t>(b * seq + s)] = tokens_[static_cast<size_t>(start + s)];
      targets[static_cast<size_t>(b * seq + s)] = tokens_[static_cast<size_t>(start + s + 1)];
    }
  }
  return out;
}

} // namespace hspmd::runtime
