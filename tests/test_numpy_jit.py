"""`flowjit.jit` on ordinary NumPy code: promotion, indexing, views and in-place updates,
argument write-back, graph breaks and their fallback, compared with NumPy itself.

Every check runs the same Python function twice, once by NumPy and once through
`flowjit.jit`, on copies of the same inputs, and compares results (dtype included) and the
final contents of every argument. Jitted functions are module-level and hypothesis draws
from a few shapes, so the number of distinct compiles stays small.
"""

import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowjit as tf
from flowjit.errors import UnimplementedError

SETTINGS = settings(max_examples=12, deadline=None)


def same(fn, *args, jitted=None, rtol=1e-6, atol=1e-9):
    """Run fn under NumPy and under jit on copies of args; compare results and arguments."""
    ref_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    ref = fn(*ref_args)
    got = (jitted or tf.jit(fn))(*got_args)
    _compare(ref, got, rtol, atol)
    for r, g in zip(ref_args, got_args):
        if isinstance(r, np.ndarray):
            np.testing.assert_allclose(g, r, rtol=rtol, atol=atol)
    return got


def _compare(ref, got, rtol, atol):
    if isinstance(ref, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(ref) == len(got)
        for r, g in zip(ref, got):
            _compare(r, g, rtol, atol)
        return
    r, g = np.asarray(ref), np.asarray(got)
    assert r.dtype == g.dtype, (r.dtype, g.dtype)
    assert r.shape == g.shape, (r.shape, g.shape)
    if r.dtype.kind in "fc":
        np.testing.assert_allclose(g, r, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, r)


# --- promotion (NEP 50) ---------------------------------------------------------------------
def promote(a, b):
    return (a + b, a * b, a - b, a / b, a // b, a % b, np.maximum(a, b), a < b, a == b,
            np.where(a > b, a, b), a + 3, a * 2.5, 1 - a, a ** 2, np.sqrt(np.abs(a)),
            -a, abs(b), a + True)


PROMOTE = tf.jit(promote)
DTYPES = [np.int32, np.int64, np.float32, np.float64, np.uint8, np.int16]


@SETTINGS
@given(st.sampled_from(DTYPES), st.sampled_from(DTYPES), st.sampled_from([(5,), (3, 4)]),
       st.integers(0, 2**16))
def test_binary_promotion_matches_numpy(da, db, shape, seed):
    rng = np.random.default_rng(seed)
    a = (rng.integers(1, 50, shape)).astype(da)
    b = (rng.integers(1, 50, shape)).astype(db)
    with np.errstate(all="ignore"):
        same(promote, a, b, jitted=PROMOTE, rtol=1e-6, atol=0)


def test_float32_stays_float32_with_python_scalars_and_0d_arrays_do_not():
    x = np.linspace(-1, 1, 7, dtype=np.float32)
    # x sums to ~0: float32 summation order (NumPy's pairwise, flowjit's partials) moves the
    # result by an ulp of the terms, so the absolute tolerance is float32's
    got = same(lambda x: (x * 2.0 + 1, np.exp(x) / 3, x.sum(), x.mean(), x * np.float64(2)),
               x, atol=1e-6)
    assert got[0].dtype == np.float32 and got[4].dtype == np.float64


def test_integer_division_and_modulo_signs():
    a = np.array([7, -7, 7, -7, 0, 5], dtype=np.int64)
    b = np.array([2, 2, -2, -2, 3, -5], dtype=np.int64)
    same(lambda a, b: (a // b, a % b, a / b, np.floor_divide(a, 3), a % -3), a, b)
    f = np.array([7.5, -7.5, 7.5, -7.5], dtype=np.float64)
    g = np.array([2.0, 2.0, -2.0, -2.0])
    same(lambda a, b: (a // b, a % b, a - b), f, g)


def test_two_output_ufuncs_divmod_and_modf():
    """np.divmod (and divmod()) with NumPy's signs and zero divisors; np.modf keeps signs,
    modf(±inf) is (±0, ±inf); out= tuples are filled."""
    a = np.array([7, -7, 7, -7, 0, 5, np.iinfo(np.int32).min], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 3, 0, -1], dtype=np.int32)
    with np.errstate(all="ignore"):
        same(lambda a, b: (np.divmod(a, b), divmod(a, 3), divmod(-9, b[:3])), a, b)
    x = np.array([1.5, -1.5, 3.0, -3.0, np.inf, -np.inf, np.nan, -0.0, 0.25], np.float32)

    def modf_parts(x, a):
        frac, whole = np.empty_like(x), np.empty_like(x)
        np.modf(x, out=(frac, whole))
        f, w = np.modf(x)
        return frac, whole, np.signbit(f), np.signbit(w), np.modf(a), np.divmod(x, 0.75)

    with np.errstate(invalid="ignore"):   # (NumPy warns for divmod(inf, 0.75))
        same(modf_parts, x, a)


FLOAT_DIVISION = tf.jit(lambda x, y: (x // y, x % y, np.divmod(x, y)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_float_floor_division_and_remainder_match_numpy_bit_for_bit(dtype):
    """Every pair of special and ordinary values: inf // 2 is NaN, -5 // inf is -1, a zero
    remainder takes the divisor's sign, x // 0 is x / 0 (NumPy's npy_divmod)."""
    values = np.array([1.5, -1.5, np.inf, -np.inf, np.nan, 5.0, -5.0, 1e30, 7.0, -0.0, 0.0,
                       0.75, -3.0, 1e-30, 2.5, -2.5, 0.1], dtype=dtype)
    x, y = (a.ravel() for a in np.meshgrid(values, values))
    with np.errstate(all="ignore"):
        ref = (x // y, x % y, *np.divmod(x, y))
    got = FLOAT_DIVISION(x, y)
    for r, g in zip(ref, (*got[:2], *got[2])):
        assert g.dtype == r.dtype
        np.testing.assert_array_equal(g, r)
        numbers = ~np.isnan(r)   # (a NaN's sign bit is not part of NumPy's contract)
        np.testing.assert_array_equal(np.signbit(g[numbers]), np.signbit(r[numbers]))


def test_nan_handling_and_empty_reductions():
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -np.inf]])
    same(lambda x: (np.max(x, axis=1), np.argmax(x, axis=1), np.argmin(x, axis=0),
                    np.fmax(x, 2.0), np.minimum(x, 2.0), np.isnan(x), x.sum(axis=0)), x)
    e = np.zeros((0, 3))
    same(lambda e: (e.sum(axis=0), e.prod(axis=0), e.sum()), e)


def test_boolean_arrays_reduce_and_sort_as_numpy():
    """max/min of booleans are any/all; sorting puts False first (both lack boolean kernels)."""
    m = np.random.default_rng(3).random((5, 7)) > 0.5
    m[1] = False
    m[2] = True
    same(lambda m: (np.max(m), m.min(axis=0), m.max(axis=1, keepdims=True),
                    np.minimum.reduce(m, axis=1), np.sort(m, axis=1), np.sort(m, axis=0),
                    np.argsort(m, axis=1, kind="stable")), m)


def test_python_int_out_of_range_raises_numpys_error():
    x = np.arange(4, dtype=np.uint8)
    with pytest.raises(OverflowError):
        x + 300
    with pytest.raises(OverflowError):
        tf.jit(lambda x: x + 300, fallback=False)(x)


# --- indexing ---------------------------------------------------------------------------------
def reads(x):
    return (x[1:-1], x[::-2], x[-1], x[:, None, 1], x[..., 0], x[np.newaxis, 2:, ::3],
            x[[0, 2, -1]], x[:, [1, 0]], x[x.shape[0] - 1, 1:], x[np.array([True, False] * 3)],
            x[[0, 1], [2, 3]], x.T[1], x.reshape(-1)[3:9:2])


READS = tf.jit(reads)


@SETTINGS
@given(st.integers(0, 2**16))
def test_basic_and_advanced_reads(seed):
    x = np.random.default_rng(seed).standard_normal((6, 5))
    same(reads, x, jitted=READS)


def gather_rows(table, idx, cols):
    return table[idx], table[idx, cols], table[-1, idx % 3]


def test_traced_index_arrays():
    table = np.arange(20.0).reshape(5, 4)
    idx = np.array([4, -1, 0, 2], dtype=np.int64)
    cols = np.array([3, 0, 1, 1], dtype=np.int64)
    same(gather_rows, table, idx, cols)


# --- in-place updates, views, write-back -----------------------------------------------------
def updates(a, b):
    a[1:-1, 1:-1] = 0.5 * (a[:-2, 1:-1] + a[2:, 1:-1])
    a[0] += 1
    v = a[:, 2]          # a view: writes reach a
    v *= 3
    t = a.T              # a transposed view
    t[0, :] = -1
    a[[1, 3], 0] = b[:2]
    a[a.shape[0] - 1, ::2] -= 5
    c = a.copy()         # not a view: writes stay in c
    c[:] = 0
    b += a[:, 0]
    return a.sum(), c.sum()


def test_in_place_updates_write_back_to_arguments():
    rng = np.random.default_rng(3)
    same(updates, rng.standard_normal((5, 4)), rng.standard_normal(5))


def test_write_back_into_a_non_contiguous_argument():
    base = np.arange(24.0).reshape(4, 6)
    ref = base.copy()

    def scale(x):
        x *= 2
        x[0] = 7

    scale(ref[:, ::2])
    got = base.copy()
    tf.jit(scale)(got[:, ::2])
    np.testing.assert_array_equal(got, ref)


def test_traced_mask_assignment_and_row_scatter():
    x = np.array([[-1.0, 2.0], [3.0, -4.0], [0.5, -0.5]])
    ids = np.array([2, 0, 2], dtype=np.int64)   # a repeated index: the last write wins

    def clip_neg(x, ids):
        x[x < 0] = 0.0
        x[ids] = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
        return x

    same(clip_neg, x, ids)


def test_in_place_casting_rule_matches_numpy():
    a = np.arange(4)

    def bad(a):
        a += 1.5

    with pytest.raises(TypeError):
        bad(a.copy())
    with pytest.raises(TypeError):
        tf.jit(bad, fallback=False)(a.copy())


def loops(u, w):
    out = np.zeros((u.shape[0], 3))
    for k in range(3):       # unrolled while tracing
        out[:, k] = u[:, k] * w[k]
    acc = np.zeros_like(u[:, :2])
    for i in range(1, u.shape[1] - 1):
        acc += u[:, i - 1:i + 1] * 0.5
    return out, acc, np.cumsum(u, axis=1), np.roll(u, 2, axis=1), np.tril(u[:, :4]), \
        np.linalg.norm(u, axis=1), np.einsum("ij,j->i", u, np.ones(u.shape[1])), \
        np.outer(w, w), np.concatenate([u, u[:, :1]], axis=1), np.stack([w, w * 2])


def test_static_loops_creation_and_manipulation_functions():
    rng = np.random.default_rng(4)
    same(loops, rng.standard_normal((4, 6)), rng.standard_normal(3))


def test_new_shape_recompiles_only_when_the_code_reads_sizes():
    generic = tf.jit(lambda x: np.tanh(x) * 2)
    for n in (3, 5, 8):
        generic(np.ones(n))
    assert generic.compile_count == 1
    sized = tf.jit(lambda x: x[: x.shape[0] // 2].sum())
    for n in (4, 6):
        assert sized(np.arange(float(n))) == np.arange(float(n))[: n // 2].sum()
    assert sized.exact_shapes and sized.compile_count == 2


# --- graph breaks -------------------------------------------------------------------------------
def data_dependent(x):
    if x.sum() > 0:          # a Python `if` on a traced value
        return x * 2
    return -x


def test_graph_break_falls_back_to_python_and_says_why(caplog):
    x = np.array([1.0, -3.0])
    f = tf.jit(data_dependent)
    with caplog.at_level(logging.WARNING, logger="flowjit.jit"):
        np.testing.assert_array_equal(f(x), data_dependent(x))
    [record] = [r for r in caplog.records if "graph break" in r.getMessage()]
    assert "data_dependent" in record.getMessage()
    assert "test_numpy_jit.py" in record.getMessage()
    np.testing.assert_array_equal(f(-x), data_dependent(-x))   # the same entry, no new trace
    assert f.lower(x).compiled is False


@pytest.mark.parametrize("fn, construct", [
    (data_dependent, "Python `if`"),
    (lambda x: float(x[0]) * x, "float()"),
    (lambda x: np.unique(x), "np.unique"),
    (lambda x: x[x > 0], "traced mask"),
    (lambda x: np.where(x > 0), "np.where(condition) with one argument"),
])
def test_unsupported_constructs_raise_a_clear_error_without_fallback(fn, construct):
    with pytest.raises(UnimplementedError) as info:
        tf.jit(fn, fallback=False)(np.array([1.0, -2.0, 3.0]))
    message = str(info.value)
    assert construct in message and "test_numpy_jit.py" in message


def test_huge_unrolled_loops_are_reported():
    # a `for` over range() becomes one graph loop (tests/test_jit_control_flow.py); a loop
    # over another Python iterable still runs in Python, unrolled while tracing
    def long_loop(x):
        for _ in list(range(30000)):
            x = x + 1.0
        return x

    with pytest.raises(UnimplementedError, match="unrolled"):
        tf.jit(long_loop, fallback=False)(np.zeros(3))


def test_flowjit_ops_and_numpy_calls_mix():
    x = np.linspace(-2, 2, 9, dtype=np.float32)
    f = tf.jit(lambda x: tf.tanh(x) + np.exp(x) * 2)
    np.testing.assert_allclose(f(x), np.tanh(x) + np.exp(x) * 2, rtol=1e-6, atol=1e-6)


def test_transposed_matmul_operand_is_a_blas_flag_not_a_copy():
    x = np.random.default_rng(5).standard_normal((7, 3))
    f = tf.jit(lambda x: x.T @ x)
    np.testing.assert_allclose(f(x), x.T @ x, rtol=1e-12)
    source = f.lower(x).source
    # the one-call path (small, narrow sizes) passes the transpose flag to BLAS; only the
    # split path for large products (targets/cpu/matmul_code.py) may copy
    assert "np.dot(in0.T, in0, " in source


def test_byte_swapped_misaligned_and_strided_arguments_are_converted():
    """Arrays the compiled kernel cannot read directly (other byte order, misaligned,
    strided) are converted on the way in, and written back converted when mutated."""
    f = tf.jit(lambda x, y: np.tanh(x) * 2 + y)
    y = np.linspace(0.0, 1.0, 6)
    native = np.linspace(-1.0, 1.0, 6)
    want = np.tanh(native) * 2 + y
    swapped = native.astype(">f8")
    raw = np.frombuffer(b"\0" + native.tobytes(), dtype=np.float64, offset=1)
    strided = np.repeat(native, 2)[::2]
    assert not raw.flags.aligned
    for x in (swapped, native, raw, strided, swapped):
        np.testing.assert_allclose(f(x, y), want, rtol=1e-12)

    def double(a):
        a *= 2

    g = tf.jit(double)
    big = np.arange(5, dtype=">f4")
    g(big)
    assert big.dtype == np.dtype(">f4")
    np.testing.assert_array_equal(big, np.arange(5) * 2.0)


def numba_guide_trace(a):
    """numba's five-minute-guide example (a graph loop since Python control flow is
    converted, tests/test_jit_control_flow.py)."""
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


def long_chain(a):
    t = 0.0
    for i in range(600):
        t = t + a[i % a.shape[0]]
    return t


@pytest.mark.parametrize("fn, arg", [(numba_guide_trace, np.arange(10000.0).reshape(100, 100)),
                                     (long_chain, np.linspace(0.0, 1.0, 7))])
def test_long_unrolled_chains_never_crash(fn, arg, caplog):
    """A chain too deep for a recursive pass falls back to plain Python with the reason
    logged, instead of raising RecursionError (numba's guide example included)."""
    f = tf.jit(fn)
    with caplog.at_level(logging.WARNING, logger="flowjit.jit"):
        np.testing.assert_allclose(f(arg), fn(arg), rtol=1e-12)
        np.testing.assert_allclose(f(arg), fn(arg), rtol=1e-12)
    if f.lower(arg).compiled is False:   # (a converted loop runs as a graph loop in a
        assert any("too deep" in r.getMessage() or "graph break" in r.getMessage() or
                   "reference kernels" in r.getMessage()   # Session until loops lower)
                   for r in caplog.records)


def _tenth(x):
    return x[10]


@pytest.mark.parametrize("target", ["cpu", "reference"])
def test_an_index_out_of_range_is_an_index_error_as_in_numpy(target):
    f = tf.jit(_tenth, target=target)
    np.testing.assert_array_equal(f(np.arange(12.0)), 10.0)
    with pytest.raises(IndexError, match="out of bounds"):
        np.arange(5.0)[10]
    with pytest.raises(IndexError, match="out of bounds") as caught:
        f(np.arange(5.0))
    assert isinstance(caught.value, tf.errors.InvalidArgumentError)
