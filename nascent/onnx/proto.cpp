#include "nascent/onnx/proto.h"

#include <cstring>

#include <fmt/format.h>

#include "nascent/core/error.h"

namespace nascent::onnx {

std::string elem_type_name(int32_t type) {
  switch (ElemType(type)) {
    case ElemType::f32:
      return "FLOAT";
    case ElemType::u8:
      return "UINT8";
    case ElemType::i8:
      return "INT8";
    case ElemType::u16:
      return "UINT16";
    case ElemType::i16:
      return "INT16";
    case ElemType::i32:
      return "INT32";
    case ElemType::i64:
      return "INT64";
    case ElemType::string:
      return "STRING";
    case ElemType::boolean:
      return "BOOL";
    case ElemType::f16:
      return "FLOAT16";
    case ElemType::f64:
      return "DOUBLE";
    case ElemType::u32:
      return "UINT32";
    case ElemType::u64:
      return "UINT64";
    case ElemType::bf16:
      return "BFLOAT16";
    case ElemType::undefined:
      return "UNDEFINED";
  }
  return fmt::format("type {}", type);
}

namespace {

enum Wire : uint32_t { varint = 0, fixed64 = 1, bytes = 2, fixed32 = 5 };

// One message's bytes; `path` names it in errors.
class Reader {
 public:
  Reader(std::span<const std::byte> data, const std::byte* origin,
         const std::string& what, std::string path)
      : p_(data.data()),
        end_(data.data() + data.size()),
        origin_(origin),
        what_(what),
        path_(std::move(path)) {}

  bool done() const { return p_ == end_; }
  std::span<const std::byte> rest() const { return {p_, size_t(end_ - p_)}; }
  Reader renamed(std::string path) const {
    Reader r = *this;
    r.path_ = std::move(path);
    return r;
  }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& msg) const {
    throw FormatError(fmt::format("onnx: {}: {} (byte {}): {}", what_,
                                  path_.empty() ? "message" : path_,
                                  p_ - origin_, msg));
  }

  uint64_t read_varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) fail("truncated varint");
      uint8_t b = uint8_t(*p_++);
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("varint longer than 10 bytes");
  }

  // The next field's number and wire type.
  std::pair<uint32_t, uint32_t> tag() {
    uint64_t t = read_varint();
    uint32_t field = uint32_t(t >> 3), wire = uint32_t(t & 7);
    if (field == 0 || (t >> 3) > 0x1fffffff) fail("bad field number");
    if (wire != varint && wire != fixed64 && wire != bytes && wire != fixed32) {
      fail(fmt::format("field {} has wire type {} (groups are not valid)",
                       field, wire));
    }
    field_ = field;
    wire_ = wire;
    return {field, wire};
  }

  std::span<const std::byte> read_bytes() {
    uint64_t n = read_varint();
    if (n > uint64_t(end_ - p_)) {
      fail(fmt::format("field {}: length {} runs past the end ({} bytes left)",
                       field_, n, end_ - p_));
    }
    std::span<const std::byte> s(p_, size_t(n));
    p_ += n;
    return s;
  }
  std::string read_string() {
    auto s = read_bytes();
    return std::string(reinterpret_cast<const char*>(s.data()), s.size());
  }
  template <class T>
  T read_fixed() {
    if (size_t(end_ - p_) < sizeof(T)) fail("truncated fixed-width value");
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }

  void skip() {
    switch (wire_) {
      case varint:
        read_varint();
        break;
      case fixed64:
        read_fixed<uint64_t>();
        break;
      case fixed32:
        read_fixed<uint32_t>();
        break;
      default:
        read_bytes();
        break;
    }
  }

  void expect(uint32_t wire, const char* name) {
    if (wire_ != wire) {
      fail(fmt::format("field '{}' has wire type {}, expected {}", name, wire_,
                       wire));
    }
  }
  int64_t read_int(const char* name) {
    expect(varint, name);
    return int64_t(read_varint());
  }
  int32_t read_int32(const char* name) {
    int64_t v = read_int(name);
    if (v < INT32_MIN || v > INT32_MAX) {
      fail(fmt::format("field '{}': {} is not an int32", name, v));
    }
    return int32_t(v);
  }
  std::string read_str(const char* name) {
    expect(bytes, name);
    return read_string();
  }
  Reader sub(const std::string& name) {
    expect(bytes, name.c_str());
    auto s = read_bytes();
    return Reader(s, origin_, what_, path_.empty() ? name : path_ + "." + name);
  }

  // A repeated scalar, packed or not; T is the stored C++ type.
  template <class T>
  void read_repeated(std::vector<T>& out, const char* name) {
    auto one = [&](Reader& r) -> T {
      if constexpr (std::is_same_v<T, float>) {
        return r.read_fixed<float>();
      } else if constexpr (std::is_same_v<T, double>) {
        return r.read_fixed<double>();
      } else if constexpr (std::is_same_v<T, int32_t>) {
        return int32_t(int64_t(r.read_varint()));
      } else {
        return T(r.read_varint());
      }
    };
    constexpr uint32_t element_wire = std::is_same_v<T, float>    ? fixed32
                                      : std::is_same_v<T, double> ? fixed64
                                                                  : varint;
    if (wire_ == bytes) {
      auto s = read_bytes();
      Reader r(s, origin_, what_, path_ + "." + name);
      r.wire_ = element_wire;
      if constexpr (element_wire == fixed32) {
        if (s.size() % 4)
          fail(fmt::format("packed '{}' of {} bytes", name, s.size()));
        out.reserve(out.size() + s.size() / 4);
      } else if constexpr (element_wire == fixed64) {
        if (s.size() % 8)
          fail(fmt::format("packed '{}' of {} bytes", name, s.size()));
        out.reserve(out.size() + s.size() / 8);
      }
      while (!r.done()) out.push_back(one(r));
    } else {
      expect(element_wire, name);
      out.push_back(one(*this));
    }
  }

 private:
  const std::byte* p_;
  const std::byte* end_;
  const std::byte* origin_;
  const std::string& what_;
  std::string path_;
  uint32_t field_ = 0, wire_ = 0;
};

std::string quoted(const std::string& s) {
  return s.empty() ? std::string() : " '" + s + "'";
}

void parse_tensor(Reader r, TensorProto& t) {
  while (!r.done()) {
    auto [field, wire] = r.tag();
    switch (field) {
      case 1:
        r.read_repeated(t.dims, "dims");
        break;
      case 2:
        t.data_type = r.read_int32("data_type");
        break;
      case 3:
        r.sub("segment");
        t.has_segment = true;
        break;
      case 4:
        r.read_repeated(t.float_data, "float_data");
        break;
      case 5:
        r.read_repeated(t.int32_data, "int32_data");
        break;
      case 6:
        r.read_str("string_data");
        ++t.string_count;
        break;
      case 7:
        r.read_repeated(t.int64_data, "int64_data");
        break;
      case 8:
        t.name = r.read_str("name");
        break;
      case 9:
        r.expect(bytes, "raw_data");
        t.raw_data = r.read_bytes();
        t.has_raw_data = true;
        break;
      case 10:
        r.read_repeated(t.double_data, "double_data");
        break;
      case 11:
        r.read_repeated(t.uint64_data, "uint64_data");
        break;
      case 13: {
        Reader e =
            r.sub(fmt::format("external_data[{}]", t.external_data.size()));
        std::pair<std::string, std::string> kv;
        while (!e.done()) {
          auto [f, w] = e.tag();
          if (f == 1)
            kv.first = e.read_str("key");
          else if (f == 2)
            kv.second = e.read_str("value");
          else
            e.skip();
        }
        t.external_data.push_back(std::move(kv));
        break;
      }
      case 14:
        t.data_location = r.read_int32("data_location");
        break;
      default:
        r.skip();
    }
  }
}

void parse_attribute(Reader r, AttributeProto& a) {
  while (!r.done()) {
    auto [field, wire] = r.tag();
    switch (field) {
      case 1:
        a.name = r.read_str("name");
        break;
      case 21:
        a.ref_attr_name = r.read_str("ref_attr_name");
        break;
      case 20:
        a.type = r.read_int32("type");
        break;
      case 2:
        r.expect(fixed32, "f");
        a.f = r.read_fixed<float>();
        break;
      case 3:
        a.i = r.read_int("i");
        break;
      case 4:
        a.s = r.read_str("s");
        break;
      case 5:
        parse_tensor(r.sub("t"), a.t);
        a.has_t = true;
        break;
      case 7:
        r.read_repeated(a.floats, "floats");
        break;
      case 8:
        r.read_repeated(a.ints, "ints");
        break;
      case 9:
        a.strings.push_back(r.read_str("strings"));
        break;
      case 10:
        r.sub("tensors");
        ++a.tensor_count;
        break;
      case 11:
        r.sub("graphs");
        ++a.graph_count;
        break;
      case 6:
        r.sub("g");
        ++a.graph_count;
        break;
      default:
        r.skip();
    }
  }
}

// "graph.node[3] 'conv1' (Conv)": the name and op type are looked up
// before the node is decoded, so that an error in any of its fields names
// them (a broken node still gets its index).
std::string node_path(const Reader& node) {
  std::string name, op;
  Reader r = node;
  try {
    while (!r.done()) {
      auto [field, wire] = r.tag();
      if (field == 3 && wire == bytes)
        name = r.read_string();
      else if (field == 4 && wire == bytes)
        op = r.read_string();
      else
        r.skip();
    }
  } catch (const FormatError&) {
  }
  std::string path = node.path() + quoted(name);
  if (!op.empty()) path += " (" + op + ")";
  return path;
}

void parse_node(Reader r, NodeProto& n) {
  // Attributes come after the names in files that protobuf wrote, but the
  // wire format allows any order: name them by index until the end.
  while (!r.done()) {
    auto [field, wire] = r.tag();
    switch (field) {
      case 1:
        n.inputs.push_back(r.read_str("input"));
        break;
      case 2:
        n.outputs.push_back(r.read_str("output"));
        break;
      case 3:
        n.name = r.read_str("name");
        break;
      case 4:
        n.op_type = r.read_str("op_type");
        break;
      case 7:
        n.domain = r.read_str("domain");
        break;
      case 5: {
        AttributeProto a;
        size_t k = n.attributes.size();
        parse_attribute(r.sub(fmt::format("attribute[{}]", k)), a);
        n.attributes.push_back(std::move(a));
        break;
      }
      default:
        r.skip();
    }
  }
}

void parse_shape(Reader r, ValueInfoProto& v) {
  v.has_shape = true;
  while (!r.done()) {
    auto [field, wire] = r.tag();
    if (field != 1) {
      r.skip();
      continue;
    }
    Reader d = r.sub(fmt::format("dim[{}]", v.dims.size()));
    Dim dim;
    while (!d.done()) {
      auto [f, w] = d.tag();
      if (f == 1) {
        dim.value = d.read_int("dim_value");
        if (dim.value < 0)
          d.fail(fmt::format("negative dim_value {}", dim.value));
      } else if (f == 2) {
        dim.param = d.read_str("dim_param");
      } else {
        d.skip();
      }
    }
    v.dims.push_back(std::move(dim));
  }
}

void parse_value_info(Reader r, ValueInfoProto& v) {
  while (!r.done()) {
    auto [field, wire] = r.tag();
    if (field == 1) {
      v.name = r.read_str("name");
    } else if (field == 2) {
      Reader type = r.sub("type");
      while (!type.done()) {
        auto [f, w] = type.tag();
        if (f != 1) {  // Sequence, map, optional, sparse: not tensors.
          type.skip();
          continue;
        }
        v.is_tensor = true;
        Reader tt = type.sub("tensor_type");
        while (!tt.done()) {
          auto [g, w2] = tt.tag();
          if (g == 1)
            v.elem_type = tt.read_int32("elem_type");
          else if (g == 2)
            parse_shape(tt.sub("shape"), v);
          else
            tt.skip();
        }
      }
    } else {
      r.skip();
    }
  }
}

void parse_graph(Reader r, GraphProto& g) {
  while (!r.done()) {
    auto [field, wire] = r.tag();
    switch (field) {
      case 1: {
        NodeProto n;
        size_t k = g.nodes.size();
        Reader nr = r.sub(fmt::format("node[{}]", k));
        parse_node(nr.renamed(node_path(nr)), n);
        g.nodes.push_back(std::move(n));
        break;
      }
      case 2:
        g.name = r.read_str("name");
        break;
      case 5: {
        TensorProto t;
        parse_tensor(
            r.sub(fmt::format("initializer[{}]", g.initializers.size())), t);
        g.initializers.push_back(std::move(t));
        break;
      }
      case 15:
        r.sub("sparse_initializer");
        ++g.sparse_initializer_count;
        break;
      case 11:
      case 12: {
        auto& list = field == 11 ? g.inputs : g.outputs;
        ValueInfoProto v;
        parse_value_info(
            r.sub(fmt::format("{}[{}]", field == 11 ? "input" : "output",
                              list.size())),
            v);
        list.push_back(std::move(v));
        break;
      }
      default:
        r.skip();
    }
  }
}

}  // namespace

ModelProto parse_model(std::span<const std::byte> bytes,
                       const std::string& what) {
  Reader r(bytes, bytes.data(), what, "");
  ModelProto m;
  while (!r.done()) {
    auto [field, wire] = r.tag();
    switch (field) {
      case 1:
        m.ir_version = r.read_int("ir_version");
        break;
      case 2:
        m.producer_name = r.read_str("producer_name");
        break;
      case 3:
        m.producer_version = r.read_str("producer_version");
        break;
      case 7:
        if (m.has_graph) r.fail("two graphs");
        parse_graph(r.sub("graph"), m.graph);
        m.has_graph = true;
        break;
      case 8: {
        Reader o =
            r.sub(fmt::format("opset_import[{}]", m.opset_imports.size()));
        OpsetId id;
        while (!o.done()) {
          auto [f, w] = o.tag();
          if (f == 1)
            id.domain = o.read_str("domain");
          else if (f == 2)
            id.version = o.read_int("version");
          else
            o.skip();
        }
        m.opset_imports.push_back(std::move(id));
        break;
      }
      case 25:
        r.sub("functions");
        ++m.function_count;
        break;
      default:
        r.skip();
    }
  }
  if (!m.has_graph) r.fail("the model has no graph (not an ONNX model?)");
  return m;
}

TensorProto parse_tensor(std::span<const std::byte> bytes,
                         const std::string& what) {
  TensorProto t;
  parse_tensor(Reader(bytes, bytes.data(), what, "tensor"), t);
  return t;
}

}  // namespace nascent::onnx
