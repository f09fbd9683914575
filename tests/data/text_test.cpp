// Text corpora: fortune files split at "%" lines, other files at blank
// lines, the deterministic held-out split, and the errors.
#include "nascent/data/text.h"

#include <gtest/gtest.h>

#include "nascent/io/file.h"
#include "tests/io/test_files.h"

namespace nascent::data {
namespace {

using testing::expect_error;

void write_text(const std::string& path, const std::string& text) {
  testing::write_bytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

TEST(TextCorpus, FortuneFilesSplitAtPercentLinesOthersAtBlankLines) {
  testing::TempDir dir;
  write_text(dir.file("fortunes"),
             "A penny saved.\n%\nTwo lines\n\nwith a gap inside.\n%\n%\n"
             "Last one, no newline");
  write_text(dir.file("prose.txt"),
             "\n\nFirst paragraph\nstill first.\n\n  \nSecond.\r\n\n");
  const std::vector<std::string> docs =
      read_documents({dir.file("fortunes"), dir.file("prose.txt")});
  const std::vector<std::string> want = {
      "A penny saved.", "Two lines\n\nwith a gap inside.",
      "Last one, no newline", "First paragraph\nstill first.", "Second."};
  EXPECT_EQ(docs, want);
}

TEST(TextCorpus, EveryNthDocumentIsHeldOut) {
  std::vector<std::string> docs;
  for (int i = 0; i < 10; ++i) docs.push_back(std::to_string(i));
  const TextSplit s = split_documents(docs, 4);
  EXPECT_EQ(s.heldout, (std::vector<std::string>{"3", "7"}));
  EXPECT_EQ(s.train.size(), 8u);
  EXPECT_EQ(s.train.front(), "0");
  EXPECT_EQ(s.train.back(), "9");
  expect_error<ValueError>([&] { split_documents(docs, 1); }, {"10 documents"});
  expect_error<ValueError>([&] { split_documents(docs, 11); }, {"one in 11"});
}

TEST(TextCorpus, BadFilesAreClearErrors) {
  testing::TempDir dir, texts;
  expect_error<IoError>([&] { read_documents({dir.file("missing")}); },
                        {dir.file("missing")});
  write_text(texts.file("empty"), "\n%\n\n%\n");
  expect_error<ValueError>([&] { read_documents({texts.file("empty")}); },
                           {"hold no text"});
  expect_error<IoError>([&] { default_corpus_files(dir.path()); },
                        {dir.path(), "fortunes"});
  write_text(dir.file("art"), "x\n%\ny\n");
  write_text(dir.file("law"), "x\n%\ny\n");
  write_text(dir.file("law.dat"), "index");
  EXPECT_EQ(default_corpus_files(dir.path()),
            (std::vector<std::string>{dir.file("law")}));
}

}  // namespace
}  // namespace nascent::data
