// Documents: the three formats, pieces, the steps' layouts and batches, the errors that name
// the file and line, and attention masked to each document (runtime/Documents.h).
#include "runtime/Documents.h"
#include "runtime/Kernels.h"
#include "runtime/Run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

using namespace hspmd;
using namespace hspmd::runtime;

namespace {

std::string write(const std::string &name, const std::string &bytes) {
  const auto path = std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "_docs_" + name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path.string();
}

std::string loadError(const std::string &path, int64_t vocab = 256, int32_t eod = 0) {
  try {
    Documents::load(path, vocab, eod);
  } catch (const DataError &e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<int32_t> bytes(const std::string &text, int32_t eod = 0) {
  std::vector<int32_t> out;
  for (const unsigned char c : text)
    out.push_back(c);
  out.push_back(eod);
  return out;
}

} // namespace

TEST(Documents, PlainTextDocumentsAreSeparatedByBlankLines) {
  const std::string path = write("plain.txt", "one\ntwo\n\n  \t\nthree\n\n\n");
  const Documents documents = Documents::load(path, 256, 0);
  ASSERT_EQ(documents.count(), 2);
  EXPECT_EQ(documents.tokens(0), bytes("one\ntwo"));
  EXPECT_EQ(documents.tokens(1), bytes("three"));
  // What hspmc train prints of them: each document's positions (its tokens before its end).
  EXPECT_EQ(describeDocuments(documents), "2 documents, 12 tokens; lengths: min 5, median 5, p90 5, max 7");
  const std::string one = write("one.txt", "a");
  EXPECT_EQ(describeDocuments(Documents::load(one, 256, 0)),
            "1 document, 1 token; lengths: min 1, median 1, p90 1, max 1");
  std::filesystem::remove(path);
  std::filesystem::remove(one);
}

TEST(Documents, JsonlAndTokenFiles) {
  const std::string jsonl = write("d.jsonl", "{\"text\": \"ab\"}\n\n{\"text\": \"\"}\n{\"text\": \"c\"}\n");
  const Documents a = Documents::load(jsonl, 256, 0);
  ASSERT_EQ(a.count(), 2); // the empty text is no document
  EXPECT_EQ(a.tokens(1), bytes("c"));
  // uint16 tokens 5 7 9 | 9 | 4 (the last without its end): documents end at each 9.
  const std::string tokens = write("t.bin", std::string("\x05\0\x07\0\x09\0\x09\0\x04\0", 10));
  const Documents b = Documents::load(tokens, 16, 9);
  ASSERT_EQ(b.count(), 2);
  EXPECT_EQ(b.tokens(0), (std::vector<int32_t>{5, 7, 9}));
  EXPECT_EQ(b.tokens(1), (std::vector<int32_t>{4, 9}));
  std::filesystem::remove(jsonl);
  std::filesystem::remove(tokens);
}

TEST(Documents, BadFilesAreErrorsWithTheirLine) {
  const std::string nul = write("nul.txt", std::string("fine\n\nnot\nfine\0here\n", 20));
  EXPECT_EQ(loadError(nul), nul + ":3: the text holds byte 0, the end-of-document token; choose another with --eod");
  const std::string json = write("bad.jsonl", "{\"text\": \"a\"}\n{\"text\": 3}\n");
  EXPECT_EQ(loadError(json), json + ":2: expected an object with a string field \"text\"");
  const std::string blank = write("blank.txt", "\n \n\n");
  EXPECT_EQ(loadError(blank), blank + ": no documents (a document has at least one token before its end)");
  const std::string wide = write("wide.bin", std::string("\x05\0\x2c\x01", 4)); // 5, 300
  EXPECT_EQ(loadError(wide, 256, 5), wide + ": token 300 at position 1 is outside the model's vocabulary of 256");
  EXPECT_EQ(loadError(nul, 256, 256), "the end-of-document token 256 is outside the model's vocabulary of 256");
  const std::string text = write("vocab.jsonl", "{\"text\": \"ok\"}\n{\"text\": \"\u00e9\"}\n");
  EXPECT_EQ(loadError(text, 128, 0), text + ":2: byte 195 is outside the model's vocabulary of 128");
  EXPECT_EQ(loadError("/nonexistent/docs.txt"), "/nonexistent/docs.txt: cannot open the data file");
  for (const auto &path : {nul, json, blank, wide, text})
    std::filesystem::remove(path);
}

namespace {

// Plain text as documents, the rule read whole (as hspmd did before it read files where they
// lie): lines of only spaces, tabs and carriage returns separate documents; a document's lines
// are joined by '\n'; the first document holding a bad byte is the error, at its first line.
std::pair<std::vector<std::vector<int32_t>>, std::string> wholeTextDocuments(const std::string &text, int64_t vocab,
                                                                             int32_t eod) {
  std::vector<std::vector<int32_t>> documents;
  std::string document;
  int first = 0, number = 0;
  std::string error;
  auto finish = [&] {
    if (document.empty() || !error.empty())
      return document.clear();
    for (const unsigned char c : document)
      if (c == eod || c >= vocab) {
        error =
            ":" + std::to_string(first) + ": " +
            (c == eod ? "the text holds byte " + std::to_string(eod) +
                            ", the end-of-document token; choose "
                            "another with --eod"
                      : "byte " + std::to_string(c) + " is outside the model's vocabulary of " + std::to_string(vocab));
        return document.clear();
      }
    documents.push_back(bytes(document, eod));
    document.clear();
  };
  std::istringstream lines(text + "\n");
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) {
      finish();
      continue;
    }
    if (document.empty())
      first = number;
    else
      document += '\n';
    document += line;
  }
  finish();
  return {documents, error};
}

} // namespace

// Text is read where it lies, a chunk at a time: random texts of blanks, newlines, letters,
// the end-of-document byte and bytes outside a small vocabulary give the documents (or the
// error) of the text read whole, and so does a text whose documents straddle the chunks.
TEST(Documents, TextReadWhereItLiesIsTheTextReadWhole) {
  std::mt19937 random(11);
  const std::string alphabet("ab \t\r\n\n\n\0\xc8", 10);
  int errors = 0, documents = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text;
    for (int i = 0, n = static_cast<int>(random() % 40); i < n; ++i)
      text += alphabet[random() % (trial % 3 == 0 ? 7 : alphabet.size())]; // a third without bad bytes
    const int64_t vocab = trial % 2 ? 256 : 128;
    const int32_t eod = trial % 5 == 4 ? ' ' : 0;
    const std::string path = write("random.txt", text);
    const auto [expected, error] = wholeTextDocuments(text, vocab, eod);
    const std::string expectedError = !error.empty() ? path + error
                                      : expected.empty()
                                          ? path + ": no documents (a document has at least one token before its end)"
                                          : "(no error)";
    EXPECT_EQ(loadError(path, vocab, eod), expectedError) << "text '" << text << "'";
    if (expectedError == "(no error)") {
      const Documents read = Documents::load(path, vocab, eod);
      ASSERT_EQ(read.count(), static_cast<int64_t>(expected.size())) << "text '" << text << "'";
      for (size_t d = 0; d < expected.size(); ++d)
        EXPECT_EQ(read.tokens(static_cast<int64_t>(d)), expected[d]) << "text '" << text << "'";
      documents += static_cast<int>(expected.size());
    } else {
      ++errors;
    }
    std::filesystem::remove(path);
  }
  EXPECT_GT(errors, 100);
  EXPECT_GT(documents, 1000);
  // Documents of 1 to 300000 bytes, 3 MiB in all: some cross the 1 MiB chunks.
  std::string large;
  while (large.size() < (size_t{3} << 20)) {
    const size_t length = 1 + random() % 300000;
    for (size_t i = 0; i < length; ++i)
      large += i % 61 == 60 ? '\n' : static_cast<char>('a' + random() % 26);
    large += random() % 2 ? "\n\n" : "\r\n \n";
  }
  const std::string path = write("large.txt", large);
  const Documents read = Documents::load(path, 256, 0);
  const auto expected = wholeTextDocuments(large, 256, 0).first;
  ASSERT_EQ(read.count(), static_cast<int64_t>(expected.size()));
  for (size_t d = 0; d < expected.size(); ++d)
    EXPECT_EQ(read.tokens(static_cast<int64_t>(d)), expected[d]) << "document " << d;
  std::filesystem::remove(path);
}

// The steps read their documents from the file: one cut short under the run is an error where
// it is read, not other documents.
TEST(Documents, ADocumentFileThatChangesWhileTrainingIsAnError) {
  const std::string path = write("changing.txt", "first document\n\nsecond document\n");
  const Documents documents = Documents::load(path, 256, 0);
  DocumentSteps steps(documents, 2, 8, {0, 0, DocumentLayout::Packed});
  steps.prepare(2);
  EXPECT_EQ(steps.batchFor(0).inputs.at("tokens")[0], 'f');
  std::filesystem::resize_file(path, 3);
  try {
    steps.batchFor(1);
    ADD_FAILURE() << "a file cut short must fail";
  } catch (const DataError &e) {
    EXPECT_EQ(std::string(e.what()), path + ": the data file changed while training: it was written to after it was "
                                            "opened, when it held 32 tokens (train on a copy that nothing writes to)");
  }
  std::filesystem::remove(path);
}

// Documents of 3, 5 and 2 positions (text of 3, 5, 2 tokens), S = 4: the 5 is cut into 4 + 1.
TEST(Documents, StepsPackByFirstFitOrPadOnePerRow) {
  const Documents documents =
      Documents::fromDocuments({bytes("abc", 0), bytes("defgh", 0), bytes("ij", 0)}, 0); // pieces 3, 4, 1, 2
  DocumentSteps packed(documents, 2, 4, {0, 0, DocumentLayout::Packed});
  packed.prepare(2);
  // Step 1: 3 (row 0), 4 (row 1), 1 (row 0 at 3): 8 tokens fill both rows; then 2 has no room.
  const auto &first = packed.step(0);
  ASSERT_EQ(first.pieces.size(), 3u);
  EXPECT_EQ(first.tokens, 8);
  EXPECT_EQ(first.rows, 2);
  EXPECT_EQ(first.pieces[2].row, 0);
  EXPECT_EQ(first.pieces[2].offset, 3);
  const Batch batch = packed.batchFor(0);
  EXPECT_EQ(batch.scored, 8);
  EXPECT_EQ(batch.inputs.at("tokens"), (std::vector<int32_t>{'a', 'b', 'c', 'h', 'd', 'e', 'f', 'g'}));
  EXPECT_EQ(batch.inputs.at("targets"), (std::vector<int32_t>{'b', 'c', 0, 0, 'e', 'f', 'g', 'h'}));
  EXPECT_EQ(batch.blockStarts, (std::vector<int32_t>{0, 0, 0, 3, 0, 0, 0, 0}));
  // Step 2 starts at "ij", and the corpus repeats: 2 + 3 in row 0 would be 5 > 4: row 1.
  const auto &second = packed.step(1);
  ASSERT_GE(second.pieces.size(), 2u);
  EXPECT_EQ(second.pieces[0].document, 2);
  EXPECT_EQ(second.pieces[1].document, 0);
  EXPECT_EQ(second.pieces[1].row, 1);
  // Padded: a row each, so a step holds two pieces; the rest of a row is padding, unscored,
  // a block of its own.
  DocumentSteps padded(documents, 2, 4, {0, 0, DocumentLayout::Padded});
  padded.prepare(1);
  const Batch pad = padded.batchFor(0);
  EXPECT_EQ(pad.scored, 7);
  EXPECT_EQ(pad.inputs.at("targets"), (std::vector<int32_t>{'b', 'c', 0, -1, 'e', 'f', 'g', 'h'}));
  EXPECT_EQ(pad.blockStarts, (std::vector<int32_t>{0, 0, 0, 3, 0, 0, 0, 0}));
  // A token budget ends a step before the layout is full.
  DocumentSteps budget(documents, 2, 4, {0, 5, DocumentLayout::Packed});
  budget.prepare(1);
  EXPECT_EQ(budget.step(0).pieces.size(), 1u);
  EXPECT_THROW(budget.batchFor(1), DataError); // not laid out
}

// Attention over a packed row equals attention over each document alone: forward and
// backward, with a causal piece of the queries (context parallelism's query offset).
TEST(Documents, AttentionIsMaskedToEachDocument) {
  const int64_t S = 6, H = 2, D = 3;
  std::mt19937 random(7);
  std::normal_distribution<float> normal;
  auto tensor = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float &x : v)
      x = normal(random);
    return v;
  };
  std::vector<float> q = tensor(S * H * D), k = tensor(S * H * D), v = tensor(S * H * D), dy = tensor(S * H * D);
  const std::vector<int32_t> starts = {0, 0, 0, 0, 4, 4}; // documents of 4 and 2 positions
  ir::AttrMap attrs;
  attrs["causal"] = true;
  auto run = [&](const std::string &op, int64_t from, int64_t length, const int32_t *blockStarts, int64_t seq) {
    auto view = [&](std::vector<float> &x) {
      return TensorView{x.data() + from * H * D, ir::DType::F32, {1, length, H, D}};
    };
    std::vector<float> out(static_cast<size_t>(S * H * D)), dq(out.size()), dk(out.size()), dv(out.size());
    KernelContext context;
    context.blockStarts = blockStarts;
    context.seq = seq;
    std::vector<TensorView> in = {view(q), view(k), view(v)};
    if (op == "attention_grad")
      in.push_back(view(dy));
    std::vector<TensorView> outs =
        op == "attention" ? std::vector<TensorView>{view(out)} : std::vector<TensorView>{view(dq), view(dk), view(dv)};
    runKernel(op, attrs, in, outs, context);
    return op == "attention" ? std::vector<std::vector<float>>{out} : std::vector<std::vector<float>>{dq, dk, dv};
  };
  for (const std::string op : {"attention", "attention_grad"}) {
    const auto packed = run(op, 0, S, starts.data(), S);
    const auto first = run(op, 0, 4, nullptr, 0), second = run(op, 4, 2, nullptr, 0);
    for (size_t r = 0; r < packed.size(); ++r)
      for (int64_t i = 0; i < S * H * D; ++i)
        EXPECT_NEAR(packed[r][static_cast<size_t>(i)], (i < 4 * H * D ? first : second)[r][static_cast<size_t>(i)],
                    1e-6)
            << op << " result " << r << " element " << i;
    // Without the mask the second document would see the first.
    const auto unmasked = run(op, 0, S, nullptr, 0);
    EXPECT_GT(std::abs(unmasked[0][5 * H * D] - packed[0][5 * H * D]), 1e-4) << op;
  }
}

// A plan set's shapes: a step takes the shape of the smallest S that holds its longest piece,
// laying its pieces out anew when a longer one changes it; pieces are cut at the longest S.
TEST(Documents, AStepTakesTheShapeOfItsLongestPiece) {
  // Documents of 2, 2, 6, 2 and 9 positions; shapes 4 x 2 and 1 x 8: pieces 2, 2, 6, 2, 8, 1.
  const Documents documents =
      Documents::fromDocuments({bytes("ab"), bytes("cd"), bytes("efghij"), bytes("kl"), bytes("mnopqrstu")}, 0);
  DocumentSteps steps(documents, {{4, 2}, {1, 8}}, {0, 0, DocumentLayout::Packed});
  steps.prepare(3);
  // Step 1: 2 and 2 in the 4 x 2 shape; the 6 needs the 1 x 8 shape, where 2 + 2 + 6 = 10
  // positions do not fit one row: the step ends.
  EXPECT_EQ(steps.step(0).shape, 0u);
  EXPECT_EQ(steps.step(0).pieces.size(), 2u);
  EXPECT_EQ(steps.step(0).rows, 2);
  // Step 2: the 6 (1 x 8), then the 2 fits beside it; the 8 does not.
  EXPECT_EQ(steps.step(1).shape, 1u);
  EXPECT_EQ(steps.step(1).pieces.size(), 2u);
  EXPECT_EQ(steps.step(1).pieces[1].offset, 6);
  const Batch batch = steps.batchFor(1);
  EXPECT_EQ(batch.batch, 1);
  EXPECT_EQ(batch.seq, 8);
  EXPECT_EQ(batch.blockStarts, (std::vector<int32_t>{0, 0, 0, 0, 0, 0, 6, 6}));
  // Step 3: the 8-long piece of the last document alone.
  EXPECT_EQ(steps.step(2).pieces.size(), 1u);
  EXPECT_EQ(steps.step(2).longest, 8);
}

// A micro-batch index is skipped where every pipeline's micro-batch of that index is padding
// only; the first always runs.
TEST(Documents, MicrobatchesOfPaddingOnlyAreSkippedByEveryPipeline) {
  std::map<int, ir::DeviceProgram> programs;
  programs[0].microbatches = 4; // a pipeline of rows 0-3, one a micro-batch
  programs[0].microbatchSize = 1;
  programs[1].microbatches = 2; // another of rows 4-7, two a micro-batch
  programs[1].microbatchSize = 2;
  programs[1].batchStart = 4;
  Batch batch;
  batch.realRows = {1, 0, 0, 0, 1, 1, 0, 0};
  skipEmptyMicrobatches(batch, programs);
  EXPECT_EQ(batch.skipMicrobatch, (std::vector<uint8_t>{0, 1, 1, 1}));
  batch.realRows = {0, 0, 1, 0, 0, 0, 0, 1}; // index 1 has rows in both; 2 in the first
  skipEmptyMicrobatches(batch, programs);
  EXPECT_EQ(batch.skipMicrobatch, (std::vector<uint8_t>{0, 0, 0, 1}));
  Batch stream; // not documents: nothing is skipped
  skipEmptyMicrobatches(stream, programs);
  EXPECT_TRUE(stream.skipMicrobatch.empty());
}

namespace {

// The pieces of a step as (document, begin, length), in order: what it takes, wherever it
// lays them.
std::vector<std::tuple<int64_t, int64_t, int64_t>> taken(const DocumentSteps::Step &step) {
  std::vector<std::tuple<int64_t, int64_t, int64_t>> out;
  for (const auto &piece : step.pieces)
    out.emplace_back(piece.document, piece.begin, piece.length);
  std::sort(out.begin(), out.end());
  return out;
}

// The pipeline a row is in.
size_t pipelineOf(const DocumentShape &shape, int64_t row) {
  for (size_t p = 0; p < shape.pipelines.size(); ++p)
    if (row >= shape.pipelines[p].start &&
        row < shape.pipelines[p].start + shape.pipelines[p].microbatches * shape.pipelines[p].size)
      return p;
  ADD_FAILURE() << "row " << row << " is in no pipeline";
  return 0;
}

} // namespace

// The scheduler takes the same documents as corpus order does, and spreads them over the
// pipelines in the fewest micro-batches: four documents of 3 positions in a batch of two
// pipelines of four micro-batches of one row of 4 run in micro-batches 0 and 1 of both,
// not in all four of the first.
TEST(Documents, TheSchedulerSpreadsAStepOverThePipelinesInTheFewestMicrobatches) {
  const Documents documents =
      Documents::fromDocuments({bytes("abc"), bytes("def"), bytes("ghi"), bytes("jkl"), bytes("mno")}, 0);
  const DocumentShape shape{8, 4, {{0, 4, 1}, {4, 4, 1}}, 0.01};
  DocumentSteps inOrder(documents, {shape}, {0, 12, DocumentLayout::Packed, DocumentSchedule::InOrder});
  DocumentSteps balanced(documents, {shape}, {0, 12, DocumentLayout::Packed, DocumentSchedule::Balanced});
  inOrder.prepare(2);
  balanced.prepare(2);
  for (int64_t s = 0; s < 2; ++s)
    EXPECT_EQ(taken(inOrder.step(s)), taken(balanced.step(s))) << "step " << s + 1;
  EXPECT_EQ(inOrder.step(0).pieces.size(), 4u);
  EXPECT_EQ(inOrder.microbatchesRun(inOrder.step(0), 0), (std::pair<int64_t, int64_t>{4, 4}));
  EXPECT_EQ(balanced.microbatchesRun(balanced.step(0), 0), (std::pair<int64_t, int64_t>{2, 4}));
  std::vector<int> perPipeline(2, 0);
  for (const auto &piece : balanced.step(0).pieces)
    ++perPipeline[pipelineOf(shape, piece.row)];
  EXPECT_EQ(perPipeline, (std::vector<int>{2, 2}));
  EXPECT_EQ(balanced.step(0).rows, 4);
  // The batch holds the same tokens, in other rows.
  const Batch batch = balanced.batchFor(0);
  std::multiset<int32_t> real, expected;
  for (size_t i = 0; i < batch.inputs.at("tokens").size(); ++i)
    if (batch.inputs.at("targets")[i] >= 0)
      real.insert(batch.inputs.at("tokens")[i]);
  for (const std::string text : {"abc", "def", "ghi", "jkl"})
    expected.insert(text.begin(), text.end());
  EXPECT_EQ(real, expected);
  EXPECT_EQ(batch.realRows, (std::vector<uint8_t>{1, 1, 0, 0, 1, 1, 0, 0}));
}

// Work is attention's pairs within each document, not the sequence's: a document of 8
// positions outweighs four of 2, which go to the other pipeline; in corpus order all five
// lie in the first.
TEST(Documents, TheSchedulerWeighsADocumentByTheSquareOfItsLength) {
  const Documents documents = Documents::fromDocuments(
      {bytes("abcdefgh"), bytes("ij"), bytes("kl"), bytes("mn"), bytes("op"), bytes("qrstuvwx")}, 0);
  const DocumentShape shape{4, 8, {{0, 2, 1}, {2, 2, 1}}, 1.0};
  DocumentSteps balanced(documents, {shape}, {0, 16, DocumentLayout::Packed, DocumentSchedule::Balanced});
  DocumentSteps inOrder(documents, {shape}, {0, 16, DocumentLayout::Packed, DocumentSchedule::InOrder});
  balanced.prepare(1);
  inOrder.prepare(1);
  ASSERT_EQ(balanced.step(0).pieces.size(), 5u);
  const auto &pieces = balanced.step(0).pieces;
  const size_t longest = pipelineOf(shape, pieces[0].row);
  for (size_t i = 1; i < pieces.size(); ++i)
    EXPECT_NE(pipelineOf(shape, pieces[i].row), longest) << "piece " << i;
  EXPECT_EQ(balanced.microbatchesRun(balanced.step(0), 0).first, 1);
  for (const auto &piece : inOrder.step(0).pieces)
    EXPECT_EQ(pipelineOf(shape, piece.row), 0u);
  // Without a shape's pipelines, or in corpus order, the layout is first fit.
  DocumentSteps plain(documents, {{4, 8}}, {0, 16, DocumentLayout::Packed, DocumentSchedule::Balanced});
  plain.prepare(1);
  for (size_t i = 0; i < pieces.size(); ++i) {
    EXPECT_EQ(plain.step(0).pieces[i].row, inOrder.step(0).pieces[i].row);
    EXPECT_EQ(plain.step(0).pieces[i].offset, inOrder.step(0).pieces[i].offset);
  }
}

// Random corpora, pipelines and budgets: every balanced layout takes what corpus order takes,
// lays each piece inside the batch without overlap (padded: a row each), and runs no more
// micro-batches than corpus order.
TEST(Documents, BalancedLayoutsAreValidAndTakeWhatCorpusOrderTakes) {
  std::mt19937 random(7);
  int fewer = 0; // steps where the balanced layout runs fewer micro-batches
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<std::vector<int32_t>> docs;
    const int count = 1 + static_cast<int>(random() % 30);
    for (int d = 0; d < count; ++d)
      docs.push_back(bytes(std::string(1 + random() % 40, 'a')));
    const Documents documents = Documents::fromDocuments(docs, 0);
    DocumentShape shape;
    shape.seq = 1 + static_cast<int64_t>(random() % 24);
    for (int p = 0, pipelines = 1 + static_cast<int>(random() % 3); p < pipelines; ++p) {
      const int64_t microbatches = 1 + static_cast<int64_t>(random() % 4),
                    size = 1 + static_cast<int64_t>(random() % 3);
      shape.pipelines.push_back({shape.batch, microbatches, size});
      shape.batch += microbatches * size;
    }
    shape.pairCost = static_cast<double>(random() % 100) / 100;
    const auto layout = random() % 2 ? DocumentLayout::Packed : DocumentLayout::Padded;
    const int64_t tokens = static_cast<int64_t>(random() % 3) * shape.batch * shape.seq / 3;
    DocumentSteps balanced(documents, {shape}, {0, tokens, layout, DocumentSchedule::Balanced});
    DocumentSteps inOrder(documents, {shape}, {0, tokens, layout, DocumentSchedule::InOrder});
    balanced.prepare(5);
    inOrder.prepare(5);
    for (int64_t s = 0; s < 5; ++s) {
      const auto &step = balanced.step(s);
      const std::string where = "trial " + std::to_string(trial) + ", step " + std::to_string(s + 1);
      ASSERT_EQ(taken(step), taken(inOrder.step(s))) << where;
      std::vector<std::vector<uint8_t>> used(static_cast<size_t>(shape.batch),
                                             std::vector<uint8_t>(static_cast<size_t>(shape.seq), 0));
      std::vector<int> perRow(static_cast<size_t>(shape.batch), 0);
      for (const auto &piece : step.pieces) {
        ASSERT_TRUE(piece.row >= 0 && piece.row < shape.batch && piece.offset >= 0 &&
                    piece.offset + piece.length <= shape.seq)
            << where;
        for (int64_t p = piece.offset; p < piece.offset + piece.length; ++p)
          ASSERT_EQ(used[static_cast<size_t>(piece.row)][static_cast<size_t>(p)]++, 0) << where << ": overlap";
        ++perRow[static_cast<size_t>(piece.row)];
      }
      if (layout == DocumentLayout::Padded) {
        EXPECT_LE(*std::max_element(perRow.begin(), perRow.end()), 1) << where;
      }
      const int64_t run = balanced.microbatchesRun(step, 0).first;
      EXPECT_LE(run, inOrder.microbatchesRun(inOrder.step(s), 0).first) << where;
      fewer += run < inOrder.microbatchesRun(inOrder.step(s), 0).first;
    }
  }
  EXPECT_GT(fewer, 100);
}

// A plan's pipelines, where they partition the batch; none where they do not.
TEST(Documents, AShapeHasItsPlansPipelines) {
  std::map<int, ir::DeviceProgram> programs;
  programs[0].microbatches = 4;
  programs[0].microbatchSize = 1;
  programs[1] = programs[0]; // the same pipeline's second stage
  programs[2].microbatches = 2;
  programs[2].microbatchSize = 2;
  programs[2].batchStart = 4;
  const DocumentShape shape = documentShape(programs, 8, 16);
  ASSERT_EQ(shape.pipelines.size(), 2u);
  EXPECT_EQ(shape.pipelines[1].start, 4);
  EXPECT_EQ(shape.pipelines[1].microbatches, 2);
  EXPECT_EQ(shape.pipelines[1].size, 2);
  EXPECT_TRUE(documentShape(programs, 9, 16).pipelines.empty()); // row 8 in none
  programs[2].batchStart = 5;                                    // row 4 in none
  EXPECT_TRUE(documentShape(programs, 9, 16).pipelines.empty());
}

// Per micro-batch, the plan that updates runs last: the previous step's where the step uses
// it too (the state stays where it is), else the one of the longest S.
TEST(Documents, TheUpdatingPlanStaysWhereTheStepUsesIt) {
  const Documents documents = Documents::fromDocuments(
      {bytes("abcdef"), bytes("gh"), bytes("ij"), bytes("kl"), bytes("mn"), bytes("opqrst")}, 0);
  DocumentOptions options{0, 0, DocumentLayout::Packed, DocumentSchedule::Balanced, true};
  DocumentSteps steps(documents, {{2, 2}, {1, 8}}, options);
  steps.prepare(3);
  // Step 1: the 6 in the 1 x 8 batch, a 2 in the 2 x 2 one; the longest S updates.
  EXPECT_EQ(steps.step(0).shapes, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(steps.step(0).shape, 1u);
  // Step 2: two 2s, the 2 x 2 batch only (the third would open the 1 x 8 one).
  EXPECT_EQ(steps.step(1).shapes, (std::vector<size_t>{0}));
  EXPECT_EQ(steps.step(1).shape, 0u);
  // Step 3 uses both again: the 2 x 2 plan, which holds the state, updates, and runs last.
  EXPECT_EQ(steps.step(2).shapes, (std::vector<size_t>{1, 0}));
  EXPECT_EQ(steps.step(2).shape, 0u);
  const auto batches = steps.batchesFor(2);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches.back().first, 0u);
}
