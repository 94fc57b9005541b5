// Documents.cpp - a corpus as documents, and the steps that lay them into batches
// (runtime/Documents.h).
#include "runtime/Documents.h"

#include "ir/Words.h"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

namespace hspmd::runtime {

namespace {

std::string where(const std::string &path, int64_t line) {
  return path + ":" + std::to_string(line) + ": ";
}

// A byte of a document's text that is the end-of-document token, or outside the vocabulary;
// the document begins at `at` (FILE:LINE: ).
void checkTextByte(uint32_t c, int64_t vocab, int32_t eod, const std::string &at) {
  if (c == static_cast<uint32_t>(eod))
    throw DataError(at + "the text holds byte " + std::to_string(eod) +
                    ", the end-of-document token; choose another with --eod");
  if (c >= static_cast<uint64_t>(vocab))
    throw DataError(at + "byte " + std::to_string(c) + " is outside the model's vocabulary of " +
                    std::to_string(vocab));
}

// Plain text as documents, a byte at a time: documents are separated by blank lines (only
// spaces, tabs or a carriage return), and a document's lines are joined by '\n', so that
// in the file a document is the bytes from its first line's start to its last line's end.
// Each byte a document holds is checked (checkTextByte, at the document's first line); a
// blank line's are not, so a line's leading blanks are checked once it turns out not blank.
class TextDocuments {
public:
  TextDocuments(std::string path, int64_t vocab, int32_t eod, std::vector<int64_t> &first,
                std::vector<int64_t> &positions)
      : path_(std::move(path)), vocab_(vocab), eod_(eod), first_(first), positions_(positions) {}

  void byte(int64_t at, uint32_t c) {
    if (c == '\n')
      return endLine(at);
    if (c == ' ' || c == '\t' || c == '\r') {
      if (!blank_)
        check(c);
      else if (!pending_ && (c == static_cast<uint32_t>(eod_) || c >= static_cast<uint64_t>(vocab_)))
        pending_ = c;
      return;
    }
    if (blank_) { // the line belongs to a document
      if (open_)
        check('\n'); // the newline joining it to the line before
      else {
        open_ = true;
        openLine_ = line_;
        start_ = lineStart_;
      }
      if (pending_)
        check(*pending_);
      blank_ = false;
    }
    check(c);
  }

  // Past the bytes from `i` that need nothing but to be read (those of a line already known
  // not to be blank, up to its end or a bad byte): the next byte() to call, or n.
  size_t skip(const uint32_t *bytes, size_t i, size_t n) const {
    if (blank_)
      return i;
    const auto eod = static_cast<uint32_t>(eod_);
    const auto vocab = static_cast<uint64_t>(vocab_);
    while (i < n && bytes[i] != '\n' && bytes[i] != eod && bytes[i] < vocab)
      ++i;
    return i;
  }

  // The file ended at `size`.
  void end(int64_t size) {
    endLine(size);
    finish();
  }

private:
  void check(uint32_t c) const {
    if (c == static_cast<uint32_t>(eod_) || c >= static_cast<uint64_t>(vocab_))
      checkTextByte(c, vocab_, eod_, where(path_, openLine_));
  }
  void endLine(int64_t at) {
    if (blank_)
      finish();
    else
      end_ = at;
    ++line_;
    lineStart_ = at + 1;
    blank_ = true;
    pending_.reset();
  }
  void finish() {
    if (open_) {
      first_.push_back(start_);
      positions_.push_back(end_ - start_);
    }
    open_ = false;
  }

  std::string path_;
  int64_t vocab_;
  int32_t eod_;
  std::vector<int64_t> &first_, &positions_;
  int64_t line_ = 1;                // the line being read (of a file of any size)
  int64_t lineStart_ = 0;           // its first byte
  bool blank_ = true;               // nothing but blanks in it so far
  std::optional<uint32_t> pending_; // the first of its blanks that a document may not hold
  bool open_ = false;               // a document is being read
  int64_t openLine_ = 0;            // its first line
  int64_t start_ = 0, end_ = 0;     // its bytes
};

} // namespace

Documents Documents::load(const std::string &path, int64_t vocab, int32_t eod) {
  if (eod < 0 || eod >= vocab)
    throw DataError("the end-of-document token " + std::to_string(eod) + " is outside the model's vocabulary of " +
                    std::to_string(vocab));
  Documents out;
  out.vocab_ = vocab;
  out.eod_ = eod;
  auto add = [&](int64_t first, int64_t positions) {
    out.first_.push_back(first);
    out.positions_.push_back(positions);
  };
  if (isJsonl(path)) { // held: each text's bytes
    std::vector<uint32_t> tokens;
    forEachJsonlText(path, readDataFile(path), [&](const std::string &text, int64_t line) {
      if (text.empty())
        return;
      const std::string at = where(path, line);
      add(static_cast<int64_t>(tokens.size()), static_cast<int64_t>(text.size()));
      for (const unsigned char c : text) {
        checkTextByte(c, vocab, eod, at);
        tokens.push_back(c);
      }
    });
    out.source_ = TokenSource::held(path, std::move(tokens));
  } else if (tokenWidth(path) > 0) { // documents end at each end-of-document token
    out.source_ = TokenSource::open(path);
    int64_t start = 0; // the current document's first token
    out.source_->scan([&](int64_t first, const uint32_t *tokens, size_t n) {
      for (size_t i = 0; i < n; ++i) {
        const int64_t at = first + static_cast<int64_t>(i);
        if (tokens[i] >= static_cast<uint64_t>(vocab))
          throw DataError(path + ": token " + std::to_string(tokens[i]) + " at position " + std::to_string(at) +
                          " is outside the model's vocabulary of " + std::to_string(vocab));
        if (tokens[i] == static_cast<uint32_t>(eod)) {
          if (at > start)
            add(start, at - start);
          start = at + 1;
        }
      }
    });
    if (out.source_->size() > start) // the last document without its end
      add(start, out.source_->size() - start);
  } else {
    out.source_ = TokenSource::open(path);
    TextDocuments text(path, vocab, eod, out.first_, out.positions_);
    out.source_->scan([&](int64_t first, const uint32_t *bytes, size_t n) {
      for (size_t i = text.skip(bytes, 0, n); i < n; i = text.skip(bytes, i + 1, n))
        text.byte(first + static_cast<int64_t>(i), bytes[i]);
    });
    text.end(out.source_->size());
  }
  if (out.positions_.empty())
    throw DataError(path + ": no documents (a document has at least one token before its end)");
  return out;
}

Documents Documents::fromDocuments(const std::vector<std::vector<int32_t>> &documents, int32_t eod) {
  Documents out;
  out.eod_ = eod;
  out.vocab_ = int64_t{1} << 32;
  std::vector<uint32_t> tokens;
  for (const auto &document : documents) {
    if (document.empty() || document.back() != eod)
      throw DataError("a document's tokens end with the end-of-document token " + std::to_string(eod));
    out.first_.push_back(static_cast<int64_t>(tokens.size()));
    out.positions_.push_back(static_cast<int64_t>(document.size()) - 1);
    tokens.insert(tokens.end(), document.begin(), document.end() - 1);
  }
  out.source_ = TokenSource::held("documents", std::move(tokens));
  return out;
}

Documents Documents::fromLengths(std::vector<int64_t> lengths) {
  Documents out;
  out.positions_ = std::move(lengths);
  return out;
}

void Documents::read(int64_t document, int64_t begin, int64_t n, int32_t *out) const {
  if (!source_)
    throw DataError("documents known by their lengths only have no tokens to train on");
  const auto d = static_cast<size_t>(document);
  const int64_t stored = std::clamp<int64_t>(positions_.at(d) - begin, 0, n); // the rest: the end
  source_->read(first_[d] + begin, stored, out, vocab_);
  std::fill(out + stored, out + n, eod_);
}

std::vector<int32_t> Documents::tokens(int64_t document) const {
  std::vector<int32_t> out(static_cast<size_t>(positions_.at(static_cast<size_t>(document)) + 1));
  read(document, 0, static_cast<int64_t>(out.size()), out.data());
  return out;
}

DocumentSteps::DocumentSteps(const Documents &documents, std::vector<DocumentShape> shapes,
                             const DocumentOptions &options)
    : documents_(documents), shapes_(std::move(shapes)), options_(options) {
  if (shapes_.empty())
    throw DataError("documents need a batch shape to lay them out in");
  int64_t seq = 0;
  for (const DocumentShape &shape : shapes_)
    seq = std::max(seq, shape.seq);
  if (seq <= 0)
    throw DataError("documents need sequences of at least one position");
  // The pieces are taken in order, a document at a time (none is held but the steps'); one
  // pass's steps are laid out at once (prepareOnePass): a bound, rather than a machine out of
  // memory.
  cut_ = seq;
  constexpr int64_t kMostPieces = 100'000'000;
  for (const int64_t positions : documents.positions())
    if ((pieceCount_ += positions / seq + (positions % seq != 0 ? 1 : 0)) > kMostPieces) // no overflow at INT64_MAX
      throw DataError("the documents make more than " + std::to_string(kMostPieces) + " pieces of at most " +
                      std::to_string(seq) + " positions (a document of " + std::to_string(positions) +
                      " positions among them); use fewer or shorter documents");
  if (pieceCount_ == 0)
    throw DataError("the documents hold no tokens to train on");
  while (documents_.positions()[static_cast<size_t>(document_)] == 0) // the first piece
    ++document_;
}

DocumentSteps::Piece DocumentSteps::nextPiece() const {
  const int64_t positions = documents_.positions()[static_cast<size_t>(document_)];
  return {document_, begin_, std::min(cut_, positions - begin_), 0, 0};
}

void DocumentSteps::takePiece() {
  ++next_;
  begin_ += cut_;
  while (begin_ >= documents_.positions()[static_cast<size_t>(document_)]) { // the next document with a piece
    begin_ = 0;
    document_ = (document_ + 1) % documents_.count();
    if (documents_.positions()[static_cast<size_t>(document_)] > 0)
      break;
  }
}

namespace {

// First fit: the row a piece of `length` goes to, given the positions taken in each row used
// (`fill`, to which a new row is added): packed, the first with room; padded, a row of its
// own. None where the batch of `shape` holds it nowhere.
std::optional<size_t> firstFit(std::vector<int64_t> &fill, int64_t length, const DocumentShape &shape,
                               DocumentLayout layout) {
  if (length > shape.seq)
    return std::nullopt;
  size_t row = fill.size();
  if (layout == DocumentLayout::Packed)
    row = static_cast<size_t>(
        std::find_if(fill.begin(), fill.end(), [&](int64_t used) { return used + length <= shape.seq; }) -
        fill.begin());
  if (row == fill.size()) {
    if (static_cast<int64_t>(fill.size()) == shape.batch)
      return std::nullopt;
    fill.push_back(0);
  }
  return row;
}

// The rows a step's pieces use.
int64_t rowsUsed(const std::vector<DocumentSteps::Piece> &pieces) {
  std::set<std::pair<size_t, int64_t>> rows;
  for (const auto &piece : pieces)
    rows.insert({piece.shape, piece.row});
  return static_cast<int64_t>(rows.size());
}

} // namespace

bool DocumentSteps::layOut(std::vector<Piece> &pieces, const DocumentShape &shape) const {
  std::vector<int64_t> fill; // per row used: positions taken
  for (Piece &piece : pieces) {
    const std::optional<size_t> row = firstFit(fill, piece.length, shape, options_.layout);
    if (!row)
      return false;
    piece.row = static_cast<int64_t>(*row);
    piece.offset = fill[*row];
    fill[*row] += piece.length;
  }
  return true;
}

void DocumentSteps::balance(std::vector<Piece *> pieces, const DocumentShape &shape) const {
  const std::vector<PipelineRows> &pipelines = shape.pipelines;
  if (options_.schedule != DocumentSchedule::Balanced || pipelines.empty() || pieces.empty())
    return;
  // A piece's estimated work: its tokens, and attention's pairs within it (the square of the
  // document's length, not of the sequence's).
  auto work = [&](const Piece &piece) {
    const auto n = static_cast<double>(piece.length);
    return n + shape.pairCost * n * (n + 1) / 2;
  };
  std::vector<size_t> order(pieces.size()); // the most work first
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return work(*pieces[a]) > work(*pieces[b]); });
  int64_t most = 0, firstFit = 0; // micro-batch indices: the pipelines' most, those first fit runs
  for (const PipelineRows &pipeline : pipelines) {
    most = std::max(most, pipeline.microbatches);
    for (const Piece *piece : pieces)
      if (pipeline.size > 0 && piece->row >= pipeline.start &&
          piece->row < pipeline.start + pipeline.microbatches * pipeline.size)
        firstFit = std::max(firstFit, (piece->row - pipeline.start) / pipeline.size + 1);
  }
  const bool packed = options_.layout == DocumentLayout::Packed;
  // Micro-batch indices [0, used) run: never more than first fit runs (it is kept then).
  for (int64_t used = 1; used <= std::min(most, firstFit); ++used) {
    std::vector<double> load(pipelines.size(), 0);
    std::vector<std::vector<double>> microbatchLoad(pipelines.size(),
                                                    std::vector<double>(static_cast<size_t>(most), 0));
    std::vector<int64_t> fill(static_cast<size_t>(shape.batch), 0);
    std::vector<std::pair<int64_t, int64_t>> at(pieces.size()); // row, offset
    bool placed = true;
    for (size_t i : order) {
      const Piece &piece = *pieces[i];
      const double w = work(piece);
      // The pipeline whose work per row it runs grows least, its micro-batch with the least
      // work, and there the fullest row with room (best fit; padded: an empty row).
      std::optional<std::tuple<double, double, int64_t>> best;
      size_t bestPipeline = 0;
      int64_t bestMicrobatch = 0, bestRow = -1;
      for (size_t p = 0; p < pipelines.size(); ++p) {
        const PipelineRows &pipeline = pipelines[p];
        const double speed = static_cast<double>(pipeline.microbatches * pipeline.size);
        for (int64_t k = 0; k < std::min(used, pipeline.microbatches); ++k) {
          int64_t row = -1;
          for (int64_t r = pipeline.start + k * pipeline.size; r < pipeline.start + (k + 1) * pipeline.size; ++r) {
            const int64_t taken = fill[static_cast<size_t>(r)];
            if ((packed ? taken + piece.length <= shape.seq : taken == 0) &&
                (row < 0 || taken > fill[static_cast<size_t>(row)]))
              row = r;
          }
          if (row < 0)
            continue;
          const std::tuple<double, double, int64_t> key{
              (load[p] + w) / speed, microbatchLoad[p][static_cast<size_t>(k)], -fill[static_cast<size_t>(row)]};
          if (!best || key < *best) {
            best = key;
            bestPipeline = p;
            bestMicrobatch = k;
            bestRow = row;
          }
        }
      }
      if (!best) {
        placed = false;
        break;
      }
      load[bestPipeline] += w;
      microbatchLoad[bestPipeline][static_cast<size_t>(bestMicrobatch)] += w;
      at[i] = {bestRow, fill[static_cast<size_t>(bestRow)]};
      fill[static_cast<size_t>(bestRow)] += piece.length;
    }
    if (placed) {
      for (size_t i = 0; i < pieces.size(); ++i) {
        pieces[i]->row = at[i].first;
        pieces[i]->offset = at[i].second;
      }
      return;
    }
  }
}

void DocumentSteps::prepare(int64_t count) {
  while (static_cast<int64_t>(steps_.size()) < count)
    steps_.push_back(options_.perMicroBatch && shapes_.size() > 1 ? nextStepPerMicroBatch() : nextStep());
}

DocumentSteps::Step DocumentSteps::nextStep() {
  // The shape of the smallest S that holds a piece of `longest` positions.
  auto shapeFor = [&](int64_t longest) {
    size_t best = shapes_.size();
    for (size_t k = 0; k < shapes_.size(); ++k)
      if (shapes_[k].seq >= longest && (best == shapes_.size() || shapes_[k].seq < shapes_[best].seq))
        best = k;
    return best;
  };
  Step step;
  for (;; takePiece()) {
    Piece piece = nextPiece();
    const int64_t longest = std::max(step.longest, piece.length);
    const size_t shape = shapeFor(longest);
    const DocumentShape &in = shapes_[shape];
    const int64_t budget = options_.tokens > 0 ? options_.tokens : in.batch * in.seq;
    if (!step.pieces.empty() && step.tokens + piece.length > budget)
      break;
    std::vector<Piece> laid = step.pieces;
    laid.push_back(piece);
    if (!layOut(laid, in)) {
      if (step.pieces.empty()) // cannot happen: a piece fits an empty batch of its shape
        throw DataError("a batch of " + std::to_string(in.batch) + " x " + std::to_string(in.seq) +
                        " holds no document");
      break;
    }
    step.pieces = std::move(laid);
    step.tokens += piece.length;
    step.longest = longest;
    step.shape = shape;
  }
  std::vector<Piece *> laid;
  for (Piece &piece : step.pieces) {
    piece.shape = step.shape;
    laid.push_back(&piece);
  }
  balance(laid, shapes_[step.shape]);
  step.rows = rowsUsed(step.pieces);
  step.shapes = {step.shape};
  return step;
}

DocumentSteps::Step DocumentSteps::nextStepPerMicroBatch() {
  std::vector<size_t> bySeq(shapes_.size());
  for (size_t k = 0; k < bySeq.size(); ++k)
    bySeq[k] = k;
  std::stable_sort(bySeq.begin(), bySeq.end(), [&](size_t a, size_t b) { return shapes_[a].seq < shapes_[b].seq; });
  int64_t budget = options_.tokens;
  if (budget <= 0)
    for (const DocumentShape &shape : shapes_)
      budget = std::max(budget, shape.batch * shape.seq);
  std::vector<std::vector<int64_t>> fill(shapes_.size()); // per shape, per row used: positions taken
  Step step;
  for (;; takePiece()) {
    Piece piece = nextPiece();
    if (!step.pieces.empty() && step.tokens + piece.length > budget)
      break;
    bool placed = false, own = true;
    for (size_t k : bySeq) {
      const DocumentShape &in = shapes_[k];
      if (in.seq < piece.length)
        continue;
      std::vector<int64_t> &rows = fill[k];
      // Its own bucket's batch first; then only batches of longer S the step already runs
      // (a batch opened for a short document would cost a whole step of its plan).
      if (!own && rows.empty())
        continue;
      own = false;
      const std::optional<size_t> row = firstFit(rows, piece.length, in, options_.layout);
      if (!row)
        continue;
      piece.shape = k;
      piece.row = static_cast<int64_t>(*row);
      piece.offset = rows[*row];
      rows[*row] += piece.length;
      placed = true;
      break;
    }
    if (!placed) {
      if (step.pieces.empty())
        throw DataError("no batch of the plan set holds a document of " + std::to_string(piece.length) + " positions");
      break;
    }
    step.tokens += piece.length;
    step.longest = std::max(step.longest, piece.length);
    step.pieces.push_back(piece);
  }
  for (size_t k : bySeq)
    if (!fill[k].empty()) {
      step.shapes.push_back(k);
      step.shape = k;
      std::vector<Piece *> laid;
      for (Piece &piece : step.pieces)
        if (piece.shape == k)
          laid.push_back(&piece);
      balance(laid, shapes_[k]);
    }
  // The plan that updates (and holds the state after the step) runs last: the previous
  // step's where this step uses it too, so that the state stays where it is (a change of
  // holder moves the whole state; the others take only the parameters), else the longest S.
  if (!steps_.empty()) {
    const auto kept = std::find(step.shapes.begin(), step.shapes.end(), steps_.back().shape);
    if (kept != step.shapes.end()) {
      step.shape = *kept;
      std::rotate(kept, kept + 1, step.shapes.end());
    }
  }
  step.rows = rowsUsed(step.pieces);
  return step;
}

const DocumentSteps::Step &DocumentSteps::step(int64_t step) const {
  if (step < 0 || step >= static_cast<int64_t>(steps_.size()))
    throw DataError("step " + std::to_string(step + 1) + " of the documents was not laid out");
  return steps_[static_cast<size_t>(step)];
}

std::pair<int64_t, int64_t> DocumentSteps::microbatchesRun(const Step &step, size_t shape) const {
  const std::vector<PipelineRows> &pipelines = shapes_.at(shape).pipelines;
  int64_t most = 0;
  for (const PipelineRows &pipeline : pipelines)
    most = std::max(most, pipeline.microbatches);
  if (most == 0)
    return {0, 0};
  std::vector<uint8_t> runs(static_cast<size_t>(most), 0);
  runs[0] = 1;
  for (const Piece &piece : step.pieces)
    for (const PipelineRows &pipeline : pipelines)
      if (piece.shape == shape && pipeline.size > 0 && piece.row >= pipeline.start &&
          piece.row < pipeline.start + pipeline.microbatches * pipeline.size)
        runs[static_cast<size_t>((piece.row - pipeline.start) / pipeline.size)] = 1;
  return {std::count(runs.begin(), runs.end(), 1), most};
}

int64_t DocumentSteps::prepareOnePass() {
  while (next_ < pieceCount_)
    prepare(static_cast<int64_t>(steps_.size()) + 1);
  return static_cast<int64_t>(steps_.size());
}

Batch DocumentSteps::batchFor(int64_t index) const {
  const Step &s = step(index);
  if (s.shapes.size() != 1)
    throw DataError("step " + std::to_string(index + 1) + " holds a batch of each of " +
                    std::to_string(s.shapes.size()) + " plans (per micro-batch): batchesFor");
  return batchOf(s, s.shape);
}

std::vector<std::pair<size_t, Batch>> DocumentSteps::batchesFor(int64_t index) const {
  const Step &s = step(index);
  std::vector<std::pair<size_t, Batch>> batches;
  for (size_t shape : s.shapes)
    batches.emplace_back(shape, batchOf(s, shape));
  return batches;
}

Batch DocumentSteps::batchOf(const Step &s, size_t shape) const {
  const int64_t rows = shapes_[shape].batch, seq = shapes_[shape].seq;
  Batch out{rows, seq, {}, {}, s.tokens, std::vector<uint8_t>(static_cast<size_t>(rows), 0), {}};
  const auto size = static_cast<size_t>(rows * seq);
  auto &tokens = out.inputs["tokens"];
  auto &targets = out.inputs["targets"];
  tokens.assign(size, documents_.eod());
  targets.assign(size, -1);
  out.blockStarts.assign(size, 0);
  std::vector<int64_t> fill(static_cast<size_t>(rows), 0);
  std::vector<int32_t> document(static_cast<size_t>(seq + 1)); // a piece's tokens and its last target
  for (const Piece &piece : s.pieces) {
    if (piece.shape != shape)
      continue;
    documents_.read(piece.document, piece.begin, piece.length + 1, document.data()); // the last: a target only
    for (int64_t p = 0; p < piece.length; ++p) {
      const auto at = static_cast<size_t>(piece.row * seq + piece.offset + p);
      tokens[at] = document[static_cast<size_t>(p)];
      targets[at] = document[static_cast<size_t>(p + 1)];
      out.blockStarts[at] = static_cast<int32_t>(piece.offset);
    }
    fill[static_cast<size_t>(piece.row)] = std::max(fill[static_cast<size_t>(piece.row)], piece.offset + piece.length);
    out.realRows[static_cast<size_t>(piece.row)] = 1;
  }
  for (int64_t row = 0; row < rows; ++row) // padding: a block of its own at the row's end
    for (int64_t p = fill[static_cast<size_t>(row)]; p < seq; ++p)
      out.blockStarts[static_cast<size_t>(row * seq + p)] = static_cast<int32_t>(fill[static_cast<size_t>(row)]);
  return out;
}

std::string describeDocuments(const Documents &documents) {
  std::vector<int64_t> lengths = documents.positions();
  int64_t total = 0;
  for (const int64_t length : lengths)
    total += length;
  std::sort(lengths.begin(), lengths.end());
  auto at = [&](double q) { return lengths[static_cast<size_t>(q * static_cast<double>(lengths.size() - 1))]; };
  return ir::counted(static_cast<int64_t>(lengths.size()), "document") + ", " + ir::counted(total, "token") +
         "; lengths: min " + std::to_string(lengths.front()) + ", median " + std::to_string(at(0.5)) + ", p90 " +
         std::to_string(at(0.9)) + ", max " + std::to_string(lengths.back());
}

} // namespace hspmd::runtime
