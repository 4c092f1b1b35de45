"""NumPy semantics that a differential sweep of ordinary NumPy code found broken, each checked
against NumPy itself under `flowjit.jit(fallback=False)` (so a graph break fails the test):

- a slice of length 1 taken from a runtime-size axis (`x[:, :1]`, `x[:, -1:]`, `x[:1]`)
  broadcasts against the full axis (compiler/core/unit_dims.py), and still refuses a mismatch;
- `np.diag` of a vector has zeros off the diagonal;
- `np.matmul` and the ufunc `.reduce` methods trace;
- `np.cumsum`/`np.cumprod` trace (with exact sizes);
- `flatten("F")`/`ravel("F")` give Fortran order;
- `np.round` keeps integer dtypes; `np.array([f32_scalar, 3.0])` is float64 as in NumPy;
- integer `//` and `%` by 0 give 0 and by -1 never overflow, as NumPy's.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowjit
from flowjit.errors import InvalidArgumentError


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


def _edge_columns(x):
    return x - x[:, :1], x * x[:, -1:], x + x[:1], x / (x[:, 0:1] + 1.0)


edge_columns = flowjit.jit(_edge_columns, fallback=False)


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(0, 9), cols=st.sampled_from([0, 2, 3, 7, 13]))
def test_length_one_slices_broadcast_against_their_axis(rows, cols):
    x = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols)
    for got, want in zip(edge_columns(x), _edge_columns(x)):
        _same(got, want)


def test_length_one_slice_of_an_empty_axis_still_refuses_a_mismatch():
    f = flowjit.jit(lambda x, y: y - x[:, :1], fallback=False)
    _same(f(np.ones((4, 5)), np.ones((4, 6))), np.zeros((4, 6)))
    with pytest.raises(InvalidArgumentError, match="Incompatible shapes"):
        f(np.zeros((4, 0)), np.ones((4, 6)))   # NumPy: (4,0) and (4,6) do not broadcast


def _diagonals(v, m):
    return np.diag(v), np.diag(v, 1), np.diag(v, k=-2), np.diag(m), np.diag(m, 1)


def test_diag_of_a_vector_has_zeros_off_the_diagonal():
    f = flowjit.jit(_diagonals, fallback=False)
    for v in (np.array([1.0, 2.0, 3.0]), np.arange(1, 6, dtype=np.int32)):
        m = np.arange(12, dtype=v.dtype).reshape(3, 4)
        for got, want in zip(f(v, m), _diagonals(v, m)):
            _same(got, want)


def _ufunc_methods(a, b, v):
    return (np.matmul(a, b), np.matmul(a, v), np.add.reduce(a), np.multiply.reduce(a, axis=1),
            np.maximum.reduce(a, axis=None), np.minimum.reduce(a, axis=-1, keepdims=True),
            np.logical_and.reduce(a > 2, axis=0), np.logical_or.reduce(a > 2, axis=1),
            np.add.reduce(a.astype(np.int32), axis=1))


def test_matmul_and_ufunc_reduce_methods_trace():
    a, b, v = np.arange(12.0).reshape(3, 4), np.arange(8.0).reshape(4, 2), np.arange(4.0)
    for got, want in zip(flowjit.jit(_ufunc_methods, fallback=False)(a, b, v),
                         _ufunc_methods(a, b, v)):
        _same(got, want)


def _scans_and_orders(a, v):
    return (np.cumsum(a, axis=1), np.cumprod(a, axis=0), v.cumsum(), np.cumsum(a),
            np.cumsum(v, dtype=np.float32), a.flatten(order="F"), a.T.flatten("F"),
            np.ravel(a, "F"), a[:, 1:].flatten("F"))


def test_cumulative_sums_and_fortran_order_flattening():
    f = flowjit.jit(_scans_and_orders, fallback=False)
    a, v = np.arange(1.0, 13.0).reshape(3, 4), np.arange(7, dtype=np.int32)
    for _ in range(2):   # and again with other sizes
        for got, want in zip(f(a, v), _scans_and_orders(a, v)):
            _same(got, want)
        a, v = np.concatenate([a, a]), np.concatenate([v, v])


def _dtype_rules(i, x):
    return (np.round(i, -1), np.around(i), i.round(2), np.round(i.astype(np.int32), -1),
            np.array([x.sum(), 3.0]), np.array([x[0], 3]), np.array([x.sum(), x.max()]),
            np.array([i[0], 2]), np.array([[i[0], i[1]], [i[2], 7]]))


def test_round_keeps_integers_and_array_of_scalars_follows_numpy():
    i = np.array([15, 25, -15, -25, 14, 35, 7])
    x = np.arange(5, dtype=np.float32)
    for got, want in zip(flowjit.jit(_dtype_rules, fallback=False)(i, x), _dtype_rules(i, x)):
        _same(got, want)


def _integer_division(a, b):
    return (a // b, a % b, np.floor_divide(a, b), np.mod(a, b),
            (a // 3).astype(np.int32) // b.astype(np.int32),
            a.astype(np.uint8) % b.astype(np.uint8), a.astype(np.uint16) // b.astype(np.uint16),
            a.astype(np.int8) // np.int8(-1))


def test_integer_division_by_zero_and_minus_one_as_numpy():
    a = np.array([5, -5, 0, 7, np.iinfo(np.int64).min, -7, 9])
    b = np.array([0, 0, 0, -2, -1, -1, 4])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # NumPy warns; flowjit does not
        want = _integer_division(a, b)
    for got, w in zip(flowjit.jit(_integer_division, fallback=False)(a, b), want):
        _same(got, w)


def test_integer_division_loops_stay_parallel(monkeypatch):
    """Integer // and % (and the index arithmetic of a reshaped view) in a large loop: the
    loop must stay a prange loop, which numba refuses (with a NumbaPerformanceWarning) when
    the division can raise inside it.  The cache is off so the kernel really compiles."""
    from numba.core.errors import NumbaPerformanceWarning

    monkeypatch.setenv("FLOWJIT_CACHE_DIR", "off")
    a = np.arange(-150_000, 150_000, dtype=np.int64).reshape(600, 500)
    b = np.arange(1, 501, dtype=np.int64) - 250           # one zero divisor, NumPy gives 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn = flowjit.jit(lambda x, y: x // y + x % 7 + x.T.reshape(600, 500) // 3)
        got = fn(a, b)
        want = a // b + a % 7 + a.T.reshape(600, 500) // 3
    np.testing.assert_array_equal(got, want)
    slow = [w for w in caught if issubclass(w.category, NumbaPerformanceWarning)]
    assert not slow, slow[0].message
    assert "prange(" in fn.lower(a, b).source


_MIXED_KEYS = [lambda x, i: x[i, 1], lambda x, i: x[1, i], lambda x, i: x[i, 1, 2],
               lambda x, i: x[i, :, -1], lambda x, i: x[2, :, i], lambda x, i: x[:, i, 1:4],
               lambda x, i: x[1:3, i, 0], lambda x, i: x[-1, i, ::2]]


def _mixed_indexing(x, i):
    return tuple(key(x, i) for key in _MIXED_KEYS)


def test_a_traced_index_array_beside_ints_and_slices():
    # NumPy counts the ints as advanced indices: x[2, :, i] puts i's axes first
    f = flowjit.jit(_mixed_indexing, fallback=False)
    x = np.arange(4 * 4 * 6, dtype=np.float64).reshape(4, 4, 6)
    for i in (np.array([3, 0, 2, -1]), np.array([[1, 2], [0, 3]])):
        for got, want in zip(f(x, i), _mixed_indexing(x, i)):
            _same(got, want)


def _bits(a, b):
    return (a & b, a | b, a ^ b, ~a, a << b, a >> b, np.bitwise_and(a, 6), np.invert(a),
            np.left_shift(a, 2), np.right_shift(a, b), 7 & a, (a > 0) & (b > 0), ~(a > 0))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_bitwise_operators_on_integers(dtype):
    # shift counts outside [0, width) included: NumPy gives 0 (left) or the sign (right)
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, size=(7, 5), dtype=dtype, endpoint=True)
    low = 0 if info.min == 0 else -2
    b = rng.integers(low, 8 * np.dtype(dtype).itemsize + 3, size=(1, 5)).astype(dtype)
    for got, want in zip(flowjit.jit(_bits, fallback=False)(a, b), _bits(a, b)):
        _same(got, want)


def _mixed_assignments(x, i):
    x[i, 1] = 7.0
    x[i, 2:4] += 1.0
    x[0, i] = -1.0
    return x.sum(axis=0)


def test_assignment_through_a_traced_index_array_beside_ints_and_slices():
    f = flowjit.jit(_mixed_assignments, fallback=False)
    for i in (np.array([3, 0, -1]), np.array([2, 2])):   # a repeated index: the last wins
        x = np.arange(30.0).reshape(5, 6)
        want_x = x.copy()
        want = _mixed_assignments(want_x, i)
        _same(f(x, i), want)
        _same(x, want_x)   # the caller's array holds NumPy's result


def _batched_products(a, b, w, c):
    return (a @ b, a @ w, np.matmul(a, np.swapaxes(b, 1, 2).copy().swapaxes(1, 2)),
            c @ np.swapaxes(c, -1, -2), np.einsum("bij,bjk->bik", a, b))


@pytest.mark.parametrize("batch, m, k, n", [(4, 5, 3, 6), (1, 7, 2, 3), (64, 40, 50, 30),
                                            (0, 3, 2, 2), (3, 0, 4, 2)])
def test_batched_matmul_compiles_one_product_per_matrix(batch, m, k, n):
    rng = np.random.default_rng(batch + m)
    a, b = rng.standard_normal((batch, m, k)), rng.standard_normal((batch, k, n))
    w = rng.standard_normal((k, n))
    c = rng.standard_normal((2, batch, m, k)).astype(np.float32)
    f = flowjit.jit(_batched_products, fallback=False)
    for got, want in zip(f(a, b, w, c), _batched_products(a, b, w, c)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert "for bi in prange(" in f.lower(a, b, w, c).source   # compiled, not interpreted


def _extremes(x):
    return x.max(axis=0), np.min(x, axis=1), np.argmax(x, axis=0)


def test_max_over_an_empty_runtime_axis_raises_as_numpy():
    f = flowjit.jit(_extremes, fallback=False)
    x = np.arange(12.0).reshape(3, 4)
    for got, want in zip(f(x), _extremes(x)):
        _same(got, want)
    for empty in (np.zeros((0, 4)), np.zeros((4, 0))):
        with pytest.raises(ValueError):
            _extremes(empty)
        with pytest.raises(InvalidArgumentError, match="zero-size array|empty sequence"):
            f(empty)


def _small_types(b1, b2, u, i8, x):
    return (b1 + b2, b1 * b2, np.maximum(b1, b2), np.outer(b1, b2), -u, u ** 2, i8 ** 3,
            np.square(u), np.clip(u, -1, 300), np.clip(u, 3, 300), np.clip(i8, -200, 50),
            np.roll(x, (1, 2)), np.roll(x, (1, 2), axis=(0, 1)),
            np.pad(x, 1, mode="edge"), np.pad(x, (1, 2), mode="wrap"),
            np.pad(x[0], 2, mode="reflect"))


def test_bool_arithmetic_narrow_integers_clip_roll_and_moving_pads():
    b1, b2 = np.array([True, False, True]), np.array([True, True, False])
    u, i8 = np.array([0, 5, 255], np.uint8), np.array([3, -4, 100], np.int8)
    x = np.arange(12.0).reshape(3, 4)
    for got, want in zip(flowjit.jit(_small_types)(b1, b2, u, i8, x),
                         _small_types(b1, b2, u, i8, x)):
        _same(got, want)


def test_isclose_infinities_are_close_only_to_themselves():
    a = np.array([np.inf, np.nan, np.inf, 1.0, 1.0, -np.inf])
    b = np.array([-np.inf, np.nan, np.inf, 1.0 + 1e-9, 2.0, -np.inf])
    f = flowjit.jit(lambda p, q: (np.isclose(p, q), np.isclose(p, q, equal_nan=True),
                                  np.isclose(p.astype(np.int64) * 0 + 3, 3)), fallback=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # inf/nan to int64 casts
        want = (np.isclose(a, b), np.isclose(a, b, equal_nan=True),
                np.isclose(a.astype(np.int64) * 0 + 3, 3))
        got = f(a, b)
    for g, w in zip(got, want):
        _same(g, w)


@pytest.mark.parametrize("fn", [lambda p: np.pad(p, 1, mode="maximum"),
                                lambda p: np.pad(p, 2, mode="linear_ramp"),
                                lambda p: np.pad(p, 2, mode="reflect", reflect_type="odd"),
                                lambda p: np.conjugate(p + 1j)])
def test_value_computing_pads_and_complex_conjugate_break_cleanly(fn):
    from flowjit.errors import UnimplementedError

    a = np.array([1.0, 5.0, 2.0, 8.0])
    with pytest.raises(UnimplementedError):
        flowjit.jit(fn, fallback=False)(a)
    _same(flowjit.jit(fn)(a), fn(a))   # with the fallback: NumPy's own answer


def test_moveaxis_checks_its_axes_as_numpy():
    x = np.zeros((2, 3, 4))
    f = flowjit.jit(lambda x: np.moveaxis(x, [0, -1], [2, 0]), fallback=False)
    assert f(x).shape == np.moveaxis(x, [0, -1], [2, 0]).shape
    with pytest.raises(np.exceptions.AxisError):
        flowjit.jit(lambda x: np.moveaxis(x, 0, 5), fallback=False)(x)
    with pytest.raises(ValueError, match="same number"):
        flowjit.jit(lambda x: np.moveaxis(x, [0, 1], [2]), fallback=False)(x)
