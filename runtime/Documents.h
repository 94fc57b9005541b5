// Documents.h - training on whole documents (hspmc train --documents): a corpus read as
// documents, each ending with an end-of-document token; each step takes the next documents
// whole, up to a token budget, and lays them into the plan's B x S batch, packed (several
// per sequence) or padded (one per sequence). Attention is masked to each document
// (Batch::blockStarts) and the loss is the mean over real tokens only (a target < 0 is not
// scored), so both layouts give the same loss for the same documents.
//
// Given a document "ab" (tokens a, b, then the end-of-document token E), its positions are
// the inputs a, b with targets b, E: a document of n text tokens has n positions, each
// scored. A document of more than S positions is cut into pieces of at most S (a piece is
// a document of its own to the mask; the targets run on across the cut).
#pragma once

#include "runtime/Data.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hspmd::runtime {

enum class DocumentLayout { Packed, Padded };
/// How a step's documents are given rows: `InOrder`, in corpus order, each to the first row
/// with room; `Balanced` (the scheduler), spread over the plan's pipelines and micro-batches
/// by their estimated work (DocumentShape), in as few micro-batches as hold them.
enum class DocumentSchedule { InOrder, Balanced };

struct DocumentOptions {
  int32_t eod = 0;    // the end-of-document token (0, NUL, for text: text never holds it)
  int64_t tokens = 0; // real tokens a step takes at most (0: B x S)
  DocumentLayout layout = DocumentLayout::Packed;
  DocumentSchedule schedule = DocumentSchedule::Balanced;
  /// With several shapes (a plan set): a step's documents each in the shape of its own
  /// length (several plans within a step, --granularity micro-batch) rather than all in the
  /// shape of the step's longest (--granularity step).
  bool perMicroBatch = false;
};

class Documents {
public:
  /// Reads `path` as documents: .jsonl (a "text" field per line, its UTF-8 bytes), token
  /// files (.bin of uint16, .u32.bin of uint32; documents end at each `eod` token) or plain
  /// text (documents separated by blank lines, a document's lines joined by '\n'). Text and
  /// token files are read where they lie (runtime/Data.h, TokenSource): opening scans them
  /// once, a chunk at a time, for where each document lies, and each step reads its pieces;
  /// .jsonl is held in memory. Throws DataError at FILE:LINE for a malformed line, a token
  /// outside the vocabulary, a text holding the end-of-document token, or a file without a
  /// document.
  static Documents load(const std::string &path, int64_t vocab, int32_t eod);
  /// Each document's tokens, the end-of-document token last.
  static Documents fromDocuments(const std::vector<std::vector<int32_t>> &documents, int32_t eod);
  /// Documents of these lengths (positions), without tokens: how steps would take them
  /// (hspmc simulate --documents); DocumentSteps::batchFor needs tokens.
  static Documents fromLengths(std::vector<int64_t> lengths);

  /// Tokens [begin, begin + n) of document `document` into `out`, its position
  /// positions()[document] being its end (the end-of-document token). DataError where its
  /// file changed since it was loaded, or for documents known by their lengths only.
  void read(int64_t document, int64_t begin, int64_t n, int32_t *out) const;
  /// A document's tokens, the end-of-document token last.
  std::vector<int32_t> tokens(int64_t document) const;
  /// Each document's positions (its tokens but the end).
  const std::vector<int64_t> &positions() const { return positions_; }
  int64_t count() const { return static_cast<int64_t>(positions_.size()); }
  int32_t eod() const { return eod_; }

private:
  std::shared_ptr<const TokenSource> source_; // none: known by their lengths only
  std::vector<int64_t> first_;                // each document's first token in the source
  std::vector<int64_t> positions_;
  int64_t vocab_ = 0;
  int32_t eod_ = 0;
};

/// The rows of a batch one pipeline of a plan runs: `microbatches` micro-batches of `size`
/// rows from row `start` (ir::DeviceProgram's batchStart, microbatches, microbatchSize).
struct PipelineRows {
  int64_t start = 0, microbatches = 1, size = 0;
};

/// A batch shape a step may take: B sequences of S positions (a plan of a plan set), and how
/// its plan runs them (runtime/Run.h, documentShape), for the scheduler: the pipelines' rows,
/// which partition [0, B) (none: rows in order), and the work of one causal (query, key)
/// pair of attention in units of a token's work in every other kernel.
struct DocumentShape {
  int64_t batch = 0, seq = 0;
  std::vector<PipelineRows> pipelines = {};
  double pairCost = 0;
};

/// The steps of a run on documents: which pieces each step takes and where they lie.
class DocumentSteps {
public:
  /// A piece of a document: positions [begin, begin + length) of document `document`.
  struct Piece {
    int64_t document = 0, begin = 0, length = 0;
    int64_t row = 0, offset = 0; // where the step lays it: row `row`, from position `offset`
    size_t shape = 0;            // ... of the batch of shape `shape`
  };
  struct Step {
    std::vector<Piece> pieces;
    int64_t tokens = 0, longest = 0, rows = 0; // real tokens, the longest piece, rows used
    size_t shape = 0;           // the shape it is laid out in (per micro-batch: the one that updates, last)
    std::vector<size_t> shapes; // the shapes it uses, in the order they run: shortest S first, but `shape` last
  };

  /// Steps take pieces in corpus order (the corpus repeating) while the step's real tokens
  /// stay within `options.tokens` and the layout still holds them in `batch` rows of `seq`:
  /// packed, a piece goes to the first row with room for it (first fit); padded, each piece
  /// has a row of its own. A step takes at least one piece. Then, with the balanced schedule
  /// and the shape's pipelines known, the step's pieces are given rows anew (balance()).
  DocumentSteps(const Documents &documents, int64_t batch, int64_t seq, const DocumentOptions &options)
      : DocumentSteps(documents, std::vector<DocumentShape>{{batch, seq}}, options) {}
  /// With several shapes (a plan set, one plan per length bucket), documents are cut into
  /// pieces of the longest S, and a step takes the shape of the smallest S that holds its
  /// longest piece (the first listed of equal ones); its pieces are laid out anew in it when
  /// a longer piece changes it. The token budget (0) is that shape's B x S. Per micro-batch
  /// (options.perMicroBatch), a piece goes to the batch of its own bucket (the smallest S
  /// that holds it), else to the first batch of a longer S the step already uses with room
  /// for it, else the step ends: a step holds a batch of each shape it uses, and its token
  /// budget (0) is the largest B x S.
  DocumentSteps(const Documents &documents, std::vector<DocumentShape> shapes, const DocumentOptions &options);

  /// Lays out steps 0 .. count-1 (a step depends on every step before it); call before
  /// batchFor from several threads.
  void prepare(int64_t count);
  const Step &step(int64_t step) const;
  /// The batch of step `step` (from 0; prepared): tokens, targets (-1 where no real token
  /// is scored), blockStarts and the scored count.
  Batch batchFor(int64_t step) const;
  /// Per micro-batch: the step's batch of each shape it uses (in the order they run: Step::shapes), each scored
  /// over the whole step's real tokens.
  std::vector<std::pair<size_t, Batch>> batchesFor(int64_t step) const;
  int64_t pieceCount() const { return pieceCount_; }
  /// The micro-batch indices of shape `shape`'s pipelines that run in `step` (that hold a
  /// piece in some pipeline, and index 0 always: runtime/Run.h, skipEmptyMicrobatches), and
  /// how many the pipelines have at most; {0, 0} for a shape without pipelines.
  std::pair<int64_t, int64_t> microbatchesRun(const Step &step, size_t shape) const;
  /// Lays out steps until every piece of the corpus has been taken once; returns how many
  /// steps that is (the last may take pieces of the corpus's next pass).
  int64_t prepareOnePass();
  const std::vector<DocumentShape> &shapes() const { return shapes_; }

private:
  // Lays `pieces` out in `shape` (rows and offsets set); false where they do not fit.
  bool layOut(std::vector<Piece> &pieces, const DocumentShape &shape) const;
  // The scheduler: gives the pieces of one step laid out in `shape` rows anew, in the fewest
  // micro-batch indices of the shape's pipelines that hold them, spreading their estimated
  // work over the pipelines by the rows each runs (its speed: the plan's shares), then over
  // a pipeline's micro-batches. Leaves them as they are where it finds no such layout.
  void balance(std::vector<Piece *> pieces, const DocumentShape &shape) const;
  Step nextStep();              // --granularity step
  Step nextStepPerMicroBatch(); // --granularity micro-batch
  Batch batchOf(const Step &step, size_t shape) const;
  // The next piece of the corpus (it repeats), and past it.
  Piece nextPiece() const;
  void takePiece();
  const Documents &documents_;
  std::vector<DocumentShape> shapes_;
  DocumentOptions options_;
  int64_t cut_ = 0;        // pieces are of at most this many positions (the longest S)
  int64_t pieceCount_ = 0; // the corpus's pieces
  std::vector<Step> steps_;
  int64_t next_ = 0;                 // pieces taken by the steps laid out
  int64_t document_ = 0, begin_ = 0; // where the next piece starts
};

/// "12 documents, 3,412 tokens; lengths: min 3, median 210, p90 1,800, max 9,000" for a
/// corpus, for the run's banner.
std::string describeDocuments(const Documents &documents);

} // namespace hspmd::runtime
