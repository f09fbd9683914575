#!/usr/bin/env python3
"""Models exported from PyTorch (torch.onnx.export) run by `nascent onnx
run`: the Fashion-MNIST CNN and MLP of `nascent train`, a small transformer
encoder (multi-head attention, LayerNorm, GELU), a ResNet-style block and a
recurrent model (a bidirectional two-layer LSTM, then a GRU),
each at batch 1 and 4 through a dynamic batch axis; nascent's outputs must
equal PyTorch's within 1e-4 relative (to the output's largest magnitude).
Also: `onnx info` on a model, and a model with an operator nascent lacks
(NonZero) is described by `info` and refused by `run`, naming it.

    torch_export_test.py NASCENT_BINARY [--write-cases DIR]

--write-cases also writes each model with its batch 1 and 4 inputs and
PyTorch's outputs in the layout of ONNX's node tests (DIR/torch_NAME/
model.onnx, test_data_set_N/input_0.pb, output_0.pb; needs the onnx
package), so that nascent_onnx_node_suite runs them on another device
(scripts/cuda_device_run.sh's onnx stage).

Runs with Debian's python3 (python3-torch, python3-numpy); skipped (77)
without them, except under CI.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torch.nn as nn
except ImportError as e:
    print(f"onnx_pytorch_export: {e}: install python3-torch")
    sys.exit(1 if os.environ.get("CI") else 77)

RTOL = 1e-4


class Cnn(nn.Module):  # models/fashion_mnist.cpp's "cnn".
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(),
            nn.Linear(128, 10))

    def forward(self, x):
        return self.f(x)


class Mlp(nn.Module):  # models/fashion_mnist.cpp's "mlp".
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(
            nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256),
            nn.ReLU(), nn.Linear(256, 10))

    def forward(self, x):
        return torch.log_softmax(self.f(x), dim=-1)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 64)
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1,
                                           activation="gelu",
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.norm = nn.LayerNorm(64)
        self.head = nn.Linear(64, 3)

    def forward(self, ids):
        h = self.norm(self.encoder(self.embed(ids)))
        return self.head(h.mean(dim=1))


class ResBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(16)
        self.c2 = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(16)
        self.down = nn.Sequential(nn.Conv2d(8, 16, 1, stride=2, bias=False),
                                  nn.BatchNorm2d(16))
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)  # Depthwise.
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = torch.relu(self.b2(self.c2(y)) + self.down(x))
        y = torch.relu(self.dw(y)) + y
        return self.fc(torch.flatten(self.pool(y), 1))


class Recurrent(nn.Module):  # ONNX's LSTM (bidirectional, 2 layers) and GRU.
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 8, num_layers=2, batch_first=True,
                            bidirectional=True)
        self.gru = nn.GRU(16, 5, batch_first=True)
        self.head = nn.Linear(5, 4)

    def forward(self, x):
        y, _ = self.lstm(x)
        y, h = self.gru(y)
        return self.head(y[:, -1] + h[0])


class Unsupported(nn.Module):
    def forward(self, x):
        return torch.nonzero(x > 0).float().sum() + x.sum()


def randomize_norms(model, gen):
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm2d, nn.LayerNorm)):
            with torch.no_grad():
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=gen))
            m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)


def run(cmd, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise SystemExit(f"FAILED: {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    return p


def write_case(root, name, path, data_sets):
    from onnx import numpy_helper
    import shutil
    case = os.path.join(root, "torch_" + name)
    os.makedirs(case, exist_ok=True)
    shutil.copy(path, os.path.join(case, "model.onnx"))
    for k, (x, y) in enumerate(data_sets):
        d = os.path.join(case, f"test_data_set_{k}")
        os.makedirs(d, exist_ok=True)
        for stem, v, n in (("input_0", x, "x"), ("output_0", y, "y")):
            with open(os.path.join(d, stem + ".pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, n).SerializeToString())


def main():
    nascent = sys.argv[1]
    cases_dir = None
    if len(sys.argv) == 4 and sys.argv[2] == "--write-cases":
        cases_dir = sys.argv[3]
    elif len(sys.argv) != 2:
        raise SystemExit(__doc__)
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    cases = [
        ("cnn", Cnn(), lambda b: torch.rand(b, 1, 28, 28, generator=gen), 17),
        ("cnn-opset13", Cnn(), lambda b: torch.rand(b, 1, 28, 28, generator=gen), 13),
        ("mlp", Mlp(), lambda b: torch.rand(b, 1, 28, 28, generator=gen), 17),
        ("encoder", Encoder(),
         lambda b: torch.randint(0, 100, (b, 12), generator=gen), 17),
        ("resblock", ResBlock(), lambda b: torch.randn(b, 8, 16, 16, generator=gen), 17),
        ("recurrent", Recurrent(), lambda b: torch.randn(b, 7, 6, generator=gen), 17),
    ]
    failures = 0
    passed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, make_input, opset in cases:
            randomize_norms(model, gen)
            model.eval()
            path = os.path.join(tmp, name + ".onnx")
            torch.onnx.export(model, (make_input(2),), path,
                              opset_version=opset, input_names=["x"],
                              output_names=["y"],
                              dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
            data_sets = []
            for batch in (1, 4):
                x = make_input(batch)
                with torch.no_grad():
                    want = model(x).numpy()
                data_sets.append((x.numpy(), want))
                xin = os.path.join(tmp, f"{name}-{batch}-x.npy")
                out = os.path.join(tmp, f"{name}-{batch}-y.npy")
                np.save(xin, x.numpy())
                run([nascent, "onnx", "run", path, "-i", f"x={xin}", "-o", out])
                got = np.load(out)
                scale = float(np.abs(want).max())
                err = float(np.abs(got.astype(np.float64) - want).max()) / scale
                ok = got.shape == want.shape and got.dtype == want.dtype and err <= RTOL
                print(f"{name:12} batch {batch}: max error {err:.2e} relative"
                      f" {'ok' if ok else 'FAILED'}")
                if ok:
                    passed += 1
                else:
                    failures += 1
                    print(f"  got {got.shape} {got.dtype}, want {want.shape} {want.dtype}")
            if cases_dir:
                write_case(cases_dir, name, path, data_sets)

        info = run([nascent, "onnx", "info", os.path.join(tmp, "encoder.onnx")]).stdout
        for needle in ("opset ai.onnx 17", "x INT64[batch, 12]", "LayerNormalization",
                       "all operators are supported"):
            if needle not in info:
                print(f"FAILED: onnx info lacks '{needle}':\n{info}")
                failures += 1
        bad = os.path.join(tmp, "nonzero.onnx")
        torch.onnx.export(Unsupported(), (torch.randn(5),), bad, opset_version=17)
        info = run([nascent, "onnx", "info", bad]).stdout
        if "unsupported operators: NonZero" not in info:
            print(f"FAILED: onnx info does not list NonZero:\n{info}")
            failures += 1
        np.save(os.path.join(tmp, "v.npy"), np.ones(5, np.float32))
        p = run([nascent, "onnx", "run", bad, "-i", os.path.join(tmp, "v.npy")],
                check=False)
        msg = p.stderr
        if p.returncode == 0 or not all(s in msg for s in ("NonZero", "ai.onnx", "opset 17")):
            print(f"FAILED: an unsupported operator is not refused by name: {msg}")
            failures += 1
        else:
            print(f"refused: {msg.strip()}")
        p = run([nascent, "onnx", "run", os.path.join(tmp, "cnn.onnx"), "-i",
                 os.path.join(tmp, "cnn-1-x.npy"), "--bench", "--rounds", "3"])
        if "median" not in p.stderr:
            print(f"FAILED: --bench printed no timing: {p.stderr}")
            failures += 1
    print(f"{passed} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
