// The body of the generated all_headers_test.cpp (tests/CMakeLists.txt),
// which includes every public header before this file: names from every
// layer used side by side in one translation unit.
#pragma once

#include <type_traits>

#include <gtest/gtest.h>

namespace nascent {
namespace {

static_assert(!std::is_same_v<Generator, generate::TextGenerator>,
              "the random generator and the text generator are distinct");

TEST(AllHeaders, EveryLayerInOneTranslationUnit) {
  cpu::Backend cpu;
  Generator gen(7);
  nn::Linear linear(3, 2, cpu, gen);
  Tensor x = ones({4, 3}, cpu);
  Tensor y = linear(x);
  EXPECT_EQ(y.shape(), (Shape{4, 2}));
  train::TrainOptions options;
  EXPECT_EQ(train::TrainOptions::from_json(options.to_json()).to_json(),
            options.to_json());
  EXPECT_EQ(block_size(QuantType::q8_0), 32);
}

}  // namespace
}  // namespace nascent
