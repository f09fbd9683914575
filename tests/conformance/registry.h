// The conformance suite (like llama.cpp's test-backend-ops): every op of the
// op table has cases that run it on a backend and compare with a float64
// reference computed on the host. An op without cases fails the suite.
//
// Cases register themselves from the family files in this folder:
//   CONFORMANCE_CASE(add, "f32 broadcast") { ...uses `backend`... }
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "nascent/core/op_table.h"
#include "nascent/core/tensor.h"

namespace nascent::conformance {

struct Case {
  Op op;
  std::string label;
  std::function<void(Backend& backend)> run;
};

std::vector<Case>& cases();

}  // namespace nascent::conformance

namespace nascent {
// Lets gtest print an Op parameter by name.
inline void PrintTo(Op op, std::ostream* os) {
  *os << name(op);
}
}  // namespace nascent

namespace nascent::conformance {

struct Registrar {
  Registrar(Op op, const char* label, void (*fn)(Backend&)) {
    cases().push_back(Case{op, label, fn});
  }
};

}  // namespace nascent::conformance

#define NASCENT_CONCAT_INNER(a, b) a##b
#define NASCENT_CONCAT(a, b) NASCENT_CONCAT_INNER(a, b)
#define CONFORMANCE_CASE(op_name, label)                            \
  static void NASCENT_CONCAT(conformance_case_,                     \
                             __LINE__)(nascent::Backend & backend); \
  static const nascent::conformance::Registrar NASCENT_CONCAT(      \
      conformance_reg_, __LINE__)(                                  \
      nascent::Op::op_name, label,                                  \
      &NASCENT_CONCAT(conformance_case_, __LINE__));                \
  static void NASCENT_CONCAT(conformance_case_, __LINE__)(          \
      [[maybe_unused]] nascent::Backend & backend)
