"""TF 1.x functions built from existing ops (ops/composite_ops.py, runtime/learning_rates.py)
against TensorFlow's own results for the same graph, recorded once with
`tensorflow.compat.v1` 2.21 (tests/fixtures/composite_ops_tf.npz; CI needs no TensorFlow):
atan, div_no_nan, norm (several ords and axes), reduce_euclidean_norm, global_norm,
clip_by_norm, clip_by_global_norm (None entries kept), cumsum (exclusive, reverse),
nn.l2_normalize, nn.moments, the learning-rate schedules at global step 7, and a gradient
through l2_normalize and cumsum. Also gradients(unconnected_gradients="zero") and dropout.
"""

import os

import numpy as np
import pytest

import flowjit as tf

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "composite_ops_tf.npz")


def _program():
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((3, 4)).astype(np.float32)
    yv = np.array([[0., 1, 2, 0], [1, 0, 3, 0], [0, 0, 1, 2]], np.float32)
    x, y = tf.constant(xv), tf.constant(yv)
    gs = tf.Variable(7, dtype=tf.int64)
    outs = [tf.atan(x), tf.div_no_nan(x, y), tf.norm(x), tf.norm(x, axis=1),
            tf.norm(x, ord=1, axis=0), tf.norm(x, ord=np.inf, axis=1, keepdims=True),
            tf.norm(x, ord=3, axis=1), tf.norm(x, ord="fro", axis=[0, 1]),
            tf.math.reduce_euclidean_norm(x, axis=0), tf.global_norm([x, y]),
            tf.clip_by_norm(x, 1.5), tf.clip_by_norm(x, 1.0, axes=[1]),
            tf.clip_by_global_norm([x, None, y], 2.0)[0][0],
            tf.clip_by_global_norm([x, y], 2.0)[1],
            tf.cumsum(x, axis=1), tf.cumsum(x, axis=0, exclusive=True),
            tf.cumsum(x, axis=1, reverse=True), tf.cumsum(x, axis=1, exclusive=True, reverse=True),
            tf.nn.l2_normalize(x, axis=1), tf.nn.moments(x, axes=[0])[0],
            tf.nn.moments(x, axes=[0, 1])[1], tf.nn.moments(x, axes=[1], keep_dims=True)[1],
            tf.train.exponential_decay(0.1, gs, 3, 0.5),
            tf.train.exponential_decay(0.1, gs, 3, 0.5, staircase=True),
            tf.train.inverse_time_decay(0.1, gs, 2, 0.5),
            tf.train.natural_exp_decay(0.1, gs, 2, 0.5, staircase=True),
            tf.train.polynomial_decay(0.1, gs, 10, 0.01, power=2.0),
            tf.train.polynomial_decay(0.1, gs, 5, 0.01, cycle=True),
            tf.train.piecewise_constant(gs, [5, 10], [1.0, 0.5, 0.1])]
    loss = (tf.reduce_sum(tf.nn.l2_normalize(x, axis=1) * y)
            + tf.reduce_sum(tf.cumsum(x, axis=1) * y))
    return outs + tf.gradients(loss, [x]), tf.global_variables_initializer()


def test_composites_equal_tensorflow():
    want = np.load(FIXTURE)
    graph = tf.Graph()
    with graph.as_default():
        fetches, init = _program()
        with tf.Session() as sess:
            sess.run(init)
            got = sess.run(fetches)
    assert len(got) == len(want.files)
    for k, g in enumerate(got):
        w = want[f"arr_{k}"]
        assert np.shape(g) == w.shape, (k, np.shape(g), w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"output {k}")


def test_unconnected_gradients_zero():
    x, y = tf.constant([1.0, 2.0]), tf.constant([[3.0]])
    loss = tf.reduce_sum(x * x)
    assert tf.gradients(loss, [x, y])[1] is None
    gx, gy = tf.gradients(loss, [x, y], unconnected_gradients=tf.UnconnectedGradients.ZERO)
    with tf.Session() as sess:
        gxv, gyv = sess.run([gx, gy])
    np.testing.assert_array_equal(gxv, [2.0, 4.0])
    np.testing.assert_array_equal(gyv, [[0.0]])
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tf.gradients(loss, [x], unconnected_gradients="maybe")


def test_dropout_keeps_scaled_values_at_the_keep_rate():
    x = tf.ones([200, 50])
    kept = tf.nn.dropout(x, keep_prob=0.8, seed=3)
    rated = tf.nn.dropout(x, rate=0.2, seed=4)
    with tf.Session() as sess:
        a, b = sess.run([kept, rated])
    for v in (a, b):
        assert set(np.unique(v)) <= {0.0, np.float32(1.25)}
        assert abs((v > 0).mean() - 0.8) < 0.02   # 10,000 draws: 4 standard deviations
    with pytest.raises(ValueError, match="exactly one"):
        tf.nn.dropout(x)


def test_a_masked_sqrt_has_zero_gradient_where_masked_as_tensorflow():
    # TF's SqrtGrad/RsqrtGrad/ReciprocalGrad give 0 where the incoming gradient is 0
    x = tf.constant([0.0, 1.0, 4.0])
    safe = tf.where(x > 0, tf.sqrt(x), tf.zeros_like(x))
    grads = [tf.gradients(tf.reduce_sum(safe), [x])[0],
             tf.gradients(tf.reduce_sum(tf.where(x > 0, tf.rsqrt(x), tf.zeros_like(x))), [x])[0],
             tf.gradients(tf.reduce_sum(tf.sqrt(x)), [x])[0]]
    with tf.Session() as sess:
        masked, rsqrt, plain = sess.run(grads)
    np.testing.assert_array_equal(masked, [0.0, 0.5, 0.25])
    np.testing.assert_array_equal(rsqrt, [0.0, -0.5, -0.0625])
    assert plain[0] == np.inf   # unmasked: the true derivative at 0


def test_cumsum_over_an_axis_of_unknown_length():
    """A [None] or [None, None] placeholder: cumsum used to need the axis length at graph
    build time; now it is a matmul with a triangular 0/1 mask, gradient included."""
    x = tf.placeholder(tf.float32, [None])
    a = tf.placeholder(tf.float32, [None, None])
    outs = [tf.cumsum(x), tf.cumsum(a, 1), tf.cumsum(a, 0), tf.cumsum(a, 1, exclusive=True),
            tf.cumsum(a, 1, reverse=True), tf.cumsum(a, 0, exclusive=True, reverse=True)]
    grad = tf.gradients(tf.reduce_sum(outs[1] * outs[1]), a)[0]
    xi = tf.placeholder(tf.int32, [None])
    ints = tf.cumsum(xi)
    A = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    X = np.array([1.0, 2.0, 3.0], np.float32)
    with tf.Session() as sess:
        got = sess.run(outs + [grad, ints], {x: X, a: A, xi: [1, 2, 3, 4]})
    c = np.cumsum
    want = [c(X), c(A, 1), c(A, 0), c(A, 1) - A, c(A[:, ::-1], 1)[:, ::-1],
            c(A[::-1], 0)[::-1] - A, c((2 * c(A, 1))[:, ::-1], 1)[:, ::-1]]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert got[-1].dtype == np.int32
    np.testing.assert_array_equal(got[-1], [1, 3, 6, 10])


def test_learning_rate_schedules_keep_a_float64_learning_rate():
    gs = tf.Variable(0, dtype=tf.int64, trainable=False)
    lr64 = tf.constant(0.1, tf.float64)
    assert tf.train.exponential_decay(lr64, gs, 4, 0.7).dtype == tf.float64
    assert tf.train.polynomial_decay(lr64, gs, 10, 0.01).dtype == tf.float64
    assert tf.train.exponential_decay(0.1, gs, 4, 0.7).dtype == tf.float32
    with tf.Session() as sess:
        sess.run(gs.initializer)
        sess.run(gs.assign(6))
        got = sess.run(tf.train.exponential_decay(lr64, gs, 4, 0.7))
    assert got.dtype == np.float64
    assert abs(got - 0.1 * 0.7 ** 1.5) < 1e-15   # float32 would be off by ~1e-9


def test_constant_with_fewer_values_than_its_shape_repeats_the_last():
    with tf.Session() as sess:
        got = sess.run([tf.constant([1, 2], shape=[2, 2]), tf.constant([1.5, 2.5, 3.5], shape=[5])])
    np.testing.assert_array_equal(got[0], [[1, 2], [2, 2]])
    np.testing.assert_array_equal(got[1], [1.5, 2.5, 3.5, 3.5, 3.5])
    with pytest.raises(ValueError, match="cannot fill"):
        tf.constant([1, 2, 3], shape=[2])
