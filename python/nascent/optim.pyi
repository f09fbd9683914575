# Type stubs of nascent.optim: the optimizers update a module's parameters
# with their accumulated gradients (.grad), as PyTorch's do.
from typing import Tuple

from .nn import Module

class Optimizer:
    def step(self) -> None: ...
    def zero_grad(self) -> None: ...
    lr: float
    @property
    def step_count(self) -> int: ...
    @property
    def name(self) -> str: ...

class SGD(Optimizer):
    def __init__(self, module: Module, lr: float = 0.01, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False) -> None: ...

class Adam(Optimizer):
    def __init__(self, module: Module, lr: float = 1e-3,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0) -> None: ...

class AdamW(Adam):
    def __init__(self, module: Module, lr: float = 1e-3,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.01) -> None: ...

class Schedule:
    """A learning rate as a function of the step: opt.lr = s(opt.step_count)."""
    def lr(self, step: int) -> float: ...
    def __call__(self, step: int) -> float: ...

class ConstantLR(Schedule):
    def __init__(self, lr: float) -> None: ...

class StepLR(Schedule):
    def __init__(self, lr: float, step_size: int, gamma: float = 0.1) -> None: ...

class CosineLR(Schedule):
    def __init__(self, lr: float, total_steps: int, min_lr: float = 0.0) -> None: ...

class WarmupLR(Schedule):
    def __init__(self, after: Schedule, warmup_steps: int,
                 start_factor: float = 0.0) -> None: ...
