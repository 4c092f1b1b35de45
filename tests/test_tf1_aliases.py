"""TF 1.x aliases and small composites (ops/math_composites.py, matrix_composites.py,
nn_composites.py, tf1_helpers.py) against NumPy computations written from their definitions,
and their gradients against finite differences where a mask or a safe branch could go wrong.
"""

import math

import numpy as np
import pytest

import flowjit as tf

OFF = tf.ConfigProto(jit=False)
RNG = np.random.default_rng(5)


def _run(fetches, feeds=None):
    with tf.Session(config=OFF) as sess:
        return sess.run(fetches, feeds)


def _np_diag_part(x):
    k = min(x.shape[-2:])
    return np.stack([x[..., i, i] for i in range(k)], -1)


def test_matrix_helpers_match_numpy():
    x = RNG.standard_normal((2, 3, 4))
    tall = RNG.standard_normal((4, 2))
    with tf.Graph().as_default():
        dynamic = tf.placeholder(tf.float64, [None, None], name="dynamic")
        got = _run({
            "eye": tf.eye(2, 3, batch_shape=[2], dtype=tf.float64),
            "diag": tf.matrix_diag(x[0]), "diag_part": tf.matrix_diag_part(x),
            "diag_part_tall": tf.matrix_diag_part(tall),
            "diag_part_dynamic": tf.matrix_diag_part(dynamic),
            "set_diag": tf.matrix_set_diag(x, -np.ones((2, 3))),
            "set_diag_tall": tf.matrix_set_diag(tall, [7.0, 8.0]),
            "band": tf.matrix_band_part(x, 1, 0), "band_all_lower": tf.matrix_band_part(x, -1, 1),
            "transpose": tf.matrix_transpose(x), "trace": tf.trace(x),
            "tensor_diag": tf.diag(x[0, :2, :2]),
            "tensor_diag_part": tf.diag_part(np.arange(16.0).reshape(2, 2, 2, 2)),
            "tensordot": tf.tensordot(x, tall, [[2], [0]]),
            "tensordot_0": tf.tensordot(x[0, 0], tall[:, 0], 0),
            "matvec": tf.linalg.matvec(x, np.ones(4)),
        }, {dynamic: tall})
    i, j = np.indices((3, 4))
    np.testing.assert_array_equal(got["eye"], np.broadcast_to(np.eye(2, 3), (2, 2, 3)))
    np.testing.assert_array_equal(got["diag"], np.stack([np.diag(r) for r in x[0]]))
    np.testing.assert_array_equal(got["diag_part"], _np_diag_part(x))
    np.testing.assert_array_equal(got["diag_part_tall"], np.diag(tall))
    np.testing.assert_array_equal(got["diag_part_dynamic"], np.diag(tall))
    expected = x.copy()
    expected[:, range(3), range(3)] = -1.0
    np.testing.assert_array_equal(got["set_diag"], expected)
    tall_set = tall.copy()
    tall_set[[0, 1], [0, 1]] = [7.0, 8.0]
    np.testing.assert_array_equal(got["set_diag_tall"], tall_set)
    np.testing.assert_array_equal(got["band"], np.where((i - j <= 1) & (j - i <= 0), x, 0))
    np.testing.assert_array_equal(got["band_all_lower"], np.where(j - i <= 1, x, 0))
    np.testing.assert_array_equal(got["transpose"], np.swapaxes(x, -1, -2))
    np.testing.assert_allclose(got["trace"], np.trace(x, axis1=-2, axis2=-1))
    d = x[0, :2, :2]
    np.testing.assert_array_equal(got["tensor_diag"],
                                  np.diag(d.ravel()).reshape(2, 2, 2, 2))
    np.testing.assert_array_equal(got["tensor_diag_part"], [[0.0, 5.0], [10.0, 15.0]])
    np.testing.assert_allclose(got["tensordot"], np.tensordot(x, tall, [[2], [0]]))
    np.testing.assert_allclose(got["tensordot_0"], np.tensordot(x[0, 0], tall[:, 0], 0))
    np.testing.assert_allclose(got["matvec"], x @ np.ones(4))


def test_math_helpers_match_numpy():
    x = np.array([0.0, 2.0, -1.5, 0.0, 40.0, -40.0])
    y = np.array([0.0, 3.0, 0.5, np.inf, 0.0, 2.0])
    data = RNG.standard_normal((5, 2))
    with tf.Graph().as_default():
        got = _run({
            "log_sigmoid": tf.math.log_sigmoid(x), "xlogy": tf.math.xlogy(x, np.abs(y)),
            "xdivy": tf.math.xdivy(x, y), "mul": tf.math.multiply_no_nan(y, x),
            "recip": tf.math.reciprocal_no_nan(x),
            "var": tf.math.reduce_variance(data, 0), "std": tf.math.reduce_std(data, keepdims=True),
            "polyval": tf.math.polyval([1.0, -2.0, 3.0], x), "scalar_mul": tf.scalar_mul(2.0, x),
            "accumulate_n": tf.accumulate_n([x, x, np.ones(6)]),
            "mask": tf.sequence_mask([1, 3, 0], 4), "mask_default": tf.sequence_mask([[2], [0]]),
            "mask_float": tf.sequence_mask([2], 3, dtype=tf.float32),
            "confusion": tf.confusion_matrix([0, 2, 1, 2], [0, 1, 1, 2]),
            "confusion_weighted": tf.confusion_matrix([1, 1], [0, 0], num_classes=3,
                                                      weights=[0.5, 2.0], dtype=tf.float32),
            "bincount": tf.math.bincount([1, 1, 4, 0], minlength=7),
            "bincount_max": tf.math.bincount([1, 1, 4], maxlength=3),
            "bincount_empty": tf.math.bincount(np.zeros(0, np.int32)),
            "segment_sum": tf.segment_sum(data, [0, 0, 2, 2, 3]),
            "segment_mean": tf.segment_mean(data, [0, 0, 2, 2, 3]),
            "unsorted_mean": tf.unsorted_segment_mean(data, [3, 0, 3, 3, -1], 5),
            "unsorted_sqrt_n": tf.unsorted_segment_sqrt_n(data, [3, 0, 3, 3, 1], 5),
            "linspace": tf.linspace(1.0, 3.0, 5), "linspace_1": tf.lin_space(2.0, 5.0, 1),
            "rint": tf.rint([0.5, 1.5, -2.5]), "floor_div": tf.floor_div(7, -2),
            "realdiv": tf.realdiv(7.0, 2.0),
        })
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(got["log_sigmoid"], -np.logaddexp(0, -x))
        np.testing.assert_allclose(got["xlogy"], np.where(x == 0, 0, x * np.log(np.abs(y))))
        np.testing.assert_allclose(got["xdivy"], np.where(x == 0, 0, x / y))
        np.testing.assert_allclose(got["mul"], np.where(x == 0, 0, y * x))
        np.testing.assert_allclose(got["recip"], np.where(x == 0, 0, 1 / x))
    np.testing.assert_allclose(got["var"], data.var(0))
    np.testing.assert_allclose(got["std"], np.reshape(data.std(), (1, 1)))
    np.testing.assert_allclose(got["polyval"], x * x - 2 * x + 3)
    np.testing.assert_allclose(got["scalar_mul"], 2 * x)
    np.testing.assert_allclose(got["accumulate_n"], 2 * x + 1)
    np.testing.assert_array_equal(got["mask"], np.arange(4) < np.array([[1], [3], [0]]))
    np.testing.assert_array_equal(got["mask_default"], np.arange(2) < np.array([[[2]], [[0]]]))
    assert got["mask_float"].dtype == np.float32 and list(got["mask_float"][0]) == [1, 1, 0]
    confusion = np.zeros((3, 3), np.int32)
    np.add.at(confusion, ([0, 2, 1, 2], [0, 1, 1, 2]), 1)
    np.testing.assert_array_equal(got["confusion"], confusion)
    assert got["confusion"].dtype == np.int32
    np.testing.assert_array_equal(got["confusion_weighted"], [[0, 0, 0], [2.5, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(got["bincount"], np.bincount([1, 1, 4, 0], minlength=7))
    np.testing.assert_array_equal(got["bincount_max"], [0, 2, 0])
    assert got["bincount_empty"].shape == (0,)
    sums = np.zeros((4, 2))
    np.add.at(sums, [0, 0, 2, 2, 3], data)
    np.testing.assert_allclose(got["segment_sum"], sums)
    np.testing.assert_allclose(got["segment_mean"], sums / np.maximum(
        np.bincount([0, 0, 2, 2, 3], minlength=4), 1)[:, None])
    means = np.zeros((5, 2))
    means[3] = data[[0, 2, 3]].mean(0)
    means[0] = data[1]
    np.testing.assert_allclose(got["unsorted_mean"], means)
    np.testing.assert_allclose(got["unsorted_sqrt_n"][3], data[[0, 2, 3]].sum(0) / np.sqrt(3))
    np.testing.assert_allclose(got["linspace"], np.linspace(1, 3, 5))
    np.testing.assert_allclose(got["linspace_1"], [2.0])
    np.testing.assert_array_equal(got["rint"], np.rint([0.5, 1.5, -2.5]))
    assert got["floor_div"] == 7 // -2 and got["realdiv"] == 3.5


def test_nn_helpers_match_numpy():
    x = RNG.standard_normal((3, 4))
    z = (RNG.uniform(size=(3, 4)) > 0.5).astype(np.float64)
    targets = np.array([0.0, 1.0, 3.0, 7.5])
    log_input = np.array([0.5, 0.1, 1.0, -0.3])
    weights = np.array([[1.0], [3.0], [0.5]])
    with tf.Graph().as_default():
        count, mean_ss, var_ss, shift = tf.nn.sufficient_statistics(x, [0])
        stats_shift = tf.nn.sufficient_statistics(x, [0, 1], shift=0.5, keep_dims=True)
        got = _run({
            "swish": tf.nn.swish(x), "swish_beta": tf.nn.swish(x, beta=2.0),
            "crelu": tf.nn.crelu(x), "relu_layer": tf.nn.relu_layer(x, x.T, np.ones(3)),
            "poisson": tf.nn.log_poisson_loss(targets, log_input),
            "poisson_full": tf.nn.log_poisson_loss(targets, log_input, compute_full_loss=True),
            "wce": tf.nn.weighted_cross_entropy_with_logits(labels=z, logits=x, pos_weight=3.0),
            "stats": [count, mean_ss, var_ss], "stats_shift": list(stats_shift),
            "normalized": tf.nn.normalize_moments(count, mean_ss, var_ss, None),
            "normalized_shift": tf.nn.normalize_moments(12.0, stats_shift[1], stats_shift[2],
                                                        0.5),
            "weighted": tf.nn.weighted_moments(x, [0], weights),
            "weighted_kept": tf.nn.weighted_moments(x, [0, 1], weights, keep_dims=True),
            "zero_fraction": tf.nn.zero_fraction([0, 1, 0, 3]),
        })
    assert shift is None
    sig = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(got["swish"], x * sig)
    np.testing.assert_allclose(got["swish_beta"], x / (1 + np.exp(-2 * x)))
    np.testing.assert_allclose(got["crelu"], np.concatenate([np.maximum(x, 0),
                                                             np.maximum(-x, 0)], -1))
    np.testing.assert_allclose(got["relu_layer"], np.maximum(x @ x.T + 1, 0))
    plain = np.exp(log_input) - log_input * targets
    np.testing.assert_allclose(got["poisson"], plain)
    safe = np.maximum(targets, 1)
    stirling = np.where(targets > 1, safe * np.log(safe) - safe + 0.5 * np.log(2 * np.pi * safe),
                        0)
    np.testing.assert_allclose(got["poisson_full"], plain + stirling)
    expected = -(3.0 * z * np.log(sig) + (1 - z) * np.log(1 - sig))
    np.testing.assert_allclose(got["wce"], expected, rtol=1e-12)
    np.testing.assert_allclose(got["stats"][0], 3.0)
    np.testing.assert_allclose(got["stats"][1], x.sum(0))
    np.testing.assert_allclose(got["stats"][2], (x * x).sum(0))
    np.testing.assert_allclose(got["stats_shift"][1], [[(x - 0.5).sum()]])
    np.testing.assert_allclose(got["stats_shift"][3], 0.5)
    np.testing.assert_allclose(got["normalized"][0], x.mean(0))
    np.testing.assert_allclose(got["normalized"][1], x.var(0), atol=1e-12)
    np.testing.assert_allclose(got["normalized_shift"][0], [[x.mean()]])
    np.testing.assert_allclose(got["normalized_shift"][1], [[x.var()]], atol=1e-12)
    w = np.broadcast_to(weights, x.shape)
    mean = (w * x).sum(0) / w.sum(0)
    np.testing.assert_allclose(got["weighted"][0], mean)
    np.testing.assert_allclose(got["weighted"][1], (w * (x - mean) ** 2).sum(0) / w.sum(0))
    assert got["weighted_kept"][0].shape == (1, 1)
    np.testing.assert_allclose(got["zero_fraction"], 0.5)


def _finite_difference_check(build, value):
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float64, value.shape)
        out = build(p)
        size = out.shape.num_elements()
        y = tf.reduce_sum(out * np.linspace(0.5, 1.5, size).reshape(out.shape.as_list()))
        (g,) = tf.gradients(y, p)
        with tf.Session(config=OFF) as sess:
            analytic = sess.run(tf.convert_to_tensor(g), {p: value})
            numeric = np.zeros_like(value)
            for idx in np.ndindex(value.shape):
                plus, minus = value.copy(), value.copy()
                plus[idx] += 1e-6
                minus[idx] -= 1e-6
                numeric[idx] = (sess.run(y, {p: plus}) - sess.run(y, {p: minus})) / 2e-6
    assert np.all(np.isfinite(analytic))
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("build", [
    lambda p: tf.math.log_sigmoid(p * 30.0),
    lambda p: tf.math.xlogy(p, tf.abs(p) + 0.5),
    lambda p: tf.math.multiply_no_nan(p, tf.cast(tf.greater(p, 0.0), tf.float64)),
    lambda p: tf.matrix_band_part(p, 0, 1) + tf.matrix_diag(tf.matrix_diag_part(p)),
    lambda p: tf.tensordot(p, p, [[1], [1]]),
    lambda p: tf.trace(tf.matrix_set_diag(p, tf.exp(p[:, 0]))),
    lambda p: tf.nn.weighted_cross_entropy_with_logits(labels=tf.ones_like(p), logits=p * 10.0,
                                                       pos_weight=2.0),
    lambda p: tf.nn.crelu(p) * tf.nn.swish(tf.concat([p, p], -1)),
], ids=["log_sigmoid", "xlogy", "multiply_no_nan", "band_and_diag", "tensordot", "set_diag",
        "weighted_cross_entropy", "crelu_swish"])
def test_composite_gradients_match_finite_differences(build):
    _finite_difference_check(build, RNG.standard_normal((3, 3)) + 0.05)


def test_safe_branches_give_finite_gradients_where_the_unsafe_one_is_not():
    with tf.Graph().as_default():
        x = tf.constant([0.0, 2.0], tf.float64)
        y = tf.constant([0.0, 3.0], tf.float64)
        (gx, gy) = tf.gradients(tf.reduce_sum(tf.math.xlogy(x, y)), [x, y])
        (hy,) = tf.gradients(tf.reduce_sum(tf.math.multiply_no_nan(
            tf.constant([np.nan, 1.0], tf.float64), y)), [y])
        got = _run([gx, gy, hy])
    np.testing.assert_allclose(got[0], [0.0, math.log(3.0)])   # TF's xlogy gradient too
    np.testing.assert_allclose(got[1], [0.0, 2.0 / 3.0])
    np.testing.assert_allclose(got[2], [0.0, 1.0])


def test_graph_helpers():
    with tf.Graph().as_default() as g:
        a, b = tf.constant(1.0), tf.constant(2.0)
        v = tf.Variable(1.0)
        assert tf.is_tensor(a) and tf.is_tensor(v) and not tf.is_tensor(1.0)
        assert tf.dimension_value(tf.TensorShape([3, None])[0]) == 3
        assert tf.dimension_value(None) is None and tf.dimension_value(4) == 4
        assert tf.dimension_at_index(tf.TensorShape(None), 2).value is None
        assert tf.get_static_value(a + b) == 3.0
        assert tf.get_static_value(tf.placeholder(tf.float32)) is None
        ta, tb = tf.tuple([a, b])
        assert all(a.op in t.op.control_inputs[0].control_inputs for t in (ta, tb))
        assert [t.op.type for t in tf.identity_n([a, b])] == ["Identity", "Identity"]
        tf.add_to_collections(["x", "y"], a)
        assert g.get_collection("x") == [a] == g.get_collection("y")
        assert tf.model_variables() == [] and tf.no_regularizer(a) is None
        assert tf.tables_initializer().type == "NoOp"
        samples = tf.random.categorical(np.log([[0.5, 0.5]]), 4, dtype=tf.int32, seed=1)
        w = tf.get_variable("w", [3, 3], initializer=tf.initializers.identity(gain=2.0),
                            dtype=tf.float64)
        h = tf.get_variable("h", [200, 50], initializer=tf.initializers.he_normal(seed=1))
        with tf.Session(config=OFF) as sess:
            sess.run(tf.initializers.global_variables())
            got_samples, got_w, got_h = sess.run([samples, w, h])
    assert got_samples.dtype == np.int32 and got_samples.shape == (1, 4)
    np.testing.assert_array_equal(got_w, 2.0 * np.eye(3))
    assert abs(got_h.std() - math.sqrt(2.0 / 200)) < 0.01   # He: variance 2 / fan_in
    assert np.all(np.abs(got_h) <= 2 * math.sqrt(2.0 / 200) / 0.8796 + 1e-6)   # truncated
