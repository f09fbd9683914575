#include "nascent/data/text.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "nascent/core/error.h"
#include "nascent/io/file.h"

namespace nascent::data {

namespace {

std::string read_file(const std::string& path) {
  auto file = io::MappedFile::open(path);  // IoError naming the file.
  const auto bytes = file->bytes();
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

bool blank(const std::string& line) {
  return line.find_first_not_of(" \t\r") == std::string::npos;
}

// Appends the documents of one file, split at lines for which `is_break`.
template <class F>
void split_lines(const std::string& text, F is_break,
                 std::vector<std::string>& out) {
  std::string doc;
  auto flush = [&] {
    while (!doc.empty() && (doc.back() == '\n' || doc.back() == '\r')) {
      doc.pop_back();
    }
    if (!doc.empty() && !blank(doc)) out.push_back(doc);
    doc.clear();
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (is_break(line)) {
      flush();
    } else {
      doc += line;
      doc += '\n';
    }
  }
  flush();
}

}  // namespace

std::vector<std::string> read_documents(const std::vector<std::string>& paths) {
  std::vector<std::string> docs;
  for (const std::string& path : paths) {
    const std::string text = read_file(path);
    const bool fortune = text.starts_with("%\n") ||
                         text.find("\n%\n") != std::string::npos ||
                         text.find("\n%\r\n") != std::string::npos;
    if (fortune) {
      split_lines(
          text, [](const std::string& l) { return l == "%" || l == "%\r"; },
          docs);
    } else {
      split_lines(text, blank, docs);
    }
  }
  if (docs.empty()) {
    throw ValueError(
        fmt::format("text corpus: the {} file(s) hold no text", paths.size()));
  }
  return docs;
}

TextSplit split_documents(std::vector<std::string> documents,
                          int64_t heldout_every) {
  if (heldout_every < 2 || int64_t(documents.size()) < heldout_every) {
    throw ValueError(fmt::format(
        "text corpus: {} documents cannot be split holding out one in {} "
        "(need at least that many documents and a period of 2 or more)",
        documents.size(), heldout_every));
  }
  TextSplit s;
  for (size_t i = 0; i < documents.size(); ++i) {
    auto& part = int64_t(i % size_t(heldout_every)) == heldout_every - 1
                     ? s.heldout
                     : s.train;
    part.push_back(std::move(documents[i]));
  }
  return s;
}

std::vector<std::string> default_corpus_files(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const fs::path& p = entry.path();
    const std::string name = p.filename().string();
    // The .dat indexes and .u8 links come with each file; art and
    // ascii-art are pictures, not prose.
    if (p.has_extension() || name == "art" || name == "ascii-art" ||
        !entry.is_regular_file()) {
      continue;
    }
    files.push_back(p.string());
  }
  if (files.empty()) {
    throw IoError(fmt::format(
        "{}: no fortune files; install Debian's `fortunes` and "
        "`fortunes-min` packages (scripts/setup.sh does), or pass --corpus",
        dir));
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace nascent::data
