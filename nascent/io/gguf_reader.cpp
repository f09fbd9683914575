#include "nascent/io/gguf_reader.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace nascent::gguf {
namespace {

// Bytes the smallest encoding of each value type takes: a bound on how many
// elements the rest of the file can hold, checked before any allocation.
constexpr uint64_t kMinValueSize[kNumValueTypes] = {
    1,
    1,
    2,
    2,
    4,
    4,
    4,
    1,
    8 /* string: length */,
    12 /* array: type + count */,
    8,
    8,
    8};
// Key length, value type and a one-byte value.
constexpr uint64_t kMinKvSize = 8 + 4 + 1;
// Name length, dimension count, type and offset.
constexpr uint64_t kMinTensorInfoSize = 8 + 4 + 4 + 8;

// A read position in the file that raises FormatError, naming the file and
// the offset, instead of reading past the end.
class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, const std::string& name)
      : bytes_(bytes), name_(name) {}

  size_t pos() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  [[noreturn]] void fail(size_t at, const std::string& what) const {
    throw FormatError(fmt::format("{}: offset {}: {}", name_, at, what));
  }

  void need(uint64_t n, std::string_view what) const {
    if (n > remaining()) {
      fail(pos_, fmt::format("{} ({} bytes) runs past the end of the file "
                             "({} bytes)",
                             what, n, bytes_.size()));
    }
  }

  template <class T>
  T scalar(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  uint32_t u32(std::string_view what) { return scalar<uint32_t>(what); }
  uint64_t u64(std::string_view what) { return scalar<uint64_t>(what); }

  std::string string(std::string_view what) {
    size_t at = pos_;
    uint64_t n = u64(what);
    if (n > remaining()) {
      fail(at, fmt::format("{}: length {} runs past the end of the file ({} "
                           "bytes left)",
                           what, n, remaining()));
    }
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_),
                  size_t(n));
    pos_ += size_t(n);
    return s;
  }

 private:
  std::span<const std::byte> bytes_;
  const std::string& name_;
  size_t pos_ = 0;
};

// The host must be little-endian like the files: reading with memcpy relies
// on it (every platform nascent targets is).
static_assert(sizeof(float) == 4 && sizeof(double) == 8);

template <class T>
std::vector<T> read_scalars(Cursor& c, uint64_t n, std::string_view what) {
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) x = c.scalar<T>(what);
  return v;
}

bool read_bool(Cursor& c, std::string_view what) {
  size_t at = c.pos();
  uint8_t b = c.scalar<uint8_t>(what);
  if (b > 1)
    c.fail(at, fmt::format("{}: bool byte is {}, not 0 or 1", what, b));
  return b == 1;
}

ValueType read_type(Cursor& c, std::string_view what) {
  size_t at = c.pos();
  uint32_t t = c.u32(what);
  if (t >= kNumValueTypes) {
    c.fail(at, fmt::format("{}: unknown value type {}", what, t));
  }
  return ValueType(t);
}

Value read_value(Cursor& c, ValueType type, int depth, const std::string& key);

Value read_array(Cursor& c, int depth, const std::string& key) {
  size_t at = c.pos();
  ValueType et = read_type(c, key);
  uint64_t n = c.u64(key);
  uint64_t min_size = kMinValueSize[uint32_t(et)];
  if (n > c.remaining() / min_size) {
    bool wraps = n > std::numeric_limits<uint64_t>::max() / min_size;
    c.fail(at, fmt::format("{}: array of {} {} values needs {} bytes, the "
                           "file has {} left",
                           key, n, name(et),
                           wraps ? std::string("more than 2^64")
                                 : fmt::format("at least {}", n * min_size),
                           c.remaining()));
  }
  if (et == ValueType::array && depth + 1 >= kMaxArrayDepth) {
    c.fail(at, fmt::format("{}: arrays nested more than {} deep", key,
                           kMaxArrayDepth));
  }
  switch (et) {
    case ValueType::u8:
      return Value::array(read_scalars<uint8_t>(c, n, key));
    case ValueType::i8:
      return Value::array(read_scalars<int8_t>(c, n, key));
    case ValueType::u16:
      return Value::array(read_scalars<uint16_t>(c, n, key));
    case ValueType::i16:
      return Value::array(read_scalars<int16_t>(c, n, key));
    case ValueType::u32:
      return Value::array(read_scalars<uint32_t>(c, n, key));
    case ValueType::i32:
      return Value::array(read_scalars<int32_t>(c, n, key));
    case ValueType::f32:
      return Value::array(read_scalars<float>(c, n, key));
    case ValueType::u64:
      return Value::array(read_scalars<uint64_t>(c, n, key));
    case ValueType::i64:
      return Value::array(read_scalars<int64_t>(c, n, key));
    case ValueType::f64:
      return Value::array(read_scalars<double>(c, n, key));
    case ValueType::boolean: {
      std::vector<bool> v(static_cast<size_t>(n));
      for (size_t i = 0; i < v.size(); ++i) v[i] = read_bool(c, key);
      return Value::array(std::move(v));
    }
    case ValueType::string: {
      std::vector<std::string> v(static_cast<size_t>(n));
      for (auto& s : v) s = c.string(key);
      return Value::array(std::move(v));
    }
    case ValueType::array: {
      std::vector<Value> v;
      v.reserve(size_t(n));
      for (uint64_t i = 0; i < n; ++i) {
        v.push_back(read_array(c, depth + 1, key));
      }
      return Value::array(std::move(v));
    }
  }
  c.fail(at, "unreachable");
}

Value read_value(Cursor& c, ValueType type, int depth, const std::string& key) {
  switch (type) {
    case ValueType::u8:
      return Value(c.scalar<uint8_t>(key));
    case ValueType::i8:
      return Value(c.scalar<int8_t>(key));
    case ValueType::u16:
      return Value(c.scalar<uint16_t>(key));
    case ValueType::i16:
      return Value(c.scalar<int16_t>(key));
    case ValueType::u32:
      return Value(c.scalar<uint32_t>(key));
    case ValueType::i32:
      return Value(c.scalar<int32_t>(key));
    case ValueType::f32:
      return Value(c.scalar<float>(key));
    case ValueType::u64:
      return Value(c.scalar<uint64_t>(key));
    case ValueType::i64:
      return Value(c.scalar<int64_t>(key));
    case ValueType::f64:
      return Value(c.scalar<double>(key));
    case ValueType::boolean:
      return Value(read_bool(c, key));
    case ValueType::string:
      return Value(c.string(key));
    case ValueType::array:
      return read_array(c, depth, key);
  }
  c.fail(c.pos(), "unreachable");
}

bool is_power_of_two(uint64_t x) {
  return x != 0 && (x & (x - 1)) == 0;
}

uint32_t byte_swap(uint32_t x) {
  return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}

}  // namespace

Reader::Reader(const std::string& path) : Reader(io::MappedFile::open(path)) {}

Reader::Reader(std::shared_ptr<const io::MappedFile> file)
    : file_(std::move(file)), metadata_(file_->path()) {
  parse();
}

void Reader::parse() {
  const std::string& fname = file_->path();
  Cursor c(file_->bytes(), fname);
  if (file_->size() < 4 || std::memcmp(file_->bytes().data(), "GGUF", 4) != 0) {
    c.fail(0, "not a GGUF file (the first 4 bytes are not \"GGUF\")");
  }
  c.u32("magic");
  version_ = c.u32("version");
  if (version_ != 2 && version_ != 3) {
    uint32_t swapped = byte_swap(version_);
    if (swapped >= 1 && swapped <= 3) {
      c.fail(4, "big-endian GGUF files are not supported");
    }
    if (version_ == 1) {
      c.fail(4,
             "GGUF version 1 is not supported (convert the model again "
             "with a current llama.cpp)");
    }
    c.fail(4, fmt::format("unsupported GGUF version {} (2 and 3 are "
                          "supported)",
                          version_));
  }
  uint64_t n_tensors = c.u64("tensor count");
  uint64_t n_kv = c.u64("metadata count");
  if (n_kv > c.remaining() / kMinKvSize) {
    c.fail(16, fmt::format("{} metadata entries cannot fit in the {} bytes "
                           "left",
                           n_kv, c.remaining()));
  }
  if (n_tensors > c.remaining() / kMinTensorInfoSize) {
    c.fail(8, fmt::format("{} tensor infos cannot fit in the {} bytes left",
                          n_tensors, c.remaining()));
  }

  for (uint64_t i = 0; i < n_kv; ++i) {
    size_t at = c.pos();
    std::string key = c.string(fmt::format("metadata key {}", i));
    if (key.empty()) c.fail(at, fmt::format("metadata key {} is empty", i));
    if (key.size() > kMaxKeyLength) {
      c.fail(at, fmt::format("metadata key {} is {} bytes long (at most {})", i,
                             key.size(), kMaxKeyLength));
    }
    if (metadata_.contains(key)) {
      c.fail(at, fmt::format("duplicate metadata key '{}'", key));
    }
    ValueType type = read_type(c, key);
    Value value = read_value(c, type, 0, key);
    if (key == "general.alignment") {
      if (type != ValueType::u32) {
        c.fail(at, fmt::format("general.alignment has type {}, not u32",
                               name(type)));
      }
      uint32_t a = value.get<uint32_t>();
      if (!is_power_of_two(a)) {
        c.fail(at,
               fmt::format("general.alignment {} is not a power of two", a));
      }
      alignment_ = a;
    }
    metadata_.set(std::move(key), std::move(value));
  }

  tensors_.reserve(size_t(n_tensors));
  std::vector<size_t> info_at;
  info_at.reserve(size_t(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    size_t at = c.pos();
    TensorInfo t;
    t.name = c.string(fmt::format("tensor {} name", i));
    std::string what = fmt::format("tensor '{}'", t.name);
    if (tensor_index_.count(t.name)) {
      c.fail(at, fmt::format("duplicate tensor name '{}'", t.name));
    }
    size_t dims_at = c.pos();
    uint32_t n_dims = c.u32(what);
    if (n_dims > uint32_t(kMaxDims)) {
      c.fail(dims_at, fmt::format("{} has {} dimensions (at most {})", what,
                                  n_dims, kMaxDims));
    }
    t.shape.resize(n_dims);
    for (uint32_t d = 0; d < n_dims; ++d) {
      size_t dim_at = c.pos();
      uint64_t ne = c.u64(what);
      if (ne == 0 || ne > uint64_t(std::numeric_limits<int64_t>::max())) {
        c.fail(dim_at, fmt::format("{} dimension {} is {} (must be in [1, "
                                   "2^63))",
                                   what, d, ne));
      }
      t.shape[n_dims - 1 - d] = int64_t(ne);  // The file lists ne[0] first.
    }
    size_t type_at = c.pos();
    uint32_t type = c.u32(what);
    if (!find_tensor_type(type)) {
      c.fail(type_at, fmt::format("{} has unknown type id {}", what, type));
    }
    t.type = TensorType(type);
    try {
      t.size = tensor_bytes(t.type, t.shape, what);
    } catch (const ValueError& e) {
      c.fail(dims_at, e.what());
    }
    size_t offset_at = c.pos();
    t.offset = c.u64(what);
    if (t.offset % alignment_ != 0) {
      c.fail(offset_at,
             fmt::format("{} data offset {} is not a multiple of the "
                         "alignment {}",
                         what, t.offset, alignment_));
    }
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
    info_at.push_back(at);
  }

  // The data section starts at the next multiple of the alignment. A file
  // without tensors may end before it (llama.cpp's vocab-only files do).
  uint64_t header_end = c.pos();
  data_offset_ = (header_end + alignment_ - 1) / alignment_ * alignment_;
  uint64_t size = file_->size();
  uint64_t available = data_offset_ <= size ? size - data_offset_ : 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorInfo& t = tensors_[i];
    if (t.offset > available || t.size > available - t.offset) {
      c.fail(
          info_at[i],
          fmt::format("tensor '{}' data [{}, {}) of the data section runs "
                      "past the end of the file (the data section at "
                      "offset {} holds {} bytes)",
                      t.name, t.offset,
                      t.offset > std::numeric_limits<uint64_t>::max() - t.size
                          ? std::string("2^64+")
                          : fmt::format("{}", t.offset + t.size),
                      data_offset_, available));
    }
  }
  std::vector<size_t> order(tensors_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return tensors_[a].offset < tensors_[b].offset;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const TensorInfo& prev = tensors_[order[k - 1]];
    const TensorInfo& cur = tensors_[order[k]];
    if (prev.offset + prev.size > cur.offset) {
      c.fail(info_at[order[k]],
             fmt::format("tensor '{}' data [{}, {}) overlaps tensor '{}' "
                         "data [{}, {})",
                         cur.name, cur.offset, cur.offset + cur.size, prev.name,
                         prev.offset, prev.offset + prev.size));
    }
  }
}

const TensorInfo* Reader::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& Reader::tensor(std::string_view name) const {
  const TensorInfo* t = find_tensor(name);
  if (!t) {
    throw FormatError(
        fmt::format("{}: no tensor named '{}'", file_->path(), name));
  }
  return *t;
}

std::span<const std::byte> Reader::tensor_data(const TensorInfo& info) const {
  // Checked at open: the extent lies inside the file.
  return file_->bytes().subspan(size_t(data_offset_ + info.offset),
                                size_t(info.size));
}

}  // namespace nascent::gguf
