// Data.h - training data: a token stream read from real text (bytes), a token file
// (.bin of uint16, or .u32.bin of uint32) or a jsonl file with a `text` field per line
// (bytes of each text, documents joined by a newline), packed into sequences.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace hspmd::runtime {

struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One global batch: every input of the model by name ("tokens", "targets"), [batch, seq].
struct Batch {
  int64_t batch = 0, seq = 0;
  std::map<std::string, std::vector<int32_t>> inputs;
  /// Documents (runtime/Documents.h): per position [batch, seq], the position of its row
  /// where its document's piece begins; attention lets a query see the keys from there to
  /// itself. Empty: every row is one sequence (causal attention only).
  std::vector<int32_t> blockStarts;
  /// Targets scored in the whole batch (a target < 0 is not): the loss is their mean. 0:
  /// every position is scored.
  int64_t scored = 0;
  /// Documents: per row, whether it holds a real token (empty: every row does), and per
  /// micro-batch index of the plan that runs it, whether every pipeline's micro-batch of that
  /// index is padding only, so that every device skips it (skipEmptyMicrobatches).
  std::vector<uint8_t> realRows, skipMicrobatch;
};

// Reading data files, shared by token streams (Dataset) and documents (runtime/Documents.h).

/// The bytes of `path`; DataError "PATH: cannot open the data file".
std::string readDataFile(const std::string &path);
/// The width in bytes of a token file's tokens: 4 for .u32.bin, 2 for .bin, 0 for a file of
/// another name (not tokens).
size_t tokenWidth(const std::string &path);
/// The tokens of a token file's bytes, `width` bytes each, little-endian; DataError where the
/// size is not a multiple of the width.
std::vector<uint32_t> decodeTokens(const std::string &path, const std::string &bytes, size_t width);
bool isJsonl(const std::string &path);
/// Calls `each(text, line)` with the "text" field of each line of a .jsonl file's bytes that
/// is not blank; DataError at PATH:LINE for a line that is not JSON or not an object with a
/// string "text".
void forEachJsonlText(const std::string &path, const std::string &bytes,
                      const std::function<void(const std::string &text, int64_t line)> &each);

/// Tokens read where they lie, in a text file (a byte a token) or a token file (.bin,
/// .u32.bin), or held in memory: the source of Dataset and Documents (runtime/Documents.h).
class TokenSource {
public:
  /// Opens `path` (its width from its name: tokenWidth, text bytes for 0) to be read where it
  /// lies; a file that gives no size (empty, or a /proc file) is read whole and held. Throws
  /// DataError naming the file: not a regular file, cannot be opened, a token file whose size
  /// is not a multiple of its width.
  static std::shared_ptr<const TokenSource> open(const std::string &path);
  /// Tokens held in memory; `name` names them in errors.
  static std::shared_ptr<const TokenSource> held(std::string name, std::vector<uint32_t> tokens);
  TokenSource(const TokenSource &) = delete;
  TokenSource &operator=(const TokenSource &) = delete;
  ~TokenSource();

  int64_t size() const { return count_; }
  /// Calls `each(first, tokens, n)` with every token in order, a MiB of them at a time.
  void scan(const std::function<void(int64_t first, const uint32_t *tokens, size_t n)> &each) const;
  /// Tokens [first, first + n) into `out`. DataError where the file changed since it was
  /// opened (written to, or shorter) or a token is outside `vocab`.
  void read(int64_t first, int64_t n, int32_t *out, int64_t vocab) const;
  /// Every token checked against `vocab` (DataError: "PATH: token T at position P is outside
  /// the model's vocabulary of V").
  void checkVocabulary(int64_t vocab) const;

private:
  TokenSource() = default;
  std::string name_;           // the file, for errors
  int fd_ = -1;                // a text or token file, read where it lies
  size_t width_ = 1;           // its tokens' bytes, little-endian
  int64_t count_ = 0;          // its tokens
  int64_t modified_ = 0;       // its modification time when it was opened (ns)
  std::vector<uint32_t> held_; // or the tokens in memory (fd_ < 0)
};

class Dataset {
public:
  /// Opens `path`; the format follows the name (.bin, .u32.bin, .jsonl, else text bytes).
  /// Text and token files are read where they lie, a batch at a time (a corpus of any size
  /// costs no memory; token files and text for a vocabulary under 256 are checked against the
  /// vocabulary as they are opened, a chunk at a time); .jsonl is parsed into memory, a byte a
  /// token. Throws DataError naming the file on a missing, unreadable or malformed file.
  static Dataset load(const std::string &path, int64_t vocab);

  /// The batch of `step`: sequence b starts at token ((step * batch + b) * seq) modulo N - seq
  /// (N tokens); targets are the tokens shifted by one. Every device computes the same.
  /// DataError where the file changed since it was opened (shorter, or a token outside the
  /// vocabulary).
  Batch batchFor(int64_t step, int64_t batch, int64_t seq) const;
  int64_t size() const { return count_; }

private:
  Dataset(std::shared_ptr<const TokenSource> source, int64_t vocab, std::string name)
      : source_(std::move(source)), count_(source_->size()), vocab_(vocab), name_(std::move(name)) {}
  std::shared_ptr<const TokenSource> source_;
  int64_t count_ = 0, vocab_ = 0;
  std::string name_; // the file, for errors
};

} // namespace hspmd::runtime
