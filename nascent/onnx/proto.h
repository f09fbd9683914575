// The parts of ONNX's protocol-buffer messages (onnx.proto of onnx 1.17.0,
// field numbers as there) that inference needs, read by a small hand-written
// decoder of the wire format: no generated code, so it builds everywhere the
// library does (WebAssembly too). Every length, count and tag is checked
// against the bytes left before use; nothing is allocated beyond a small
// multiple of the input. A bad message raises FormatError naming the field
// path (e.g. "graph.node[3] 'conv1' (Conv).attribute[0] 'pads'") and the
// fault. Unknown fields are skipped, as protobuf does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace nascent::onnx {

// TensorProto.DataType.
enum class ElemType : int32_t {
  undefined = 0,
  f32 = 1,
  u8 = 2,
  i8 = 3,
  u16 = 4,
  i16 = 5,
  i32 = 6,
  i64 = 7,
  string = 8,
  boolean = 9,
  f16 = 10,
  f64 = 11,
  u32 = 12,
  u64 = 13,
  bf16 = 16,
};
std::string elem_type_name(int32_t type);  // "FLOAT", "INT64", "type 17"...

struct TensorProto {
  std::string name;
  std::vector<int64_t> dims;
  int32_t data_type = 0;
  // Exactly one of these holds the values (raw_data points into the
  // message's bytes, which must outlive it).
  std::span<const std::byte> raw_data;
  bool has_raw_data = false;
  std::vector<float> float_data;
  std::vector<int32_t> int32_data;  // Also f16/bf16 bits, bool, u8, i8.
  std::vector<int64_t> int64_data;
  std::vector<double> double_data;
  std::vector<uint64_t> uint64_data;
  size_t string_count = 0;
  std::vector<std::pair<std::string, std::string>> external_data;
  int32_t data_location = 0;  // 1: EXTERNAL.
  bool has_segment = false;
};

// AttributeProto.AttributeType.
enum class AttrType : int32_t {
  undefined = 0,
  f = 1,
  i = 2,
  s = 3,
  t = 4,
  g = 5,
  floats = 6,
  ints = 7,
  strings = 8,
  tensors = 9,
  graphs = 10,
  sparse_tensor = 11,
  sparse_tensors = 12,
  type_proto = 13,
  type_protos = 14,
};

struct AttributeProto {
  std::string name;
  std::string ref_attr_name;
  int32_t type = 0;  // AttrType
  float f = 0;
  int64_t i = 0;
  std::string s;
  TensorProto t;
  bool has_t = false;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  size_t tensor_count = 0, graph_count = 0;  // Not decoded: no op uses them.
};

struct NodeProto {
  std::vector<std::string> inputs, outputs;
  std::string name, op_type, domain;
  std::vector<AttributeProto> attributes;
};

// A dimension is a value (>= 0), a named parameter, or unknown.
struct Dim {
  int64_t value = -1;
  std::string param;
};

struct ValueInfoProto {
  std::string name;
  bool is_tensor = false;  // Sequences, maps and optionals are not.
  int32_t elem_type = 0;
  bool has_shape = false;
  std::vector<Dim> dims;
};

struct GraphProto {
  std::string name;
  std::vector<NodeProto> nodes;
  std::vector<TensorProto> initializers;
  size_t sparse_initializer_count = 0;
  std::vector<ValueInfoProto> inputs, outputs;
};

struct OpsetId {
  std::string domain;  // "" and "ai.onnx" are the default domain.
  int64_t version = 0;
};

struct ModelProto {
  int64_t ir_version = 0;
  std::vector<OpsetId> opset_imports;
  std::string producer_name, producer_version;
  bool has_graph = false;
  GraphProto graph;
  size_t function_count = 0;
};

// `what` names the input in errors (a file name). The result's raw_data
// spans point into `bytes`.
ModelProto parse_model(std::span<const std::byte> bytes,
                       const std::string& what);
TensorProto parse_tensor(std::span<const std::byte> bytes,
                         const std::string& what);

}  // namespace nascent::onnx
