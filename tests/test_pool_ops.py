"""Pooling (ops/pool_ops.py, pool_grad_ops.py, pool_windows.py): MaxPool, AvgPool and their
gradient ops against NumPy loops written from the definitions (tests/samples/pool_norm.py)
for every ksize/stride/padding combination and both data formats, against TensorFlow's
results recorded in tests/fixtures/pool_norm_cases.npz (ties: the gradient goes to a
window's first maximum), double backprop, the 1-D and generic front ends, and errors.

Every graph runs twice: with the ops' reference kernels (jit off) and compiled by the
reference target (the lowerings, interpreted; cheap).  The CPU target's kernels are checked
against the reference kernels by tests/test_compiled_ops.py (tests/compiled_pool_norm_groups.py).
"""

import json
import os

import numpy as np
import pytest

import flowjit as tf
from flowjit.errors import InvalidArgumentError
from flowjit.ops import pool_grad_ops
from flowjit.runtime import clustering
from flowjit.runtime.clustering import ClusterStep
from samples.pool_norm import (loop_avg_pool_grad, loop_max_pool_grad, loop_max_pool_grad_grad,
                               loop_pool, pool_padding_arg)

OFF = tf.ConfigProto(jit=False)
REFERENCE = tf.ConfigProto(jit=tf.JitOptions.always(target="reference"))
CONFIGS = {"kernels": OFF, "lowered": REFERENCE}
FIXTURES = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "pool_norm_cases.npz"))
CASES = json.loads(str(FIXTURES["_cases"]))
KSIZES = [(1, 1), (2, 2), (3, 2), (2, 3), (3, 3)]
STRIDES = [(1, 1), (2, 2), (1, 3), (3, 1)]


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    """A lowering failure fails the test instead of falling back to the kernels."""
    monkeypatch.setattr(clustering, "STRICT", True)


def _run(graph, fetches, feeds, config):
    """(values, op types that ran inside compiled clusters)."""
    with tf.Session(graph=graph, config=config) as sess:
        values = sess.run(fetches, feeds)
        steps = [n for plan in sess._plans.values() for n in plan.ops
                 if isinstance(n, ClusterStep)]
    return values, {op.type for s in steps for op in s.ops}


def _layout(a, data_format):
    return a if data_format == "NHWC" else np.ascontiguousarray(a.transpose(0, 3, 1, 2))


def _explicit_pads(ksize):
    return tuple((min(1, k - 1), min(k - 1, 2)) for k in ksize)


# --- every ksize / stride / padding / data format against loops ---------------------------------


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("pooling,padding", [("MAX", "VALID"), ("MAX", "SAME"),
                                             ("MAX", "EXPLICIT"), ("AVG", "VALID"),
                                             ("AVG", "SAME")])
def test_every_window_matches_the_loop_definition(pooling, padding, data_format):
    rng = np.random.RandomState(3)
    x = _layout(rng.randint(-3, 4, (2, 7, 6, 2)).astype(np.float32), data_format)
    graph, combos = tf.Graph(), []
    with graph.as_default():
        xp = tf.placeholder(tf.float32, [None] * 4, name="x")
        for ksize in KSIZES:
            for strides in STRIDES:
                pads = _explicit_pads(ksize) if padding == "EXPLICIT" else ((0, 0), (0, 0))
                arg = pool_padding_arg(padding, pads, data_format)
                pool = tf.nn.max_pool if pooling == "MAX" else tf.nn.avg_pool
                y = pool(xp, list(ksize), list(strides), arg, data_format=data_format)
                dy = tf.cos(y * 3.0)   # distinct upstream gradients
                dx = tf.gradients(y, xp, dy)[0]
                combos.append((ksize, strides, pads, y, dy, dx))
    fetches = [[y, dy, dx] for *_, y, dy, dx in combos]
    for name, config in CONFIGS.items():
        values, compiled = _run(graph, fetches, {xp: x}, config)
        for (ksize, strides, pads, *_), (y, dy, dx) in zip(combos, values):
            where = f"{name}: {pooling} {ksize} {strides} {padding} {pads} {data_format}"
            args = (x, ksize, strides, padding)
            if pooling == "MAX":
                np.testing.assert_array_equal(y, loop_pool(*args, pads, data_format),
                                              err_msg=where)
                np.testing.assert_allclose(dx, loop_max_pool_grad(*args[:1], dy, *args[1:],
                                                                  pads, data_format),
                                           rtol=1e-6, atol=1e-6, err_msg=where)
            else:
                want = loop_pool(*args, pads, data_format, "avg")
                np.testing.assert_allclose(y, want, rtol=1e-6, err_msg=where)
                np.testing.assert_allclose(dx, loop_avg_pool_grad(x.shape, dy, *args[1:],
                                                                  data_format),
                                           rtol=1e-5, atol=1e-6, err_msg=where)
        if name == "lowered":
            pool_type = "MaxPool" if pooling == "MAX" else "AvgPool"
            assert {pool_type, pool_type + "Grad"} <= compiled


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_max_pool_grad_grad_matches_the_loop_definition(data_format):
    rng = np.random.RandomState(4)
    x = _layout(rng.randint(-2, 3, (2, 6, 5, 2)).astype(np.float32), data_format)
    g = rng.randn(*x.shape).astype(np.float32)
    graph, combos = tf.Graph(), []
    with graph.as_default():
        xp, gp = (tf.placeholder(tf.float32, [None] * 4, name=n) for n in ("x", "g"))
        for ksize in KSIZES:
            for strides in STRIDES:
                for padding in ("VALID", "SAME"):
                    y = tf.nn.max_pool(xp, list(ksize), list(strides), padding,
                                       data_format=data_format)
                    attrs = y.op.attrs
                    combos.append((ksize, strides, padding,
                                   pool_grad_ops.max_pool_grad_grad(xp, y, gp, attrs)))
    for config in CONFIGS.values():
        values, _ = _run(graph, [c[-1] for c in combos], {xp: x, gp: g}, config)
        for (ksize, strides, padding, _), got in zip(combos, values):
            np.testing.assert_array_equal(got, loop_max_pool_grad_grad(
                x, g, ksize, strides, padding, data_format=data_format),
                err_msg=f"{ksize} {strides} {padding}")


# --- TensorFlow's results ------------------------------------------------------------------------


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_pooling_matches_tensorflow(config, data_format):
    x, ddx = FIXTURES["pool/x"], FIXTURES["pool/ddx"]
    graph, built = tf.Graph(), []
    with graph.as_default():
        xp = tf.placeholder(tf.float32, [None] * 4, name="x")
        ddxp = tf.placeholder(tf.float32, [None] * 4, name="ddx")
        feeds = {xp: _layout(x, data_format), ddxp: _layout(ddx, data_format)}
        for case in (c for c in CASES if c["kind"] == "pool"):
            p, name = case["params"], case["name"]
            dy = tf.constant(_layout(FIXTURES[f"{name}/dy"], data_format))
            padding = p["padding"] if isinstance(p["padding"], str) else (
                p["padding"] if data_format == "NHWC" else
                [p["padding"][i] for i in (0, 3, 1, 2)])
            pool = tf.nn.max_pool if p["pooling"] == "MAX" else tf.nn.avg_pool
            y = pool(xp, p["ksize"], p["strides"], padding, data_format=data_format)
            out = {"y": y, "dx": tf.gradients(y, xp, dy)[0]}
            if f"{name}/ddy" in FIXTURES:
                out["ddy"] = pool_grad_ops.max_pool_grad_grad(xp, y, ddxp, y.op.attrs)
            built.append((name, out))
    values, _ = _run(graph, [out for _, out in built], feeds, CONFIGS[config])
    assert len(built) == 38
    for (name, _), got in zip(built, values):
        for key, value in got.items():
            want = _layout(FIXTURES[f"{name}/{key}"], data_format)
            if name.startswith("max"):   # selections and sums of small integers: exact
                np.testing.assert_array_equal(value, want, err_msg=f"{name}/{key}")
            else:
                np.testing.assert_allclose(value, want, rtol=1e-6, atol=1e-6,
                                           err_msg=f"{name}/{key}")


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_max_pool_with_argmax_matches_tensorflow(config):
    graph, built = tf.Graph(), []
    with graph.as_default():
        xp = tf.placeholder(tf.float32, [None] * 4)
        for case in (c for c in CASES if c["kind"] == "argmax"):
            p = case["params"]
            y, argmax = tf.nn.max_pool_with_argmax(
                xp, p["ksize"], p["strides"], p["padding"],
                include_batch_in_index=p["include_batch_in_index"])
            dx = tf.gradients(y, xp, tf.cos(y))[0]
            built.append((case, [y, argmax, tf.cos(y), dx]))
    values, compiled = _run(graph, [b for _, b in built], {xp: FIXTURES["pool/x"]},
                            CONFIGS[config])
    assert len(built) == 2 and (config == "kernels" or "MaxPoolWithArgmax" in compiled)
    x = FIXTURES["pool/x"]
    for (case, _), (y, argmax, dy, dx) in zip(built, values):
        name = case["name"]
        np.testing.assert_array_equal(y, FIXTURES[f"{name}/y"])
        assert argmax.dtype == np.int64
        np.testing.assert_array_equal(argmax, FIXTURES[f"{name}/argmax"])
        # each window's gradient lands at its argmax position
        if not case["params"]["include_batch_in_index"]:   # positions within each image
            argmax = argmax + np.arange(x.shape[0]).reshape(-1, 1, 1, 1) * (x.size // len(x))
        want = np.zeros(x.size)
        np.add.at(want, argmax.ravel(), dy.ravel())
        np.testing.assert_allclose(dx.ravel(), want, rtol=1e-6, atol=1e-6)


def test_ties_send_the_gradient_to_the_first_maximum_as_tensorflow():
    # one window holds 3 at taps 1 and 2 (row-major): TensorFlow gives tap 1 the gradient
    x = np.array([[1, 3], [3, 2]], np.float32).reshape(1, 2, 2, 1)
    graph = tf.Graph()
    with graph.as_default():
        xp = tf.placeholder(tf.float32, [1, 2, 2, 1])
        dx = tf.gradients(tf.nn.max_pool(xp, 2, 2, "VALID"), xp)[0]
    for config in CONFIGS.values():
        got, _ = _run(graph, dx, {xp: x}, config)
        np.testing.assert_array_equal(got.reshape(2, 2), [[0, 1], [0, 0]])


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_nan_counts_as_minus_infinity_in_a_maximum(config):
    x, want = FIXTURES["max_nan/x"], FIXTURES["max_nan/y"]
    graph = tf.Graph()
    with graph.as_default():
        xp = tf.placeholder(tf.float32, [None] * 4)
        y = tf.nn.max_pool(xp, 2, 2, "VALID")
        dx = tf.gradients(y, xp)[0]
        all_nan = tf.nn.max_pool(tf.fill([1, 2, 2, 1], np.float32(np.nan)) + xp[:1, :2, :2],
                                 2, 2, "VALID")
    (got_y, got_dx, got_nan), _ = _run(graph, [y, dx, all_nan], {xp: x}, CONFIGS[config])
    np.testing.assert_array_equal(got_y, want)   # TensorFlow's values: NaNs skipped
    np.testing.assert_array_equal(got_dx, loop_max_pool_grad(x, np.ones_like(want), [2, 2],
                                                             [2, 2], "VALID"))
    assert np.isnan(x).any() and not np.isnan(got_dx).any()
    # a window of NaNs only holds no number: -inf (TensorFlow's kernel: the lowest float)
    np.testing.assert_array_equal(got_nan, np.full((1, 1, 1, 1), -np.inf, np.float32))


# --- double backprop -----------------------------------------------------------------------------


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_double_backprop_through_pooling(config):
    rng = np.random.RandomState(5)
    x = rng.permutation(2 * 5 * 6 * 2).reshape(2, 5, 6, 2).astype(np.float64)
    w = rng.randn(*x.shape)
    graph = tf.Graph()
    with graph.as_default():
        xp = tf.placeholder(tf.float64, x.shape)
        y_max, y_avg = tf.nn.max_pool(xp, 3, 2, "SAME"), tf.nn.avg_pool(xp, 3, 2, "SAME")
        g = tf.placeholder(tf.float64, y_max.shape)
        dx_max, dx_avg = tf.gradients(y_max, xp, g)[0], tf.gradients(y_avg, xp, g)[0]
        # d/dg of <dx, w>: the input-shaped w pooled back (MaxPoolGradGrad / AvgPool)
        gg_max = tf.gradients(tf.reduce_sum(dx_max * w), g)[0]
        gg_avg = tf.gradients(tf.reduce_sum(dx_avg * w), g)[0]
        # MaxPool's selection is piecewise constant: the x-gradient of the gradient is 0
        gx = tf.gradients(tf.reduce_sum(dx_max * w), xp)[0]
    types = {op.type for op in graph.get_operations()}
    assert {"MaxPoolGrad", "MaxPoolGradGrad", "AvgPoolGrad", "AvgPool"} <= types
    gv = rng.randn(*y_max.shape.as_list())
    (a, b, c), _ = _run(graph, [gg_max, gg_avg, gx], {xp: x, g: gv}, CONFIGS[config])
    np.testing.assert_allclose(a, loop_max_pool_grad_grad(x, w, [3, 3], [2, 2], "SAME"))
    np.testing.assert_allclose(b, loop_pool(w, [3, 3], [2, 2], "SAME", kind="avg"))
    np.testing.assert_array_equal(c, np.zeros_like(x))


# --- front ends ----------------------------------------------------------------------------------


def test_pool_front_ends():
    rng = np.random.RandomState(6)
    x3 = rng.randn(2, 7, 3).astype(np.float32)      # NWC
    x4 = rng.randn(2, 5, 6, 3).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        p3 = tf.placeholder(tf.float32, [None, None, 3])
        p4 = tf.placeholder(tf.float32, [None, None, None, 3])
        outs = [tf.nn.max_pool1d(p3, 3, 2, "SAME"), tf.nn.avg_pool1d(p3, 2, 1, "VALID"),
                tf.nn.max_pool1d(tf.transpose(p3, [0, 2, 1]), [3], [2], "VALID", "NCW"),
                tf.nn.max_pool1d(p3, 3, 1, [[0, 0], [2, 1], [0, 0]]),
                tf.nn.pool(p3, [2], "AVG", "SAME", strides=[2]),
                tf.nn.pool(p4, [2, 3], "MAX", "VALID", strides=[1, 2]),
                tf.nn.max_pool2d(p4, [2, 2], 2, "SAME"), tf.nn.avg_pool2d(p4, 3, [1, 2], "SAME"),
                tf.nn.max_pool(input=p4, ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1],
                               padding="VALID")]
    assert [o.op.type for o in outs[:4]] == ["Squeeze"] * 4
    as_2d = x3[:, None]   # NWC as NHWC with H = 1
    want = [loop_pool(as_2d, (1, 3), (1, 2), "SAME")[:, 0],
            loop_pool(as_2d, (1, 2), (1, 1), "VALID", kind="avg")[:, 0],
            np.transpose(loop_pool(as_2d, (1, 3), (1, 2), "VALID")[:, 0], [0, 2, 1]),
            loop_pool(as_2d, (1, 3), (1, 1), "EXPLICIT", ((0, 0), (2, 1)))[:, 0],
            loop_pool(as_2d, (1, 2), (1, 2), "SAME", kind="avg")[:, 0],
            loop_pool(x4, (2, 3), (1, 2), "VALID"), loop_pool(x4, (2, 2), (2, 2), "SAME"),
            loop_pool(x4, (3, 3), (1, 2), "SAME", kind="avg"),
            loop_pool(x4, (2, 2), (1, 1), "VALID")]
    for config in CONFIGS.values():
        got, _ = _run(graph, outs, {p3: x3, p4: x4}, config)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)


def test_static_shapes():
    x = tf.placeholder(tf.float32, [4, 9, None, 3])
    assert tf.nn.max_pool(x, 2, 2, "VALID").shape.as_list() == [4, 4, None, 3]
    assert tf.nn.avg_pool(x, 3, 2, "SAME").shape.as_list() == [4, 5, None, 3]
    assert tf.nn.max_pool(x, 3, 2, [[0, 0], [2, 1], [1, 1], [0, 0]]).shape.as_list() == \
        [4, 5, None, 3]
    nchw = tf.placeholder(tf.float32, [None, 3, 9, 8])
    assert tf.nn.max_pool(nchw, [1, 1, 3, 2], [1, 1, 3, 2], "SAME",
                          data_format="NCHW").shape.as_list() == [None, 3, 3, 4]
    y = tf.nn.max_pool(x, 2, 2, "SAME")
    assert tf.gradients(y, x)[0].shape.as_list() == [4, 9, None, 3]


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("build,error,message", [
    (lambda x: tf.nn.max_pool(x, [2, 2, 2], 1, "VALID"), ValueError, "length 1, 2 or 4"),
    (lambda x: tf.nn.max_pool(x, 0, 1, "VALID"), ValueError, "cannot be zero"),
    (lambda x: tf.nn.max_pool(x, 2, 0, "VALID"), ValueError, "strides must be positive"),
    (lambda x: tf.nn.max_pool(x, [2, 2, 2, 1], 1, "VALID"), ValueError, "batch and channel"),
    (lambda x: tf.nn.avg_pool(x, 1, [1, 1, 1, 2], "VALID"), ValueError, "batch and channel"),
    (lambda x: tf.nn.max_pool(x, 6, 1, "VALID"), ValueError, "Negative dimension size"),
    (lambda x: tf.nn.max_pool(x[0], 2, 1, "VALID"), ValueError, "rank 4"),
    (lambda x: tf.nn.max_pool(x, 2, 1, "valid_"), ValueError, "not in"),
    (lambda x: tf.nn.avg_pool(x, 2, 1, [[0, 0], [1, 1], [1, 1], [0, 0]]), ValueError,
     "explicit padding"),
    (lambda x: tf.nn.max_pool(x, 2, 1, [[0, 0], [2, 0], [0, 0], [0, 0]]), ValueError,
     "smaller than the window"),
    (lambda x: tf.nn.max_pool(x, 2, 1, [[1, 0], [0, 0], [0, 0], [0, 0]]), ValueError,
     "batch or depth"),
    (lambda x: tf.nn.max_pool(x, 2, 1, "VALID", data_format="NCDHW"), ValueError,
     "data_format"),
    (lambda x: tf.nn.avg_pool(tf.cast(x, tf.int32), 2, 1, "VALID"), TypeError, "int32"),
    (lambda x: pool_grad_ops.max_pool_grad(x, x, x, {"ksize": [1, 2, 2, 1],
                                                     "strides": [1, 1, 1, 1],
                                                     "padding": "VALID"}),
     ValueError, "orig_output"),
    (lambda x: pool_grad_ops.avg_pool_grad([2, 5, 5], x, {"ksize": [1, 2, 2, 1],
                                                          "strides": [1, 1, 1, 1],
                                                          "padding": "VALID"}),
     ValueError, "4 sizes"),
])
def test_bad_arguments_fail_while_building(build, error, message):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 5, 5, 3])
        with pytest.raises(error, match=message):
            build(x)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_bad_sizes_fail_when_running(config):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None] * 4)
        y = tf.nn.max_pool(x, 3, 1, "VALID")
        g = tf.placeholder(tf.float32, [None] * 4)
        dx = pool_grad_ops.max_pool_grad(x, y, g, y.op.attrs)
    with tf.Session(graph=graph, config=CONFIGS[config]) as sess:
        small = np.zeros((1, 2, 5, 1), np.float32)
        with pytest.raises((InvalidArgumentError, ValueError), match="(?i)negative|larger"):
            sess.run(y, {x: small})
        good = np.zeros((1, 4, 4, 1), np.float32)
        with pytest.raises((InvalidArgumentError, ValueError), match="shape"):
            sess.run(dx, {x: good, g: np.zeros((1, 3, 2, 1), np.float32)})
