// Errors raised by nascent. Every message names the op (or file) and what was
// expected and found, so a user can fix the call without a debugger.
#pragma once

#include <stdexcept>
#include <string>

namespace nascent {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Shapes that do not fit together: broadcasting, matmul, reshape, axes.
class ShapeError : public Error {
 public:
  using Error::Error;
};

// An element type the op does not accept, or two that do not mix.
class DTypeError : public Error {
 public:
  using Error::Error;
};

// An argument out of its range: an index, an axis, a negative size.
class ValueError : public Error {
 public:
  using Error::Error;
};

// Tensors from different backends in one op, or a backend that cannot do it.
class BackendError : public Error {
 public:
  using Error::Error;
};

// Bad bytes in a file from outside (GGUF, safetensors, IDX, tokenizer data).
class FormatError : public Error {
 public:
  using Error::Error;
};

class OutOfMemory : public Error {
 public:
  using Error::Error;
};

}  // namespace nascent
