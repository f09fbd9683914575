"""Autodiff, nn modules, losses, optimizers and checkpoints against
PyTorch on the same small model (the same weights, copied by DLPack)."""
import threading
import time

import numpy as np
import pytest
torch = pytest.importorskip("torch")

import nascent
from nascent import nn, optim


def torch_copy(t):
    return torch.from_dlpack(t).clone()


def make_pair(seed=1):
    """A nascent MLP and a PyTorch one with the same weights."""
    ours = nn.Sequential(nn.Linear(6, 16, seed=seed), nn.Tanh(), nn.Linear(16, 3, seed=seed + 1))
    theirs = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    with torch.no_grad():
        for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
            q.copy_(torch_copy(p))
    return ours, theirs


def data(seed=5):
    x = nascent.randn(8, 6, seed=seed)
    y = nascent.tensor([0, 1, 2, 0, 1, 2, 2, 1])
    return x, y


def test_backward_grad_no_grad():
    w = nascent.randn(3, 2, seed=1, dtype=nascent.float64, requires_grad=True)
    b = nascent.randn(4, 3, seed=2, dtype=nascent.float64)
    loss = (b @ w).tanh().sum()
    assert loss.requires_grad and w.is_leaf
    loss.backward()
    tw = torch_copy(w).requires_grad_()
    torch.tanh(torch_copy(b) @ tw).sum().backward()
    np.testing.assert_allclose(np.asarray(w.grad), tw.grad.numpy(), rtol=1e-12)
    w.grad = None
    assert w.grad is None
    with nascent.no_grad():
        assert not nascent.is_grad_enabled()
        assert not (b @ w).requires_grad
    assert nascent.is_grad_enabled()
    (gw,) = nascent.grad([(b @ w).sum()], [w])  # functional form
    np.testing.assert_allclose(np.asarray(gw), torch_copy(b).sum(0)[:, None].expand(3, 2))


def test_mlp_gradients_match_torch():
    ours, theirs = make_pair()
    x, y = data()
    loss = nn.cross_entropy(ours(x), y)
    loss.backward()
    tl = torch.nn.functional.cross_entropy(theirs(torch_copy(x)), torch_copy(y))
    tl.backward()
    assert loss.item() == pytest.approx(tl.item(), rel=1e-5)
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(np.asarray(p.grad), q.grad.numpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=name)


@pytest.mark.parametrize("make", [
    (lambda m: optim.SGD(m, lr=0.1, momentum=0.9),
     lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)),
    (lambda m: optim.Adam(m, lr=0.01),
     lambda m: torch.optim.Adam(m.parameters(), lr=0.01)),
    (lambda m: optim.AdamW(m, lr=0.01),
     lambda m: torch.optim.AdamW(m.parameters(), lr=0.01)),
])
def test_optimizer_steps_match_torch(make):
    ours, theirs = make_pair()
    opt, topt = make[0](ours), make[1](theirs)
    x, y = data()
    tx, ty = torch_copy(x), torch_copy(y)
    for _ in range(5):
        opt.zero_grad()
        nn.cross_entropy(ours(x), y).backward()
        opt.step()
        topt.zero_grad()
        torch.nn.functional.cross_entropy(theirs(tx), ty).backward()
        topt.step()
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(np.asarray(p), q.detach().numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=name)
    assert opt.step_count == 5


def test_conv_and_losses_match_torch():
    conv = nn.Conv2d(2, 4, 3, padding=1, seed=3)
    tconv = torch.nn.Conv2d(2, 4, 3, padding=1)
    with torch.no_grad():
        tconv.weight.copy_(torch_copy(conv.weight))
        tconv.bias.copy_(torch_copy(conv.named_parameters()[1][1]))
    x = nascent.randn(2, 2, 6, 6, seed=4)
    out = nascent.max_pool2d(conv(x).relu(), 2)
    tout = torch.nn.functional.max_pool2d(tconv(torch_copy(x)).relu(), 2)
    np.testing.assert_allclose(np.asarray(out), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    target = nascent.randn(*out.shape, seed=5)
    nn.mse_loss(out, target).backward()
    torch.nn.functional.mse_loss(tout, torch_copy(target)).backward()
    np.testing.assert_allclose(np.asarray(conv.weight.grad), tconv.weight.grad.numpy(),
                               rtol=1e-4, atol=1e-6)


def test_python_module_subclass():
    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.gain = self.register_parameter("gain", nascent.ones(4))
            self.fc = self.register_module("fc", nn.Linear(4, 4, seed=1))

        def forward(self, x):
            return x + self.fc(x * self.gain)

    net = nn.Sequential(Residual(), nn.ReLU())
    names = [n for n, _ in net.named_parameters()]
    assert names == ["0.gain", "0.fc.weight", "0.fc.bias"]
    net(nascent.randn(2, 4, seed=2)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    assert net.num_parameters() == 4 + 16 + 4


def test_checkpoint_round_trip(tmp_path):
    ours, _ = make_pair()
    opt = optim.Adam(ours, lr=0.01)
    x, y = data()
    nn.cross_entropy(ours(x), y).backward()
    opt.step()
    path = str(tmp_path / "model.safetensors")
    nascent.save_checkpoint(path, ours, opt, {"epoch": 3})
    other, _ = make_pair(seed=9)
    other_opt = optim.Adam(other, lr=0.01)
    assert nascent.load_checkpoint(path, other, other_opt) == {"epoch": 3}
    for (_, p), (_, q) in zip(ours.named_parameters(), other.named_parameters()):
        np.testing.assert_array_equal(np.asarray(p), np.asarray(q))
    with pytest.raises(nascent.ShapeError):
        nascent.load_checkpoint(path, nn.Sequential(nn.Linear(6, 8), nn.Tanh(),
                                                    nn.Linear(8, 3)))


def test_gil_released_around_matmul():
    threads = nascent.get_num_threads()
    nascent.set_num_threads(1)
    a = nascent.randn(1024, 1024, seed=1)
    done, took = threading.Event(), []

    def work():
        t0 = time.perf_counter()
        a @ a
        took.append(time.perf_counter() - t0)
        done.set()

    thread = threading.Thread(target=work)
    last, gap = time.perf_counter(), 0.0
    thread.start()
    while not done.is_set():  # this thread runs while the other multiplies
        now = time.perf_counter()
        gap, last = max(gap, now - last), now
    thread.join()
    nascent.set_num_threads(threads)
    assert gap < 0.5 * took[0], (gap, took[0])


def test_lr_schedules_match_torch():
    """The schedules against torch.optim.lr_scheduler on the same steps."""
    p = torch.nn.Parameter(torch.zeros(1))

    def torch_lrs(make, n):
        opt = torch.optim.SGD([p], lr=0.1)
        s, out = make(opt), []
        for _ in range(n):
            out.append(opt.param_groups[0]["lr"])
            opt.step()
            s.step()
        return out

    lrs = torch.optim.lr_scheduler
    cases = [
        (optim.StepLR(0.1, 3, gamma=0.5), lambda o: lrs.StepLR(o, 3, gamma=0.5)),
        (optim.CosineLR(0.1, 10, min_lr=0.01),
         lambda o: lrs.CosineAnnealingLR(o, 10, eta_min=0.01)),
        (optim.ConstantLR(0.1), lambda o: lrs.LambdaLR(o, lambda s: 1.0)),
    ]
    for ours, theirs in cases:
        got = [ours(s) for s in range(10)]
        assert got == pytest.approx(torch_lrs(theirs, 10), rel=1e-9), repr(ours)
    warm = optim.WarmupLR(optim.ConstantLR(0.1), 4)
    assert [warm.lr(s) for s in range(6)] == pytest.approx([0, 0.025, 0.05, 0.075, 0.1, 0.1])

    # Driving an optimizer: lr follows the schedule by step count.
    model = nn.Linear(2, 1, seed=1)
    opt = optim.SGD(model, lr=0.1)
    sched = optim.CosineLR(0.1, 4)
    seen = []
    for _ in range(4):
        opt.lr = sched(opt.step_count)
        seen.append(opt.lr)
        model(nascent.ones(1, 2)).sum().backward()
        opt.step()
        opt.zero_grad()
    assert seen == pytest.approx([sched(s) for s in range(4)]) and opt.step_count == 4
