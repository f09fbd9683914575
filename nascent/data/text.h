// Text corpora for language-model training: files read as documents and a
// deterministic split into training and held-out text.
//
// A file whose lines include one holding only "%" is a fortune file (the
// format of Debian's `fortunes` packages, /usr/share/games/fortunes): its
// documents are the records between those lines. Any other file is split at
// blank lines (paragraphs). Documents keep their inner line breaks; empty
// ones are dropped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nascent::data {

// IoError naming the file if one cannot be read; ValueError if the files
// hold no text at all.
std::vector<std::string> read_documents(const std::vector<std::string>& paths);

struct TextSplit {
  std::vector<std::string> train;
  std::vector<std::string> heldout;
};

// Every `heldout_every`-th document (the last of each group, counting from
// the first) is held out; the rest train. ValueError if either part would be
// empty or heldout_every < 2.
TextSplit split_documents(std::vector<std::string> documents,
                          int64_t heldout_every = 20);

// The default corpus: the English prose of Debian's `fortunes` and
// `fortunes-min` packages (every fortune file in `dir` but the ASCII-art
// ones), sorted by name; IoError saying which package to install if there
// are none.
std::vector<std::string> default_corpus_files(
    const std::string& dir = "/usr/share/games/fortunes");

}  // namespace nascent::data
