// Protocol-buffer bytes for the ONNX tests: a minimal encoder of the wire
// format, independent of the decoder it checks (nascent/onnx/proto.cpp),
// and builders of the few messages the tests need.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace nascent::onnx::test {

struct Pb {
  std::string bytes;

  Pb& raw_varint(uint64_t v) {
    while (v >= 0x80) {
      bytes += char(uint8_t(v) | 0x80);
      v >>= 7;
    }
    bytes += char(uint8_t(v));
    return *this;
  }
  Pb& tag(uint32_t field, uint32_t wire) {
    return raw_varint(field << 3 | wire);
  }
  Pb& varint(uint32_t field, int64_t v) {
    return tag(field, 0).raw_varint(uint64_t(v));
  }
  Pb& str(uint32_t field, const std::string& s) {
    tag(field, 2).raw_varint(s.size());
    bytes += s;
    return *this;
  }
  Pb& msg(uint32_t field, const Pb& m) { return str(field, m.bytes); }
  Pb& f32(uint32_t field, float v) {
    tag(field, 5);
    char b[4];
    std::memcpy(b, &v, 4);
    bytes.append(b, 4);
    return *this;
  }
  Pb& packed(uint32_t field, const std::vector<int64_t>& v) {
    Pb inner;
    for (int64_t x : v) inner.raw_varint(uint64_t(x));
    return msg(field, inner);
  }
  Pb& packed_f32(uint32_t field, const std::vector<float>& v) {
    std::string s(v.size() * 4, '\0');
    std::memcpy(s.data(), v.data(), s.size());
    return str(field, s);
  }
};

// TensorProto of f32 values: as raw_data or as float_data.
inline Pb tensor_f32(const std::string& name, const std::vector<int64_t>& dims,
                     const std::vector<float>& values, bool raw = true) {
  Pb t;
  t.packed(1, dims).varint(2, 1).str(8, name);
  if (raw) {
    std::string s(values.size() * 4, '\0');
    std::memcpy(s.data(), values.data(), s.size());
    t.str(9, s);
  } else {
    t.packed_f32(4, values);
  }
  return t;
}

inline Pb tensor_i64(const std::string& name, const std::vector<int64_t>& dims,
                     const std::vector<int64_t>& values) {
  Pb t;
  t.packed(1, dims).varint(2, 7).str(8, name).packed(7, values);
  return t;
}

// ValueInfoProto of a tensor; a negative dim is the named "N".
inline Pb value_info(const std::string& name, int32_t elem,
                     const std::vector<int64_t>& dims) {
  Pb shape;
  for (int64_t d : dims) {
    Pb dim;
    if (d >= 0)
      dim.varint(1, d);
    else
      dim.str(2, "N");
    shape.msg(1, dim);
  }
  Pb tensor_type;
  tensor_type.varint(1, elem).msg(2, shape);
  Pb type;
  type.msg(1, tensor_type);
  Pb v;
  v.str(1, name).msg(2, type);
  return v;
}

inline Pb node(const std::string& op, const std::vector<std::string>& in,
               const std::vector<std::string>& out, const std::string& name,
               const std::vector<Pb>& attrs = {},
               const std::string& domain = "") {
  Pb n;
  for (const auto& s : in) n.str(1, s);
  for (const auto& s : out) n.str(2, s);
  n.str(3, name).str(4, op);
  for (const auto& a : attrs) n.msg(5, a);
  if (!domain.empty()) n.str(7, domain);
  return n;
}

inline Pb attr_int(const std::string& name, int64_t v) {
  Pb a;
  a.str(1, name).varint(3, v).varint(20, 2);
  return a;
}

inline Pb attr_ints(const std::string& name, const std::vector<int64_t>& v) {
  Pb a;
  a.str(1, name).packed(8, v).varint(20, 7);
  return a;
}

inline Pb attr_str(const std::string& name, const std::string& v) {
  Pb a;
  a.str(1, name).str(4, v).varint(20, 3);
  return a;
}

inline Pb attr_f(const std::string& name, float v) {
  Pb a;
  a.str(1, name).f32(2, v).varint(20, 1);
  return a;
}

struct GraphParts {
  std::vector<Pb> nodes, initializers, inputs, outputs;
};

inline std::string model(const GraphParts& g, int64_t opset = 17) {
  Pb graph;
  for (const auto& n : g.nodes) graph.msg(1, n);
  graph.str(2, "test");
  for (const auto& t : g.initializers) graph.msg(5, t);
  for (const auto& v : g.inputs) graph.msg(11, v);
  for (const auto& v : g.outputs) graph.msg(12, v);
  Pb op;
  op.str(1, "").varint(2, opset);
  Pb m;
  m.varint(1, 8).str(2, "nascent-test").msg(7, graph).msg(8, op);
  return m.bytes;
}

}  // namespace nascent::onnx::test
