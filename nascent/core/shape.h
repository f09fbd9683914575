// Shapes and strides, and the rules that combine them (NumPy broadcasting,
// axis normalisation, element counts that cannot overflow).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace nascent {

using Shape = std::vector<int64_t>;
// Strides count elements, not bytes. They may be 0 (broadcast) or, inside
// backends, negative.
using Strides = std::vector<int64_t>;

std::string to_string(const Shape& shape);

// Number of elements; raises ValueError naming `op` for a negative size, or
// for a shape whose element count or contiguous strides do not fit in int64.
// Strides are products of dimensions with zeros counted as ones, so a shape
// such as [0, 2^32, 2^32] is rejected although it holds no element.
int64_t checked_numel(const Shape& shape, const char* op);

// Whether dimensions read from a file make a shape that checked_numel
// accepts: each at most INT64_MAX and their product, zeros counted as ones,
// too. Readers call it before converting the dimensions to a Shape, so that
// they can raise their own FormatError.
bool shape_fits_int64(std::span<const uint64_t> dims);
inline int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Row-major strides; ValueError if one would overflow int64 (never for a
// shape that checked_numel accepted).
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
