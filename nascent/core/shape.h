// Shapes and strides, and the rules that combine them (NumPy broadcasting,
// axis normalisation, element counts that cannot overflow).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace nascent {

using Shape = std::vector<int64_t>;
// Strides count elements, not bytes. They may be 0 (broadcast) or, inside
// backends, negative.
using Strides = std::vector<int64_t>;

std::string to_string(const Shape& shape);

// Number of elements; raises ValueError naming `op` for a negative size or a
// count that does not fit in int64.
int64_t checked_numel(const Shape& shape, const char* op);
inline int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Strides contiguous_strides(const Shape& shape);

// NumPy broadcasting of two shapes; ShapeError naming `op` if they clash.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Maps a possibly negative axis into [0, ndim); ValueError naming `op`.
int normalize_axis(int64_t axis, int ndim, const char* op);

// Normalises a list of axes (an empty list means every axis), sorted and
// without repeats; ValueError on a repeat or an axis out of range.
std::vector<int> normalize_axes(const std::vector<int64_t>& axes, int ndim,
                                const char* op);

}  // namespace nascent
