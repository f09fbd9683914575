#include "conformance/reference.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace nascent::conformance {

double HostTensor::at(const std::vector<int64_t>& index) const {
  size_t lead = index.size() - shape.size();
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t i = shape[d] == 1 ? 0 : index[lead + d];
    flat = flat * shape[d] + i;
  }
  return v[size_t(flat)];
}

HostTensor to_host(const Tensor& t) {
  return HostTensor{t.shape(), t.to_vector<double>()};
}

const char* name(Layout layout) {
  switch (layout) {
    case Layout::contiguous:
      return "contiguous";
    case Layout::transposed:
      return "transposed";
    case Layout::sliced:
      return "sliced";
    case Layout::broadcast:
      return "broadcast";
  }
  return "?";
}

Tensor random_tensor(const Shape& shape, DType dtype, Backend& backend,
                     uint64_t seed, Layout layout, double low, double high) {
  auto values = [&](const Shape& s) {
    Generator gen(seed);
    Tensor u = uniform(s, low, high, backend, gen, DType::f64);
    if (!is_floating(dtype)) {
      std::vector<double> v = u.to_vector<double>();
      for (double& x : v) x = std::floor(x);
      if (dtype == DType::boolean || dtype == DType::u8) {
        for (double& x : v) x = std::fabs(x);
      }
      u = from_vector(v, s, backend);
    }
    return u.cast(dtype);
  };
  switch (layout) {
    case Layout::contiguous:
      return values(shape);
    case Layout::transposed: {
      if (shape.size() < 2) return values(shape);
      Shape s = shape;
      std::swap(s[s.size() - 1], s[s.size() - 2]);
      return values(s).transpose(-1, -2);
    }
    case Layout::sliced: {
      if (shape.empty()) return values(shape);
      Shape s = shape;
      s.back() *= 2;
      return values(s).slice(-1, 1, s.back(), 2);
    }
    case Layout::broadcast: {
      if (shape.empty()) return values(shape);
      Shape s = shape;
      s[0] = 1;
      return values(s).expand(shape);
    }
  }
  return values(shape);
}

void for_each_index(
    const Shape& shape,
    const std::function<void(const std::vector<int64_t>&)>& fn) {
  std::vector<int64_t> idx(shape.size(), 0);
  if (numel(shape) == 0) return;
  for (;;) {
    fn(idx);
    int d = int(shape.size()) - 1;
    while (d >= 0 && ++idx[size_t(d)] == shape[size_t(d)]) {
      idx[size_t(d)] = 0;
      --d;
    }
    if (d < 0) return;
  }
}

double default_rtol(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return 1e-12;
    case DType::f32:
      return 2e-5;
    case DType::f16:
      return 4e-3;
    case DType::bf16:
      return 3e-2;
    default:
      return 0.0;
  }
}

double default_atol(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return 1e-12;
    case DType::f32:
      return 1e-5;
    case DType::f16:
      return 2e-3;
    case DType::bf16:
      return 2e-2;
    default:
      return 0.0;
  }
}

void expect_close(const Tensor& got, const HostTensor& want,
                  const std::string& label, double rtol, double atol) {
  if (rtol < 0) rtol = default_rtol(got.dtype());
  if (atol < 0) atol = default_atol(got.dtype());
  ASSERT_EQ(got.shape(), want.shape) << label;
  std::vector<double> g = got.to_vector<double>();
  int failures = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    double a = g[i], b = want.v[i];
    bool ok;
    if (std::isnan(b)) {
      ok = std::isnan(a);
    } else if (std::isinf(b)) {
      ok = a == b;
    } else {
      ok = std::fabs(a - b) <= atol + rtol * std::fabs(b);
    }
    if (!ok && ++failures <= 5) {
      ADD_FAILURE() << label << ": element " << i << " is " << a
                    << ", expected " << b << " (rtol " << rtol << ", atol "
                    << atol << ", " << got.to_string() << ")";
    }
  }
  if (failures > 5) {
    ADD_FAILURE() << label << ": " << failures << " of " << g.size()
                  << " elements differ";
  }
}

void expect_rounded(const Tensor& got, const HostTensor& want,
                    const std::string& label, double f32_error) {
  const DType dt = got.dtype();
  if (dt != DType::f16 && dt != DType::bf16) return;
  const int mant_bits = dt == DType::f16 ? 10 : 7;
  const int min_exp = dt == DType::f16 ? -14 : -126;
  ASSERT_EQ(got.shape(), want.shape) << label;
  const std::vector<double> g = got.to_vector<double>();
  int failures = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double b = want.v[i];
    if (!std::isfinite(b)) continue;
    int e = 0;
    std::frexp(b, &e);  // |b| in [2^(e-1), 2^e).
    const int exp = b == 0.0 ? min_exp : std::max(e - 1, min_exp);
    const double half_ulp = std::ldexp(1.0, exp - mant_bits - 1);
    if (std::fabs(g[i] - b) > 1.01 * half_ulp + f32_error && ++failures <= 5) {
      ADD_FAILURE() << label << ": element " << i << " is " << g[i]
                    << ", expected " << b << " rounded to nearest " << name(dt)
                    << " (half an ulp: " << half_ulp << ")";
    }
  }
  if (failures > 5) {
    ADD_FAILURE() << label << ": " << failures << " of " << g.size()
                  << " elements are not rounded to nearest";
  }
}

double quantized_x_error(const double* x, const float* w, int64_t k,
                         QuantType type) {
  const int64_t block = block_size(type) == 256 ? 256 : 32;
  double error = 0;
  for (int64_t b = 0; b < k; b += block) {
    double amax = 0, wsum = 0;
    for (int64_t p = b; p < std::min(k, b + block); ++p) {
      amax = std::max(amax, std::fabs(x[p]));
      wsum += std::fabs(double(w[p]));
    }
    error += wsum * amax / 127 / 2;
  }
  return error;
}

}  // namespace nascent::conformance
