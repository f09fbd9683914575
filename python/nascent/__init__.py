"""nascent: a deep-learning framework in C++20, from Python.

Tensors (with NumPy and DLPack interop), autodiff, nn modules and losses,
optimizers, checkpoints, LLaMA inference from GGUF files and the
Fashion-MNIST training job (nascent.train). The work is done by the C++
library (the extension module nascent._nascent); this file only gathers
its names.
"""
import sys as _sys

from ._nascent import *  # noqa: F401,F403
from ._nascent import (Tensor, Device, dtype, llama, models, nn, optim,  # noqa: F401
                       Error, ShapeError, DTypeError, ValueError, BackendError,
                       FormatError, OutOfMemory, IoError)

float32 = dtype.float32
float64 = dtype.float64
float16 = dtype.float16
bfloat16 = dtype.bfloat16
int32 = dtype.int32
int64 = dtype.int64
uint8 = dtype.uint8
bool_ = dtype.bool
float = float32  # noqa: A001  (as torch.float)
double = float64
long = int64

# `import nascent.nn` and `from nascent.optim import Adam` as for packages.
for _name in ("nn", "optim", "llama", "models"):
    _sys.modules[__name__ + "." + _name] = globals()[_name]

__version__ = "0.1.0"
