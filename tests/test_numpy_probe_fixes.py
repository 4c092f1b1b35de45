"""NumPy semantics found broken by a differential probe of ordinary NumPy code (2026-12-04),
each checked against NumPy itself:

- `x[mask] = v` with a boolean mask over the leading axes writes whole rows (it used to
  broadcast the mask along the trailing axis), and a mask whose shape does not lead the
  array's is NumPy's IndexError;
- static scalars -0.0 and 0.0 are different signatures (one kernel served both), and a NaN
  matches itself (it retraced on every call);
- concurrent first calls from threads trace and compile once per signature (they raised);
- a call whose written argument shares memory with another argument runs as plain Python,
  so the write shows through the other argument as in NumPy;
- a scatter whose updates read its own target (`x[idx] = x`) is not written in place;
- drawing random numbers (np.random.*, a captured Generator) is a graph break, not a
  constant frozen at trace time;
- products of booleans and of small or unsigned integers trace (they raised TypeError);
- comparisons with Python ints outside the array's integer range compare by value (they
  raised OverflowError);
- `x[()] = v` and `x[()] += v` on 0-d arrays trace (they raised ValueError inside flowjit);
- run-time size mismatches are ValueErrors too, as NumPy's (InvalidArgumentError only);
- np.sinh/np.cosh/np.hypot are accurate near 0 and near overflow (within 2 ulp);
- shifts of uint64 keep every bit (they went through float64);
- a NumPy scalar argument after a 0-d array of its dtype (it segfaulted: the fast path took
  the scalar for the array), and ndarray subclasses (masked arrays, np.matrix) run as plain
  Python instead of being traced as plain arrays;
- complex var/std/norm/vdot are graph breaks (they dropped the imaginary part or the
  conjugate), complex max/sort too (they raised TypeError); bool ** 2 is int8;
- a jitted function called inside another is traced through (the outer one broke);
- `p[np.arange(n), y] -= 1` and `x[i, j] = v` with index arrays compile (a graph break).
"""

import concurrent.futures

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowjit


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_array_equal(got, want)


def _zero_rows(x, row_value):
    x[x[:, 0] > 0] = 0.0               # a mask over rows, a scalar
    y = x.copy()
    y[y.sum(axis=1) < -1.0] = row_value  # a mask over rows, a value broadcast along a row
    return y


zero_rows = flowjit.jit(_zero_rows, fallback=False)


@settings(max_examples=20, deadline=None)
@given(rows=st.integers(0, 7), cols=st.sampled_from([1, 2, 3, 5]), seed=st.integers(0, 99))
def test_a_row_mask_writes_whole_rows(rows, cols, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols))
    row_value = rng.standard_normal(cols)
    mine, theirs = x.copy(), x.copy()
    _same(zero_rows(mine, row_value), _zero_rows(theirs, row_value))
    _same(mine, theirs)                # the argument is written as NumPy writes it


def test_a_mask_over_two_leading_axes_of_a_3d_array():
    def f(x):
        x[x[:, :, 0] > 0.5] = -1.0
        return x

    x = np.random.default_rng(3).standard_normal((4, 3, 2))
    _same(flowjit.jit(f, fallback=False)(x.copy()), f(x.copy()))


@pytest.mark.parametrize("array_shape, mask_shape", [((3, 3), (1,)), ((3,), (3, 1))])
def test_a_mask_that_does_not_lead_the_array_is_an_index_error(array_shape, mask_shape):
    def f(x, m):
        x[m] = 1.0
        return x

    for fn in (f, flowjit.jit(f, fallback=False)):
        with pytest.raises(IndexError):
            fn(np.zeros(array_shape), np.ones(mask_shape, bool))


def test_minus_zero_and_nan_scalars_are_their_own_static_values():
    f = flowjit.jit(lambda x, s: x / s, fallback=False)
    x = np.array([1.0, -2.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        for s in (0.0, -0.0, np.float32(-0.0), np.float64(0.0), complex(0.0, -0.0)):
            _same(f(x, s), x / s)
        _same(f(x, float("nan")), x / float("nan"))
        compiled = f.compile_count
        _same(f(x, float("nan")), x / float("nan"))    # the same NaN: no retrace
        assert f.compile_count == compiled


def test_concurrent_first_calls_from_threads():
    """Every thread's first call traces, compiles or waits for the one that does; a function
    that reads sizes (retraced with exact shapes) used to raise in the threads that raced."""
    def add_in_place(a, b):
        a += b
        return a.sum() / a.shape[0]       # reads a size: exact shapes

    f = flowjit.jit(add_in_place, fallback=False)
    arrays = [np.zeros(1000 + k % 2) for k in range(8)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda a: f(a, np.ones(a.shape[0])), arrays))
    assert results == [1.0] * 8
    assert all((a == 1.0).all() for a in arrays)
    assert f.compile_count == 2           # one per shape, not one per thread


def _bump_then_read(a, b):
    a += 1.0
    return b.sum()


def _scale_view_then_copy(a, b):
    b *= 10.0
    return a.copy()


_ALIAS_CASES = [
    (_bump_then_read, lambda z: (z, z)),                 # the same array twice
    (_bump_then_read, lambda z: (z, z.T)),               # a transposed view
    (_bump_then_read, lambda z: (z, z.copy())),          # no sharing: the kernel runs
    (_scale_view_then_copy, lambda z: (z, z[:, ::2])),   # write a view, read its base
    (_scale_view_then_copy, lambda z: (z[::-1], z)),
]


@pytest.mark.parametrize("fn, make", _ALIAS_CASES)
def test_a_written_argument_seen_through_another(fn, make):
    """NumPy shows a write through every argument sharing its memory; such calls run as plain
    Python (the trace sees independent arrays), others run the kernel."""
    f = flowjit.jit(fn, fallback=False)
    for _ in range(3):                  # the fast paths cache the call: still guarded
        mine, theirs = np.arange(9.0).reshape(3, 3), np.arange(9.0).reshape(3, 3)
        _same(f(*make(mine)), fn(*make(theirs)))
        _same(mine, theirs)


def _scatter_self(x, idx):
    x[idx] = x
    y = x.copy()
    y[idx] = y * 2.0 + 1.0
    return y


scatter_self = flowjit.jit(_scatter_self, fallback=False)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 9), seed=st.integers(0, 99), repeats=st.booleans())
def test_a_scatter_whose_updates_read_its_own_target(n, seed, repeats):
    """`x[idx] = x` may not write rows in place: later updates would read rewritten rows."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, n) if repeats else rng.permutation(n)
    x = rng.standard_normal((n, 3))
    mine, theirs = x.copy(), x.copy()
    _same(scatter_self(mine, idx), _scatter_self(theirs, idx))
    _same(mine, theirs)


_RNG = np.random.default_rng(0)


def _dropout(x):
    return x * (np.random.rand(*x.shape) > 0.5)


def _noisy(x):
    return x + _RNG.normal(size=x.shape)


def test_random_numbers_are_drawn_at_every_call_not_frozen_at_trace_time():
    x = np.ones(64)
    f = flowjit.jit(_dropout)
    masks = [f(x) for _ in range(3)]
    assert not np.array_equal(masks[0], masks[1]) or not np.array_equal(masks[1], masks[2])
    np.random.seed(7)
    got = f(x)
    np.random.seed(7)
    _same(got, _dropout(x))                # NumPy's own draws, from its global state
    g = flowjit.jit(_noisy)
    state = _RNG.bit_generator.state
    got = [g(x), g(x)]
    _RNG.bit_generator.state = state       # the trace's draw was put back: same stream
    _same(got[0], _noisy(x))
    _same(got[1], _noisy(x))
    for fn in (_dropout, _noisy):
        with pytest.raises(flowjit.errors.UnimplementedError, match="random"):
            flowjit.jit(fn, fallback=False)(x)


def test_seeded_generators_made_inside_still_compile():
    def f(x):
        return x + np.random.default_rng(3).normal(size=x.shape)

    jf = flowjit.jit(f, fallback=False)
    x = np.zeros(5)
    _same(jf(x), f(x))
    assert jf.lower(x).compiled


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.uint16, np.uint64])
def test_products_of_booleans_and_small_integers(dtype):
    """MatMul has no kernel for these: they multiply as int64, and bool products are any of
    the pairwise ands, as NumPy's; small integers wrap as NumPy's do."""
    f = flowjit.jit(lambda a, b: (a @ b, a[0] @ b, np.dot(a, b[:, 0])), fallback=False)
    rng = np.random.default_rng(1)
    a = rng.integers(0, 200, (3, 4)).astype(dtype)
    b = rng.integers(0, 200, (4, 5)).astype(dtype)
    for got, want in zip(f(a, b), (a @ b, a[0] @ b, np.dot(a, b[:, 0]))):
        _same(got, want)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint32, np.int64])
def test_comparisons_with_python_ints_out_of_the_dtype_range(dtype):
    """NumPy 2 compares by value: `labels != -1` on uint8 is True everywhere (flowjit raised
    OverflowError converting -1 to uint8)."""
    info = np.iinfo(dtype)
    x = np.array([[info.min, 3, info.max]], dtype)
    for low, high in ((-1, 1000), (info.min - 1, info.max + 1)):
        def f(a):
            return (a != low, a == low, a > low, low < a, a < high, high <= a,
                    (a != low) & (a > 2))

        for got, want in zip(flowjit.jit(f, fallback=False)(x), f(x)):
            _same(got, want)


def test_assigning_into_zero_dimensional_arrays():
    def f(x, y):
        x[()] = 3.0
        y[()] += 1.5
        z = np.zeros(())
        z[()] = x + y
        return z * 2

    mine = (np.array(1.0), np.array(2.0))
    theirs = (np.array(1.0), np.array(2.0))
    _same(flowjit.jit(f, fallback=False)(*mine), f(*theirs))
    for m, t in zip(mine, theirs):
        _same(m, t)


def test_random_classes_still_work_inside():
    def f(x):
        rng = np.random.Generator(np.random.PCG64(5))
        assert isinstance(rng, np.random.Generator)
        return x + rng.standard_normal(x.shape)

    x = np.zeros(4)
    _same(flowjit.jit(f, fallback=False)(x), f(x))


def test_size_mismatches_at_run_time_are_value_errors_as_in_numpy():
    """Sizes that do not broadcast, found when the kernel runs, raise an error that is both
    TensorFlow's InvalidArgumentError and NumPy's ValueError."""
    f = flowjit.jit(lambda a, b: a + b, fallback=False)
    f(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="Incompatible shapes for Add"):
        f(np.ones(3), np.ones(4))
    with pytest.raises(flowjit.errors.InvalidArgumentError):
        f(np.ones(3), np.ones(4))
    with pytest.raises(ValueError):
        np.ones(3) + np.ones(4)


def _within_ulps(got, want, ulps):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    exact = ~np.isfinite(want) | (want == 0)
    np.testing.assert_array_equal(got[exact & ~np.isnan(want)], want[exact & ~np.isnan(want)])
    close = ~exact
    spacing = np.spacing(np.abs(want[close]))
    assert np.all(np.abs(got[close] - want[close]) <= ulps * spacing)


_hyperbolic = flowjit.jit(lambda x, y: (np.sinh(x), np.cosh(x), np.hypot(x, y)),
                          fallback=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sinh_cosh_hypot_near_zero_and_near_overflow(dtype):
    """sinh was (exp(x) - exp(-x)) / 2: sinh(1e-10) gave 0 and sinh(1e-5) in float32 was off
    by 0.1%; sinh/cosh overflowed where exp does (710), before they do; hypot squared its
    operands (hypot(1e200, 1e200) was inf). Now within 2 ulp of NumPy, specials equal."""
    rng = np.random.default_rng(4)
    scales = (1e-30, 1e-8, 1e-3, 0.3, 3.0, 30.0, 300.0)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 89.0, -89.0, 710.0, -711.0, 1e200, 1e-300]
    with np.errstate(over="ignore"):   # 1e200 is inf in float32
        x = np.concatenate([rng.standard_normal(300) * s for s in scales]
                           + [special]).astype(dtype)
    y = np.concatenate([x[3:], x[:3]])
    with np.errstate(all="ignore"):
        want = (np.sinh(x), np.cosh(x), np.hypot(x, y))
        got = _hyperbolic(x, y)
    for g, w in zip(got, want):
        _within_ulps(g, w, 2)
    np.testing.assert_array_equal(np.signbit(got[0]), np.signbit(want[0]))


_shifts = flowjit.jit(lambda x: (x >> 7, x >> 1, x ^ (x >> 7), x << 3), fallback=False)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint32,
                                   np.int64, np.uint64])
def test_shifts_keep_every_bit_of_wide_and_unsigned_integers(dtype):
    """uint64 >> k went through float64 (the out-of-range branch of the shift helper mixed
    uint64 with an int64 literal), so values at or above 2**53 lost their low bits."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(11)
    x = np.concatenate([
        rng.integers(info.min, info.max, size=200, dtype=dtype, endpoint=True),
        np.array([info.min, info.max, 0, 1, info.max - 1], dtype=dtype)])
    for got, want in zip(_shifts(x), (x >> 7, x >> 1, x ^ (x >> 7), x << 3)):
        _same(got, want)


def test_numpy_scalar_after_a_zero_dimensional_array():
    """The fast path keyed a NumPy scalar like the 0-d array seen before and handed it to the
    kernel's entry, which read it as an ndarray: a segmentation fault."""
    f = flowjit.jit(lambda x, s: x * s)
    x = np.array([1.0, 2.0])
    for s in (np.array(3.0), np.float64(5.0), np.array(3.0), np.float64(7.0)):
        _same(f(x, s), x * s)
    g = flowjit.jit(lambda x: x * 2)
    for v in (np.array(3, np.int8), np.int8(4), np.array(5, np.int8), np.int8(6)):
        _same(g(v), v * 2)


def test_ndarray_subclasses_run_as_numpy_runs_them():
    masked = np.ma.masked_array(np.arange(6.0).reshape(3, 2),
                                mask=[[0, 1], [0, 0], [1, 0]])
    f = flowjit.jit(lambda x: (x.sum(), x.mean(axis=0), x * 2))
    plain = f(np.arange(6.0).reshape(3, 2))     # compiled first, for a plain array
    assert float(plain[0]) == 15.0
    total, mean, doubled = f(masked)
    assert float(total) == 10.0
    np.testing.assert_array_equal(mean, [1.0, 4.0])
    assert isinstance(doubled, np.ma.MaskedArray)
    matrix = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    square = flowjit.jit(lambda a: a * a)
    _same(square(np.asarray(matrix)), np.asarray(matrix) ** 2)
    np.testing.assert_array_equal(square(matrix), matrix * matrix)   # the matrix product
    with pytest.raises(flowjit.errors.UnimplementedError, match="numpy.matrix"):
        flowjit.jit(lambda a: a * a, fallback=False)(matrix)


def test_complex_reductions_match_numpy():
    z = np.array([1 + 1j, -1 - 1j, 2j, 0, 3 - 0.5j])
    fns = (lambda z: z.var(), lambda z: z.std(ddof=1), lambda z: np.linalg.norm(z),
           lambda z: np.vdot(z, z[::-1]), lambda z: z.max(), lambda z: np.sort(z),
           lambda z: np.var(z.reshape(1, 5), axis=1))
    for fn in fns:
        want = fn(z)
        got = flowjit.jit(fn)(z)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_bool_array_squared_by_the_operator_is_int8():
    b = np.array([True, False, True])
    got = flowjit.jit(lambda b: (b ** 2, np.power(b, 2), b ** 3))(b)
    for g, w in zip(got, (b ** 2, np.power(b, 2), b ** 3)):
        _same(g, w)


def test_a_jitted_function_called_inside_another_is_traced_through():
    """The inner function's fast path read `.flags` of the outer trace's arrays, a graph
    break: the outer function never compiled."""
    inner = flowjit.jit(lambda x: np.tanh(x) * 2)
    outer = flowjit.jit(lambda x: inner(x) + inner(x * 2).sum(), fallback=False)
    x = np.linspace(-1.0, 1.0, 7)
    np.testing.assert_allclose(outer(x), np.tanh(x) * 2 + (np.tanh(2 * x) * 2).sum(),
                               atol=1e-14)
    np.testing.assert_allclose(inner(x), np.tanh(x) * 2, atol=1e-15)   # still works alone


def _ce_grad(logits, y):
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(logits.shape[0]), y] -= 1
    return p / logits.shape[0]


def _set_points(x, i, j, v):
    x = x.copy()
    x[i, j] = v
    return x


_ce_grad_jit = flowjit.jit(_ce_grad, fallback=False)
_set_points_jit = flowjit.jit(_set_points, fallback=False)


@settings(max_examples=6, deadline=None)   # each new shape compiles (exact shapes)
@given(st.integers(1, 7), st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_assignment_at_index_points(rows, cols, seed):
    """`p[np.arange(n), y] -= 1` and `x[i, j] = v` with index arrays on the leading axes
    (negative and repeated indices, a trailing axis written whole) compile, as NumPy."""
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((rows, cols))
    y = rng.integers(0, cols, rows)
    np.testing.assert_allclose(_ce_grad_jit(logits, y), _ce_grad(logits, y), rtol=1e-12,
                               atol=1e-15)
    x = rng.standard_normal((rows, cols, 3))
    i = rng.integers(-rows, rows, 4)
    j = rng.integers(-cols, cols, 4)
    for v in (2.5, rng.standard_normal(3), rng.standard_normal((4, 3))):
        _same(_set_points_jit(x, i, j, v), _set_points(x, i, j, v))


def test_assignment_at_a_point_outside_the_array_fails():
    x = np.zeros((3, 4))
    for i, j in (([0, 3], [1, 1]), ([0, 1], [4, 0]), ([0, -4], [0, 0]), ([0, 0], [-5, 0])):
        with pytest.raises(ValueError, match="index"):   # NumPy: IndexError
            _set_points_jit(x, np.array(i), np.array(j), 1.0)
