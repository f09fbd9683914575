// gather, index_select and scatter_add. Every tensor is read through its
// own strides; the index (i64, checked in range by the front-end) through
// its low word.
//
// gather and index_select are one kernel: x seen with a stride of 0 on the
// axis gives each output element's base, and the index value times x's
// axis stride is added (index_select sees its 1-D index broadcast to the
// output's shape).
//
// scatter_add is deterministic: one thread per output element loops over
// the index positions that can reach it and adds the matching sources in
// order, instead of one thread per source with atomics (WGSL has no float
// atomics, and their order would change the sums from run to run). That
// order is the CPU backend's, so the f32 sums agree bit for bit.
#include <fmt/format.h>

#include "nascent/backends/webgpu/elementwise.h"

namespace nascent::webgpu {

namespace {

// The WGSL of `acc + v` for a dtype (wrapping integers).
std::string add_expression(DType dt) {
  switch (dt) {
    case DType::u8:
      return "(acc + v) & 0xffu";
    case DType::i64:
      return "i64_add(acc, v)";
    default:
      return "acc + v";
  }
}

const char* kGatherBody = R"(
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nw: vec3<u32>) {
  let i = gid.x + gid.y * nw.x * WG;
  if (i >= numel()) { return; }
  let k = load_I(elem(2u, i)).x;
  store_O(elem(0u, i), load_X(u32(i32(elem(1u, i)) + i32(k) * pi(E))));
}
)";

// Extra words: positions along the axis, the index's and the source's
// strides there, the output's inner size past the axis and its length.
const char* kScatterBody = R"(
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nw: vec3<u32>) {
  let i = gid.x + gid.y * nw.x * WG;
  if (i >= numel()) { return; }
  let c = (i / P[E + 3u]) % P[E + 4u];
  let o = elem(0u, i);
  let ib = i32(elem(1u, i));
  let sb = i32(elem(2u, i));
  var acc = load_O(o);
  for (var j = 0u; j < P[E]; j = j + 1u) {
    if (load_I(u32(ib + i32(j) * pi(E + 1u))).x == c) {
      let v = load_S(u32(sb + i32(j) * pi(E + 2u)));
      acc = ADD;
    }
  }
  store_O(o, acc);
}
)";

// t seen with shape `shape`, its own strides but 0 on `axis`.
Tensor base_view(const Tensor& t, const Shape& shape, int axis) {
  Strides s = t.strides();
  s[size_t(axis)] = 0;
  return t.as_strided(shape, s, t.offset());
}

}  // namespace

void Backend::index(IndexOp op, const Tensor& x, int axis, const Tensor& index,
                    const Tensor* src, Tensor& out) {
  Context& ctx = *ctx_;
  const char* op_name = nascent::name(op);
  for (const Tensor* t : {&x, &index, src, static_cast<const Tensor*>(&out)}) {
    if (t != nullptr) check_dtype(ctx, op_name, *t, true);
  }
  const DType dt = out.dtype();
  std::string src_text = prelude(kGroup) + int64_wgsl();
  src_text += declare("O", 1, dt, true);
  src_text += declare("I", 2, DType::i64, false);
  std::vector<uint32_t> words;
  std::vector<WGPUBuffer> buffers = {buffer_of(out), buffer_of(index)};
  uint64_t threads = 0;
  if (op == IndexOp::scatter_add) {
    // Threads over index's shape with the axis as long as the output's.
    Shape box = index.shape();
    box[size_t(axis)] = out.shape()[size_t(axis)];
    const Tensor o = out.as_strided(box, out.strides(), out.offset());
    const Tensor ib = base_view(index, box, axis);
    const Tensor sb = base_view(*src, box, axis);
    const Tensor* walked[] = {&o, &ib, &sb};
    words = strided_params(box, walked);
    int64_t inner = 1;
    for (size_t d = size_t(axis) + 1; d < box.size(); ++d) inner *= box[d];
    for (int64_t w :
         {index.shape()[size_t(axis)], index.strides()[size_t(axis)],
          src->strides()[size_t(axis)], inner, box[size_t(axis)]}) {
      words.push_back(uint32_t(int32_t(w)));
    }
    src_text += declare("S", 3, dt, false);
    src_text += fmt::format("const E: u32 = {}u;\n", 10 + 9 * 3);
    std::string body = kScatterBody;
    body.replace(body.find("ADD"), 3, add_expression(dt));
    src_text += body;
    buffers.push_back(buffer_of(*src));
    threads = uint64_t(o.numel());
  } else {
    // gather: the output has the index's shape; index_select: x's, with
    // the index along the axis.
    Tensor iv = index;
    if (op == IndexOp::index_select) {
      Strides s(out.shape().size(), 0);
      s[size_t(axis)] = index.strides()[0];
      iv = index.as_strided(out.shape(), s, index.offset());
    }
    const Tensor xb = base_view(x, out.shape(), axis);
    const Tensor* walked[] = {&out, &xb, &iv};
    words = strided_params(out.shape(), walked);
    words.push_back(uint32_t(int32_t(x.strides()[size_t(axis)])));
    src_text += declare("X", 3, dt, false);
    src_text += fmt::format("const E: u32 = {}u;\n", 10 + 9 * 3);
    src_text += kGatherBody;
    buffers.push_back(buffer_of(x));
    threads = uint64_t(out.numel());
  }
  if (threads == 0) return;
  const std::string key = fmt::format(
      "index_{}:{}", op == IndexOp::scatter_add ? "scatter" : "gather",
      nascent::name(dt));
  WGPUComputePipeline pipe = ctx.pipeline(key, src_text, op_name);
  ctx.dispatch(op_name, pipe, words, buffers, groups_for(int64_t(threads)));
}

}  // namespace nascent::webgpu
