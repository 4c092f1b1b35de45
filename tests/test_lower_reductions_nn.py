"""Compiled (`flowjit.jit`) versus reference kernels for reductions, nn ops, losses, matmul,
Select/SelectV2 and ClipByValue, plus the loop structure softmax and layer norm compile to.

Each jitted function below is module-level and computes several ops at once, so the
number of distinct compiled signatures (dtype x rank x which sizes are 1) stays small:
hand-picked shapes (odd and prime sizes, size 1, empty) and the hypothesis tests reuse
them.  The reference is the same Python function run through `flowjit.Session` with the
NumPy kernels.  Every check also asserts the function really compiled (not a fallback).
"""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import flowjit as tf
from flowjit.errors import InvalidArgumentError

RNG = np.random.default_rng(1234)
F32, F64 = np.float32, np.float64
FLOATS = (F32, F64)
SETTINGS = settings(max_examples=10, deadline=None)


# --- harness ----------------------------------------------------------------------------------


def reference(fn, *arrays):
    """fn run through a Session with the reference kernels (auto-clustering off, so nothing
    is compiled), one placeholder per array with the sizes jit's tracing knows (only 1s)."""
    g = tf.Graph()
    with g.as_default():
        phs = [tf.placeholder(a.dtype, [1 if d == 1 else None for d in a.shape])
               for a in arrays]
        out = fn(*phs)
        with tf.Session(graph=g, config=tf.ConfigProto(jit=False)) as sess:
            return sess.run(out, dict(zip(phs, arrays)))


def assert_close(got, want, scale=1.0):
    """Equal dtype and shape; values exact for ints/bools, else within the dtype's tolerance
    (float32 allows a few ulps of exp/log; `scale` bounds the size of cancelling sums)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape,
                                                                 want.dtype, want.shape)
    if got.dtype.kind in "fc":
        tol = 1e-5 if got.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)
    else:
        np.testing.assert_array_equal(got, want)


def check(jf, *arrays, scale=1.0):
    """jf(*arrays) compiled equals the reference run of jf's Python function."""
    got = jf(*arrays)
    assert jf.lower(*arrays).compiled, str(jf.lower(*arrays))
    want = reference(jf.fn, *arrays)
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_close(g, w, scale)
    else:
        assert_close(got, want, scale)


def check_both_fail(jf, *arrays, match=None):
    """The compiled function and the reference both raise InvalidArgumentError."""
    with pytest.raises(InvalidArgumentError, match=match):
        jf(*arrays)
    with pytest.raises(InvalidArgumentError):
        reference(jf.fn, *arrays)


def floats(shape, dtype, scale=3.0):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def loop_nests(source: str) -> int:
    """Top-level loop nests of the generated kernel (each is emitted as a parallel and a
    serial copy under `if work >= ...: / else:`; count the serial ones)."""
    return len(re.findall(r"^    # loop nest \d+", source, flags=re.M))


def functions(source: str) -> int:
    return len(re.findall(r"^def ", source, flags=re.M))


# --- reductions -------------------------------------------------------------------------------


@tf.jit
def row_reductions(x):
    """Reductions over the last axis: they share one loop nest over rows.  (Mean and
    Sum over the same axes share one sum; each float sum costs compile time.)"""
    return (tf.reduce_sum(x, 1), tf.reduce_mean(x, -1), tf.reduce_max(x, 1, keepdims=True),
            tf.reduce_min(x, -1), tf.reduce_prod(x, [1]), tf.reduce_sum(x, [1, -1]),
            tf.reduce_max(x, []))


@tf.jit
def other_reductions(x):
    """A column reduction with keepdims, whole-array Sum and Mean, and L2Loss."""
    return (tf.reduce_min(x, -2, keepdims=True), tf.reduce_sum(x), tf.reduce_mean(x),
            tf.nn.l2_loss(x))


@tf.jit
def size_one_dims(x):
    """Reductions of a [1, n] input (size-1 dims are static in the signature)."""
    return tf.reduce_sum(x, 1), tf.argmax(x, 1), tf.nn.l2_loss(x)


@tf.jit
def reductions_3d(x):
    return (tf.reduce_sum(x, [0, -1]), tf.reduce_mean(x, [-3, 2]), tf.argmax(x, 2),
            tf.argmin(x, -3, output_type=tf.int32))


@tf.jit
def bool_reductions(b):
    return tf.reduce_any(b, 1), tf.reduce_all(b, -1, keepdims=True), tf.reduce_all(b)


@tf.jit
def arg_reductions(x):
    return tf.argmax(x, 1), tf.argmin(x, -1, output_type=tf.int32)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(7, 13), (2, 5), (0, 5), (7, 0)])
def test_float_reductions(dtype, shape):
    x = floats(shape, dtype, scale=1.5)
    check(row_reductions, x, scale=np.abs(x).sum() + 1)
    if dtype == F64:
        check(other_reductions, x, scale=np.square(x).sum() + 1)


def test_size_one_dims():
    check(size_one_dims, floats((1, 5), F32))
    check(size_one_dims, floats((1, 13), F32) * 30, scale=1e4)


def test_reductions_of_special_values():
    x = floats((7, 13), F64)
    x[0, 3], x[2, :], x[4, 5], x[5, 0] = np.nan, -np.inf, np.inf, -np.inf
    check(row_reductions, x)
    check(other_reductions, x)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8])
def test_integer_reductions(dtype):
    """Integer sums and products wrap; means sum in 64 bits and truncate toward zero;
    empty max/min give the dtype's extremes."""
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -120), min(info.max, 120)
    for shape in [(7, 13), (0, 3), (3, 0)]:
        x = RNG.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
        check(row_reductions, x)
    if dtype == np.int32:
        check(row_reductions, np.array([[2**31 - 1, 2**31 - 1, 5], [-7, 0, 1],
                                        [-7, -1, -1]], np.int32))
    else:
        check(row_reductions, np.array([[255, 255, 1], [200, 0, 0]], np.uint8))


def test_rank3_reductions_over_several_and_negative_axes():
    x = floats((3, 4, 5), F64)
    scale = np.abs(x).sum()
    x[1, 2, 3] = np.nan  # argmax/argmin skip NaN
    check(reductions_3d, x, scale=scale)
    check(reductions_3d, floats((2, 3, 7), F64) + 5, scale=1e3)


def test_bool_reductions():
    for shape in [(7, 13), (3, 2), (0, 4), (4, 0)]:
        check(bool_reductions, RNG.random(shape) < 0.8)
    check(bool_reductions, np.ones((3, 5), bool))
    check(bool_reductions, np.zeros((3, 5), bool))


@pytest.mark.parametrize("dtype", [F32, np.int32])
def test_argmax_argmin_ties_nan_and_empty(dtype):
    x = RNG.integers(-3, 3, size=(7, 13)).astype(dtype)  # many ties: first index wins
    if dtype != np.int32:
        x[0, :4] = np.nan
        x[1, :] = np.nan  # all-NaN row gives 0
        x[2, :3] = [np.nan, -np.inf, -np.inf]
        x[3, 0] = np.inf
    check(arg_reductions, x)
    check_both_fail(arg_reductions, np.zeros((3, 0), dtype), match="empty")


@SETTINGS
@given(hnp.arrays(F64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=2, max_side=9),
                  elements=st.floats(-100, 100)))
def test_reductions_hypothesis(x):
    check(row_reductions, x, scale=np.abs(x).sum() + 1)
    check(other_reductions, x, scale=np.square(x).sum() + 1)
    check(arg_reductions, x.astype(F32))


# --- activations, bias_add, softmax -----------------------------------------------------------


@tf.jit
def activations(x):
    nn = tf.nn
    return (nn.relu(x), nn.relu6(x), nn.elu(x), nn.selu(x), nn.softplus(x), nn.softsign(x),
            nn.leaky_relu(x, alpha=0.3))


@tf.jit
def int_activations(x):
    return tf.nn.relu(x), tf.nn.relu6(x)


@tf.jit
def bias_adds(v, b):
    return tf.nn.bias_add(v, b), tf.nn.bias_add(v, b, data_format="NCHW")


@tf.jit
def bias_add_2d(v, b):
    return tf.nn.bias_add(v, b)


@tf.jit
def softmax_2d(x):
    return tf.nn.softmax(x)


@tf.jit
def softmaxes(x):
    return tf.nn.softmax(x), tf.nn.log_softmax(x), tf.nn.log_softmax(x, axis=-1)


@tf.jit
def layer_norm(x):
    mean = tf.reduce_mean(x, -1, keepdims=True)
    centered = x - mean
    var = tf.reduce_mean(tf.square(centered), -1, keepdims=True)
    return centered * tf.rsqrt(var + 1e-5)


SPECIALS = [0.0, -0.0, 1e-30, -1e-30, 20.0, -20.0, 90.0, -90.0, 800.0, -800.0, np.inf,
            -np.inf, np.nan]


@pytest.mark.parametrize("dtype", FLOATS)
def test_activations(dtype):
    check(activations, floats((7, 13), dtype))
    with np.errstate(over="ignore"):
        special = np.array(SPECIALS, dtype)
    check(activations, np.stack([special, special[::-1]]))
    check(activations, np.zeros((0, 3), dtype))


def test_integer_relu():
    check(int_activations, RNG.integers(-9, 9, size=(7, 13)).astype(np.int32))


def test_bias_add_nhwc_nchw_and_mismatch():
    v = floats((2, 3, 5, 3), F32)
    check(bias_adds, v, floats((3,), F32))
    check(bias_adds, floats((3, 2, 4, 2), F32), floats((2,), F32))
    check_both_fail(bias_adds, floats((2, 3, 5, 4), F32), floats((3,), F32))
    check(bias_add_2d, floats((7, 13), F64), floats((13,), F64))
    check(bias_add_2d, floats((0, 13), F64), floats((13,), F64))
    check_both_fail(bias_add_2d, floats((7, 13), F64), floats((12,), F64))


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_and_log_softmax(dtype):
    x = floats((7, 13), dtype)
    x[0] *= 100                     # large logits: needs the max shift
    x[1, 4] = -np.inf
    x[2, :] = -np.inf               # all -inf row: NaN, as the reference
    x[3, 2] = np.nan
    x[4, 0] = np.inf
    jf = softmax_2d if dtype == F32 else softmaxes
    check(jf, x)
    check(jf, np.zeros((0, 5), dtype))
    check(jf, np.zeros((3, 0), dtype))


def test_softmax_rank3():
    check(softmaxes, floats((3, 4, 5), F32))
    check(softmaxes, floats((2, 7, 2), F32) * 40)


def test_softmax_is_one_loop_nest_in_one_function():
    x = floats((7, 13), F32)
    lowered = softmax_2d.lower(x)
    assert functions(lowered.source) == 1
    assert loop_nests(lowered.source) <= 2, lowered.stage("schedule")
    groups = lowered.entry.cluster.schedule.groups
    # the row max, the exps (a per-row scratch buffer), their sum and the output share the
    # outer loop over rows; the exps never become a full-size buffer
    schedule = lowered.entry.cluster.schedule
    assert len(groups) == 1 and len(groups[0].members) == 4, lowered.stage("schedule")
    temps = [m for m in groups[0].members if m not in schedule.program.outputs]
    assert all(id(m) in schedule.local or id(m) in schedule.scratch for m in temps)
    assert len(groups[0].outer) == 1
    # the sum of the exps accumulates in the loop that computes them: three passes over a
    # row (max, exp + sum, divide), not four
    parallel = lowered.source.split("prange(", 1)[1].split("else:", 1)[0]
    assert parallel.count("for ") == 3, parallel
    exp_loop = parallel.split("VM_exp(", 1)[1].split("for ", 1)[0]
    assert "radd(" in exp_loop, parallel
    lowered = softmaxes.lower(x.astype(F64))
    assert functions(lowered.source) == 1
    assert len(lowered.entry.cluster.schedule.groups) == 1, lowered.stage("schedule")


def test_layer_norm_is_at_most_two_loop_nests():
    x = floats((7, 13), F64)
    check(layer_norm, x)
    lowered = layer_norm.lower(x)
    assert functions(lowered.source) == 1
    assert loop_nests(lowered.source) <= 2, lowered.stage("schedule")
    assert len(lowered.entry.cluster.schedule.groups) <= 2, lowered.stage("schedule")
    check(layer_norm, floats((0, 13), F64))
    check(layer_norm, floats((5, 0), F64))


@SETTINGS
@given(hnp.arrays(F32, hnp.array_shapes(min_dims=2, max_dims=2, min_side=2, max_side=9),
                  elements=st.floats(-30, 30, width=32)))
def test_nn_hypothesis(x):
    check(activations, x)
    check(softmax_2d, x)
    check(bias_add_2d, x.astype(F64), x[0].astype(F64))


# --- losses -----------------------------------------------------------------------------------


@tf.jit
def losses(logits, probs, labels):
    dense = tf.nn.softmax_cross_entropy_with_logits_v2(labels=probs, logits=logits)
    sparse = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return dense, dense.op.outputs[1], sparse, sparse.op.outputs[1]


def _loss_inputs(rows, classes, dtype, label_dtype=np.int32):
    logits = floats((rows, classes), dtype)
    probs = RNG.random((rows, classes)).astype(dtype)
    probs /= np.maximum(probs.sum(-1, keepdims=True), 1e-3)
    labels = RNG.integers(0, max(classes, 1), size=rows).astype(label_dtype)
    return logits, probs, labels


@pytest.mark.parametrize("dtype", FLOATS)
def test_losses(dtype):
    logits, probs, labels = _loss_inputs(7, 13, dtype)
    logits[0] *= 50
    check(losses, logits, probs, labels, scale=100)
    check(losses, *_loss_inputs(5, 2, dtype))
    check(losses, *_loss_inputs(0, 3, dtype))


def test_sparse_xent_bad_labels_fail_like_the_reference():
    logits, probs, labels = _loss_inputs(7, 13, F32)
    for bad in (13, -1):
        labels[3] = bad
        check_both_fail(losses, logits, probs, labels)
    check_both_fail(losses, logits, probs[:, :5], labels * 0)  # dense shapes differ


@SETTINGS
@given(st.integers(2, 9), st.integers(2, 9), st.integers(0, 2**31 - 1))
def test_losses_hypothesis(rows, classes, seed):
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal((rows, classes)) * 5).astype(F64)
    probs = rng.random((rows, classes))
    labels = rng.integers(0, classes, size=rows).astype(np.int32)
    check(losses, logits, probs, labels, scale=10)


# --- matmul -----------------------------------------------------------------------------------


@tf.jit
def matmuls(a, b):
    return (tf.matmul(a, b), tf.matmul(b, a, transpose_a=True, transpose_b=True),
            tf.matmul(a, a, transpose_b=True))


@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul(dtype):
    for m, k, n in [(7, 13, 5), (3, 2, 11), (4, 0, 3), (0, 3, 2)]:
        a, b = floats((m, k), dtype), floats((k, n), dtype)
        check(matmuls, a, b, scale=10 * max(k, 1))
    check_both_fail(matmuls, floats((3, 4), dtype), floats((5, 2), dtype))


def test_integer_matmul_runs_with_reference_kernels_and_batched_matmul_compiles():
    @tf.jit
    def f(a, b):
        return tf.matmul(a, b)

    ints = np.arange(6, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(f(ints, ints.T), ints @ ints.T)
    assert not f.lower(ints, ints.T).compiled
    batch = floats((2, 3, 4), F64)
    np.testing.assert_allclose(f(batch, batch.transpose(0, 2, 1)),
                               batch @ batch.transpose(0, 2, 1))
    assert f.lower(batch, batch.transpose(0, 2, 1)).compiled


@SETTINGS
@given(st.integers(2, 9), st.integers(2, 9), st.integers(2, 9), st.integers(0, 2**31 - 1))
def test_matmul_hypothesis(m, k, n, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    check(matmuls, a, b, scale=10 * k)


# --- Select, SelectV2, ClipByValue ------------------------------------------------------------


@tf.jit
def selects(c, rows, x, y, lo, hi):
    return (tf.where(c, x, y), tf.where(rows, x, y), tf.where(c[0, 0], x, y),
            tf.clip_by_value(x, lo, hi), tf.clip_by_value(x, hi, lo[0]),
            tf.where_v2(tf.expand_dims(rows, 1), x, hi))


def _select_inputs(rows, cols, dtype):
    c = RNG.random((rows, cols)) < 0.5
    r = RNG.random(rows) < 0.5
    x, y = floats((rows, cols), dtype), floats((rows, cols), dtype)
    lo, hi = floats((cols,), dtype) - 1, np.array(1.5, dtype)
    return c, r, x, y, lo, hi


def test_select_where_clip():
    """(float64 only: these lowerings do not depend on the float type.)"""
    check(selects, *_select_inputs(7, 13, F64))
    c, r, x, y, lo, hi = _select_inputs(3, 2, F64)
    x[0, 0], x[1, 1], lo[0] = np.nan, np.inf, 3.0  # NaN stays; lo > hi gives lo
    check(selects, c, r, x, y, lo, hi)


def test_select_shape_mismatches_fail_like_the_reference():
    c, r, x, y, lo, hi = _select_inputs(7, 13, F64)
    check_both_fail(selects, c, r[:5], x, y, lo, hi)
    check_both_fail(selects, c, r, x, y[:, :4], lo, hi)


@SETTINGS
@given(st.integers(2, 9), st.integers(2, 9))
def test_select_hypothesis(rows, cols):
    check(selects, *_select_inputs(rows, cols, F64))


# --- large inputs: the generated code's parallel loops ----------------------------------------


def test_large_inputs_take_the_parallel_loops():
    """Work above the parallel threshold runs the prange copies of the same kernels."""
    x = floats((300, 257), F64)
    check(row_reductions, x, scale=np.abs(x).sum())
    check(other_reductions, x, scale=np.square(x).sum())
    check(softmax_2d, x.astype(F32))
    check(layer_norm, x)
    check(activations, x)
    logits, probs, labels = _loss_inputs(300, 257, F64)
    check(losses, logits, probs, labels, scale=100)
    labels[-1] = 257
    check_both_fail(losses, logits, probs, labels)
    check(selects, *_select_inputs(300, 257, F64))
