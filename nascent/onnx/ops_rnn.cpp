// RNN, GRU and LSTM, unrolled over time: the input projection of every
// step is one matmul up front, then each step is a matmul by the recurrent
// weight and the gates' element-wise ops. Forward, reverse and
// bidirectional; layout 0 and 1; peepholes, input_forget, clip and GRU's
// linear_before_reset. Activations: Sigmoid, Tanh, Relu. Variable
// sequence_lens are refused.
#include <fmt/format.h>

#include "nascent/onnx/node.h"

namespace nascent::onnx {

namespace {

enum class Cell { rnn, gru, lstm };

using Act = Tensor (*)(const Tensor&);

struct RnnAttrs {
  Cell cell;
  const char* op;
  int gates;              // Blocks of hidden_size in W and R: 1, 3 or 4.
  int dirs = 1;           // 2 if bidirectional.
  bool reverse = false;   // The one direction runs backwards.
  int64_t hidden = -1;    // -1: from R.
  std::vector<Act> acts;  // Per direction: 1 (RNN), 2 (GRU), 3 (LSTM).
  double clip = 0;
  bool input_forget = false, linear_before_reset = false, batch_major = false;
};

Act act_of(const Node& n, const std::string& name) {
  if (name == "Sigmoid") return sigmoid;
  if (name == "Tanh") return tanh;
  if (name == "Relu") return relu;
  n.unsupported("activation '" + name + "'");
}

RnnAttrs read_attrs(const Node& n, Cell cell) {
  RnnAttrs a;
  a.cell = cell;
  a.op = cell == Cell::rnn ? "RNN" : cell == Cell::gru ? "GRU" : "LSTM";
  a.gates = cell == Cell::rnn ? 1 : cell == Cell::gru ? 3 : 4;
  std::string dir = n.s("direction", "forward");
  if (dir == "bidirectional") {
    a.dirs = 2;
  } else if (dir == "reverse") {
    a.reverse = true;
  } else if (dir != "forward") {
    n.fail("direction must be forward, reverse or bidirectional, not '" + dir +
           "'");
  }
  a.hidden = n.i("hidden_size", -1);
  if (n.has("hidden_size") && a.hidden < 1) {
    n.fail("hidden_size must be positive");
  }
  const std::vector<std::string> defaults =
      cell == Cell::rnn   ? std::vector<std::string>{"Tanh"}
      : cell == Cell::gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  std::vector<std::string> names;
  if (n.has("activations")) {
    names = n.strings("activations");
    if (names.size() != defaults.size() * size_t(a.dirs)) {
      n.fail(fmt::format("activations: {} given, {} needed", names.size(),
                         defaults.size() * size_t(a.dirs)));
    }
  } else {
    for (int d = 0; d < a.dirs; ++d) {
      names.insert(names.end(), defaults.begin(), defaults.end());
    }
  }
  for (const auto& name : names) a.acts.push_back(act_of(n, name));
  a.clip = n.f("clip", 0.0f);
  if (a.clip < 0) n.fail("clip must not be negative");
  a.input_forget = n.i("input_forget", 0) != 0;
  a.linear_before_reset = n.i("linear_before_reset", 0) != 0;
  a.batch_major = n.i("layout", 0) != 0;
  return a;
}

void expect_shape(const RnnAttrs& a, const Tensor& t, const Shape& want,
                  const char* what) {
  if (t.shape() != want) {
    throw ShapeError(fmt::format("{}: {} is {}, expected {}", a.op, what,
                                 t.to_string(), nascent::to_string(want)));
  }
}

// One direction over the whole sequence: xw [S, B, G*H] (the input
// projection with W's bias), returns the states of every step in time
// order and the last H and C.
struct DirOut {
  std::vector<Tensor> ys;
  Tensor h, c;
};

DirOut run_direction(const RnnAttrs& a, const Tensor& xw, const Tensor& r,
                     const Tensor& rb, const Tensor& p, Tensor h, Tensor c,
                     bool backwards, const Act* act) {
  const int64_t steps = xw.shape(0), hs = h.shape(1);
  auto f = [&](int k, const Tensor& x) {
    return act[k](a.clip > 0 ? clamp(x, -a.clip, a.clip) : x);
  };
  auto block = [hs](const Tensor& t, int k) {
    return t.slice(-1, k * hs, (k + 1) * hs);
  };
  const Tensor rt = r.transpose().contiguous();  // [H, G*H]
  // R's bias joins the input projection once, for all steps, except GRU's
  // h block with linear_before_reset (the reset gate multiplies it).
  const bool lbr = a.cell == Cell::gru && a.linear_before_reset;
  Tensor rbh = lbr ? block(rb, 2) : Tensor();
  const Tensor xb =
      xw + (lbr ? cat({rb.slice(-1, 0, 2 * hs), zeros_like(rbh)}, -1) : rb);
  // LSTM's i, o and f gates share f: one call over the three blocks when no
  // peephole or input_forget sits between.
  const bool joint = a.cell == Cell::lstm && !p.defined() && !a.input_forget;
  DirOut out;
  out.ys.resize(size_t(steps));
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = backwards ? steps - 1 - s : s;
    const Tensor x = xb.select(0, t);
    if (a.cell == Cell::rnn) {
      h = f(0, x + matmul(h, rt));
    } else if (a.cell == Cell::gru) {
      // Gates z, r, h; R's h block multiplies H before (linear_before_reset)
      // or after the reset gate.
      Tensor zr =
          f(0, x.slice(-1, 0, 2 * hs) + matmul(h, rt.slice(1, 0, 2 * hs)));
      Tensor z = block(zr, 0), reset = block(zr, 1);
      Tensor rh = rt.slice(1, 2 * hs, 3 * hs);
      Tensor cand = lbr ? f(1, block(x, 2) + reset * (matmul(h, rh) + rbh))
                        : f(1, block(x, 2) + matmul(reset * h, rh));
      h = (1.0 - z) * cand + z * h;
    } else if (joint) {
      Tensor g = x + matmul(h, rt);
      Tensor iof = f(0, g.slice(-1, 0, 3 * hs));
      c = block(iof, 2) * c + block(iof, 0) * f(1, block(g, 3));
      h = block(iof, 1) * f(2, c);
    } else {
      // Gates i, o, f, c; peepholes i, o, f.
      Tensor g = x + matmul(h, rt);
      Tensor i = block(g, 0), o = block(g, 1), fg = block(g, 2);
      if (p.defined()) {
        i = i + block(p, 0) * c;
        fg = fg + block(p, 2) * c;
      }
      i = f(0, i);
      fg = a.input_forget ? 1.0 - i : f(0, fg);
      c = fg * c + i * f(1, block(g, 3));
      if (p.defined()) o = o + block(p, 1) * c;
      h = f(0, o) * f(2, c);
    }
    out.ys[size_t(t)] = h;
  }
  out.h = h;
  out.c = c;
  return out;
}

Kernel rnn(const Node& n, Cell cell) {
  RnnAttrs a = read_attrs(n, cell);
  return [a](const std::vector<Tensor>& in) {
    auto opt = [&](size_t k) { return k < in.size() ? in[k] : Tensor(); };
    Tensor x = a.batch_major ? in[0].transpose(0, 1) : in[0];  // [S, B, I]
    const Tensor &w = in[1], &r = in[2];
    if (x.ndim() != 3 || w.ndim() != 3 || r.ndim() != 3) {
      throw ShapeError(fmt::format("{}: X {}, W {} and R {} must be 3-D", a.op,
                                   in[0].to_string(), w.to_string(),
                                   r.to_string()));
    }
    const int64_t steps = x.shape(0), batch = x.shape(1), dirs = a.dirs;
    const int64_t hs = a.hidden > 0 ? a.hidden : r.shape(2);
    const int64_t gh = a.gates * hs;
    expect_shape(a, w, {dirs, gh, x.shape(2)}, "W");
    expect_shape(a, r, {dirs, gh, hs}, "R");
    Tensor b = opt(3), lens = opt(4), h0 = opt(5), c0 = opt(6), p = opt(7);
    if (b.defined()) expect_shape(a, b, {dirs, 2 * gh}, "B");
    if (lens.defined()) {
      for (int64_t v : host_ints(lens)) {
        if (v != steps) {
          throw UnsupportedError(fmt::format(
              "{}: sequence_lens other than the sequence's length ({})", a.op,
              steps));
        }
      }
    }
    const Shape state = {dirs, batch, hs};
    for (Tensor* s : {&h0, &c0}) {
      if (s->defined() && a.batch_major) *s = s->transpose(0, 1);
      if (s->defined()) expect_shape(a, *s, state, "initial state");
    }
    if (p.defined()) expect_shape(a, p, {dirs, 3 * hs}, "P");
    const Tensor xs = x.reshape({steps * batch, x.shape(2)});
    std::vector<Tensor> ys(static_cast<size_t>(steps)), hs_out, cs_out;
    std::vector<std::vector<Tensor>> per_dir;
    for (int64_t d = 0; d < dirs; ++d) {
      Tensor xw = matmul(xs, w.select(0, d).transpose());
      Tensor rb;
      if (b.defined()) {
        xw = xw + b.select(0, d).slice(0, 0, gh);
        rb = b.select(0, d).slice(0, gh, 2 * gh);
      } else {
        rb = zeros({gh}, x.backend(), x.dtype());
      }
      Tensor h = h0.defined() ? h0.select(0, d)
                              : zeros({batch, hs}, x.backend(), x.dtype());
      Tensor c = c0.defined() ? c0.select(0, d)
                              : zeros({batch, hs}, x.backend(), x.dtype());
      const size_t per = a.acts.size() / size_t(dirs);
      DirOut o =
          run_direction(a, xw.reshape({steps, batch, gh}), r.select(0, d), rb,
                        p.defined() ? p.select(0, d) : Tensor(), h, c,
                        a.reverse || d == 1, a.acts.data() + d * per);
      per_dir.push_back(std::move(o.ys));
      hs_out.push_back(o.h);
      cs_out.push_back(o.c);
    }
    for (int64_t t = 0; t < steps; ++t) {
      std::vector<Tensor> at;
      for (const auto& ysd : per_dir) at.push_back(ysd[size_t(t)]);
      ys[size_t(t)] = stack(at, 0);  // [D, B, H]
    }
    Tensor y = steps > 0 ? stack(ys, 0)
                         : zeros({0, dirs, batch, hs}, x.backend(), x.dtype());
    Tensor yh = stack(hs_out, 0), yc = stack(cs_out, 0);
    if (a.batch_major) {
      y = y.permute({2, 0, 1, 3}).contiguous();
      yh = yh.transpose(0, 1).contiguous();
      yc = yc.transpose(0, 1).contiguous();
    }
    std::vector<Tensor> out = {y, yh};
    if (a.cell == Cell::lstm) out.push_back(yc);
    return out;
  };
}

}  // namespace

void register_rnn(Registry& r) {
  r["RNN"] = {[](const Node& n) { return rnn(n, Cell::rnn); }, 3, 6};
  r["GRU"] = {[](const Node& n) { return rnn(n, Cell::gru); }, 3, 6};
  r["LSTM"] = {[](const Node& n) { return rnn(n, Cell::lstm); }, 3, 8};
}

}  // namespace nascent::onnx
