// OpProfiler: a Backend decorator (like autodiff's) that forwards every call
// to the backend it wraps and adds up the time each op takes, keyed by the
// op and its output and first input ("conv2d f32[64, 32, 28, 28] <-
// f32[64, 1, 28, 28]"). Wrapped under autodiff, it sees the forward and the
// backward ops of a training step as the CPU backend runs them. Time is the
// calling thread's CPU time with one thread (steady on a shared machine),
// wall time otherwise.
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "nascent/core/tensor.h"

namespace nascent::bench {

class OpProfiler final : public Backend {
 public:
  OpProfiler(Backend& inner, bool cpu_clock) : in_(inner), cpu_(cpu_clock) {}

  struct Entry {
    double ms = 0.0;
    int64_t calls = 0;
  };
  const std::map<std::string, Entry>& entries() const { return entries_; }
  void clear() { entries_.clear(); }
  double now_ms() const {
    if (cpu_) {
      timespec ts;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
    }
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  std::string name() const override { return "profile(" + in_.name() + ")"; }
  std::shared_ptr<BackendData> allocate(size_t n) override {
    return in_.allocate(n);
  }
  std::shared_ptr<BackendData> upload(const void* h, size_t n) override {
    return in_.upload(h, n);
  }
  std::shared_ptr<BackendData> wrap(std::shared_ptr<const void> owner,
                                    const void* data, size_t n) override {
    return in_.wrap(std::move(owner), data, n);
  }
  HostBytes materialize(const Tensor& t) override {
    return in_.materialize(inner(t));
  }
  void set_persistent(const Tensor& t, bool p) override {
    in_.set_persistent(inner(t), p);
  }
  bool is_persistent(const Tensor& t) const override {
    return in_.is_persistent(inner(t));
  }
  void trim() override { in_.trim(); }
  MemoryStats memory_stats() const override { return in_.memory_stats(); }

  void create(CreationOp op, Scalar a, Scalar b, Tensor& out) override {
    Timed t(this, key(nascent::name(op), out));
    Tensor o = inner(out);
    in_.create(op, a, b, o);
  }
  void random(RandomOp op, const RandomParams& p, Tensor& out) override {
    Timed t(this, key(nascent::name(op), out));
    Tensor o = inner(out);
    in_.random(op, p, o);
  }
  void copy(const Tensor& src, Tensor& dst) override {
    Timed t(this, key("copy", dst, &src));
    Tensor o = inner(dst);
    in_.copy(inner(src), o);
  }
  void unary(UnaryOp op, const Tensor& x, const UnaryParams& p,
             Tensor& out) override {
    Timed t(this, key(nascent::name(op), out, &x));
    Tensor o = inner(out);
    in_.unary(op, inner(x), p, o);
  }
  void binary(BinaryOp op, const Tensor& a, const Tensor& b,
              Tensor& out) override {
    Timed t(this, key(nascent::name(op), out, &a, &b));
    Tensor o = inner(out);
    in_.binary(op, inner(a), inner(b), o);
  }
  void where(const Tensor& c, const Tensor& a, const Tensor& b,
             Tensor& out) override {
    Timed t(this, key("where", out, &a, &b));
    Tensor o = inner(out);
    in_.where(inner(c), inner(a), inner(b), o);
  }
  void reduce(ReduceOp op, const Tensor& x, const std::vector<int>& axes,
              const ReduceParams& p, Tensor& out) override {
    Timed t(this, key(nascent::name(op), out, &x));
    Tensor o = inner(out);
    in_.reduce(op, inner(x), axes, p, o);
  }
  void scan(ScanOp op, const Tensor& x, int axis, Tensor& out) override {
    Timed t(this, key(nascent::name(op), out, &x));
    Tensor o = inner(out);
    in_.scan(op, inner(x), axis, o);
  }
  void matmul(const Tensor& a, const Tensor& b, Tensor& out) override {
    Timed t(this, key("matmul", out, &a, &b));
    Tensor o = inner(out);
    in_.matmul(inner(a), inner(b), o);
  }
  void conv2d(ConvOp op, const Tensor& a, const Tensor& b, const Tensor* bias,
              const Conv2dParams& p, Tensor& out) override {
    Timed t(this, key(nascent::name(op), out, &a, &b));
    Tensor o = inner(out), bi = bias ? inner(*bias) : Tensor();
    in_.conv2d(op, inner(a), inner(b), bias ? &bi : nullptr, p, o);
  }
  void pool2d(PoolOp op, const Tensor& x, const Tensor* indices,
              const Pool2dParams& p, Tensor& out,
              Tensor* out_indices) override {
    Timed t(this, key(nascent::name(op), out, &x));
    Tensor o = inner(out), i = indices ? inner(*indices) : Tensor(),
           oi = out_indices ? inner(*out_indices) : Tensor();
    in_.pool2d(op, inner(x), indices ? &i : nullptr, p, o,
               out_indices ? &oi : nullptr);
  }
  void softmax(SoftmaxOp op, const Tensor& x, int axis, Tensor& out) override {
    Timed t(this, key(nascent::name(op), out, &x));
    Tensor o = inner(out);
    in_.softmax(op, inner(x), axis, o);
  }
  void norm(NormOp op, const Tensor& x, const Tensor* w, const Tensor* b,
            double eps, Tensor& out, Tensor* mean, Tensor* rstd) override {
    Timed t(this, key(nascent::name(op), out, &x));
    Tensor o = inner(out), wi = w ? inner(*w) : Tensor(),
           bi = b ? inner(*b) : Tensor(), mi = mean ? inner(*mean) : Tensor(),
           ri = rstd ? inner(*rstd) : Tensor();
    in_.norm(op, inner(x), w ? &wi : nullptr, b ? &bi : nullptr, eps, o,
             mean ? &mi : nullptr, rstd ? &ri : nullptr);
  }
  void index(IndexOp op, const Tensor& x, int axis, const Tensor& idx,
             const Tensor* src, Tensor& out) override {
    Timed t(this, key(nascent::name(op), out, &x));
    Tensor o = inner(out), s = src ? inner(*src) : Tensor();
    in_.index(op, inner(x), axis, inner(idx), src ? &s : nullptr, o);
  }
  void quant(QuantOp op, const Tensor* x,
             std::span<const QuantArg> args) override {
    Timed t(this, key("quant", *args[0].out, args[0].w));
    Tensor xi = x ? inner(*x) : Tensor();
    std::vector<Tensor> ws, outs;
    std::vector<QuantArg> in_args;
    ws.reserve(args.size());
    outs.reserve(args.size());
    for (const QuantArg& a : args) {
      ws.push_back(a.w ? inner(*a.w) : Tensor());
      outs.push_back(inner(*a.out));
      in_args.push_back({a.type, a.w ? &ws.back() : nullptr, &outs.back()});
    }
    in_.quant(op, x ? &xi : nullptr, in_args);
  }

  void rope(const Tensor& x, const Tensor& pos, const Tensor* ff,
            const RopeParams& p, Tensor& out) override {
    Timed t(this, key("rope", out, &x));
    Tensor o = inner(out), f = ff ? inner(*ff) : Tensor();
    in_.rope(inner(x), inner(pos), ff ? &f : nullptr, p, o);
  }
  void attention(const Tensor& q, const Tensor& k, const Tensor& v,
                 const Tensor* mask, const AttentionParams& p,
                 Tensor& out) override {
    Timed t(this, key("attention", out, &k));
    Tensor o = inner(out), m = mask ? inner(*mask) : Tensor();
    in_.attention(inner(q), inner(k), inner(v), mask ? &m : nullptr, p, o);
  }
  void glu(GluOp op, const Tensor& gate, const Tensor& up,
           Tensor& out) override {
    Timed t(this, key(nascent::name(op), out, &gate));
    Tensor o = inner(out);
    in_.glu(op, inner(gate), inner(up), o);
  }

  void optim(OptimOp op, const OptimParams& p, Tensor& param,
             const Tensor& grad, Tensor* s0, Tensor* s1) override {
    Timed t(this, key(nascent::name(op), param, &grad));
    Tensor pi = inner(param), a = s0 ? inner(*s0) : Tensor(),
           b = s1 ? inner(*s1) : Tensor();
    in_.optim(op, p, pi, inner(grad), s0 ? &a : nullptr, s1 ? &b : nullptr);
  }

 private:
  struct Timed {
    Timed(OpProfiler* p, std::string k)
        : prof(p), key(std::move(k)), start(p->now_ms()) {}
    ~Timed() {
      Entry& e = prof->entries_[key];
      e.ms += prof->now_ms() - start;
      ++e.calls;
    }
    OpProfiler* prof;
    std::string key;
    double start;
  };

  // The same view on the wrapped backend (this one owns no storage).
  Tensor inner(const Tensor& t) const {
    return Tensor::make(t.shape(), t.strides(), t.offset(), t.dtype(), in_,
                        t.data());
  }
  static std::string describe(const Tensor& t) {
    return (t.is_contiguous() ? "" : "strided ") + t.to_string();
  }
  static std::string key(const char* op, const Tensor& out,
                         const Tensor* a = nullptr, const Tensor* b = nullptr) {
    std::string k = fmt::format("{} {}", op, out.to_string());
    if (a) k += " <- " + describe(*a);
    if (b) k += ", " + describe(*b);
    return k;
  }

  Backend& in_;
  bool cpu_;
  std::map<std::string, Entry> entries_;
};

}  // namespace nascent::bench
