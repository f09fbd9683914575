// A number passed to an op (fill value, clamp bound, exponent). It keeps
// integers exact so that filling an i64 tensor with 2^60 works.
#pragma once

#include <cstdint>
#include <type_traits>

namespace nascent {

class Scalar {
 public:
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : is_integral_(false), f_(double(v)), i_(int64_t(0)) {}
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  Scalar(T v) : is_integral_(true), f_(double(v)), i_(int64_t(v)) {}

  bool is_integral() const { return is_integral_; }
  double to_double() const { return f_; }
  int64_t to_int64() const { return is_integral_ ? i_ : int64_t(f_); }

 private:
  bool is_integral_;
  double f_;
  int64_t i_;
};

}  // namespace nascent
