#include "nascent/io/safetensors.h"

#include <algorithm>
#include <set>
#include <span>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "nascent/core/ops.h"
#include "nascent/io/file.h"

namespace nascent::io {

namespace {

using json = nlohmann::json;

// Hugging Face's reader refuses headers above 100 MB; so do we, so that a
// corrupt length cannot make us allocate gigabytes.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// A valid header nests three deep (object, entry, shape); the limit keeps
// hostile nesting away from the JSON parser.
constexpr int kMaxDepth = 8;
constexpr size_t kMaxRank = 64;

struct DTypeName {
  DType dtype;
  const char* name;
};
constexpr DTypeName kDTypeNames[] = {
    {DType::f32, "F32"},   {DType::f64, "F64"},     {DType::f16, "F16"},
    {DType::bf16, "BF16"}, {DType::i32, "I32"},     {DType::i64, "I64"},
    {DType::u8, "U8"},     {DType::boolean, "BOOL"}};

uint64_t read_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Deepest bracket nesting of a JSON text, strings skipped.
int max_depth(const std::string& text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw FormatError(fmt::format("{}: {}", path, what));
}

uint64_t unsigned_field(const json& v, const std::string& path,
                        const std::string& what) {
  if (!v.is_number_unsigned()) {
    bad(path, fmt::format("{} must be a non-negative integer, got {}", what,
                          v.dump()));
  }
  return v.get<uint64_t>();
}

SafetensorsEntry parse_entry(const std::string& name, const json& value,
                             const std::string& path) {
  std::string where = fmt::format("tensor \"{}\"", name);
  if (!value.is_object()) bad(path, where + " is not a JSON object");
  for (const auto& [key, v] : value.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      bad(path, fmt::format("{} has an unknown field \"{}\"", where, key));
    }
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!value.contains(key)) {
      bad(path, fmt::format("{} lacks \"{}\"", where, key));
    }
  }
  SafetensorsEntry e;
  e.name = name;
  const json& dt = value["dtype"];
  if (!dt.is_string()) bad(path, where + ": dtype is not a string");
  e.dtype = safetensors_dtype(dt.get<std::string>(), path + ": " + where);

  const json& shape = value["shape"];
  if (!shape.is_array()) bad(path, where + ": shape is not an array");
  if (shape.size() > kMaxRank) {
    bad(path, fmt::format("{}: rank {} is over the limit of {}", where,
                          shape.size(), kMaxRank));
  }
  std::vector<uint64_t> dims;
  for (const json& d : shape) {
    dims.push_back(unsigned_field(d, path, where + ": a shape entry"));
  }
  // Checked before converting to int64, zero dimensions or not: the
  // strides of [0, 2^32, 2^32] overflow although it holds no element.
  if (!shape_fits_int64(dims)) {
    bad(path, fmt::format("{}: shape {} is too large (its element count or "
                          "strides overflow int64)",
                          where, shape.dump()));
  }
  e.shape.assign(dims.begin(), dims.end());
  const uint64_t numel = uint64_t(checked_numel(e.shape, "safetensors"));
  const uint64_t itemsize = size_of(e.dtype);
  if (numel > uint64_t(INT64_MAX) / itemsize) {
    bad(path, fmt::format("{}: shape {} is too large", where, shape.dump()));
  }

  const json& off = value["data_offsets"];
  if (!off.is_array() || off.size() != 2) {
    bad(path, where + ": data_offsets must be an array of two integers");
  }
  e.begin = unsigned_field(off[0], path, where + ": data_offsets[0]");
  e.end = unsigned_field(off[1], path, where + ": data_offsets[1]");
  if (e.end < e.begin) {
    bad(path, fmt::format("{}: data_offsets [{}, {}] end before they begin",
                          where, e.begin, e.end));
  }
  if (e.end - e.begin != numel * itemsize) {
    bad(path, fmt::format("{}: {}{} needs {} bytes but data_offsets [{}, {}] "
                          "span {}",
                          where, nascent::name(e.dtype), to_string(e.shape),
                          numel * itemsize, e.begin, e.end, e.end - e.begin));
  }
  return e;
}

}  // namespace

const char* safetensors_dtype_name(DType dtype) {
  for (const DTypeName& d : kDTypeNames) {
    if (d.dtype == dtype) return d.name;
  }
  throw DTypeError(
      fmt::format("safetensors: no name for dtype {}", name(dtype)));
}

DType safetensors_dtype(const std::string& dtype_name,
                        const std::string& context) {
  for (const DTypeName& d : kDTypeNames) {
    if (dtype_name == d.name) return d.dtype;
  }
  throw FormatError(fmt::format(
      "{}: dtype \"{}\" is not supported (F32, F64, F16, BF16, I32, I64, U8, "
      "BOOL)",
      context, dtype_name));
}

SafetensorsReader::SafetensorsReader(const std::string& path)
    : path_(path), file_(std::make_unique<InputFile>(path)) {
  const uint64_t size = file_->size();
  if (size < 8) {
    bad(path, fmt::format("truncated: {} bytes, but a safetensors file "
                          "starts with an 8-byte header length",
                          size));
  }
  unsigned char len_bytes[8];
  file_->read_at(0, len_bytes, 8, "the header length");
  const uint64_t n = read_le64(len_bytes);
  if (n > kMaxHeaderBytes) {
    bad(path, fmt::format("header length {} is over the limit of {} bytes "
                          "(corrupt, or not a safetensors file)",
                          n, kMaxHeaderBytes));
  }
  if (n > size - 8) {
    bad(path, fmt::format("truncated: the header claims {} bytes but only "
                          "{} follow",
                          n, size - 8));
  }
  std::string text(size_t(n), '\0');
  file_->read_at(8, text.data(), text.size(), "the header");
  if (text.empty() || text[0] != '{') {
    bad(path, "the header is not a JSON object (no '{' at its start)");
  }
  if (max_depth(text) > kMaxDepth) {
    bad(path, fmt::format("the header nests deeper than {} levels", kMaxDepth));
  }

  // Duplicate names would silently replace each other in a JSON object.
  std::set<std::string> seen;
  std::string duplicate;
  json::parser_callback_t on_event = [&](int depth, json::parse_event_t event,
                                         json& parsed) {
    if (event == json::parse_event_t::key && depth == 1 &&
        !seen.insert(parsed.get<std::string>()).second && duplicate.empty()) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text, on_event);
  } catch (const json::exception& e) {
    bad(path, fmt::format("the header is not valid JSON: {}", e.what()));
  }
  if (!duplicate.empty()) {
    bad(path,
        fmt::format("tensor \"{}\" appears twice in the header", duplicate));
  }
  if (!header.is_object()) bad(path, "the header is not a JSON object");

  data_start_ = 8 + n;
  const uint64_t data_size = size - data_start_;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) bad(path, "__metadata__ is not an object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) {
          bad(path, fmt::format("__metadata__ \"{}\" is not a string", mk));
        }
        metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    SafetensorsEntry e = parse_entry(key, value, path);
    if (e.end > data_size) {
      bad(path, fmt::format("truncated: tensor \"{}\" needs data bytes "
                            "[{}, {}) but the file holds {}",
                            key, e.begin, e.end, data_size));
    }
    entries_.push_back(std::move(e));
  }
  std::sort(entries_.begin(), entries_.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  // The data must be covered exactly once: no holes, no overlaps.
  uint64_t expected = 0;
  for (const SafetensorsEntry& e : entries_) {
    if (e.begin != expected) {
      bad(path, fmt::format("tensor \"{}\" starts at data byte {} where {} "
                            "was expected ({} between tensors)",
                            e.name, e.begin, expected,
                            e.begin < expected ? "overlap" : "a hole"));
    }
    expected = e.end;
  }
  if (expected != data_size) {
    bad(path, fmt::format("{} bytes follow the last tensor's data",
                          data_size - expected));
  }
  for (size_t i = 0; i < entries_.size(); ++i) by_name_[entries_[i].name] = i;
}

SafetensorsReader::~SafetensorsReader() = default;
SafetensorsReader::SafetensorsReader(SafetensorsReader&&) noexcept = default;
SafetensorsReader& SafetensorsReader::operator=(SafetensorsReader&&) noexcept =
    default;

const SafetensorsEntry* SafetensorsReader::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

Tensor SafetensorsReader::load(const std::string& name,
                               Backend& backend) const {
  const SafetensorsEntry* e = find(name);
  if (!e) {
    throw ValueError(fmt::format("{}: no tensor named \"{}\"", path_, name));
  }
  return load(*e, backend);
}

Tensor SafetensorsReader::load(const SafetensorsEntry& e,
                               Backend& backend) const {
  std::vector<std::byte> bytes(static_cast<size_t>(e.end - e.begin));
  file_->read_at(data_start_ + e.begin, bytes.data(), bytes.size(),
                 ("tensor \"" + e.name + "\"").c_str());
  if (e.dtype == DType::boolean) {
    for (std::byte b : bytes) {
      if (b != std::byte{0} && b != std::byte{1}) {
        bad(path_, fmt::format("tensor \"{}\": BOOL byte {} is neither 0 "
                               "nor 1",
                               e.name, int(b)));
      }
    }
  }
  return from_data(bytes.data(), e.shape, e.dtype, backend);
}

std::map<std::string, Tensor> SafetensorsReader::load_all(
    Backend& backend) const {
  std::map<std::string, Tensor> out;
  for (const SafetensorsEntry& e : entries_) out[e.name] = load(e, backend);
  return out;
}

std::map<std::string, Tensor> load_safetensors(const std::string& path,
                                               Backend& backend,
                                               Metadata* metadata) {
  SafetensorsReader reader(path);
  if (metadata) *metadata = reader.metadata();
  return reader.load_all(backend);
}

void save_safetensors(const std::string& path,
                      const std::map<std::string, Tensor>& tensors,
                      const Metadata& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [key, t] : tensors) {
    if (key == "__metadata__") {
      throw ValueError(fmt::format(
          "save_safetensors: {}: \"__metadata__\" cannot name a tensor", path));
    }
    if (!t.defined()) {
      throw ValueError(fmt::format(
          "save_safetensors: {}: tensor \"{}\" is undefined", path, key));
    }
    uint64_t nbytes = uint64_t(t.numel()) * t.itemsize();
    header[key] = {{"dtype", safetensors_dtype_name(t.dtype())},
                   {"shape", t.shape()},
                   {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {
    throw ValueError(fmt::format(
        "save_safetensors: {}: a name or metadata entry is not UTF-8: {}", path,
        e.what()));
  }
  // Pad with spaces so the data starts 8-byte aligned (as Hugging Face's
  // writer does; readers may then map tensors in place).
  text.append((8 - text.size() % 8) % 8, ' ');
  unsigned char len_bytes[8];
  for (int i = 0; i < 8; ++i)
    len_bytes[i] = uint8_t(uint64_t(text.size()) >> (8 * i));

  AtomicFileWriter file(path);
  file.write(std::as_bytes(std::span(len_bytes)));
  file.write(std::as_bytes(std::span(text.data(), text.size())));
  for (const auto& [key, t] : tensors) {
    if (t.numel() == 0) continue;
    Tensor c = t.contiguous();
    HostBytes host = c.backend().materialize(c);
    file.write(std::span(host.data + c.offset() * int64_t(c.itemsize()),
                         size_t(c.numel()) * c.itemsize()));
  }
  file.commit();
}

}  // namespace nascent::io
