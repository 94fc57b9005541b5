// Training data: the three formats, packing into sequences, and the errors that name the file.
#include "runtime/Data.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>

using namespace hspmd::runtime;

namespace {

std::string write(const std::string &name, const std::string &bytes) {
  const auto path = std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "_" + name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path.string();
}

std::string expectError(const std::string &path, int64_t vocab) {
  try {
    Dataset::load(path, vocab);
  } catch (const DataError &e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST(Data, TextIsBytesAndBatchesArePackedSequences) {
  const std::string path = write("text.txt", "abcdefghij");
  Dataset data = Dataset::load(path, 256);
  EXPECT_EQ(data.size(), 10);
  // 10 - 3 = 7 starts leave room for a target: step 1, batch 2, seq 3 starts at
  // (1*2+0)*3 % 7 = 6 and (1*2+1)*3 % 7 = 2.
  Batch batch = data.batchFor(1, 2, 3);
  EXPECT_EQ(batch.inputs["tokens"], (std::vector<int32_t>{'g', 'h', 'i', 'c', 'd', 'e'}));
  EXPECT_EQ(batch.inputs["targets"], (std::vector<int32_t>{'h', 'i', 'j', 'd', 'e', 'f'}));
  std::filesystem::remove(path);
}

TEST(Data, TokenFilesAreLittleEndian) {
  const std::string u16 = write("tokens.bin", std::string("\x01\x00\x02\x01", 4));
  Dataset a = Dataset::load(u16, 1000);
  EXPECT_EQ(a.batchFor(0, 1, 1).inputs["tokens"], (std::vector<int32_t>{1}));
  EXPECT_EQ(a.batchFor(0, 1, 1).inputs["targets"], (std::vector<int32_t>{258}));
  const std::string u32 = write("tokens.u32.bin", std::string("\x05\x00\x00\x00\x00\x00\x01\x00", 8));
  Dataset b = Dataset::load(u32, 100000);
  EXPECT_EQ(b.batchFor(0, 1, 1).inputs["targets"], (std::vector<int32_t>{65536}));
  EXPECT_EQ(expectError(u16, 100), u16 + ": token 258 at position 1 is outside the model's vocabulary of 100");
  // A 32-bit token past INT32_MAX is named as it is in the file (it was -294967296).
  const std::string huge = write("huge.u32.bin", std::string("\x01\x00\x00\x00\x00\x28\x6b\xee", 8));
  EXPECT_EQ(expectError(huge, 100000),
            huge + ": token 4000000000 at position 1 is outside the model's vocabulary of 100000");
  std::filesystem::remove(huge);
  const std::string text = write("bytes.txt", "a\xff");
  EXPECT_EQ(expectError(text, 200), text + ": token 255 at position 1 is outside the model's vocabulary of 200");
  std::filesystem::remove(text);
  const std::string odd = write("odd.bin", "abc");
  EXPECT_EQ(expectError(odd, 1000), odd + ": a token file of 16-bit tokens has 3 bytes, not a multiple of 2");
  for (const auto &p : {u16, u32, odd})
    std::filesystem::remove(p);
}

TEST(Data, JsonlTextFieldsAreJoinedByNewlines) {
  const std::string path = write("docs.jsonl", "{\"text\": \"ab\"}\n\n{\"text\": \"c\"}\n");
  Dataset data = Dataset::load(path, 256);
  EXPECT_EQ(data.size(), 5); // a b \n c \n
  const std::string bad = write("bad.jsonl", "{\"text\": \"ab\"}\n{\"body\": 1}\n");
  EXPECT_EQ(expectError(bad, 256), bad + ":2: expected an object with a string field \"text\"");
  const std::string broken = write("broken.jsonl", "{\"text\": \n");
  EXPECT_EQ(expectError(broken, 256), broken + ":1:10: not JSON: syntax error while parsing value - unexpected end "
                                               "of input; expected '[', '{', or a literal");
  // Bytes that are not printable are not echoed to the terminal as they are.
  const std::string binary = write("binary.jsonl", "{\"text\": \"ok\"}\n{\"text\": \"\xff\xfe\"}\n");
  EXPECT_EQ(expectError(binary, 256), binary + ":2:11: not JSON: syntax error while parsing value - invalid string: "
                                               "ill-formed UTF-8 byte; last read: '\"\\xff'");
  for (const auto &p : {path, bad, broken, binary})
    std::filesystem::remove(p);
}

// Text and token files are read where they lie, a batch at a time: a corpus of 4 GiB (a sparse
// file here) opens without reading it (a GiB of text took 26 s and 9 GB of memory, as 4-byte
// tokens, before the first step).
TEST(Data, ACorpusIsReadWhereItLies) {
  const std::string path = write("corpus.txt", "");
  std::filesystem::resize_file(path, int64_t{4} << 30);
  {
    std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
    out.seekp(int64_t{3} << 30);
    out << "abc";
  }
  Dataset data = Dataset::load(path, 256);
  EXPECT_EQ(data.size(), int64_t{4} << 30);
  // Step 2^30, one sequence of 3: it starts at token 3 x 2^30.
  Batch batch = data.batchFor(int64_t{1} << 30, 1, 3);
  EXPECT_EQ(batch.inputs["tokens"], (std::vector<int32_t>{'a', 'b', 'c'}));
  EXPECT_EQ(batch.inputs["targets"], (std::vector<int32_t>{'b', 'c', 0}));
  std::filesystem::remove(path);
  // A file that gives no size (/proc) is read whole (it was 0 tokens).
  std::ifstream status("/proc/self/status", std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(status)), std::istreambuf_iterator<char>());
  ASSERT_GT(text.size(), 10u);
  const Dataset proc = Dataset::load("/proc/self/status", 256);
  EXPECT_GT(proc.size(), 10);
  EXPECT_EQ(proc.batchFor(0, 1, 4).inputs.at("tokens"), (std::vector<int32_t>{text[0], text[1], text[2], text[3]}));
}

// A file that changes under the run is an error where it is read, not other data: written to
// (its modification time moves), or cut short; a token outside the vocabulary is caught even
// where the time did not move (an edit within the file system's clock tick).
TEST(Data, AFileThatChangesWhileTrainingIsAnError) {
  const std::string path = write("changing.txt", "abcdefghij");
  Dataset data = Dataset::load(path, 120);
  EXPECT_EQ(data.batchFor(0, 1, 3).inputs["tokens"], (std::vector<int32_t>{'a', 'b', 'c'}));
  const auto opened = std::filesystem::last_write_time(path);
  auto overwrite = [&](const std::string &bytes, std::filesystem::file_time_type when) {
    {
      std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
      out << bytes;
    }
    std::filesystem::last_write_time(path, when);
  };
  auto errorOf = [&](int64_t step, int64_t batch) {
    try {
      data.batchFor(step, batch, 3);
    } catch (const DataError &e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string changed = path + ": the data file changed while training: it was written to after it was opened, "
                                     "when it held 10 tokens (train on a copy that nothing writes to)";
  overwrite("x", opened + std::chrono::seconds(1)); // a token of the vocabulary, a second later
  EXPECT_EQ(errorOf(0, 1), changed);
  overwrite("z", opened); // 122: outside the vocabulary of 120, at the time it was opened
  EXPECT_EQ(errorOf(0, 1), path + ": token 122 at position 0 is outside the model's vocabulary of 120");
  std::filesystem::resize_file(path, 4);
  std::filesystem::last_write_time(path, opened);
  EXPECT_EQ(errorOf(1, 2), changed);
  std::filesystem::remove(path);
}

TEST(Data, MissingAndTooShortFilesAreErrors) {
  EXPECT_EQ(expectError("no/such/file.txt", 256), "no/such/file.txt: cannot open the data file");
  const std::string tiny = write("tiny.txt", "ab");
  Dataset data = Dataset::load(tiny, 256);
  try {
    data.batchFor(0, 1, 4);
    ADD_FAILURE() << "2 tokens cannot make a sequence of 4";
  } catch (const DataError &e) {
    EXPECT_EQ(std::string(e.what()), tiny + ": the data has 2 tokens; a sequence needs 5");
  }
  const std::string one = write("one.txt", "a");
  try {
    Dataset::load(one, 256).batchFor(0, 1, 4);
    ADD_FAILURE() << "1 token cannot make a sequence of 4";
  } catch (const DataError &e) {
    EXPECT_EQ(std::string(e.what()), one + ": the data has 1 token; a sequence needs 5");
  }
  std::filesystem::remove(tiny);
  std::filesystem::remove(one);
}
