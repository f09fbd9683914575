#include "nascent/core/op_table.h"

#include <cstddef>

namespace nascent {

namespace {
#define NASCENT_OP_INFO(family, name, differentiable) \
  OpInfo{Op::name, OpFamily::family, #name, differentiable},
constexpr std::array<OpInfo, kNumOps> kTable = {
    {NASCENT_ALL_OPS(NASCENT_OP_INFO)}};
#undef NASCENT_OP_INFO

// Index of the first op of a family in the table; families are contiguous.
Op first_of(OpFamily family) {
  for (const OpInfo& i : kTable) {
    if (i.family == family) return i.op;
  }
  return Op(0);
}
template <class FamilyOp>
Op shift(OpFamily family, FamilyOp op) {
  return Op(int(first_of(family)) + int(op));
}
}  // namespace

const std::array<OpInfo, kNumOps>& op_table() {
  return kTable;
}
const OpInfo& info(Op op) {
  return kTable[size_t(op)];
}
const char* name(Op op) {
  return kTable[size_t(op)].name;
}

const char* name(OpFamily family) {
  static const char* const kNames[] = {
      "creation", "random", "copy", "unary",     "binary",  "where", "reduce",
      "scan",     "matmul", "conv", "pool",      "softmax", "norm",  "index",
      "quant",    "optim",  "rope", "attention", "glu"};
  return kNames[size_t(family)];
}

Op op_of(CreationOp op) {
  return shift(OpFamily::Creation, op);
}
Op op_of(RandomOp op) {
  return shift(OpFamily::Random, op);
}
Op op_of(UnaryOp op) {
  return shift(OpFamily::Unary, op);
}
Op op_of(BinaryOp op) {
  return shift(OpFamily::Binary, op);
}
Op op_of(ReduceOp op) {
  return shift(OpFamily::Reduce, op);
}
Op op_of(ScanOp op) {
  return shift(OpFamily::Scan, op);
}
Op op_of(ConvOp op) {
  return shift(OpFamily::Conv, op);
}
Op op_of(PoolOp op) {
  return shift(OpFamily::Pool, op);
}
Op op_of(SoftmaxOp op) {
  return shift(OpFamily::Softmax, op);
}
Op op_of(NormOp op) {
  return shift(OpFamily::Norm, op);
}
Op op_of(IndexOp op) {
  return shift(OpFamily::Index, op);
}
Op op_of(QuantOp op) {
  return shift(OpFamily::Quant, op);
}
Op op_of(OptimOp op) {
  return shift(OpFamily::Optim, op);
}
Op op_of(RopeOp op) {
  return shift(OpFamily::Rope, op);
}
Op op_of(AttentionOp op) {
  return shift(OpFamily::Attention, op);
}
Op op_of(GluOp op) {
  return shift(OpFamily::Glu, op);
}

}  // namespace nascent
