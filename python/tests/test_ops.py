"""Ops, operators and errors against NumPy and PyTorch."""
import numpy as np
import pytest
torch = pytest.importorskip("torch")

import nascent


def t64(*shape, seed):
    return nascent.randn(*shape, seed=seed, dtype=nascent.float64)


def test_creation_and_devices():
    assert nascent.zeros(2, 3).shape == (2, 3)
    assert nascent.ones((4,), dtype=nascent.int32).tolist() == [1, 1, 1, 1]
    assert nascent.full((2,), 1.5).tolist() == [1.5, 1.5]
    assert nascent.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert nascent.arange(5).dtype == nascent.int64
    assert str(nascent.cpu()) == "cpu" and nascent.zeros(1).device == nascent.cpu()
    assert "cpu" in nascent.device_names()
    # Same seed, same numbers; different seeds differ.
    assert nascent.randn(8, seed=3).tolist() == nascent.randn(8, seed=3).tolist()
    assert nascent.randn(8, seed=3).tolist() != nascent.randn(8, seed=4).tolist()


def test_cuda_device_raises_clearly_without_gpu():
    if "cuda" not in nascent.device_names():
        with pytest.raises(nascent.ValueError, match="cuda"):
            nascent.cuda(0)
    else:
        try:
            d = nascent.cuda(0)
        except nascent.BackendError:
            return  # built with CUDA, no GPU here
        x = nascent.randn(4, 4, seed=1, device=d)
        assert x.device == d
        np.testing.assert_allclose(np.asarray((x @ x).cpu()),
                                   np.asarray(x.cpu() @ x.cpu()), rtol=1e-4)


def test_operators_follow_numpy():
    a, b = t64(3, 4, seed=1), t64(4, seed=2)
    na, nb = np.asarray(a), np.asarray(b)
    for got, want in [(a + b, na + nb), (a - 2, na - 2), (2 * a, 2 * na),
                      (a / b, na / nb), (1 / (a * a + 1), 1 / (na * na + 1)),
                      (-a, -na), (a ** 2, na ** 2), (abs(a), np.abs(na)),
                      (a @ b, na @ nb), (a.T, na.T)]:
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(a > 0), na > 0)
    np.testing.assert_array_equal(np.asarray((a > 0) & (b < 0)), (na > 0) & (nb < 0))


def test_ops_against_torch():
    x = t64(2, 3, 5, seed=3)
    tx = torch.from_dlpack(x)
    cases = [
        (x.exp(), tx.exp()), (nascent.tanh(x), torch.tanh(tx)),
        (x.sigmoid(), torch.sigmoid(tx)), (nascent.gelu(x), torch.nn.functional.gelu(tx)),
        (x.gelu(approximate="tanh"), torch.nn.functional.gelu(tx, approximate="tanh")),
        (x.sum(), tx.sum()), (x.sum(dim=1), tx.sum(dim=1)),
        (x.mean((0, 2), keepdim=True), tx.mean((0, 2), keepdim=True)),
        (x.amax(-1), tx.amax(-1)), (x.var(1), tx.var(1)), (x.std(1, correction=0), tx.std(1, unbiased=False)),
        (x.logsumexp(2), tx.logsumexp(2)), (x.softmax(-1), tx.softmax(-1)),
        (x.log_softmax(1), tx.log_softmax(1)), (x.cumsum(2), tx.cumsum(2)),
        (x.argmax(-1), tx.argmax(-1)), (x.clamp(-0.5, 0.5), tx.clamp(-0.5, 0.5)),
        (nascent.layer_norm(x), torch.nn.functional.layer_norm(tx, (5,))),
        (nascent.cat([x, x], dim=1), torch.cat([tx, tx], dim=1)),
        (nascent.stack([x, x]), torch.stack([tx, tx])),
        (x.flip(0), tx.flip(0)), (x.tril(), tx.tril()),
        (x[1, :, 2:4], tx[1, :, 2:4]), (x[..., None, 0], tx[..., None, 0]),
        (x.permute(2, 0, 1), tx.permute(2, 0, 1)), (x.reshape(6, 5), tx.reshape(6, 5)),
    ]
    for got, want in cases:
        np.testing.assert_allclose(np.asarray(got.contiguous()), want.numpy(),
                                   rtol=1e-10, atol=1e-12)


def test_views_copy_nothing():
    x = nascent.zeros(4, 6)
    v = x[1:3].transpose(0, 1)
    v[0, 1] = 5.0  # writes through the view
    assert x[2, 0].item() == 5.0
    assert v.data_ptr() == x.data_ptr() + 6 * 4


def test_errors_are_python_exceptions_with_the_cpp_messages():
    with pytest.raises(nascent.ShapeError) as e:
        nascent.zeros(2, 3) @ nascent.zeros(4, 5)
    assert "matmul" in str(e.value) and "[2, 3]" in str(e.value) and "[4, 5]" in str(e.value)
    assert isinstance(e.value, ValueError) and isinstance(e.value, nascent.Error)
    assert isinstance(e.value, RuntimeError)
    with pytest.raises(nascent.ShapeError, match="broadcast"):
        nascent.zeros(3) + nascent.zeros(4)
    with pytest.raises(nascent.IoError) as e:
        nascent.llama.load("/nonexistent/model.gguf")
    assert isinstance(e.value, OSError) and "/nonexistent/model.gguf" in str(e.value)
    with pytest.raises(IndexError):
        nascent.zeros(2)[5]
    with pytest.raises(TypeError):
        nascent.zeros(2) + "a"


def test_webgpu_device_works_or_raises_clearly():
    if "webgpu" not in nascent.device_names():
        with pytest.raises(nascent.ValueError, match="webgpu"):
            nascent.webgpu()
        return
    try:
        d = nascent.webgpu()
    except nascent.BackendError:
        return  # built with WebGPU, no adapter here
    assert str(d) == "webgpu" and d == nascent.device("webgpu")
    x = nascent.randn(4, 4, seed=1, device=d)
    assert x.device == d
    np.testing.assert_allclose(np.asarray((x + x).cpu()),
                               2 * np.asarray(x.cpu()), rtol=1e-6)


def test_random_draws_with_parameters():
    u = nascent.uniform((20000,), -2.0, 3.0, seed=4)
    nu = np.asarray(u)
    assert nu.min() >= -2.0 and nu.max() < 3.0 and abs(nu.mean() - 0.5) < 0.05
    assert u.tolist() == nascent.uniform((20000,), -2.0, 3.0, seed=4).tolist()
    n = np.asarray(nascent.normal((20000,), 1.5, 0.5, seed=5, dtype=nascent.float64))
    assert abs(n.mean() - 1.5) < 0.02 and abs(n.std() - 0.5) < 0.02
    b = np.asarray(nascent.bernoulli((20000,), 0.3, seed=6))
    assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.3) < 0.02


def test_geglu_and_rope_against_references():
    g, u = t64(3, 8, seed=7), t64(3, 8, seed=8)
    want = torch.nn.functional.gelu(torch.from_dlpack(g), approximate="tanh") * torch.from_dlpack(u)
    np.testing.assert_allclose(np.asarray(nascent.geglu(g, u)), want.numpy(), rtol=1e-10)

    x = t64(5, 2, 8, seed=9)  # [n, heads, head_dim]
    nx = np.asarray(x)
    pos = np.arange(3, 8)
    theta = pos[:, None] * 10000.0 ** (-2 * np.arange(4) / 8)  # [n, 4]
    c, s = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]
    # norm: pairs (2i, 2i+1), as ggml; neox: pairs (i, i + 4).
    for mode, (i0, i1) in {"norm": (slice(0, 8, 2), slice(1, 8, 2)),
                           "neox": (slice(0, 4), slice(4, 8))}.items():
        want = nx.copy()
        want[..., i0] = nx[..., i0] * c - nx[..., i1] * s
        want[..., i1] = nx[..., i0] * s + nx[..., i1] * c
        got = nascent.rope(x, 3, mode=mode)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-9, atol=1e-12)
        by_tensor = nascent.rope(x, nascent.tensor(pos.tolist()), mode=mode)
        np.testing.assert_allclose(np.asarray(by_tensor), want, rtol=1e-9, atol=1e-12)
    with pytest.raises(nascent.ValueError, match="mode"):
        nascent.rope(x, 0, mode="glm")


def test_quantize_dequantize_qmatmul():
    w = nascent.randn(8, 64, seed=10)
    x = nascent.randn(3, 64, seed=11)
    q = nascent.quantize(w, "q8_0")
    assert q.dtype == nascent.uint8 and q.shape == (8, 2 * 34)  # 2 blocks of 34 bytes
    back = nascent.dequantize(q, "q8_0")
    np.testing.assert_allclose(np.asarray(back), np.asarray(w), atol=0.03)
    want = np.asarray(x) @ np.asarray(back).T
    np.testing.assert_allclose(np.asarray(nascent.qmatmul(x, q, "Q8_0")), want, rtol=0.02, atol=0.05)
    with pytest.raises(nascent.ValueError, match="q9_9"):
        nascent.quantize(w, "q9_9")
