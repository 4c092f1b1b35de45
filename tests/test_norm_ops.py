"""Normalization (ops/norm_ops.py, norm_grad_ops.py, lrn_ops.py): FusedBatchNormV3 and its
gradient op, `batch_normalization`, LRN and LRNGrad against their formulas in float64
(tests/samples/pool_norm.py) and against TensorFlow's results recorded in
tests/fixtures/pool_norm_cases.npz (training returns the unbiased batch variance, blended
into the running statistics by exponential_avg_factor), one compiled cluster for a
training step's batch norm, and errors.

Graphs run with the ops' reference kernels (jit off) and compiled by the reference target
(the lowerings); the CPU target is checked by tests/test_compiled_ops.py.
"""

import json
import os

import numpy as np
import pytest

import flowjit as tf
from flowjit.errors import InvalidArgumentError
from flowjit.ops import norm_grad_ops
from flowjit.runtime import clustering
from flowjit.runtime.clustering import ClusterStep
from samples.pool_norm import (bn_grad_reference, bn_reference, lrn_grad_reference,
                               lrn_reference)

OFF = tf.ConfigProto(jit=False)
REFERENCE = tf.ConfigProto(jit=tf.JitOptions.always(target="reference"))
CONFIGS = {"kernels": OFF, "lowered": REFERENCE}
FIXTURES = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "pool_norm_cases.npz"))
CASES = json.loads(str(FIXTURES["_cases"]))
VECTORS = ("scale", "offset", "mean", "variance")


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    """A lowering failure fails the test instead of falling back to the kernels."""
    monkeypatch.setattr(clustering, "STRICT", True)


def _run(graph, fetches, feeds, config):
    """(values, the cluster steps of the session's plans)."""
    with tf.Session(graph=graph, config=config) as sess:
        values = sess.run(fetches, feeds)
        steps = [n for plan in sess._plans.values() for n in plan.ops
                 if isinstance(n, ClusterStep)]
    return values, steps


# --- TensorFlow's results ------------------------------------------------------------------------


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_fused_batch_norm_matches_tensorflow(config):
    graph, built = tf.Graph(), []
    vectors = {k: FIXTURES[f"bn/{k}"] for k in VECTORS}
    feeds = {}
    with graph.as_default():
        vp = {k: tf.placeholder(tf.float32, [None], name=k) for k in VECTORS}
        feeds.update({vp[k]: v for k, v in vectors.items()})
        for case in (c for c in CASES if c["kind"] == "bn"):
            p, name = case["params"], case["name"]
            x = tf.placeholder(tf.float32, [None] * 4)
            dy = tf.placeholder(tf.float32, [None] * 4)
            feeds[x], feeds[dy] = FIXTURES[f"{name}/x"], FIXTURES[f"{name}/dy"]
            y, mean, var = tf.nn.fused_batch_norm(
                x, vp["scale"], vp["offset"], vp["mean"], vp["variance"], p["epsilon"],
                p["data_format"], p["is_training"], exponential_avg_factor=p["factor"])
            out = {"y": y, "batch_mean": mean, "batch_variance": var}
            if p["is_training"]:   # TensorFlow's inference reserve spaces are unspecified
                out.update(reserve_1=y.op.outputs[3], reserve_2=y.op.outputs[4])
            if f"{name}/dx" in FIXTURES:
                out.update(zip(("dx", "dscale", "doffset"), norm_grad_ops.fused_batch_norm_grad_v3(
                    dy, x, vp["scale"], *y.op.outputs[3:6], epsilon=p["epsilon"],
                    data_format=p["data_format"], is_training=p["is_training"])[:3]))
                if p["is_training"]:   # TensorFlow's gradient of y alone is that op
                    out["dx_of_y"] = tf.gradients(y, x, dy)[0]
            built.append((name, out))
    values, _ = _run(graph, [out for _, out in built], feeds, CONFIGS[config])
    assert len(built) == 6
    for (name, _), got in zip(built, values):
        assert got["y"].dtype == np.float32 and got["batch_mean"].shape == (3,)
        for key, value in got.items():
            want = FIXTURES[f"{name}/{'dx' if key == 'dx_of_y' else key}"]
            np.testing.assert_allclose(value, want, rtol=2e-5, atol=2e-5,
                                       err_msg=f"{name}/{key}")


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_batch_normalization_and_lrn_match_tensorflow(config):
    graph, fetches = tf.Graph(), {}
    with graph.as_default():
        vp = {k: tf.placeholder(tf.float32, [None], name=k) for k in VECTORS}
        xb = tf.placeholder(tf.float32, [None] * 4)
        xl, dyl = tf.placeholder(tf.float32, [None] * 4), tf.placeholder(tf.float32, [None] * 4)
        fetches["bn_composite/y"] = tf.nn.batch_normalization(
            xb, vp["mean"], vp["variance"], vp["offset"], vp["scale"], 0.001)
        for case in (c for c in CASES if c["kind"] == "lrn"):
            y = tf.nn.local_response_normalization(xl, **case["params"])
            fetches[case["name"] + "/y"] = y
            fetches[case["name"] + "/dx"] = tf.gradients(y, xl, dyl)[0]
    feeds = {vp[k]: FIXTURES[f"bn/{k}"] for k in VECTORS}
    feeds.update({xb: FIXTURES["bn_train_f1.0_NHWC/x"], xl: FIXTURES["lrn/x"],
                  dyl: FIXTURES["lrn/dy"]})
    values, _ = _run(graph, fetches, feeds, CONFIGS[config])
    assert len(values) == 7
    for key, value in values.items():
        np.testing.assert_allclose(value, FIXTURES[key], rtol=2e-5, atol=2e-6, err_msg=key)


# --- the definitions -----------------------------------------------------------------------------


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("mode", ["training", "blended", "inference"])
def test_fused_batch_norm_follows_its_definition(mode, dtype, data_format):
    rng = np.random.RandomState(7)
    shape = (3, 2, 4, 5) if data_format == "NHWC" else (3, 5, 2, 4)
    x = (rng.randn(*shape) * 2 + 1).astype(dtype)
    dy = rng.randn(*shape).astype(dtype)
    u = np.float64 if dtype == np.float64 else np.float32
    scale, offset, mean = rng.rand(5) + 0.5, rng.randn(5), rng.randn(5)
    variance = rng.rand(5) + 0.5
    training, factor = mode != "inference", 0.4 if mode == "blended" else 1.0
    graph = tf.Graph()
    with graph.as_default():
        xp = tf.placeholder(tf.as_dtype(dtype), [None] * 4)
        dyp = tf.placeholder(tf.as_dtype(dtype), [None] * 4)
        vs = [tf.constant(v.astype(u)) for v in (scale, offset, mean, variance)]
        y, m, v = tf.nn.fused_batch_norm(xp, *vs, epsilon=0.001, data_format=data_format,
                                         is_training=training, exponential_avg_factor=factor)
        grads = norm_grad_ops.fused_batch_norm_grad_v3(
            dyp, xp, vs[0], *y.op.outputs[3:6], epsilon=0.001, data_format=data_format,
            is_training=training)
    axis = 1 if data_format == "NCHW" else 3
    wide = np.moveaxis(x.astype(np.float64), axis, -1)
    stats = (wide.mean((0, 1, 2)), wide.var((0, 1, 2))) if training else (mean, variance)
    eps = float(np.float32(0.001))
    want_y, want_m, want_v = bn_reference(x, scale, offset, mean, variance, eps, data_format,
                                          training, float(np.float32(factor)))  # attrs: 32 bits
    want_grads = bn_grad_reference(dy, x, scale, *stats, eps, data_format, training)
    tol = {np.float16: 2e-2, np.float32: 2e-5, np.float64: 1e-10}[dtype]
    for config in CONFIGS.values():
        got, _ = _run(graph, [y, m, v, *y.op.outputs[3:], *grads], {xp: x, dyp: dy}, config)
        assert [g.dtype for g in got[:6]] == [dtype] + [u] * 5
        assert got[5].shape == (0,) and got[9].shape == got[10].shape == (0,)
        np.testing.assert_allclose(got[0], want_y, rtol=tol, atol=tol)
        np.testing.assert_allclose(got[1], want_m, rtol=tol, atol=tol)
        np.testing.assert_allclose(got[2], want_v, rtol=tol, atol=tol)
        np.testing.assert_allclose(got[3], stats[0], rtol=tol, atol=tol)   # reserve spaces:
        np.testing.assert_allclose(got[4], stats[1], rtol=tol, atol=tol)   # biased variance
        for g, w in zip(got[6:9], want_grads):
            np.testing.assert_allclose(g, w, rtol=tol * 5, atol=tol * 5)


def test_batch_statistics_of_tiny_and_empty_batches():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, None, None, 2])
        _, m, v = tf.nn.fused_batch_norm(x, [1.0, 1.0], [0.0, 0.0])
    for config in CONFIGS.values():
        one, _ = _run(graph, [m, v], {x: np.array([[[[2.0, -1.0]]]], np.float32)}, config)
        np.testing.assert_array_equal(one, [[2.0, -1.0], [0.0, 0.0]])   # n = 1: 0, not NaN
        none, _ = _run(graph, [m, v], {x: np.zeros((0, 2, 2, 2), np.float32)}, config)
        assert np.isnan(none).all()   # no elements: NaN, as TensorFlow


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_batch_normalization_composite(config):
    rng = np.random.RandomState(8)
    x = rng.randn(2, 3, 4).astype(np.float32)
    mean, var = rng.randn(4).astype(np.float32), rng.rand(4).astype(np.float32) + 0.5
    graph = tf.Graph()
    with graph.as_default():
        xp = tf.placeholder(tf.float32, [None, None, 4])
        outs = [tf.nn.batch_normalization(xp, mean, var, 0.5, 2.0, 0.01),
                tf.nn.batch_normalization(xp, mean, var, None, None, 0.01)]
    got, _ = _run(graph, outs, {xp: x}, CONFIGS[config])
    norm = (x.astype(np.float64) - mean) / np.sqrt(var + 0.01)
    np.testing.assert_allclose(got[0], norm * 2 + 0.5, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], norm, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_lrn_follows_its_definition(dtype):
    rng = np.random.RandomState(9)
    x, dy = rng.randn(2, 3, 2, 9).astype(dtype), rng.randn(2, 3, 2, 9).astype(dtype)
    graph, outs = tf.Graph(), []
    settings = [(5, 1.0, 1.0, 0.5), (0, 2.0, 0.5, 1.0), (3, 1.0, 0.1, 0.75), (20, 1.0, 1.0, 0.5)]
    with graph.as_default():
        # a static depth: the lowering's window stops at the depth (radius 20 > 9)
        xp, dyp = (tf.placeholder(tf.as_dtype(dtype), [None, None, None, 9]) for _ in range(2))
        for radius, bias, alpha, beta in settings:
            y = tf.nn.lrn(xp, radius, bias, alpha, beta)
            outs += [y, tf.gradients(y, xp, dyp)[0]]
    tol = {np.float16: 2e-2, np.float32: 2e-5, np.float64: 1e-10}[dtype]
    for config in CONFIGS.values():
        got, _ = _run(graph, outs, {xp: x, dyp: dy}, config)
        for (radius, *floats), y, dx in zip(settings, got[::2], got[1::2]):
            bias, alpha, beta = (float(np.float32(f)) for f in floats)   # attrs: 32 bits
            np.testing.assert_allclose(y, lrn_reference(x, radius, bias, alpha, beta)[0],
                                       rtol=tol, atol=tol)
            np.testing.assert_allclose(dx, lrn_grad_reference(dy, x, radius, bias, alpha,
                                                              beta), rtol=tol, atol=tol)


# --- one compiled cluster ------------------------------------------------------------------------


def test_a_training_step_of_batch_norm_is_one_cluster():
    rng = np.random.RandomState(10)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 4, 4, 3])
        scale = tf.Variable(np.ones(3, np.float32))
        offset = tf.Variable(np.zeros(3, np.float32))
        y, _, _ = tf.nn.fused_batch_norm(x, scale, offset)
        loss = tf.reduce_sum(tf.nn.relu(y) * tf.nn.lrn(y, 1))
        step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
    feeds = {x: rng.randn(2, 4, 4, 3).astype(np.float32)}
    results = []
    for config in (OFF, REFERENCE):
        with tf.Session(graph=graph, config=config) as sess:
            sess.run(init)
            sess.run(step, feeds)
            results.append(sess.run([loss, scale, offset], feeds))
            steps = [n for plan in sess._plans.values() for n in plan.ops
                     if isinstance(n, ClusterStep)]
        if config is REFERENCE:
            types = {op.type for s in steps for op in s.ops}
            assert {"FusedBatchNormV3", "FusedBatchNormGradV3", "LRN", "LRNGrad"} <= types
            holding = [s for s in steps if any(op.type == "FusedBatchNormGradV3"
                                               for op in s.ops)]
            assert len(holding) == 1 and any(op.type == "FusedBatchNormV3"
                                             for op in holding[0].ops)
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


# --- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize("build,error,message", [
    (lambda x: tf.nn.fused_batch_norm(x, [1.0] * 4, [0.0] * 4), ValueError, "per channel"),
    (lambda x: tf.nn.fused_batch_norm(x, [1.0] * 3, [0.0] * 3, is_training=False),
     ValueError, "mean and variance"),
    (lambda x: tf.nn.fused_batch_norm(x, [1.0] * 3, [0.0] * 3, [0.0] * 3, [1.0] * 2,
                                      is_training=False), ValueError, "variance"),
    (lambda x: tf.nn.fused_batch_norm(x[0], [1.0] * 3, [0.0] * 3), ValueError, "rank 4"),
    (lambda x: tf.nn.fused_batch_norm(x, [1.0] * 3, [0.0] * 3, data_format="NWC"),
     ValueError, "data_format"),
    (lambda x: tf.nn.fused_batch_norm(x, np.ones(3), np.zeros(3)), TypeError, "float32"),
    (lambda x: tf.nn.fused_batch_norm(tf.cast(x, tf.int32), [1.0] * 3, [0.0] * 3),
     TypeError, "int32"),
    (lambda x: tf.nn.lrn(x[0]), ValueError, "rank 4"),
    (lambda x: tf.nn.lrn(tf.cast(x, tf.int32)), TypeError, "int32"),
    (lambda x: tf.nn.lrn(x, depth_radius=-1), ValueError, "non-negative"),
])
def test_bad_arguments_fail_while_building(build, error, message):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 4, 4, 3])
        with pytest.raises(error, match=message):
            build(x)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_a_channel_mismatch_fails_when_running(config):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None] * 4)
        scale = tf.placeholder(tf.float32, [None])
        y, _, _ = tf.nn.fused_batch_norm(x, scale, tf.zeros_like(scale))
    with tf.Session(graph=graph, config=CONFIGS[config]) as sess:
        with pytest.raises((InvalidArgumentError, ValueError), match="channel"):
            sess.run(y, {x: np.zeros((2, 2, 2, 3), np.float32),
                         scale: np.ones(4, np.float32)})
