// NumPy's .npy files (format versions 1.0, 2.0 and 3.0): little-endian
// f4, f8, f2, i4, i8, u1 and b1 arrays, C or Fortran order. Everything the
// header claims is checked against the file before use; a bad file raises
// FormatError naming it and the fault, an unsupported dtype names it.
//
//   Tensor x = npy::read("input.npy", backend);
//   npy::write("out.npy", y);  // bf16 is written as f4 (NumPy has none).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "nascent/core/tensor.h"

namespace nascent::npy {

Tensor read(const std::string& path, Backend& backend);
Tensor parse(std::span<const std::byte> bytes, const std::string& what,
             Backend& backend);
std::vector<std::byte> encode(const Tensor& t);
void write(const std::string& path, const Tensor& t);  // Atomically.

}  // namespace nascent::npy
