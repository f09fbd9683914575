"""nascent.train: the Fashion-MNIST job of `nascent train`, shortened to a
few thousand images, and its checkpoint loaded into the same model built
from Python."""
import os

import numpy as np
import pytest

import nascent
from nascent import nn

DATA = os.environ.get("NASCENT_FASHION_MNIST_DIR",
                      "/usr/share/datasets/fashion-mnist")


@pytest.fixture(scope="module")
def data_dir():
    if not os.path.exists(os.path.join(DATA, "train-labels-idx1-ubyte.gz")):
        pytest.skip("Fashion-MNIST not found in " + DATA +
                    " (apt install dataset-fashion-mnist)")
    return DATA


def test_train_mlp_learns_and_checkpoints(data_dir, tmp_path):
    out = str(tmp_path / "mlp.safetensors")
    seen = []
    r = nascent.train(model="mlp", epochs=2, batch_size=100, seed=1,
                      data=data_dir, output=out, train_size=3000,
                      test_size=1000, on_epoch=seen.append)
    assert r["model"] == "mlp" and r["parameters"] == 535818
    assert [e["epoch"] for e in r["epochs"]] == [1, 2] and seen == r["epochs"]
    first, last = r["epochs"]
    assert last["loss"] < first["loss"] < 2.3  # below chance's log(10)
    assert r["test_accuracy"] == last["test_accuracy"] > 0.65
    assert r["checkpoint"] == out and os.path.exists(out)

    # The checkpoint loads into the model built from Python, which then
    # scores the trainer's accuracy on the same images.
    model = nascent.models.fashion_mnist("mlp", seed=7)
    nascent.load_checkpoint(out, model)
    import gzip
    with gzip.open(os.path.join(data_dir, "t10k-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16)[:1000 * 784]
    with gzip.open(os.path.join(data_dir, "t10k-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)[:1000]
    m = nascent.models
    x = (images.reshape(1000, 1, 28, 28).astype(np.float32) / 255 -
         m.fashion_mnist_mean) / m.fashion_mnist_std
    model.eval()
    with nascent.no_grad():
        pred = np.asarray(model(nascent.from_numpy(x)).argmax(dim=1))
    assert np.mean(pred == labels) == pytest.approx(r["test_accuracy"], abs=1e-9)


def test_train_errors_are_python_exceptions(data_dir, tmp_path):
    with pytest.raises(nascent.ValueError, match="rnn"):
        nascent.train(model="rnn", epochs=1, data=data_dir, train_size=100)
    with pytest.raises(nascent.Error, match="not found"):
        nascent.train(model="mlp", epochs=1, data=str(tmp_path / "none"))
    with pytest.raises(nascent.ValueError, match="rnn"):
        nascent.models.fashion_mnist("rnn")
