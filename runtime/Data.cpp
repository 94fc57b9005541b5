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
                      const std::function<void(const std::string &text, int64_t line)> &each) {
  std::istringstream lines(bytes);
  std::string line;
  for (int64_t number = 1; std::getline(lines, line); ++number) {
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

int64_t modifiedNs(const struct stat &status) {
  return static_cast<int64_t>(status.st_mtim.tv_sec) * 1'000'000'000 + status.st_mtim.tv_nsec;
}

} // namespace

std::shared_ptr<const TokenSource> TokenSource::held(std::string name, std::vector<uint32_t> tokens) {
  std::shared_ptr<TokenSource> source(new TokenSource());
  source->name_ = std::move(name);
  source->count_ = static_cast<int64_t>(tokens.size());
  source->held_ = std::move(tokens);
  return source;
}

std::shared_ptr<const TokenSource> TokenSource::open(const std::string &path) {
  if (std::string why = ir::notAFile(path); !why.empty())
    throw DataError(path + ": " + why);
  std::shared_ptr<TokenSource> source(new TokenSource());
  source->name_ = path;
  source->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat status {};
  if (source->fd_ < 0 || ::fstat(source->fd_, &status) != 0)
    throw DataError(path + ": cannot open the data file");
  const size_t width = tokenWidth(path);
  if (status.st_size == 0) { // empty, or a file that gives no size (/proc): read whole
    const std::string all = readDataFile(path);
    std::vector<uint32_t> tokens;
    if (width > 0)
      tokens = decodeTokens(path, all, width);
    else
      for (const unsigned char c : all)
        tokens.push_back(c);
    return held(path, std::move(tokens));
  }
  source->width_ = width > 0 ? width : 1;
  const auto bytes = static_cast<uint64_t>(status.st_size);
  if (bytes % source->width_ != 0)
    throw DataError(path + ": a token file of " + std::to_string(width * 8) + "-bit tokens has " +
                    std::to_string(bytes) + " bytes, not a multiple of " + std::to_string(width));
  source->count_ = static_cast<int64_t>(bytes / source->width_);
  source->modified_ = modifiedNs(status);
  return source;
}

TokenSource::~TokenSource() {
  if (fd_ >= 0)
    ::close(fd_);
}

void TokenSource::scan(const std::function<void(int64_t first, const uint32_t *tokens, size_t n)> &each) const {
  constexpr size_t kChunk = size_t{1} << 20;
  if (fd_ < 0) {
    for (size_t first = 0; first < held_.size(); first += kChunk)
      each(static_cast<int64_t>(first), held_.data() + first, std::min(kChunk, held_.size() - first));
    return;
  }
  std::vector<char> raw(kChunk * width_);
  std::vector<uint32_t> tokens(kChunk);
  for (int64_t first = 0; first < count_;) {
    const size_t got = readAt(fd_, raw.data(), raw.size(), first * static_cast<int64_t>(width_));
    if (got == 0)
      throw DataError(name_ + ": cannot read the data file (it holds " +
                      std::to_string(count_ * static_cast<int64_t>(width_)) + " bytes)");
    const size_t n = std::min(got / width_, static_cast<size_t>(count_ - first));
    if (width_ == 1)
      std::copy_n(reinterpret_cast<const unsigned char *>(raw.data()), n, tokens.begin());
    else
      for (size_t i = 0; i < n; ++i)
        tokens[i] = decodeToken(raw.data() + i * width_, width_);
    each(first, tokens.data(), n);
    first += static_cast<int64_t>(n);
  }
}

void TokenSource::checkVocabulary(int64_t vocab) const {
  scan([&](int64_t first, const uint32_t *tokens, size_t n) {
    for (size_t i = 0; i < n; ++i)
      if (tokens[i] >= static_cast<uint64_t>(vocab))
        throw outsideVocabulary(name_, tokens[i], first + static_cast<int64_t>(i), vocab);
  });
}

void TokenSource::read(int64_t first, int64_t n, int32_t *out, int64_t vocab) const {
  auto check = [&](uint32_t token, int64_t at) {
    if (token >= static_cast<uint64_t>(vocab))
      throw outsideVocabulary(name_, token, at, vocab);
    return static_cast<int32_t>(token);
  };
  if (fd_ < 0) {
    for (int64_t i = 0; i < n; ++i)
      out[i] = check(held_[static_cast<size_t>(first + i)], first + i);
    return;
  }
  // A file written to since it was opened is other data than the run began with (its
  // modification time, as precise as the file system keeps it), or it is shorter.
  const auto changed = [&] {
    return DataError(name_ +
                     ": the data file changed while training: it was written to after it was opened, when it "
                     "held " +
                     ir::counted(count_, "token") + " (train on a copy that nothing writes to)");
  };
  struct stat status {};
  if (::fstat(fd_, &status) != 0 || modifiedNs(status) != modified_ ||
      static_cast<uint64_t>(status.st_size) != static_cast<uint64_t>(count_) * width_)
    throw changed();
  const size_t bytes = static_cast<size_t>(n) * width_;
  std::vector<char> raw(bytes);
  if (readAt(fd_, raw.data(), bytes, first * static_cast<int64_t>(width_)) != bytes)
    throw changed();
  for (int64_t i = 0; i < n; ++i)
    out[i] = check(decodeToken(raw.data() + static_cast<size_t>(i) * width_, width_), first + i);
}

Dataset Dataset::load(const std::string &path, int64_t vocab) {
  std::shared_ptr<const TokenSource> source;
  if (isJsonl(path)) { // each text's bytes, then a newline
    std::vector<uint32_t> tokens;
    forEachJsonlText(path, readDataFile(path), [&](const std::string &text, int64_t) {
      for (const unsigned char c : text)
        tokens.push_back(c);
      tokens.push_back('\n');
    });
    source = TokenSource::held(path, std::move(tokens));
  } else {
    source = TokenSource::open(path);
  }
  // Every token checked against the vocabulary before training, a chunk at a time (text bytes
  // need it only for a vocabulary of fewer than 256).
  if (tokenWidth(path) > 0 || vocab < 256)
    source->checkVocabulary(vocab);
  return Dataset(std::move(source), vocab, path);
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
    source_->read(start, seq + 1, row.data(), vocab_);
    std::copy_n(row.begin(), seq, tokens.begin() + b * seq);
    std::copy_n(row.begin() + 1, seq, targets.begin() + b * seq);
  }
  return out;
}

} // namespace hspmd::runtime
