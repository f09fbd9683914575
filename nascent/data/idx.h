// IDX files, the format of MNIST and Fashion-MNIST (gzipped or not): a magic
// of two zero bytes, a type code and a rank, the dimensions as big-endian
// u32, then the values, big-endian, row-major.
//
// The reader checks the magic, the type, the rank and that the data is
// exactly as long as the dimensions say; memory grows only as data arrives,
// so a header that lies cannot make it allocate more than the file holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nascent/core/tensor.h"

namespace nascent::data {

struct IdxArray {
  DType dtype = DType::u8;  // u8, i32, f32 or f64.
  Shape shape;
  std::vector<std::byte> data;  // Row-major, host byte order.
};

// FormatError naming the file for anything malformed; `max_bytes` bounds
// the data a header may claim.
IdxArray read_idx(const std::string& path, uint64_t max_bytes = uint64_t(1)
                                                                << 32);

Tensor to_tensor(const IdxArray& array, Backend& backend);

}  // namespace nascent::data
