#include "nascent/io/gguf_writer.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "nascent/core/shape.h"
#include "nascent/io/file.h"
#include "nascent/io/gguf_reader.h"

namespace nascent::gguf {
namespace {

// Serialises the header into memory: it is small next to the tensors.
class Encoder {
 public:
  template <class T>
  void scalar(T v) {
    append(&v, sizeof(T));
  }
  void u32(uint32_t v) { scalar(v); }
  void u64(uint64_t v) { scalar(v); }
  void string(const std::string& s) {
    u64(uint64_t(s.size()));
    append(s.data(), s.size());
  }
  void value(const Value& v) {
    switch (v.type()) {
      case ValueType::u8:
        return scalar(v.get<uint8_t>());
      case ValueType::i8:
        return scalar(v.get<int8_t>());
      case ValueType::u16:
        return scalar(v.get<uint16_t>());
      case ValueType::i16:
        return scalar(v.get<int16_t>());
      case ValueType::u32:
        return scalar(v.get<uint32_t>());
      case ValueType::i32:
        return scalar(v.get<int32_t>());
      case ValueType::f32:
        return scalar(v.get<float>());
      case ValueType::u64:
        return scalar(v.get<uint64_t>());
      case ValueType::i64:
        return scalar(v.get<int64_t>());
      case ValueType::f64:
        return scalar(v.get<double>());
      case ValueType::boolean:
        return scalar(uint8_t(v.get<bool>()));
      case ValueType::string:
        return string(v.as_string());
      case ValueType::array:
        return array(v.as_array());
    }
  }
  void array(const Array& a) {
    u32(uint32_t(a.element_type()));
    u64(uint64_t(a.size()));
    std::visit(
        [this](const auto& items) {
          using E = typename std::decay_t<decltype(items)>::value_type;
          for (const auto& x : items) {
            if constexpr (std::is_same_v<E, Value>) {
              array(x.as_array());
            } else if constexpr (std::is_same_v<E, std::string>) {
              string(x);
            } else if constexpr (std::is_same_v<E, bool>) {
              scalar(uint8_t(x));
            } else {
              scalar(x);
            }
          }
        },
        a.items);
  }
  std::vector<std::byte>& bytes() { return out_; }

 private:
  // resize + memcpy: GCC 12 misreads vector::insert of small arrays as an
  // overflow (-Wstringop-overflow).
  void append(const void* p, size_t n) {
    if (n == 0) return;
    size_t at = out_.size();
    out_.resize(at + n);
    std::memcpy(out_.data() + at, p, n);
  }

  std::vector<std::byte> out_;
};

uint64_t align_up(uint64_t x, uint64_t a) {
  return (x + a - 1) / a * a;
}

// Arrays deeper than the reader accepts would make an unreadable file.
int array_depth(const Value& v) {
  if (!v.is_array()) return 0;
  int deepest = 0;
  if (v.element_type() == ValueType::array) {
    for (const Value& item : v.array_of<Value>()) {
      deepest = std::max(deepest, array_depth(item));
    }
  }
  return 1 + deepest;
}

void check_metadata(const Metadata& metadata) {
  for (const auto& [key, value] : metadata.entries()) {
    if (key.empty() || key.size() > kMaxKeyLength) {
      throw ValueError(
          fmt::format("gguf writer: metadata key of {} bytes "
                      "(keys have 1 to {})",
                      key.size(), kMaxKeyLength));
    }
    if (array_depth(value) > kMaxArrayDepth) {
      throw ValueError(
          fmt::format("gguf writer: metadata key '{}': arrays "
                      "nested more than {} deep",
                      key, kMaxArrayDepth));
    }
  }
}

}  // namespace

void Writer::add(std::string name, std::vector<int64_t> shape, TensorType type,
                 Producer produce, const uint64_t* expected_size) {
  std::string what = fmt::format("gguf writer: tensor '{}'", name);
  if (name.size() > kMaxTensorName) {
    throw ValueError(
        fmt::format("{}: name is {} bytes long (llama.cpp reads "
                    "at most {})",
                    what, name.size(), kMaxTensorName));
  }
  for (const Entry& e : tensors_) {
    if (e.info.name == name) {
      throw ValueError(fmt::format("{}: duplicate tensor name", what));
    }
  }
  TensorInfo info;
  info.size = tensor_bytes(type, shape, what);
  if (expected_size && *expected_size != info.size) {
    throw ValueError(fmt::format("{}: {} bytes given, {} of shape {} needs {}",
                                 what, *expected_size, gguf::name(type),
                                 nascent::to_string(shape), info.size));
  }
  info.name = std::move(name);
  info.shape = std::move(shape);
  info.type = type;
  tensors_.push_back({std::move(info), std::move(produce)});
}

void Writer::add_tensor(std::string name, std::vector<int64_t> shape,
                        TensorType type, std::vector<std::byte> bytes) {
  uint64_t size = bytes.size();
  auto owned = std::make_shared<std::vector<std::byte>>(std::move(bytes));
  add(
      std::move(name), std::move(shape), type,
      [owned](std::span<std::byte> out) {
        if (!owned->empty()) std::memcpy(out.data(), owned->data(), out.size());
      },
      &size);
}

void Writer::add_tensor(std::string name, std::vector<int64_t> shape,
                        TensorType type, Producer produce) {
  if (!produce) {
    throw ValueError(
        fmt::format("gguf writer: tensor '{}': no producer", name));
  }
  add(std::move(name), std::move(shape), type, std::move(produce), nullptr);
}

uint32_t Writer::alignment() const {
  const Value* v = metadata_.find("general.alignment");
  if (!v) return kDefaultAlignment;
  if (v->type() != ValueType::u32) {
    throw ValueError(
        fmt::format("gguf writer: general.alignment must be a "
                    "u32, not {}",
                    name(v->type())));
  }
  uint32_t a = v->get<uint32_t>();
  if (a == 0 || (a & (a - 1)) != 0) {
    throw ValueError(
        fmt::format("gguf writer: general.alignment {} is not a "
                    "power of two",
                    a));
  }
  return a;
}

std::vector<TensorInfo> Writer::tensor_infos() const {
  uint64_t a = alignment();
  std::vector<TensorInfo> infos;
  uint64_t offset = 0;
  for (const Entry& e : tensors_) {
    infos.push_back(e.info);
    infos.back().offset = offset;
    offset += align_up(e.info.size, a);
  }
  return infos;
}

void Writer::write(const std::string& path) const {
  check_metadata(metadata_);
  uint32_t a = alignment();
  std::vector<TensorInfo> infos = tensor_infos();
  Encoder enc;
  enc.scalar<char>('G');
  enc.scalar<char>('G');
  enc.scalar<char>('U');
  enc.scalar<char>('F');
  enc.u32(3);
  enc.u64(uint64_t(infos.size()));
  enc.u64(uint64_t(metadata_.size()));
  for (const auto& [key, value] : metadata_.entries()) {
    enc.string(key);
    enc.u32(uint32_t(value.type()));
    enc.value(value);
  }
  for (const TensorInfo& t : infos) {
    enc.string(t.name);
    enc.u32(uint32_t(t.shape.size()));
    for (size_t d = t.shape.size(); d-- > 0;) enc.u64(uint64_t(t.shape[d]));
    enc.u32(uint32_t(t.type));
    enc.u64(t.offset);
  }
  std::vector<std::byte>& header = enc.bytes();
  uint64_t header_size = header.size();

  io::AtomicFileWriter out(path);
  out.write(header);
  if (!infos.empty())
    out.write_zeros(size_t(align_up(header_size, a) - header_size));
  std::vector<std::byte> buffer;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    buffer.assign(size_t(infos[i].size), std::byte{0});
    tensors_[i].produce(buffer);
    out.write(buffer);
    out.write_zeros(size_t(align_up(infos[i].size, a) - infos[i].size));
  }
  out.commit();
}

}  // namespace nascent::gguf
