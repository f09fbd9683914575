// sgd_update and adam_update on the GPU: one kernel per parameter that reads
// the parameter, its gradient and state once and writes them in place, with
// the hyper-parameters passed by value. The composed default
// (Backend::optim) costs five to seven element-wise launches per parameter
// plus the fills of their scalars, and a small model's training step waits
// on those launches, not on their bytes.
//
// The rules and their order of operations are the CPU's (cpu/optim.cpp,
// PyTorch's); f16 and bf16 compute in float and round once per stored
// value. The flags are kernel arguments rather than template parameters:
// they are the same for every thread, so their branches cost nothing next to
// the memory traffic, and one kernel per dtype keeps nvcc's build short.
#include <cmath>

#include "nascent/backends/cuda/elementwise.cuh"

namespace nascent::cuda {

namespace {

template <class C>
struct Sgd {
  C lr, wd, m, keep;
  bool decay, momentum, first, nesterov;

  NASCENT_D void operator()(C& w, C g, C& buf, C&) const {
    if (decay) g += wd * w;
    if (momentum) {
      buf = first ? g : m * buf + keep * g;
      g = nesterov ? g + m * buf : buf;
    }
    w -= lr * g;
  }
};

template <class C>
struct Adam {
  C b1, b2, eps, wd, shrink, step_size, root2;
  bool decay, decoupled;

  NASCENT_D void operator()(C& w, C g, C& m, C& v) const {
    if (decay) {
      if (decoupled) {
        w *= shrink;
      } else {
        g += wd * w;
      }
    }
    m = b1 * m + (C(1) - b1) * g;
    v = b2 * v + (C(1) - b2) * g * g;
    w = w - step_size * m / (sqrt(v) / root2 + eps);
  }
};

// One element: kStates of s0, s1 are read and written.
template <int kStates, class T, class F>
NASCENT_D void update_one(T& w, T g, T& s0, T& s1, const F& f) {
  using C = compute_t<T>;
  C cw = load_compute(w), c0 = C(0), c1 = C(0);
  if constexpr (kStates > 0) c0 = load_compute(s0);
  if constexpr (kStates > 1) c1 = load_compute(s1);
  f(cw, load_compute(g), c0, c1);
  w = convert<T>(cw);
  if constexpr (kStates > 0) s0 = convert<T>(c0);
  if constexpr (kStates > 1) s1 = convert<T>(c1);
}

// Grid-stride over V-element vectors of contiguous arrays (16-byte accesses
// when V > 1); block 0 takes the last n % V elements.
template <int V, int kStates, class T, class F>
__global__ void __launch_bounds__(kThreads)
    update_flat(T* w, const T* g, T* s0, T* s1, int64_t n, F f) {
  using VT = Vec<T, V>;
  const int64_t nvec = n / V;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < nvec;
       i += int64_t(gridDim.x) * kThreads) {
    VT vw = reinterpret_cast<const VT*>(w)[i];
    const VT vg = reinterpret_cast<const VT*>(g)[i];
    VT v0, v1;
    if constexpr (kStates > 0) v0 = reinterpret_cast<const VT*>(s0)[i];
    if constexpr (kStates > 1) v1 = reinterpret_cast<const VT*>(s1)[i];
#pragma unroll
    for (int k = 0; k < V; ++k) {
      update_one<kStates>(vw.v[k], vg.v[k], v0.v[k], v1.v[k], f);
    }
    reinterpret_cast<VT*>(w)[i] = vw;
    if constexpr (kStates > 0) reinterpret_cast<VT*>(s0)[i] = v0;
    if constexpr (kStates > 1) reinterpret_cast<VT*>(s1)[i] = v1;
  }
  const int64_t t = nvec * V + threadIdx.x;
  if (blockIdx.x == 0 && t < n) {
    T d0{}, d1{};
    update_one<kStates>(w[t], g[t], kStates > 0 ? s0[t] : d0,
                        kStates > 1 ? s1[t] : d1, f);
  }
}

template <int kStates, class T, class F>
void launch(Context& ctx, const char* op, T* w, const T* g, T* s0, T* s1,
            int64_t n, F f) {
  constexpr int V = int(16 / sizeof(T));
  const bool vec = aligned16(w) && aligned16(g) &&
                   (kStates < 1 || aligned16(s0)) &&
                   (kStates < 2 || aligned16(s1));
  if (vec) {
    update_flat<V, kStates>
        <<<grid_for(n / V, kThreads), kThreads, 0, ctx.stream>>>(w, g, s0, s1,
                                                                 n, f);
  } else {
    update_flat<1, kStates><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(
        w, g, s0, s1, n, f);
  }
  check_launch(op);
}

template <class T>
void sgd(Context& ctx, const OptimParams& p, T* w, const T* g, T* buf,
         int64_t n) {
  using C = compute_t<T>;
  Sgd<C> f{C(p.lr),
           C(p.weight_decay),
           C(p.momentum),
           C(1.0 - p.dampening),
           p.weight_decay != 0.0,
           buf != nullptr && p.momentum != 0.0,
           p.first_step,
           p.nesterov};
  if (f.momentum) {
    launch<1>(ctx, "sgd_update", w, g, buf, static_cast<T*>(nullptr), n, f);
  } else {
    launch<0>(ctx, "sgd_update", w, g, static_cast<T*>(nullptr),
              static_cast<T*>(nullptr), n, f);
  }
}

template <class T>
void adam(Context& ctx, const OptimParams& p, T* w, const T* g, T* m, T* v,
          int64_t n) {
  using C = compute_t<T>;
  Adam<C> f{C(p.beta1),
            C(p.beta2),
            C(p.eps),
            C(p.weight_decay),
            C(1.0 - p.lr * p.weight_decay),
            C(p.lr / (1.0 - std::pow(p.beta1, double(p.step)))),
            C(std::sqrt(1.0 - std::pow(p.beta2, double(p.step)))),
            p.weight_decay != 0.0,
            p.decoupled};
  launch<2>(ctx, "adam_update", w, g, m, v, n, f);
}

}  // namespace

void Backend::optim(OptimOp op, const OptimParams& p, Tensor& param,
                    const Tensor& grad, Tensor* state0, Tensor* state1) {
  DeviceGuard guard(ctx_->device);
  const int64_t n = param.numel();
  if (n == 0) return;
  // The contract lets grad take any layout (core hands in a contiguous one).
  const Tensor g = contiguous(*this, grad);
  dispatch(param.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float_v<T>) {
      T* w = data_ptr<T>(param);
      const T* pg = data_ptr<T>(g);
      switch (op) {
        case OptimOp::sgd_update:
          sgd(*ctx_, p, w, pg, state0 ? data_ptr<T>(*state0) : nullptr, n);
          return;
        case OptimOp::adam_update:
          adam(*ctx_, p, w, pg, data_ptr<T>(*state0), data_ptr<T>(*state1), n);
          return;
      }
    } else {
      unsupported(nascent::name(op), param);
    }
  });
}

}  // namespace nascent::cuda
