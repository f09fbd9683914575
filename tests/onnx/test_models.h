// Loading hand-built models in the ONNX tests (bytes from pb_writer.h).
#pragma once

#include <functional>
#include <span>
#include <string>

#include <gtest/gtest.h>

#include "nascent/onnx/model.h"
#include "tests/onnx/pb_writer.h"

namespace nascent::onnx::test {

inline std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

inline Model load_string(const std::string& s, Backend& b,
                         const std::string& dir = "") {
  return load_bytes(as_bytes(s), "test.onnx", dir, b);
}

// The message of the E that f throws; a test failure if it throws none.
template <class E>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error of the expected type";
  return {};
}

}  // namespace nascent::onnx::test
