#include <set>
#include <string>

#include <gtest/gtest.h>

#include "nascent/core/op_table.h"

namespace nascent {
namespace {

TEST(OpTable, NamesAreUniqueAndMatchTheirOps) {
  std::set<std::string> names;
  for (size_t i = 0; i < op_table().size(); ++i) {
    const OpInfo& op = op_table()[i];
    EXPECT_EQ(size_t(op.op), i);
    EXPECT_TRUE(names.insert(op.name).second) << op.name;
    EXPECT_STREQ(name(op.op), op.name);
  }
  EXPECT_EQ(int(names.size()), kNumOps);
}

TEST(OpTable, FamilyOpsMapIntoTheTable) {
  EXPECT_EQ(op_of(UnaryOp::exp), Op::exp);
  EXPECT_EQ(op_of(UnaryOp::logical_not), Op::logical_not);
  EXPECT_EQ(op_of(BinaryOp::add), Op::add);
  EXPECT_EQ(op_of(BinaryOp::logical_xor), Op::logical_xor);
  EXPECT_EQ(op_of(ReduceOp::logsumexp), Op::logsumexp);
  EXPECT_EQ(op_of(ConvOp::conv2d_backward_weight), Op::conv2d_backward_weight);
  EXPECT_EQ(op_of(IndexOp::index_select), Op::index_select);
  EXPECT_EQ(info(Op::relu).family, OpFamily::Unary);
  EXPECT_EQ(info(Op::matmul).family, OpFamily::Matmul);
  EXPECT_STREQ(name(UnaryOp::gelu_tanh), "gelu_tanh");
  EXPECT_STREQ(name(OpFamily::Norm), "norm");
}

TEST(OpTable, DifferentiabilityIsRecorded) {
  EXPECT_TRUE(info(Op::matmul).differentiable);
  EXPECT_FALSE(info(Op::argmax).differentiable);
  EXPECT_FALSE(info(Op::eq).differentiable);
}

}  // namespace
}  // namespace nascent
