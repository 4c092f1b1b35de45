"""GEMM epilogues: `relu(a @ b + bias)` and its parts computed inside flowjit's GEMM.

Checked against NumPy: the GEMM with the epilogue flags on drawn shapes (the micro-kernel's
direct stores, the scratch-tile path of ragged edges, b read in place for few rows, one and
several reduction slices, an empty reduction); special values (NaN stays NaN, -0.0 becomes
0.0 as np.maximum(x, 0.0) gives, infinities); which consumers the schedule fuses and which
it leaves as nests; and jit and Session results against NumPy and the reference interpreter.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

import flowjit as tf
from flowjit.runtime.config import JitOptions
from flowjit.targets.cpu.gemm import GEMMS, KC, gemm_epilogue
from flowjit.targets.cpu.gemm_ukernel import EPILOGUE_BIAS, EPILOGUE_RELU

TOL = {"float32": 5e-5, "float64": 1e-12}


@njit
def _threaded(a, b, out, bias, relu):
    if relu:
        gemm_epilogue(a, b, out, 2, bias, 1)
    else:
        gemm_epilogue(a, b, out, 2, bias, 0)


@njit
def _threaded_relu_only(a, b, out):
    gemm_epilogue(a, b, out, 2, None, 1)


def _expected(a, b, bias, relu):
    value = a.astype(np.float64) @ b.astype(np.float64)
    if bias is not None:
        value = value + bias
    return np.maximum(value, 0.0) if relu else value


def _check(out, a, b, bias, relu):
    expected = _expected(a, b, bias, relu)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64) + 1.0
    if bias is not None:
        scale = scale + np.abs(bias)
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(expected))
    np.testing.assert_array_equal(out[np.isinf(expected)], expected[np.isinf(expected)])
    worst = np.max(np.abs(out[finite] - expected[finite]) / scale[finite], initial=0.0)
    assert worst <= TOL[out.dtype.name], (a.shape, b.shape, out.dtype, worst)
    if relu:   # no negative values and no -0.0 survive the relu
        assert not np.signbit(out[~np.isnan(out)]).any()


@settings(max_examples=30, deadline=None)
@given(m=st.sampled_from([1, 5, 8, 9, 31, 33, 150]), n=st.sampled_from([24, 25, 47, 48, 97]),
       k=st.sampled_from([0, 1, 7, KC, KC + 9]), dtype=st.sampled_from(["float32", "float64"]),
       flags=st.sampled_from([EPILOGUE_BIAS, EPILOGUE_BIAS | EPILOGUE_RELU, EPILOGUE_RELU]),
       seed=st.integers(0, 2**16))
def test_serial_gemm_epilogue_matches_numpy(m, n, k, dtype, flags, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    bias = rng.standard_normal(n).astype(dtype) if flags & EPILOGUE_BIAS else None
    out = np.full((m, n), np.nan, dtype)
    GEMMS[dtype](a, b, out, np.empty(0, dtype) if bias is None else bias, flags)
    _check(out, a, b, bias, bool(flags & EPILOGUE_RELU))


@settings(max_examples=20, deadline=None)
@given(m=st.sampled_from([3, 40, 301]), n=st.sampled_from([24, 100, 481]),
       k=st.sampled_from([1, 64, 300]), dtype=st.sampled_from(["float32", "float64"]),
       relu=st.booleans(), strided_bias=st.booleans(), seed=st.integers(0, 2**16))
def test_threaded_gemm_epilogue_splits_and_matches_numpy(m, n, k, dtype, relu, strided_bias,
                                                         seed):
    """Rows or columns split across the threads (the column split slices the bias too); a
    strided bias view is read as the GEMM's own padded copy."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    bias = rng.standard_normal(2 * n).astype(dtype)[::2] if strided_bias else \
        rng.standard_normal(n).astype(dtype)
    out = np.full((m, n), np.nan, dtype)
    _threaded(a, b, out, bias, relu)
    _check(out, a, b, bias, relu)
    _threaded_relu_only(a, b, out)
    _check(out, a, b, None, True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_epilogue_special_values_follow_np_maximum(dtype):
    """NaN rows stay NaN, +-inf pass through the bias and the relu, and a product of -0.0
    (a zero column of b times negative a) comes out +0.0, as np.maximum(-0.0, 0.0)."""
    rng = np.random.default_rng(3)
    m, k, n = 40, KC + 5, 53
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    a[3, 10] = np.nan
    b[7, 4] = np.inf
    bias = rng.standard_normal(n).astype(dtype)
    bias[9] = -np.inf
    bias[11] = np.nan
    out = np.empty((m, n), dtype)
    GEMMS[dtype](a, b, out, bias, EPILOGUE_BIAS | EPILOGUE_RELU)
    expected = np.maximum(a @ b + bias, 0.0)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(expected))
    np.testing.assert_array_equal(out[np.isinf(expected)], expected[np.isinf(expected)])
    assert (out[:, 9][~np.isnan(out[:, 9])] == 0).all()
    zero_column = np.zeros((k, 48), dtype)
    out = np.empty((m, 48), dtype)
    GEMMS[dtype](-np.abs(a[:, :k]) - 1, zero_column, out, np.empty(0, dtype), EPILOGUE_RELU)
    finite = ~np.isnan(out)
    assert (out[finite] == 0).all() and not np.signbit(out[finite]).any()


def _matmul_source(fn, *args):
    return tf.jit(fn).lower(*args).source


def test_schedule_fuses_bias_and_relu_consumers_into_the_gemm():
    a = np.ones((300, 200), np.float32)
    b = np.ones((200, 130), np.float32)
    bias = np.ones(130, np.float32)
    fused = {
        "relu(C + bias)": (lambda a, b, c: tf.maximum(tf.matmul(a, b) + c, 0.0), bias,
                           ", in2, 1)"),
        "bias + C": (lambda a, b, c: c + tf.matmul(a, b), bias, ", in2, 0)"),
        "relu(C)": (lambda a, b, c: tf.nn.relu(tf.matmul(a, b)), bias, ", None, 1)"),
        "relu(C + bias[None])": (lambda a, b, c: tf.nn.relu(tf.matmul(a, b) + c[None, :]),
                                 bias, ", in2, 1)"),
        "relu(C + row matrix)": (lambda a, b, c: tf.nn.relu(tf.matmul(a, b) + c),
                                 bias.reshape(1, 130), ", in2[0], 1)"),
    }
    for name, (fn, c, tail) in fused.items():
        source = _matmul_source(fn, a, b, c)
        call = [ln for ln in source.splitlines() if "gemm_epilogue(" in ln]
        assert call, name
        assert call[0].strip().endswith(tail), (name, call)
        assert "fused into" in source, name


def test_schedule_leaves_other_consumers_as_nests():
    a = np.ones((300, 200), np.float32)
    b = np.ones((200, 130), np.float32)
    bias = np.ones(130, np.float32)
    kept = {
        "C read twice": lambda a, b, c: (tf.matmul(a, b), tf.nn.relu(tf.matmul(a, b) + c)),
        "scaled after relu": lambda a, b, c: tf.nn.relu(tf.matmul(a, b) + c) * 2.0,
        "bias along rows": lambda a, b, c: tf.matmul(a, b) + tf.reshape(c[:1], [1, 1]),
        "transposed a": lambda a, b, c: tf.nn.relu(tf.matmul(tf.transpose(b), tf.transpose(a),
                                                             transpose_a=True) + 1.0),
    }
    for name, fn in kept.items():
        source = _matmul_source(fn, a, b, bias)
        assert "gemm_epilogue(" not in source, name


@settings(max_examples=12, deadline=None)
@given(m=st.sampled_from([1, 7, 64, 129]), k=st.sampled_from([1, 33, 200]),
       n=st.sampled_from([3, 23, 24, 130]), dtype=st.sampled_from(["float32", "float64"]),
       seed=st.integers(0, 2**16))
def test_fused_dense_layer_matches_numpy_through_jit(m, k, n, dtype, seed):
    """Narrow n goes to BLAS with the nest after it, wide n to the GEMM's epilogue."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    bias = rng.standard_normal(n).astype(dtype)
    layer = _dense[dtype]
    _check(layer(a, b, bias), a, b, bias, True)


_dense = {dtype: tf.jit(lambda a, b, c: tf.nn.relu(tf.matmul(a, b) + c))
          for dtype in ("float32", "float64")}


def test_fused_dense_layer_in_a_session_equals_the_reference_interpreter():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((150, 80)).astype(np.float32)
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [None, 80])
        w = tf.constant(rng.standard_normal((80, 60)).astype(np.float32))
        bias = tf.constant(rng.standard_normal(60).astype(np.float32))
        y = tf.nn.relu(tf.matmul(a, w) + bias)
        eager = JitOptions(policy="always")
        with tf.Session(config=tf.ConfigProto(jit=eager)) as compiled:
            got = compiled.run(y, {a: x})
        with tf.Session(config=tf.ConfigProto(jit=False)) as reference:
            want = reference.run(y, {a: x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert not np.signbit(got).any()
