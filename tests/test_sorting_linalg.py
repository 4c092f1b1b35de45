"""Sorting and dense linear algebra, compiled (the kernel IR's LIBCALL node) against NumPy.

NumPy front end: np.sort/argsort (and the ndarray methods), np.median, np.percentile and
np.quantile (method 'linear'), np.linalg.inv/det/solve/cholesky, on drawn shapes, dtypes and
axes, with NaNs and ties; values, dtypes and shapes must equal NumPy's.  TF front end:
tf.sort/argsort (both directions, any axis) and tf.linalg.* in a Session whose cluster is
compiled, equal to the reference kernels, and the errors of a singular matrix on both
paths.  Each drawn example compiles a kernel (NumPy shapes are static), so examples are few.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowjit
import flowjit as tf
from flowjit.runtime import clustering
from flowjit.runtime.clustering import ClusterStep
from flowjit.runtime.config import JitOptions


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    """Compiler failures (other than NotLowerable) fail the test instead of falling back."""
    monkeypatch.setattr(clustering, "STRICT", True)


def _same(got, want, rtol=1e-12, atol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype,
                                                                 want.shape, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def _values(rng, shape, dtype, nan: bool):
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal(shape).astype(dtype)
        if nan and x.size:
            x.flat[rng.integers(0, x.size)] = np.nan
        return x
    return rng.integers(-4, 5, shape).astype(dtype)   # many ties


def _sort_family(x, axis):
    return (np.sort(x, axis=axis), np.argsort(x, axis=axis, kind="stable"),
            np.median(x, axis=axis), np.percentile(x, [0, 37.5, 50, 100], axis=axis),
            np.quantile(x, 0.25, axis=axis, keepdims=True))


@settings(max_examples=4, deadline=None)
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=3),
       dtype=st.sampled_from(["float32", "float64", "int32", "int64"]),
       axis_pick=st.integers(0, 5), nan=st.booleans(), seed=st.integers(0, 2**16))
def test_sort_argsort_median_quantiles_match_numpy(shape, dtype, axis_pick, nan, seed):
    x = _values(np.random.default_rng(seed), tuple(shape), dtype, nan)
    axis = None if axis_pick == 5 else axis_pick % x.ndim - (axis_pick % 2) * x.ndim
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = _sort_family(x, axis)
    got = flowjit.jit(_sort_family, static_argnames=("axis",), fallback=False)(x, axis=axis)
    for g, w in zip(got, want):     # the same operations in the same order: bit for bit
        _same(g, w, rtol=0, atol=0)


def test_sort_methods_sort_in_place_and_argsort_is_stable_for_every_kind():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 3, (5, 40)).astype(np.float64)   # ties everywhere
    x[1, 7] = np.nan

    def fn(a):
        order = a.argsort(axis=1)
        a.sort(axis=0)
        return order, np.argsort(a, kind="quicksort")

    mine, ref = x.copy(), x.copy()
    got = flowjit.jit(fn, fallback=False)(mine)
    want_order = ref.argsort(axis=1, kind="stable")
    ref.sort(axis=0)
    _same(got[0], want_order)
    _same(got[1], np.argsort(ref, kind="stable"))
    _same(mine, ref)                                     # the argument was sorted in place


@settings(max_examples=3, deadline=None)
@given(n=st.integers(1, 7), batch=st.sampled_from([(), (2,), (2, 3)]),
       dtype=st.sampled_from(["float32", "float64", "int64"]), seed=st.integers(0, 2**16))
def test_linalg_inv_det_solve_cholesky_match_numpy(n, batch, dtype, seed):
    rng = np.random.default_rng(seed)
    # diagonally dominant, also after rounding to integers: never singular
    a = 0.25 * rng.standard_normal(batch + (n, n)) + (n + 1) * np.eye(n)
    a = np.rint(a * 4).astype(dtype) if dtype == "int64" else a.astype(dtype)
    spd = a @ np.swapaxes(a, -1, -2) + np.eye(n, dtype=a.dtype)
    b = rng.standard_normal((n,)).astype(dtype)
    rhs = rng.standard_normal((n, 2)).astype(dtype)

    def fn(a, spd, b, rhs):
        return (np.linalg.inv(a), np.linalg.det(a), np.linalg.solve(a, rhs),
                np.linalg.cholesky(spd), np.linalg.cholesky(spd, upper=True),
                np.linalg.solve(a[..., 0, :, :] if a.ndim > 2 else a, b))

    want = fn(a, spd, b, rhs)
    got = flowjit.jit(fn, fallback=False)(a, spd, b, rhs)
    tol = 2e-3 if dtype == "float32" else 1e-9
    for g, w in zip(got, want):
        _same(g, w, rtol=tol, atol=tol)


def test_singular_matrices_raise_numpys_error_under_jit():
    with pytest.raises(np.linalg.LinAlgError):
        flowjit.jit(np.linalg.inv, fallback=False)(np.ones((3, 3)))
    with pytest.raises(np.linalg.LinAlgError):
        flowjit.jit(np.linalg.cholesky, fallback=False)(-np.eye(2))
    assert flowjit.jit(np.linalg.det, fallback=False)(np.ones((3, 3))) == 0.0


def _compiled_session():
    return tf.Session(config=tf.ConfigProto(jit=JitOptions(policy="always")))


def test_tf_sort_and_linalg_compile_in_a_session_and_equal_the_reference():
    x = tf.placeholder(tf.float64, [None, 3, 3])
    r = tf.placeholder(tf.float64, [None, 3, 2])
    i = tf.placeholder(tf.int32, [None, 4])
    outs = [tf.linalg.inv(x) * 2.0, tf.linalg.det(x) + 1.0, tf.linalg.solve(x, r) - 1.0,
            tf.linalg.cholesky(x) * 3.0, tf.sort(x, axis=1) + 1.0,
            tf.sort(i, direction="DESCENDING") + 1, tf.argsort(x, axis=0) + 1,
            tf.argsort(i, direction="DESCENDING", axis=-1) * 2]
    rng = np.random.default_rng(5)
    a = rng.standard_normal((4, 3, 3))
    spd = a @ np.swapaxes(a, -1, -2) + np.eye(3)
    feeds = {x: spd, r: rng.standard_normal((4, 3, 2)), i: rng.integers(-3, 3, (6, 4))}
    with tf.Session(config=tf.ConfigProto(jit=False)) as sess:
        want = sess.run(outs, feeds)
    with _compiled_session() as sess:
        got = sess.run(outs, feeds)
        steps = [n for plan in sess._plans.values() for n in plan.ops
                 if isinstance(n, ClusterStep)]
        assert steps and all(None not in s.kernels.entries.values() for s in steps)
        types = {op.type for s in steps for op in s.ops}
        assert {"MatrixInverse", "MatrixDeterminant", "MatrixSolve", "Cholesky", "Sort",
                "ArgSort"} <= types
    np.testing.assert_allclose(want[0], np.linalg.inv(spd) * 2)
    np.testing.assert_array_equal(want[5], -np.sort(-feeds[i]) + 1)
    np.testing.assert_array_equal(want[7], np.argsort(-feeds[i], kind="stable") * 2)
    assert want[6].dtype == want[7].dtype == np.int32   # tf.argsort's positions are int32
    for g, w in zip(got, want):
        _same(g, w, rtol=1e-10, atol=1e-10)


def test_singular_matrix_in_a_session_is_an_invalid_argument_naming_the_op():
    x = tf.placeholder(tf.float64, [3, 3])
    y = tf.linalg.inv(x, name="my_inverse") + 1.0
    for config in (tf.ConfigProto(jit=False), None):
        with (tf.Session(config=config) if config else _compiled_session()) as sess:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"(?s)not invertible.*my_inverse"):
                sess.run(y, {x: np.ones((3, 3))})
