// Data.cpp - training data: text and token files into batches (runtime/Data.h).
#include "runtime/Data.h"

#include "ir/Files.h"
#include "ir/Words.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

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

struct Dataset::Source {
  int fd = -1;                // a text or token file, read where it lies
  size_t width = 1;           // its tokens' bytes, little-endian
  std::vector<uint32_t> held; // or the tokens in memory (fd < 0), as int32_t's bits
  Source() = default;
  Source(const Source &) = delete;
  Source &operator=(const Source &) = delete;
  ~Source() {
    if (fd >= 0)
      ::close(fd);
  }
};

namespace {

// Reads exactly `bytes` at `offset`, or fewer where the file ends first: what was read.
size_t readAt(int fd, char *into, size_t bytes, int64_t offset) {
  size_t done = 0;
  while (done < bytes) {
    const ssize_t got = ::pread(fd, into + done, bytes - done, static_cast<off_t>(offset) + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      break;
    done += static_cast<size_t>(got);
  }
  return done;
}

uint32_t decodeToken(const char *at, size_t width) {
  uint32_t token = 0;
  for (size_t b = 0; b < width; ++b) // little-endian
    token |= static_cast<uint32_t>(static_cast<unsigned char>(at[b])) << (8 * b);
  return token;
}

DataError outsideVocabulary(const std::string &path, uint64_t token, int64_t at, int64_t vocab) {
  return DataError(path + ": token " + std::to_string(token) + " at position " + std::to_string(at) +
                   " is outside the model's vocabulary of " + std::to_string(vocab));
}

} // namespace

Dataset Dataset::load(const std::string &path, int64_t vocab) {
  auto source = std::make_shared<Source>();
  // Tokens held in memory, each checked against the vocabulary.
  auto held = [&](std::vector<uint32_t> tokens) {
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] >= vocab)
        throw outsideVocabulary(path, tokens[i], static_cast<int64_t>(i), vocab);
    source->held = std::move(tokens);
    const auto count = static_cast<int64_t>(source->held.size());
    return Dataset(std::move(source), count, vocab, path);
  };
  auto bytesOf = [](const std::string &text, std::vector<uint32_t> &into) {
    for (const unsigned char c : text)
      into.push_back(c);
  };
  if (isJsonl(path)) {
    std::vector<uint32_t> tokens;
    forEachJsonlText(path, readDataFile(path), [&](const std::string &text, int) {
      bytesOf(text, tokens);
      tokens.push_back('\n');
    });
    return held(std::move(tokens));
  }
  if (std::string why = ir::notAFile(path); !why.empty())
    throw DataError(path + ": " + why);
  source->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat status {};
  if (source->fd < 0 || ::fstat(source->fd, &status) != 0)
    throw DataError(path + ": cannot open the data file");
  const size_t width = tokenWidth(path);
  source->width = width > 0 ? width : 1;
  if (status.st_size == 0) { // empty, or a file that gives no size (/proc): read whole
    const std::string all = readDataFile(path);
    std::vector<uint32_t> tokens;
    if (width > 0)
      tokens = decodeTokens(path, all, width);
    else
      bytesOf(all, tokens);
    ::close(source->fd);
    source->fd = -1;
    return held(std::move(tokens));
  }
  const auto bytes = static_cast<uint64_t>(status.st_size);
  if (width > 0 && bytes % width != 0)
    throw DataError(path + ": a token file of " + std::to_string(width * 8) + "-bit tokens has " +
                    std::to_string(bytes) + " bytes, not a multiple of " + std::to_string(width));
  const auto count = static_cast<int64_t>(bytes / source->width);
  // Every token checked against the vocabulary before training, a chunk at a time (text bytes
  // need it only for a vocabulary of fewer than 256).
  if (width > 0 || vocab < 256) {
    std::vector<char> chunk((size_t{1} << 20) * source->width);
    for (int64_t first = 0; first < count;) {
      const size_t got = readAt(source->fd, chunk.data(), chunk.size(), first * static_cast<int64_t>(source->width));
      if (got == 0)
        throw DataError(path + ": cannot read the data file (it holds " + std::to_string(bytes) + " bytes)");
      const size_t tokens = got / source->width;
      for (size_t i = 0; i < tokens; ++i)
        if (const uint32_t token = decodeToken(chunk.data() + i * source->width, source->width); token >= vocab)
          throw outsideVocabulary(path, token, first + static_cast<int64_t>(i), vocab);
      first += static_cast<int64_t>(tokens);
    }
  }
  return Dataset(std::move(source), count, vocab, path);
}

void Dataset::read(int64_t first, int64_t n, int32_t *out) const {
  if (source_->fd < 0) {
    for (int64_t i = 0; i < n; ++i)
      out[i] = static_cast<int32_t>(source_->held[static_cast<size_t>(first + i)]);
    return;
  }
  const size_t width = source_->width, bytes = static_cast<size_t>(n) * width;
  std::vector<char> raw(bytes);
  if (readAt(source_->fd, raw.data(), bytes, first * static_cast<int64_t>(width)) != bytes)
    throw DataError(name_ + ": the data file changed while training: it no longer holds the " +
                    ir::counted(count_, "token") + " it had when it was opened");
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t token = decodeToken(raw.data() + static_cast<size_t>(i) * width, width);
    if (token >= static_cast<uint64_t>(vocab_))
      throw outsideVocabulary(name_, token, first + i, vocab_);
    out[i] = static_cast<int32_t>(token);
  }
}

Batch Dataset::batchFor(int64_t step, int64_t batch, int64_t seq) const {
  const int64_t usable = size() - seq; // the starts that leave room for the last target
  if (usable <= 0)
    throw DataError(name_ + ": the data has " + ir::counted(size(), "token") + "; a sequence needs " +
                    std::to_string(seq + 1));
  Batch out{batch, seq, {}, {}, 0, {}, {}};
  auto &tokens = out.inputs["tokens"];
  auto &targets = out.inputs["targets"];
  tokens.resize(static_cast<size_t>(batch * seq));
  targets.resize(tokens.size());
  std::vector<int32_t> row(static_cast<size_t>(seq + 1));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t start = ((step * batch + b) * seq) % usable;
    read(start, seq + 1, row.data());
    std::copy_n(row.begin(), seq, tokens.begin() + b * seq);
    std::copy_n(row.begin() + 1, seq, targets.begin() + b * seq);
  }
  return out;
}

} // namespace hspmd::runtime
