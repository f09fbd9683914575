# Type stubs of nascent.models: the models of nascent's built-in jobs.
from . import DeviceLike, nn

fashion_mnist_mean: float
fashion_mnist_std: float

def fashion_mnist(kind: str = "cnn", device: DeviceLike = None,
                  seed: int = 0) -> nn.Sequential: ...
