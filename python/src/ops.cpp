// The ops of core/ops.h as functions of the module (nascent.exp(x)) and,
// where PyTorch has them, as Tensor methods (x.exp()), with PyTorch's names
// and arguments (dim, keepdim). Creation functions take dtype= and device=.
#include "nascent/core/quant.h"
#include "nascent/core/random.h"
#include "python/src/common.h"

namespace nascent::python {

namespace {

using GIL = py::call_guard<py::gil_scoped_release>;

template <class F, class... Extra>
void both(py::module_& m, py::class_<Tensor>& cls, const char* name, F f,
          const Extra&... extra) {
  m.def(name, f, py::arg("input"), extra...);
  cls.def(name, f, extra...);
}

Tensor reduce_with(Tensor (*f)(const Tensor&, const Axes&, bool),
                   const Tensor& x, const py::object& dim, bool keepdim) {
  return f(x, axes_arg(dim), keepdim);
}

// stride 0: the kernel size, as PyTorch's default.
Pool2dParams pool_params(int64_t k, int64_t stride, int64_t padding) {
  Pool2dParams p;
  p.kernel[0] = p.kernel[1] = k;
  p.stride[0] = p.stride[1] = stride ? stride : k;
  p.padding[0] = p.padding[1] = padding;
  return p;
}

QuantType quant_arg(const std::string& name) {
  std::optional<QuantType> t = quant_type_from_name(name);
  if (!t) {
    throw ValueError("quant type '" + name +
                     "' is unknown (f32, f16, bf16, q8_0, q4_0, q4_K, q6_K, "
                     "...)");
  }
  return *t;
}

RopeMode rope_mode_arg(const std::string& mode) {
  if (mode == "norm") return RopeMode::norm;
  if (mode == "neox") return RopeMode::neox;
  throw ValueError("rope: mode must be 'norm' or 'neox', got '" + mode + "'");
}

Tensor made(Tensor t, bool requires_grad) {
  if (requires_grad) autodiff::set_requires_grad(t);
  return t;
}

}  // namespace

void bind_ops(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  auto dev = [](const py::object& d) -> Backend& { return *device_arg(d).ad; };

  // Creation.
  const auto kw = [](py::module_& mod, const char* name, auto f,
                     const char* doc) {
    mod.def(name, f, py::kw_only(), py::arg("dtype") = py::none(),
            py::arg("device") = py::none(), py::arg("requires_grad") = false,
            doc);
  };
  kw(
      m, "zeros",
      [dev](py::args s, py::object dt, py::object d, bool rg) {
        return made(zeros(shape_args(s), dev(d), dtype_arg(dt, DType::f32)),
                    rg);
      },
      "zeros(*shape, dtype=None, device=None)");
  kw(
      m, "ones",
      [dev](py::args s, py::object dt, py::object d, bool rg) {
        return made(ones(shape_args(s), dev(d), dtype_arg(dt, DType::f32)), rg);
      },
      "ones(*shape, dtype=None, device=None)");
  m.def(
      "full",
      [dev](py::object shape, py::object value, py::object dt, py::object d,
            bool rg) {
        Scalar v = scalar_arg(value);
        DType fallback = py::isinstance<py::float_>(value)  ? DType::f32
                         : py::isinstance<py::bool_>(value) ? DType::boolean
                                                            : DType::i64;
        return made(full(shape_seq(shape), v, dev(d), dtype_arg(dt, fallback)),
                    rg);
      },
      py::arg("size"), py::arg("fill_value"), py::kw_only(),
      py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false);
  m.def("zeros_like", [](const Tensor& t) { return zeros_like(t); });
  m.def("ones_like", [](const Tensor& t) { return ones_like(t); });
  m.def("full_like", [](const Tensor& t, py::object v) {
    return full_like(t, scalar_arg(v));
  });
  m.def(
      "arange",
      [dev](py::object start, py::object end, py::object step, py::object dt,
            py::object d) {
        if (end.is_none()) {
          end = start;
          start = py::int_(0);
        }
        bool ints = py::isinstance<py::int_>(start) &&
                    py::isinstance<py::int_>(end) &&
                    py::isinstance<py::int_>(step);
        return arange(scalar_arg(start), scalar_arg(end), scalar_arg(step),
                      dev(d), dtype_arg(dt, ints ? DType::i64 : DType::f32));
      },
      py::arg("start"), py::arg("end") = py::none(), py::arg("step") = 1,
      py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none());
  m.def(
      "rand",
      [dev](py::args s, uint64_t seed, py::object dt, py::object d, bool rg) {
        return made(
            rand(shape_args(s), dev(d), seed, dtype_arg(dt, DType::f32)), rg);
      },
      py::kw_only(), py::arg("seed") = 0, py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false,
      "Uniform in [0, 1); a seed gives the same numbers on every device.");
  m.def(
      "randn",
      [dev](py::args s, uint64_t seed, py::object dt, py::object d, bool rg) {
        return made(
            randn(shape_args(s), dev(d), seed, dtype_arg(dt, DType::f32)), rg);
      },
      py::kw_only(), py::arg("seed") = 0, py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false,
      "Standard normal; a seed gives the same numbers on every device.");

  // Element-wise unary.
  using U = Tensor (*)(const Tensor&);
  const std::pair<const char*, U> unary_ops[] = {
      {"neg", &neg},         {"abs", &abs},
      {"sign", &sign},       {"exp", &exp},
      {"log", &log},         {"log1p", &log1p},
      {"expm1", &expm1},     {"sqrt", &sqrt},
      {"rsqrt", &rsqrt},     {"sin", &sin},
      {"cos", &cos},         {"tanh", &tanh},
      {"sigmoid", &sigmoid}, {"relu", &relu},
      {"silu", &silu},       {"erf", &erf},
      {"floor", &floor},     {"ceil", &ceil},
      {"round", &round},     {"reciprocal", &reciprocal},
      {"square", &square},   {"logical_not", &logical_not}};
  for (auto [name, f] : unary_ops) {
    U fn = f;
    both(m, cls, name, [fn](const Tensor& x) { return fn(x); });
  }
  both(
      m, cls, "gelu",
      [](const Tensor& x, const std::string& approximate) {
        if (approximate != "none" && approximate != "tanh") {
          throw ValueError("gelu: approximate must be 'none' or 'tanh', got '" +
                           approximate + "'");
        }
        return approximate == "tanh" ? gelu_tanh(x) : gelu(x);
      },
      py::arg("approximate") = "none");
  both(
      m, cls, "clamp",
      [](const Tensor& x, double min, double max) {
        return clamp(x, min, max);
      },
      py::arg("min"), py::arg("max"));

  // Element-wise binary (Tensor or number on the right).
  const std::pair<const char*, BinaryOp> binary_ops[] = {
      {"add", BinaryOp::add},
      {"sub", BinaryOp::sub},
      {"mul", BinaryOp::mul},
      {"div", BinaryOp::div},
      {"pow", BinaryOp::pow},
      {"maximum", BinaryOp::maximum},
      {"minimum", BinaryOp::minimum},
      {"eq", BinaryOp::eq},
      {"ne", BinaryOp::ne},
      {"lt", BinaryOp::lt},
      {"le", BinaryOp::le},
      {"gt", BinaryOp::gt},
      {"ge", BinaryOp::ge},
      {"logical_and", BinaryOp::logical_and},
      {"logical_or", BinaryOp::logical_or},
      {"logical_xor", BinaryOp::logical_xor}};
  for (auto [name, op] : binary_ops) {
    BinaryOp o = op;
    both(
        m, cls, name,
        [o](const Tensor& a, const py::object& b) {
          if (py::isinstance<Tensor>(b))
            return binary(o, a, b.cast<const Tensor&>());
          if (o == BinaryOp::pow) return pow(a, b.cast<double>());
          return binary(o, a, scalar_arg(b));
        },
        py::arg("other"));
  }
  m.def("where", [](const Tensor& c, const py::object& a, const py::object& b) {
    Tensor ta = py::isinstance<Tensor>(a)
                    ? a.cast<Tensor>()
                    : tensor_or_scalar(a, b.cast<Tensor>());
    return where(c, ta, tensor_or_scalar(b, ta));
  });
  both(
      m, cls, "masked_fill",
      [](const Tensor& x, const Tensor& mask, const py::object& v) {
        return masked_fill(x, mask, scalar_arg(v));
      },
      py::arg("mask"), py::arg("value"));

  // Reductions.
  using R = Tensor (*)(const Tensor&, const Axes&, bool);
  const std::pair<const char*, R> reductions[] = {
      {"sum", &sum},  {"mean", &mean}, {"amax", &max},
      {"amin", &min}, {"prod", &prod}, {"logsumexp", &logsumexp}};
  for (auto [name, f] : reductions) {
    R fn = f;
    both(
        m, cls, name,
        [fn](const Tensor& x, const py::object& dim, bool keepdim) {
          return reduce_with(fn, x, dim, keepdim);
        },
        py::arg("dim") = py::none(), py::arg("keepdim") = false);
  }
  for (const char* name : {"max", "min"}) {  // Values only, as amax/amin.
    R fn = std::string(name) == "max" ? R(&max) : R(&min);
    both(
        m, cls, name,
        [fn](const Tensor& x, const py::object& dim, bool keepdim) {
          return reduce_with(fn, x, dim, keepdim);
        },
        py::arg("dim") = py::none(), py::arg("keepdim") = false);
  }
  both(
      m, cls, "var",
      [](const Tensor& x, const py::object& dim, int64_t correction,
         bool keepdim) { return var(x, axes_arg(dim), correction, keepdim); },
      py::arg("dim") = py::none(), py::kw_only(), py::arg("correction") = 1,
      py::arg("keepdim") = false);
  both(
      m, cls, "std",
      [](const Tensor& x, const py::object& dim, int64_t correction,
         bool keepdim) { return std(x, axes_arg(dim), correction, keepdim); },
      py::arg("dim") = py::none(), py::kw_only(), py::arg("correction") = 1,
      py::arg("keepdim") = false);
  both(
      m, cls, "argmax",
      [](const Tensor& x, const py::object& dim, bool keepdim) {
        return dim.is_none() ? argmax(x)
                             : argmax(x, dim.cast<int64_t>(), keepdim);
      },
      py::arg("dim") = py::none(), py::arg("keepdim") = false);
  both(
      m, cls, "argmin",
      [](const Tensor& x, const py::object& dim, bool keepdim) {
        return dim.is_none() ? argmin(x)
                             : argmin(x, dim.cast<int64_t>(), keepdim);
      },
      py::arg("dim") = py::none(), py::arg("keepdim") = false);
  both(
      m, cls, "cumsum",
      [](const Tensor& x, int64_t dim) { return cumsum(x, dim); },
      py::arg("dim"));

  // Linear algebra, convolution, pooling, softmax and norms.
  m.def(
      "matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); },
      GIL());
  cls.def(
      "matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); },
      GIL());
  m.def(
      "conv2d",
      [](const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias,
         int64_t stride, int64_t padding, int64_t dilation, int64_t groups) {
        Conv2dParams p{.stride = {stride, stride},
                       .padding = {padding, padding},
                       .dilation = {dilation, dilation},
                       .groups = groups};
        return conv2d(x, w, bias ? &*bias : nullptr, p);
      },
      py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(),
      py::arg("stride") = 1, py::arg("padding") = 0, py::arg("dilation") = 1,
      py::arg("groups") = 1, GIL());
  m.def(
      "max_pool2d",
      [](const Tensor& x, int64_t k, int64_t stride, int64_t padding) {
        return max_pool2d(x, pool_params(k, stride, padding));
      },
      py::arg("input"), py::arg("kernel_size"), py::arg("stride") = 0,
      py::arg("padding") = 0);
  m.def(
      "avg_pool2d",
      [](const Tensor& x, int64_t k, int64_t stride, int64_t padding) {
        return avg_pool2d(x, pool_params(k, stride, padding));
      },
      py::arg("input"), py::arg("kernel_size"), py::arg("stride") = 0,
      py::arg("padding") = 0);
  both(
      m, cls, "softmax",
      [](const Tensor& x, int64_t dim) { return softmax(x, dim); },
      py::arg("dim") = -1);
  both(
      m, cls, "log_softmax",
      [](const Tensor& x, int64_t dim) { return log_softmax(x, dim); },
      py::arg("dim") = -1);
  m.def(
      "layer_norm",
      [](const Tensor& x, const std::optional<Tensor>& w,
         const std::optional<Tensor>& b, double eps, int64_t ndim) {
        return layer_norm(x, w ? &*w : nullptr, b ? &*b : nullptr, eps, ndim);
      },
      py::arg("input"), py::arg("weight") = py::none(),
      py::arg("bias") = py::none(), py::arg("eps") = 1e-5,
      py::arg("normalized_ndim") = 1);
  m.def(
      "rms_norm",
      [](const Tensor& x, const std::optional<Tensor>& w, double eps,
         int64_t ndim) { return rms_norm(x, w ? &*w : nullptr, eps, ndim); },
      py::arg("input"), py::arg("weight") = py::none(), py::arg("eps") = 1e-6,
      py::arg("normalized_ndim") = 1);
  m.def(
      "scaled_dot_product_attention",
      [](const Tensor& q, const Tensor& k, const Tensor& v,
         const std::optional<Tensor>& mask, bool causal,
         std::optional<double> scale) {
        AttentionParams p;
        p.causal = causal;
        if (scale) p.scale = *scale;
        return scaled_dot_product_attention(q, k, v, p,
                                            mask ? &*mask : nullptr);
      },
      py::arg("query"), py::arg("key"), py::arg("value"),
      py::arg("attn_mask") = py::none(), py::arg("is_causal") = false,
      py::arg("scale") = py::none(), GIL());
  m.def("swiglu",
        [](const Tensor& g, const Tensor& u) { return swiglu(g, u); });

  // Indexing and shape ops.
  both(
      m, cls, "gather",
      [](const Tensor& x, int64_t dim, const Tensor& i) {
        return gather(x, dim, i);
      },
      py::arg("dim"), py::arg("index"));
  both(
      m, cls, "scatter_add",
      [](const Tensor& x, int64_t dim, const Tensor& i, const Tensor& s) {
        return scatter_add(x, dim, i, s);
      },
      py::arg("dim"), py::arg("index"), py::arg("src"));
  both(
      m, cls, "index_select",
      [](const Tensor& x, int64_t dim, const Tensor& i) {
        return index_select(x, dim, i);
      },
      py::arg("dim"), py::arg("index"));
  m.def(
      "embedding",
      [](const Tensor& ids, const Tensor& w) { return embedding(w, ids); },
      py::arg("input"), py::arg("weight"));
  m.def(
      "one_hot", [](const Tensor& ids, int64_t n) { return one_hot(ids, n); },
      py::arg("input"), py::arg("num_classes"));
  m.def(
      "cat",
      [](const std::vector<Tensor>& ts, int64_t dim) { return cat(ts, dim); },
      py::arg("tensors"), py::arg("dim") = 0);
  m.def(
      "stack",
      [](const std::vector<Tensor>& ts, int64_t dim) { return stack(ts, dim); },
      py::arg("tensors"), py::arg("dim") = 0);
  both(
      m, cls, "split",
      [](const Tensor& x, const py::object& size, int64_t dim) {
        if (py::isinstance<py::int_>(size))
          return split(x, size.cast<int64_t>(), dim);
        return split(x, shape_seq(size), dim);
      },
      py::arg("split_size_or_sections"), py::arg("dim") = 0);
  both(
      m, cls, "chunk",
      [](const Tensor& x, int64_t chunks, int64_t dim) {
        return chunk(x, chunks, dim);
      },
      py::arg("chunks"), py::arg("dim") = 0);
  m.def(
      "pad",
      [](const Tensor& x, const std::vector<int64_t>& pads, double value) {
        return pad(x, pads, value);
      },
      py::arg("input"), py::arg("pad"), py::arg("value") = 0.0);
  both(
      m, cls, "flip",
      [](const Tensor& x, const py::object& dims) {
        return flip(x, axes_arg(dims));
      },
      py::arg("dims"));
  cls.def("repeat",
          [](const Tensor& x, py::args r) { return repeat(x, shape_args(r)); });
  both(
      m, cls, "tril", [](const Tensor& x, int64_t k) { return tril(x, k); },
      py::arg("diagonal") = 0);
  both(
      m, cls, "triu", [](const Tensor& x, int64_t k) { return triu(x, k); },
      py::arg("diagonal") = 0);
  m.def("broadcast_to", [](const Tensor& x, py::object s) {
    return broadcast_to(x, shape_seq(s));
  });

  // Random draws with their parameters (a seed gives the same numbers on
  // every device).
  m.def(
      "uniform",
      [dev](py::object size, double low, double high, uint64_t seed,
            py::object dt, py::object d) {
        Generator gen(seed);
        return uniform(shape_seq(size), low, high, dev(d), gen,
                       dtype_arg(dt, DType::f32));
      },
      py::arg("size"), py::arg("low") = 0.0, py::arg("high") = 1.0,
      py::kw_only(), py::arg("seed") = 0, py::arg("dtype") = py::none(),
      py::arg("device") = py::none());
  m.def(
      "normal",
      [dev](py::object size, double mean, double std, uint64_t seed,
            py::object dt, py::object d) {
        Generator gen(seed);
        return normal(shape_seq(size), mean, std, dev(d), gen,
                      dtype_arg(dt, DType::f32));
      },
      py::arg("size"), py::arg("mean") = 0.0, py::arg("std") = 1.0,
      py::kw_only(), py::arg("seed") = 0, py::arg("dtype") = py::none(),
      py::arg("device") = py::none());
  m.def(
      "bernoulli",
      [dev](py::object size, double p, uint64_t seed, py::object dt,
            py::object d) {
        Generator gen(seed);
        return bernoulli(shape_seq(size), p, dev(d), gen,
                         dtype_arg(dt, DType::f32));
      },
      py::arg("size"), py::arg("p"), py::kw_only(), py::arg("seed") = 0,
      py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      "1 with probability p, else 0.");

  // Transformer ops.
  m.def("geglu", [](const Tensor& g, const Tensor& u) { return geglu(g, u); });
  m.def(
      "rope",
      [](const Tensor& x, const py::object& positions, int64_t dims,
         const std::string& mode, double base, double scale,
         const std::optional<Tensor>& freq_factors) {
        RopeParams p{.dims = dims,
                     .mode = rope_mode_arg(mode),
                     .base = base,
                     .scale = scale};
        const Tensor* ff = freq_factors ? &*freq_factors : nullptr;
        if (py::isinstance<py::int_>(positions))
          return rope(x, positions.cast<int64_t>(), p, ff);
        return rope(x, positions.cast<Tensor>(), p, ff);
      },
      py::arg("input"), py::arg("positions"), py::arg("dims") = 0,
      py::arg("mode") = "norm", py::arg("base") = 10000.0,
      py::arg("scale") = 1.0, py::arg("freq_factors") = py::none(),
      "Rotary embedding of x [..., n, heads, head_dim] (ggml_rope_ext): "
      "positions a tensor [n] or an int offset (offset, offset + 1, ...).");

  // GGML block types (names as GGUF's: "q8_0", "q4_K", ...).
  m.def(
      "quantize",
      [](const Tensor& x, const std::string& type) {
        return quantize(x, quant_arg(type));
      },
      py::arg("input"), py::arg("type"),
      "The rows of x [..., K] as GGML blocks, u8 [..., row_bytes].");
  m.def(
      "dequantize",
      [](const Tensor& w, const std::string& type) {
        return dequantize(w, quant_arg(type));
      },
      py::arg("input"), py::arg("type"));
  m.def(
      "qmatmul",
      [](const Tensor& x, const Tensor& w, const std::string& type) {
        return qmatmul(x, w, quant_arg(type));
      },
      py::arg("input"), py::arg("weight"), py::arg("type"), GIL(),
      "x [..., K] @ W^T for W [N, row_bytes] of that block type.");
}

}  // namespace nascent::python
