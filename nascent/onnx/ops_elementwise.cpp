// Element-wise operators: arithmetic, comparison, logic, activations, Cast,
// Clip and Where. ONNX gives both operands one dtype (nascent's promotion
// then keeps it); the few that differ (integer Div and Mod, Pow's exponent)
// say so below.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "nascent/onnx/node.h"

namespace nascent::onnx {

namespace {

using Fn1 = Tensor (*)(const Tensor&);
using Fn2 = Tensor (*)(const Tensor&, const Tensor&);

OpDef unary_def(std::function<Tensor(const Tensor&)> fn) {
  return {[fn](const Node&) -> Kernel {
            return [fn](const std::vector<Tensor>& in) {
              return std::vector<Tensor>{fn(in[0])};
            };
          },
          1, 1};
}

// A unary op with float attributes read at load.
template <class Make>
OpDef unary_attr(Make make) {
  return {[make](const Node& n) -> Kernel {
            auto fn = make(n);
            return [fn](const std::vector<Tensor>& in) {
              return std::vector<Tensor>{fn(in[0])};
            };
          },
          1, 1};
}

OpDef binary_def(std::function<Tensor(const Tensor&, const Tensor&)> fn) {
  return {[fn](const Node&) -> Kernel {
            return [fn](const std::vector<Tensor>& in) {
              if (in[0].dtype() != in[1].dtype()) {
                throw DTypeError(
                    fmt::format("operands of different types: {} and {}",
                                in[0].to_string(), in[1].to_string()));
              }
              return std::vector<Tensor>{fn(in[0], in[1])};
            };
          },
          2, 2};
}

OpDef variadic_def(std::function<Tensor(const Tensor&, const Tensor&)> fn,
                   bool mean = false) {
  return {[fn, mean](const Node&) -> Kernel {
            return [fn, mean](const std::vector<Tensor>& in) {
              Tensor acc = in[0];
              for (size_t k = 1; k < in.size(); ++k) acc = fn(acc, in[k]);
              if (mean) acc = div(acc, Scalar(double(in.size())));
              // A single input still makes a new value, broadcast or not.
              return std::vector<Tensor>{acc};
            };
          },
          1, -1};
}

bool integral(DType d) {
  return !is_floating(d) && d != DType::boolean;
}

// Integer division truncates toward zero; floats divide.
// Small integer operands (the shape arithmetic of exported graphs) divide
// on the host, exactly and in one step; a zero divisor is refused rather
// than left to the hardware.
Tensor host_int_div(const Tensor& a, const Tensor& b) {
  std::vector<int64_t> x = a.to_vector<int64_t>(), y = b.to_vector<int64_t>();
  const bool a_scalar =
      a.numel() == 1 && (a.ndim() == 0 || a.ndim() == b.ndim());
  const Shape& shape = a_scalar ? b.shape() : a.shape();
  std::vector<int64_t> q(std::max(x.size(), y.size()));
  for (size_t i = 0; i < q.size(); ++i) {
    int64_t n = x[x.size() == 1 ? 0 : i], d = y[y.size() == 1 ? 0 : i];
    if (d == 0) throw ValueError("Div: integer division by zero");
    q[i] = d == -1 ? int64_t(0 - uint64_t(n)) : n / d;  // C++ truncates.
  }
  return from_vector(q, shape, a.backend()).cast(a.dtype());
}

Tensor onnx_div(const Tensor& a, const Tensor& b) {
  if (!integral(a.dtype())) return div(a, b);
  const bool one = a.numel() == 1 || b.numel() == 1;
  if (a.numel() >= 1 && b.numel() >= 1 && a.numel() <= 64 && b.numel() <= 64 &&
      (a.shape() == b.shape() || (one && a.ndim() == b.ndim()) ||
       (b.numel() == 1 && b.ndim() == 0) ||
       (a.numel() == 1 && a.ndim() == 0))) {
    return host_int_div(a, b);
  }
  Tensor q = div(a.cast(DType::f64), b.cast(DType::f64));
  return (sign(q) * floor(abs(q))).cast(a.dtype());
}

// atan from core's sin and cos, which core lacks as an op: |x| > 1 folds
// to pi/2 - atan(1/|x|), a rational guess within 0.005 of atan on [0, 1],
// then three Newton steps on sin(y) - r cos(y) = 0 (the error squares each
// step: below 1e-15), all in f64.
Tensor atan_of(const Tensor& x) {
  const double half_pi = 1.57079632679489661923;
  Tensor t = x.cast(DType::f64), a = abs(t);
  Tensor big = gt(a, Scalar(1.0));
  Tensor r = where(big, reciprocal(a), a);
  Tensor y = r / (r * r * 0.28 + 1.0);
  for (int i = 0; i < 3; ++i) {
    Tensor s = sin(y), c = cos(y);
    y = y - (s - r * c) / (c + r * s);
  }
  y = where(big, (-y) + half_pi, y);
  return (sign(t) * y).cast(x.dtype());
}

Tensor onnx_pow(const Tensor& a, const Tensor& b) {
  if (integral(a.dtype())) {
    return round(pow(a.cast(DType::f64), b.cast(DType::f64))).cast(a.dtype());
  }
  return pow(a, b.cast(a.dtype()));
}

}  // namespace

void register_elementwise(Registry& r) {
  r["Add"] = binary_def(static_cast<Fn2>(add));
  r["Sub"] = binary_def(static_cast<Fn2>(sub));
  r["Mul"] = binary_def(static_cast<Fn2>(mul));
  r["Div"] = binary_def(onnx_div);
  r["Pow"] = {[](const Node&) -> Kernel {
                return [](const std::vector<Tensor>& in) {
                  return std::vector<Tensor>{onnx_pow(in[0], in[1])};
                };
              },
              2, 2};
  r["Mod"] = {[](const Node& n) -> Kernel {
                bool fmod = n.i("fmod", 0) != 0;
                return [fmod](const std::vector<Tensor>& in) {
                  if (integral(in[0].dtype()) && fmod == false) {
                    Tensor a = in[0].cast(DType::f64),
                           b = in[1].cast(DType::f64);
                    return std::vector<Tensor>{
                        (a - floor(a / b) * b).cast(in[0].dtype())};
                  }
                  if (!fmod) {
                    throw UnsupportedError("Mod: floating inputs need fmod=1");
                  }
                  Tensor a = in[0].cast(DType::f64), b = in[1].cast(DType::f64);
                  Tensor q = a / b;
                  Tensor t = sign(q) * floor(abs(q));
                  return std::vector<Tensor>{(a - t * b).cast(in[0].dtype())};
                };
              },
              2, 2};
  r["Equal"] = binary_def(static_cast<Fn2>(eq));
  r["Less"] = binary_def(static_cast<Fn2>(lt));
  r["LessOrEqual"] = binary_def(static_cast<Fn2>(le));
  r["Greater"] = binary_def(static_cast<Fn2>(gt));
  r["GreaterOrEqual"] = binary_def(static_cast<Fn2>(ge));
  r["And"] = binary_def(logical_and);
  r["Or"] = binary_def(logical_or);
  r["Xor"] = binary_def(logical_xor);
  r["Max"] = variadic_def(static_cast<Fn2>(maximum));
  r["Min"] = variadic_def(static_cast<Fn2>(minimum));
  // Unchanged since these opsets (later versions only add types).
  r["And"].since = r["Or"].since = r["Xor"].since = 7;
  r["Sum"] = variadic_def(static_cast<Fn2>(add));
  r["Mean"] = variadic_def(static_cast<Fn2>(add), true);

  r["Not"] = unary_def(logical_not);
  r["Abs"] = unary_def(static_cast<Fn1>(abs));
  r["Neg"] = unary_def(static_cast<Fn1>(neg));
  r["Sign"] = unary_def(static_cast<Fn1>(sign));
  r["Exp"] = unary_def(static_cast<Fn1>(exp));
  r["Log"] = unary_def(static_cast<Fn1>(log));
  r["Sqrt"] = unary_def(static_cast<Fn1>(sqrt));
  r["Reciprocal"] = unary_def(static_cast<Fn1>(reciprocal));
  r["Relu"] = unary_def(relu);
  r["Sigmoid"] = unary_def(sigmoid);
  r["Tanh"] = unary_def(static_cast<Fn1>(tanh));
  r["Erf"] = unary_def(static_cast<Fn1>(erf));
  r["Floor"] = unary_def(static_cast<Fn1>(floor));
  r["Ceil"] = unary_def(static_cast<Fn1>(ceil));
  r["Round"] = unary_def(static_cast<Fn1>(round));
  r["Sin"] = unary_def(static_cast<Fn1>(sin));
  r["Cos"] = unary_def(static_cast<Fn1>(cos));
  r["Not"].since = 1;
  r["Tan"] = unary_def([](const Tensor& x) { return sin(x) / cos(x); });
  r["Atan"] = unary_def(atan_of);
  // asin x = atan(x / sqrt((1 - x)(1 + x))), acos x = 2 atan(sqrt((1 - x) /
  // (1 + x))): no cancellation near +-1; |x| > 1 gives NaN.
  r["Asin"] = unary_def([](const Tensor& x) {
    Tensor t = x.cast(DType::f64);
    return atan_of(t / sqrt((1.0 - t) * (t + 1.0))).cast(x.dtype());
  });
  r["Acos"] = unary_def([](const Tensor& x) {
    Tensor t = x.cast(DType::f64);
    return (atan_of(sqrt((1.0 - t) / (t + 1.0))) * 2.0).cast(x.dtype());
  });
  r["Sinh"] =
      unary_def([](const Tensor& x) { return (exp(x) - exp(-x)) * 0.5; });
  r["Cosh"] =
      unary_def([](const Tensor& x) { return (exp(x) + exp(-x)) * 0.5; });
  r["Asinh"] = unary_def([](const Tensor& x) {  // Odd: no cancellation.
    Tensor a = abs(x);
    return sign(x) * log(a + sqrt(a * a + 1.0));
  });
  r["Acosh"] =
      unary_def([](const Tensor& x) { return log(x + sqrt(x * x - 1.0)); });
  r["Atanh"] = unary_def(
      [](const Tensor& x) { return log((x + 1.0) / (1.0 - x)) * 0.5; });
  r["Identity"] = unary_def([](const Tensor& x) { return x; });
  r["IsNaN"] = unary_def([](const Tensor& x) { return ne(x, x); });
  r["Softsign"] = unary_def([](const Tensor& x) { return x / (abs(x) + 1.0); });
  // log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|).
  r["Softplus"] =
      unary_def([](const Tensor& x) { return relu(x) + log1p(exp(-abs(x))); });
  r["Mish"] = unary_def(
      [](const Tensor& x) { return x * tanh(relu(x) + log1p(exp(-abs(x)))); });
  r["HardSwish"] = unary_def(
      [](const Tensor& x) { return x * clamp(x * (1.0 / 6) + 0.5, 0.0, 1.0); });
  r["IsInf"] = unary_attr([](const Node& n) {
    bool neg_inf = n.i("detect_negative", 1) != 0;
    bool pos_inf = n.i("detect_positive", 1) != 0;
    return [neg_inf, pos_inf](const Tensor& x) {
      const double inf = std::numeric_limits<double>::infinity();
      Tensor none = zeros(x.shape(), x.backend(), DType::boolean);
      Tensor p = pos_inf ? eq(x, inf) : none;
      Tensor q = neg_inf ? eq(x, -inf) : none;
      return logical_or(p, q);
    };
  });
  r["LeakyRelu"] = unary_attr([](const Node& n) {
    double alpha = n.f("alpha", 0.01f);
    return [alpha](const Tensor& x) { return where(lt(x, 0.0), x * alpha, x); };
  });
  r["Elu"] = unary_attr([](const Node& n) {
    double alpha = n.f("alpha", 1.0f);
    return [alpha](const Tensor& x) {
      return where(lt(x, 0.0), expm1(x) * alpha, x);
    };
  });
  r["Celu"] = unary_attr([](const Node& n) {
    double alpha = n.f("alpha", 1.0f);
    return [alpha](const Tensor& x) {
      return relu(x) + minimum(expm1(x / alpha) * alpha, Scalar(0.0));
    };
  });
  r["Celu"].since = 12;
  r["Selu"] = unary_attr([](const Node& n) {
    double alpha = n.f("alpha", 1.67326319217681884765625f);
    double gamma = n.f("gamma", 1.05070102214813232421875f);
    return [alpha, gamma](const Tensor& x) {
      return where(le(x, 0.0), expm1(x) * (alpha * gamma), x * gamma);
    };
  });
  r["ThresholdedRelu"] = unary_attr([](const Node& n) {
    double alpha = n.f("alpha", 1.0f);
    return [alpha](const Tensor& x) {
      return where(gt(x, alpha), x, zeros_like(x));
    };
  });
  r["HardSigmoid"] = unary_attr([](const Node& n) {
    double alpha = n.f("alpha", 0.2f), beta = n.f("beta", 0.5f);
    return [alpha, beta](const Tensor& x) {
      return clamp(x * alpha + beta, 0.0, 1.0);
    };
  });
  r["Gelu"] = unary_attr([](const Node& n) {
    std::string approx = n.s("approximate", "none");
    if (approx != "none" && approx != "tanh") {
      n.fail("Gelu: approximate must be 'none' or 'tanh', got '" + approx +
             "'");
    }
    Fn1 fn = approx == "tanh" ? gelu_tanh : gelu;
    return [fn](const Tensor& x) { return fn(x); };
  });
  r["Gelu"].since = 20;
  r["PRelu"] = {[](const Node&) -> Kernel {
                  return [](const std::vector<Tensor>& in) {
                    return std::vector<Tensor>{
                        where(lt(in[0], 0.0), in[0] * in[1], in[0])};
                  };
                },
                2, 2};
  r["Where"] = {[](const Node&) -> Kernel {
                  return [](const std::vector<Tensor>& in) {
                    return std::vector<Tensor>{where(in[0], in[1], in[2])};
                  };
                },
                3, 3};
  r["Clip"] = {[](const Node&) -> Kernel {
                 return [](const std::vector<Tensor>& in) {
                   Tensor x = in[0];
                   if (in.size() > 1 && in[1].defined()) {
                     x = maximum(x, in[1].reshape({}).cast(x.dtype()));
                   }
                   if (in.size() > 2 && in[2].defined()) {
                     x = minimum(x, in[2].reshape({}).cast(x.dtype()));
                   }
                   return std::vector<Tensor>{x};
                 };
               },
               1, 3};
  r["Cast"] = unary_attr([](const Node& n) {
    DType to = to_dtype(int32_t(n.required_i("to")), n.where() + ": 'to'");
    return [to](const Tensor& x) { return x.cast(to).contiguous(); };
  });
  r["CastLike"] = {[](const Node&) -> Kernel {
                     return [](const std::vector<Tensor>& in) {
                       return std::vector<Tensor>{in[0].cast(in[1].dtype())};
                     };
                   },
                   2, 2};
  // Inference: the identity, and an all-true mask where asked for.
  r["Dropout"] = {
      [](const Node&) -> Kernel {
        return [](const std::vector<Tensor>& in) {
          if (in.size() > 2 && in[2].defined() && host_double(in[2]) != 0) {
            throw UnsupportedError("Dropout: training_mode is not supported");
          }
          return std::vector<Tensor>{
              in[0], ones(in[0].shape(), in[0].backend(), DType::boolean)};
        };
      },
      1, 3};
}

}  // namespace nascent::onnx
