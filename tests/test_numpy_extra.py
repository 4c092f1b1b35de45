"""The NumPy functions of compiler/np_functions_extra.py and np_functions_numeric.py, the ufunc
`accumulate` methods and reductions with `initial=`/`where=`, compared with NumPy itself.

Every check runs the same function under NumPy and under `flowjit.jit(fallback=False)` (a
graph break fails the test) on copies of the same inputs and compares results (dtype and
shape included) and the final contents of the arguments. Compiles are the cost here (each
distinct signature is a numba kernel; most of these functions read sizes, so a new shape
is a new signature): jitted functions are shared, several calls go into one function, and
hypothesis draws few examples. The last tests check that forms flowjit does not follow
fall back to NumPy with a graph-break warning.
"""

import logging
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowjit as tf
from flowjit.errors import InvalidArgumentError

FEW = settings(max_examples=5, deadline=None, derandomize=True)   # (the same kernels each run)


def jit(fn):
    return tf.jit(fn, fallback=False)


def same(fn, *args, jitted=None, rtol=1e-12, atol=1e-12):
    """fn under NumPy and under jit on copies of args: equal results and arguments."""
    ref_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(all="ignore"):
        ref = fn(*ref_args)
    got = (jitted or jit(fn))(*got_args)
    _compare(ref, got, rtol, atol)
    for r, g in zip(ref_args, got_args):
        if isinstance(r, np.ndarray):
            _compare(r, g, 0, 0)
    return got


def _compare(ref, got, rtol, atol):
    if isinstance(ref, (tuple, list)):
        assert type(got) is type(ref) and len(got) == len(ref), (type(got), type(ref))
        for r, g in zip(ref, got):
            _compare(r, g, rtol, atol)
        return
    if ref is None:
        assert got is None
        return
    r, g = np.asarray(ref), np.asarray(got)
    assert g.dtype == r.dtype, (g.dtype, r.dtype)
    assert g.shape == r.shape, (g.shape, r.shape)
    if r.dtype.kind in "fc":
        np.testing.assert_allclose(g, r, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, r)


def _data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-20, 20, shape).astype(dtype)


# --- take, take_along_axis, select, nan_to_num, isin, fill_diagonal, unravel_index ---------
TAKE = jit(lambda a, i, axis: np.take(a, i, axis=axis))


@FEW
@given(st.sampled_from([np.float32, np.int64]), st.sampled_from([(3, 4), (5, 2)]),
       st.sampled_from([None, 0, 1, -1]), st.sampled_from([(2,), (2, 3)]),
       st.integers(0, 2**16))
def test_take_matches_numpy(dtype, shape, axis, index_shape, seed):
    a = _data(shape, dtype, seed)
    n = a.size if axis is None else shape[axis]
    i = np.random.default_rng(seed).integers(-n, n, index_shape)
    same(lambda a, i, axis: np.take(a, i, axis=axis), a, i, axis, jitted=TAKE)


def test_take_static_indices_and_take_along_axis():
    a = _data((3, 4), np.float64, 1)
    same(lambda a: (np.take(a, [0, -1], axis=1), np.take(a, 5), np.take(a, [[1], [0]]),
                    np.take(a, np.array([True, False]), axis=0)), a)
    same(lambda a, i, j: (np.take_along_axis(a, i, axis=1), np.take_along_axis(a, j, axis=0),
                          np.take_along_axis(a, np.array([[2], [0], [-1]]), axis=1),
                          np.take_along_axis(a, i[0], axis=None)),
         a, np.argsort(a, axis=1), np.array([[0, 2, -1, 1]]))


def test_select_follows_numpy_promotion_and_precedence():
    x = _data((3, 4), np.float32, 2)
    same(lambda x: (np.select([x > 0.5, x > 0], [x, 2 * x], default=-1),       # float32
                    np.select([x > 0], [1], default=x.astype(np.float64)),
                    np.select([x < 0, np.array([True, False, True, False])], [np.int8(3), 7],
                              2.5)), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_to_num(dtype):
    x = np.array([[np.nan, np.inf, -np.inf], [1.5, -0.0, 3.0]], dtype)

    def fn(x, i):
        return (np.nan_to_num(x), np.nan_to_num(x, nan=-1, posinf=1e3, neginf=-2.5),
                np.nan_to_num(i), np.nan_to_num(x, copy=False), x)
    same(fn, x, np.arange(3))


def test_isin_static_and_traced_test_elements():
    a = np.array([[1.0, np.nan, 3.0], [-0.0, 7.0, 2.0]])
    same(lambda a, t, i: (np.isin(a, t), np.isin(a, [3, 0, np.nan], invert=True),
                          np.isin(i, [1, 5, 9]), np.isin(i, t), np.isin(i[0, 0], [4]),
                          np.isin(i, np.array([1, 2], np.int8), kind="table"),
                          np.isin(a, np.zeros(0))),
         a, np.array([[7.0, np.nan], [1.0, 0.0]]), np.arange(6).reshape(2, 3))


def _fill(a, v, wrap):
    np.fill_diagonal(a, v, wrap=wrap)
    return a + 1   # (the written value, read back; a reduction would cost a slow compile)


FILL = jit(_fill)


@pytest.mark.parametrize("shape,value,wrap", [
    ((7, 3), np.array([1.0, 2.0]), True), ((2, 5), np.array([1.0, 2.0, 3.0]), False),
    ((3, 3, 3), np.array(-1.0), False)])
def test_fill_diagonal_writes_the_argument(shape, value, wrap):
    same(_fill, np.zeros(shape), value, wrap, jitted=FILL)   # traced values


def test_fill_diagonal_with_static_values():
    def fn(a, b):
        np.fill_diagonal(a, 5)
        np.fill_diagonal(b, [1.0, 2.0], wrap=True)
        return a, b
    same(fn, np.zeros((4, 4), np.int32), np.zeros((7, 3)))


def test_fill_diagonal_of_a_view_with_casting():
    def fn(a):
        np.fill_diagonal(a[1:, :], [1.7, -2.2])   # into an int8 view: NumPy's unsafe cast
        return a
    same(fn, np.zeros((5, 3), np.int8))


def _unravel(i, j):
    return (np.unravel_index(i, (3, 4)), np.unravel_index(i, (2, 3, 2), order="F"),
            np.unravel_index(j, 12))


UNRAVEL = jit(_unravel)


def test_unravel_index_c_and_f_order():
    same(_unravel, np.array([[0, 5], [11, 7]]), np.array(7, np.uint8), jitted=UNRAVEL)


def test_out_of_range_traced_indices_fail_when_the_code_runs():
    with pytest.raises(InvalidArgumentError):
        jit(lambda a, i: np.take(a, i))(np.arange(4.0), np.array([4]))
    for bad in (12, -1):   # (the kernel of the test above: same signature)
        with pytest.raises(InvalidArgumentError):
            UNRAVEL(np.array([[0, 5], [bad, 7]]), np.array(7, np.uint8))


# --- kron, polyval, trapezoid, linspace, gradient, convolve, cov, corrcoef --------------------
def test_kron_of_any_ranks():
    same(lambda a, b, c: (np.kron(a, b), np.kron(b, c), np.kron(c, a), np.kron(a, 2.0),
                          np.kron(np.array([[1, 2]], np.int8), c)),
         _data((2, 3), np.float32, 3), np.arange(3), _data((2, 1, 2), np.float64, 4),
         rtol=1e-6)


def test_polyval_static_and_traced_coefficients():
    x = _data((5,), np.float32, 5)
    same(lambda x, p, i: (np.polyval([1, -2, 3], x), np.polyval(p, x), np.polyval(p, i),
                          np.polyval(np.array([2, 1], np.int8), i), np.polyval([], x)),
         x, np.array([0.5, -1.0, 2.0]), np.arange(4), rtol=1e-6)


def test_trapezoid():
    y = _data((3, 5), np.float64, 6)
    same(lambda y, x, i: (np.trapezoid(y), np.trapezoid(y, x), np.trapezoid(y, dx=0.5, axis=0),
                          np.trapezoid(y, y, axis=0), np.trapezoid(i)),
         y, np.array([0.0, 0.5, 1.5, 2.0, 4.0]), np.arange(6))


def test_linspace_with_traced_ends(dtype=np.float32):   # (float64: the two tests below)
    def fn(a, b, v):
        return (np.linspace(a, b, 7), np.linspace(a, 3, 4, endpoint=False, retstep=True),
                np.linspace(v, b, 5, axis=-1), np.linspace(0, v, 4, dtype=int),
                np.linspace(a, b, 1, retstep=True), np.linspace(v, v, 3),
                np.linspace(a, b, 0))
    same(fn, np.array(-1.5, dtype), np.array(2.0, dtype), np.array([0.0, 1.0, 5.0], dtype),
         rtol=1e-6)


def test_linspace_keeps_numpys_rule_for_a_zero_step_and_ends_exactly_at_stop():
    # one step underflows to 0: NumPy then computes (y / div) * delta for all of them
    got = same(lambda a, b: np.linspace(a, b, 5), np.array([0.0, 0.0]), np.array([5e-324, 1.0]),
               rtol=0, atol=0)
    assert got[3, 0] == 5e-324
    # 2.48 + 6 * ((0.64 - 2.48) / 6) is not 0.64: NumPy stores stop itself as the last value
    got = same(lambda a, b: np.linspace(a, b, 7), np.array(2.48), np.array(0.64), rtol=0, atol=0)
    assert got[-1] == 0.64


GRADIENT = jit(lambda f, edge_order: (np.gradient(f, edge_order=edge_order),
                                      np.gradient(f, 0.5, axis=-1, edge_order=edge_order)))


@FEW
@given(st.sampled_from([(6,), (3, 4), (3, 3, 4)]), st.sampled_from([np.float32, np.int64]),
       st.sampled_from([1, 2]), st.integers(0, 2**16))
def test_gradient_matches_numpy(shape, dtype, edge_order, seed):
    same(lambda f, edge_order: (np.gradient(f, edge_order=edge_order),
                                np.gradient(f, 0.5, axis=-1, edge_order=edge_order)),
         _data(shape, dtype, seed), edge_order, jitted=GRADIENT, rtol=1e-5, atol=1e-5)


def test_gradient_spacings_per_axis():
    f = _data((3, 4), np.float32, 7)
    same(lambda f: (np.gradient(f, 2.0, np.float64(0.5)), np.gradient(f, 3, axis=(1,)),
                    np.gradient(f[0], edge_order=2), np.gradient(f[:2])), f, rtol=1e-6)


CONVOLVE = jit(lambda a, v, mode: np.convolve(a, v, mode))


@FEW
@given(st.integers(1, 9), st.integers(1, 5), st.sampled_from(["full", "same", "valid"]),
       st.integers(0, 2**16))
def test_convolve_matches_numpy(n, m, mode, seed):
    same(lambda a, v, mode: np.convolve(a, v, mode), _data((n,), np.float64, seed),
         _data((m,), np.float64, seed + 1), mode, jitted=CONVOLVE)


def test_convolve_dtypes_and_static_kernels():
    same(lambda a, b, i: (np.convolve(a, [1, 2, 3]), np.convolve(a, 2.0),
                          np.convolve(i, i * 50), np.convolve(b, b[:2], mode=1)),
         _data((5,), np.float32, 8), np.array([True, False, False, True]),
         np.array([1, 2, 3], np.int8), rtol=1e-6)


def test_cov_and_corrcoef():
    m = _data((3, 6), np.float64, 9)
    same(lambda m, y: (np.cov(m), np.cov(m, rowvar=False, bias=True), np.cov(m, y, ddof=2),
                       np.cov(m[0]), np.cov(m.astype(np.float32)), np.corrcoef(m),
                       np.corrcoef(m[0], y), np.corrcoef(m, rowvar=False),
                       np.cov(np.zeros((0, 4)) + m[0, 0])),
         m, _data((6,), np.float64, 10), rtol=1e-6, atol=1e-12)


def test_corrcoef_clips_to_one():
    # perfectly correlated rows: the quotient rounds above 1 unless clipped as NumPy clips
    a = np.array([0.12573022, -0.13210486, 0.64042265, 0.10490012, -0.53566937])
    x = np.stack([a, a * 3.0 + 1.0])
    got = same(lambda x: np.corrcoef(x), x, rtol=0, atol=0)
    assert np.abs(got).max() <= 1.0


# --- ufunc.accumulate and reductions with initial= / where= ------------------------------------
def _accumulate(a, b, i):
    return (np.maximum.accumulate(a), np.minimum.accumulate(a, axis=1),
            np.add.accumulate(a, axis=-1), np.multiply.accumulate(a, axis=0),
            np.add.accumulate(i), np.maximum.accumulate(i), np.multiply.accumulate(i),
            np.add.accumulate(b), np.minimum.accumulate(b), np.add.accumulate(i, dtype=float),
            np.maximum.accumulate(a, out=np.zeros(a.shape)))


def test_ufunc_accumulate():
    a = _data((5, 3), np.float64, 11)
    a[2, 1] = np.nan
    same(_accumulate, a, np.array([False, True, False]),
         np.array([100, 100, -3, 5, 0], np.int8))


def test_accumulate_of_unsigned_integers():
    same(lambda u: (np.maximum.accumulate(u), np.minimum.accumulate(u)),
         np.array([3, 0, 200, 7], np.uint8))


def _reductions(x, mask, i):
    return (np.max(x, initial=0.5), x.min(axis=0, initial=-1), np.sum(x, initial=10),
            np.prod(x, axis=1, initial=2, keepdims=True), np.max(x, initial=0.5, where=mask),
            np.sum(x, axis=1, where=mask), x.prod(where=[True, False, True, True], axis=1),
            np.min(x, axis=1, initial=5, where=False), np.sum(i, initial=1000),
            np.sum(i, initial=2, dtype=np.int8), i.max(initial=-5, where=i > 0),
            np.max(mask, initial=False), np.min(mask, where=mask, initial=True),
            np.sum(x[:0], axis=0, initial=1.5), np.max(x[:0], axis=0, initial=-3.0))


def test_reductions_with_initial_and_where():
    x = _data((3, 4), np.float64, 12)
    same(_reductions, x, x > 0, np.array([100, 27, -4], np.int8))


# --- NumPy's errors for bad arguments -----------------------------------------------------------
X = np.arange(12.0).reshape(3, 4)
ERRORS = [
    (lambda a: np.take(a, np.array([1.0])), X),
    (lambda a: np.take(a, [7], axis=0), X),
    (lambda a: np.take(a, 0, axis=2), X),
    (lambda a: np.take_along_axis(a, np.array([[True]]), axis=0), X),
    (lambda a: np.take_along_axis(a, np.array([0]), axis=0), X),
    (lambda a: np.select([a], [a]), X),
    (lambda a: np.select([a > 0], [1, 2]), X),
    (lambda a: np.isin(a, [1], kind="x"), X),
    (lambda a: np.isin(a, [1], kind="table"), X),
    (lambda a: np.fill_diagonal(a[0], 1), X),
    (lambda a: np.fill_diagonal(a.reshape(2, 2, 3), 1), X),
    (lambda a: np.unravel_index(a, (3, 4)), X),
    (lambda a: np.unravel_index(a.astype(int), (3, 4), order="A"), X),
    (lambda a: np.linspace(a, 1, -1), X),
    (lambda a: np.linspace(a, 1, 3, axis=3), X),
    (lambda a: np.gradient(a, 1.0, 2.0, 3.0), X),
    (lambda a: np.gradient(a[:1]), X),
    (lambda a: np.gradient(a, edge_order=3), X),
    (lambda a: np.gradient(a > 0), X),
    (lambda a: np.convolve(a, [1, 2]), X),
    (lambda a: np.convolve(a[0], []), X),
    (lambda a: np.convolve(a[0], [1], mode="x"), X),
    (lambda a: np.cov(a, ddof=1.5), X),
    (lambda a: np.cov(a.reshape(1, 3, 4)), X),
    (lambda a: np.add.accumulate(a, axis=None), X),
    (lambda a: np.add.accumulate(a[0, 0]), X),
    (lambda a: np.max(a, where=a > 0), X),
    (lambda a: np.sum(a, where=np.ones((2, 3, 4), bool)), X),
    (lambda a: np.sum(a, where=np.ones(4, int)), X),
    (lambda a: np.max(a.astype(np.uint8), initial=-1), X),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_bad_arguments_raise_numpys_error(case):
    fn, arg = ERRORS[case]
    with pytest.raises(Exception) as ref:
        fn(arg.copy())
    with pytest.raises(type(ref.value)) as got:
        jit(fn)(arg.copy())
    assert str(got.value) == str(ref.value)


# --- forms that fall back to NumPy --------------------------------------------------------------
FALLBACKS = [
    (lambda a: np.take(a, [5, -7], mode="clip"), "mode='clip'"),
    (lambda a: np.take(a, [1], out=np.zeros(1)), "out="),
    (lambda a: np.nan_to_num(a, nan=a[:1] * 0 + 5), "array-valued"),
    (lambda a: np.isin(a, [1.0, 1.0], assume_unique=True), "assume_unique"),
    (lambda a: np.isin(a.astype(np.uint64), [1, -1]), "uint64"),
    (lambda a: np.isin(a > 1, a > 2, kind="table"), "kind='table'"),
    (lambda a: np.unravel_index(a.astype(int)[:0], (0, 3)), "without elements"),
    (lambda a: np.gradient(a, np.arange(4.0) ** 2), "coordinate arrays"),
    (lambda a: np.gradient(a, a[0]), "traced spacings"),
    (lambda a: np.convolve(np.ones(40), np.ones(33) + a[0]), "longer than 32"),
    (lambda a: np.cov(a.reshape(2, 2), fweights=[1, 2]), "fweights"),
    (lambda a: np.cov(a[:1]), "degrees of freedom"),
    (lambda a: np.mean(a, where=a > 1), "np.mean(..., where=)"),
    (lambda a: np.sum(a, initial=a[0]), "initial=<a traced value>"),
    (lambda a: np.subtract.accumulate(a), "np.subtract.accumulate"),
]


@pytest.mark.parametrize("case", range(len(FALLBACKS)))
def test_unsupported_forms_fall_back_with_a_warning(case, caplog):
    fn, construct = FALLBACKS[case]
    x = np.array([0.5, np.nan, 2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = fn(x.copy())
        with caplog.at_level(logging.WARNING, logger="flowjit.jit"):
            got = tf.jit(fn)(x.copy())
    _compare(ref, got, 0, 0)
    [record] = [r for r in caplog.records if "graph break" in r.getMessage()]
    assert construct in record.getMessage(), record.getMessage()
