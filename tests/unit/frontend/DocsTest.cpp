// Every example in docs/ is run: ```hspmd blocks must check cleanly, ```hspmd-error blocks
// must fail with the message given in their first line (`// error: ...`), and each line of
// an ```annotation block must parse and print back unchanged.
#include "TestSupport.h"
#include "ir/AnnotationText.h"
#include "planner/driver/Driver.h"
#include "planner/driver/PlanModel.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace {

struct Block {
  std::string file, kind, text;
  int line = 0;
};

std::vector<Block> docBlocks() {
  std::vector<Block> blocks;
  for (const auto &entry : fs::directory_iterator("docs")) {
    if (entry.path().extension() != ".md")
      continue;
    std::ifstream in(entry.path());
    std::string line;
    int number = 0;
    Block *open = nullptr;
    while (std::getline(in, line)) {
      ++number;
      if (!open && line.rfind("```", 0) == 0 && line.size() > 3) {
        blocks.push_back(Block{entry.path().string(), line.substr(3), "", number + 1});
        open = &blocks.back();
      } else if (open && line.rfind("```", 0) == 0) {
        open = nullptr;
      } else if (open) {
        open->text += line + "\n";
      }
    }
  }
  return blocks;
}

TEST(Docs, EveryExampleRuns) {
  int checked = 0;
  std::set<std::string> lintCodes; // the codes docs/lint.md shows an example of
  for (const Block &block : docBlocks()) {
    const std::string where = block.file + ":" + std::to_string(block.line);
    if (block.kind == "hspmd" || block.kind == "hspmd-error") {
      hspmd::testing::Compiled c;
      // Named inside docs/ so that relative imports resolve from there.
      const std::string name = "docs/example-" + std::to_string(block.line) + ".hspmd";
      const auto *ast = c.compilation.loadText(name, block.text);
      if (ast)
        c.compilation.checkFile(*ast);
      auto messages = c.messages(name);
      if (block.kind == "hspmd") {
        EXPECT_EQ(c.diags.errorCount(), 0) << where << "\n" << ::testing::PrintToString(messages);
      } else {
        std::string first = block.text.substr(0, block.text.find('\n'));
        ASSERT_EQ(first.rfind("// error: ", 0), 0u) << where << ": an hspmd-error block starts with // error: ...";
        ASSERT_FALSE(messages.empty()) << where << ": expected an error";
        // "// error: 5:14: message" states the diagnostic "5:14: error: message".
        std::string stated = first.substr(10);
        size_t afterColumn = stated.find(": ", stated.find(':') + 1);
        ASSERT_NE(afterColumn, std::string::npos) << where;
        EXPECT_EQ(messages[0], stated.substr(0, afterColumn) + ": error: " + stated.substr(afterColumn + 2)) << where;
      }
      ++checked;
    } else if (block.kind == "hspmd-lint") {
      // "// lint: HS107", then "// message: ...": `hspmc lint` on the block reports that code
      // with that message (up to a trailing "...").
      std::string first = block.text.substr(0, block.text.find('\n'));
      ASSERT_EQ(first.rfind("// lint: ", 0), 0u) << where;
      const std::string code = first.substr(9);
      const size_t secondAt = block.text.find('\n') + 1;
      const std::string second = block.text.substr(secondAt, block.text.find('\n', secondAt) - secondAt);
      ASSERT_EQ(second.rfind("// message: ", 0), 0u) << where << ": the second line states the message";
      std::string message = second.substr(12);
      const bool prefix = message.size() > 3 && message.compare(message.size() - 3, 3, "...") == 0;
      if (prefix)
        message.resize(message.size() - 3);
      lintCodes.insert(code);
      const std::string name = "docs/lint-example-" + std::to_string(block.line) + ".hspmd";
      std::ofstream(name) << block.text;
      hspmd::testing::Compiled c;
      hspmd::driver::lintFile(c.compilation, name, "", "");
      std::filesystem::remove(name);
      bool found = false;
      for (const auto &d : c.sink.diagnostics)
        found = found || (d.code == code && (prefix ? d.message.rfind(message, 0) == 0 : d.message == message));
      EXPECT_TRUE(found) << where << ": no " << code << " '" << message << "' in "
                         << ::testing::PrintToString(c.messages(name));
      ++checked;
    } else if (block.kind == "explain") {
      // "$ hspmc explain-reshard --shape S --from 'A' --to 'B'", then "// kind: K", "// total: N".
      std::istringstream lines(block.text);
      std::string command, kindLine, totalLine;
      std::getline(lines, command);
      std::getline(lines, kindLine);
      std::getline(lines, totalLine);
      auto quoted = [&](const std::string &flag) {
        auto at = command.find(flag + " '");
        auto end = command.find('\'', at + flag.size() + 2);
        return command.substr(at + flag.size() + 2, end - at - flag.size() - 2);
      };
      auto shapeAt = command.find("--shape ") + 8;
      std::string shape = command.substr(shapeAt, command.find(' ', shapeAt) - shapeAt);
      std::ostringstream out, err;
      ASSERT_TRUE(hspmd::driver::explainReshard(shape, quoted("--from"), quoted("--to"), "", "f32", true, out, err))
          << where << err.str();
      auto doc = nlohmann::json::parse(out.str());
      std::string kinds;
      for (const auto &step : doc["steps"])
        kinds += (kinds.empty() ? "" : " + ") + step["kind"].get<std::string>();
      EXPECT_EQ("// kind: " + kinds, kindLine) << where;
      EXPECT_EQ("// total: " + std::to_string(doc["total_bytes"].get<int64_t>()), totalLine) << where;
      if (doc.contains("minimal")) {
        EXPECT_TRUE(doc["minimal"].get<bool>()) << where;
      }
      ++checked;
    } else if (block.kind == "plan") {
      // "$ hspmc plan MODEL --cluster C --seq S --tokens N -o PLAN": the planner writes a plan
      // (here into build/) that lints clean.
      std::istringstream words(block.text);
      std::vector<std::string> args;
      for (std::string w; words >> w;)
        args.push_back(w);
      ASSERT_GE(args.size(), 4u) << where;
      hspmd::driver::PlanFiles files;
      files.model = args[3];
      for (size_t i = 4; i + 1 < args.size(); i += 2) {
        if (args[i] == "--cluster")
          files.cluster = args[i + 1];
        else if (args[i] == "--seq")
          files.sequence = std::stoll(args[i + 1]);
        else if (args[i] == "--tokens")
          files.tokens = std::stoll(args[i + 1]);
      }
      files.out = "build/docs_" + fs::path(block.file).stem().string() + "_plan.hspmd";
      hspmd::driver::PlanOutcome outcome;
      std::ostringstream progress, errors;
      EXPECT_TRUE(hspmd::driver::planModel(files, outcome, progress, errors)) << where << errors.str();
      ++checked;
    } else if (block.kind == "annotation") {
      std::istringstream lines(block.text);
      for (std::string line; std::getline(lines, line);) {
        if (line.empty() || line.rfind("//", 0) == 0)
          continue;
        hspmd::ir::TextError error;
        auto annotation = hspmd::ir::parseAnnotation(line, &error);
        ASSERT_TRUE(annotation) << where << ": " << line << ": " << error.str();
        EXPECT_EQ(hspmd::ir::printAnnotation(*annotation), line) << where << ": not in canonical form";
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 20);
  // Every code the compiler reports has its example, but HS199 (an internal error) and HS301
  // (the cross-device verifier: no plan the other checks pass reaches it, docs/lint.md).
  for (const char *folder : {"ir", "frontend", "passes", "planner"})
    for (const auto &entry : fs::recursive_directory_iterator(folder)) {
      if (!entry.is_regular_file())
        continue;
      std::ifstream in(entry.path());
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      for (size_t at = text.find("\"HS"); at != std::string::npos; at = text.find("\"HS", at + 1)) {
        const std::string code = text.substr(at + 1, 5);
        if (code.size() == 5 && std::isdigit(static_cast<unsigned char>(code[4])) && code != "HS199" &&
            code != "HS301") {
          EXPECT_TRUE(lintCodes.count(code))
              << code << " (" << entry.path().string() << ") has no example in docs/lint.md";
        }
      }
    }
}

} // namespace
