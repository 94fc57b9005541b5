// Documents: the three formats, pieces, the steps' layouts and batches, the errors that name
// the file and line, and attention masked to each document (runtime/Documents.h).
#include "runtime/Documents.h"
#include "runtime/Kernels.h"
#include "runtime/Run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

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
  std::vector<int32_t> out(text.begin(), text.end());
  out.push_back(eod);
  return out;
}

} // namespace

TEST(Documents, PlainTextDocumentsAreSeparatedByBlankLines) {
  const std::string path = write("plain.txt", "one\ntwo\n\n  \t\nthree\n\n\n");
  const Documents documents = Documents::load(path, 256, 0);
  ASSERT_EQ(documents.documents().size(), 2u);
  EXPECT_EQ(documents.documents()[0], bytes("one\ntwo"));
  EXPECT_EQ(documents.documents()[1], bytes("three"));
  std::filesystem::remove(path);
}

TEST(Documents, JsonlAndTokenFiles) {
  const std::string jsonl = write("d.jsonl", "{\"text\": \"ab\"}\n\n{\"text\": \"\"}\n{\"text\": \"c\"}\n");
  const Documents a = Documents::load(jsonl, 256, 0);
  ASSERT_EQ(a.documents().size(), 2u); // the empty text is no document
  EXPECT_EQ(a.documents()[1], bytes("c"));
  // uint16 tokens 5 7 9 | 9 | 4 (the last without its end): documents end at each 9.
  const std::string tokens = write("t.bin", std::string("\x05\0\x07\0\x09\0\x09\0\x04\0", 10));
  const Documents b = Documents::load(tokens, 16, 9);
  EXPECT_EQ(b.documents(), (std::vector<std::vector<int32_t>>{{5, 7, 9}, {4, 9}}));
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
