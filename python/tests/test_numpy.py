"""NumPy and DLPack interop: shared memory checked by pointer, both ways."""
import numpy as np
import pytest
torch = pytest.importorskip("torch")

import nascent


def ptr(a):
    return a.__array_interface__["data"][0]


def test_from_numpy_shares_memory():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = nascent.from_numpy(a)
    assert t.shape == (3, 4) and t.dtype == nascent.float32
    assert t.data_ptr() == ptr(a)
    a[1, 2] = 100.0  # a write through NumPy shows in the tensor
    assert t[1, 2].item() == 100.0


def test_asarray_shares_memory_and_keeps_tensor_alive():
    t = nascent.arange(0.0, 6.0, 1.0).reshape(2, 3)
    a = np.asarray(t)
    assert ptr(a) == t.data_ptr()
    b = t.numpy()
    assert ptr(b) == t.data_ptr()
    del t  # the array holds the storage
    np.testing.assert_array_equal(a, [[0, 1, 2], [3, 4, 5]])


def test_strided_views_both_ways():
    a = np.arange(24, dtype=np.float64).reshape(4, 6)[:, ::2]  # strides (48, 16)
    t = nascent.from_numpy(a)
    assert t.strides == (6, 2) and t.data_ptr() == ptr(a)
    tt = t.T  # a transposed view: NumPy sees the same bytes with its strides
    b = np.asarray(tt)
    assert ptr(b) == ptr(a)
    np.testing.assert_array_equal(b, a.T)
    np.testing.assert_array_equal(np.asarray(t[1:3, 1]), a[1:3, 1])


def test_negative_strides_copy():
    a = np.arange(5, dtype=np.int64)[::-1]
    t = nascent.from_numpy(a)
    assert t.data_ptr() != ptr(a)
    assert t.tolist() == [4, 3, 2, 1, 0]


@pytest.mark.parametrize("np_dtype,dtype", [
    (np.float32, nascent.float32), (np.float64, nascent.float64),
    (np.float16, nascent.float16), (np.int32, nascent.int32),
    (np.int64, nascent.int64), (np.uint8, nascent.uint8),
    (np.bool_, nascent.bool_)])
def test_dtypes_round_trip(np_dtype, dtype):
    a = (np.arange(6) % 3).astype(np_dtype)
    t = nascent.from_numpy(a)
    assert t.dtype == dtype
    b = np.asarray(t)
    assert b.dtype == a.dtype and ptr(b) == ptr(a)
    np.testing.assert_array_equal(b, a)


def test_unsupported_dtypes_raise():
    with pytest.raises(nascent.DTypeError, match="no nascent dtype"):
        nascent.from_numpy(np.zeros(3, dtype=np.complex64))
    with pytest.raises(nascent.DTypeError, match="bf16 has no NumPy type"):
        np.asarray(nascent.zeros(3, dtype=nascent.bfloat16))


def test_dlpack_to_torch_and_numpy_shares_memory():
    t = nascent.randn(3, 5, seed=1)
    x = torch.from_dlpack(t)
    assert x.data_ptr() == t.data_ptr()
    np.testing.assert_array_equal(x.numpy(), np.asarray(t))
    y = np.from_dlpack(t)
    assert ptr(y) == t.data_ptr()
    # bf16 has no NumPy type, but DLPack carries it to PyTorch.
    h = nascent.ones(4, dtype=nascent.bfloat16)
    assert torch.from_dlpack(h).dtype == torch.bfloat16


def test_dlpack_from_torch_shares_memory():
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()
    t = nascent.from_dlpack(x)
    assert t.data_ptr() == x.data_ptr() and t.strides == (1, 4)
    x[0, 1] = -7.0
    assert t[0, 1].item() == -7.0
    del x
    assert t.sum().item() == pytest.approx(66.0 - 4.0 - 7.0)


def test_tensor_copies_like_torch_tensor():
    data = [[1.0, 2.0], [3.0, 4.0]]
    t = nascent.tensor(data)
    assert t.dtype == nascent.float32 and t.tolist() == data
    assert nascent.tensor([1, 2, 3]).dtype == nascent.int64
    a = np.ones(3)
    assert nascent.tensor(a).data_ptr() != ptr(a)
