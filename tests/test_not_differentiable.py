"""Ops TensorFlow declares not differentiable stop `tf.gradients` instead of failing, as in
TensorFlow (random numbers, one-hot encodings, ranges, decoded bytes, comparisons, shape
ops, assignments: exactly TensorFlow's recorded set); TF 1.x's `arg_max` and `arg_min`
names.  Issue 30 (the VAE that failed with "No gradient defined for operation
'epsilon/RandomStandardNormal'")."""

import json
import os

import numpy as np
import pytest

import flowjit as tf
from flowjit.ops import registry, training_ops

CONFIG = tf.ConfigProto(jit="never")
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def test_the_reparameterization_trick_differentiates_through_the_mean_and_scale():
    """z = mu + exp(log_sigma) * eps with eps ~ N(0, 1) of z's shape: the gradient flows to
    mu and log_sigma, and not into the random op (whose input is tf.shape(mu))."""
    rng = np.random.default_rng(0)
    x_value = rng.standard_normal((4, 3))
    eps_value = rng.standard_normal((4, 2))
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float64, [None, 3], name="x")
        w_mu = tf.Variable(rng.standard_normal((3, 2)), name="w_mu")
        w_sigma = tf.Variable(rng.standard_normal((3, 2)) * 0.1, name="w_sigma")
        mu, log_sigma = tf.matmul(x, w_mu), tf.matmul(x, w_sigma)
        eps = tf.random_normal(tf.shape(mu), dtype=tf.float64, name="epsilon")
        z = mu + tf.exp(log_sigma) * eps
        loss = tf.reduce_sum(tf.square(z - 1.0))
        grads = tf.gradients(loss, [w_mu, w_sigma])
        assert all(gr is not None for gr in grads)
        with tf.Session(graph=g, config=CONFIG) as sess:
            sess.run(tf.global_variables_initializer())
            feed = {x: x_value, eps: eps_value}    # the same eps for every evaluation
            got = sess.run(grads, feed)
            for var, grad in zip([w_mu, w_sigma], got):
                base = sess.run(var)
                numeric = np.zeros_like(base)
                for idx in np.ndindex(base.shape):
                    values = []
                    for step in (1e-6, -1e-6):
                        shifted = base.copy()
                        shifted[idx] += step
                        var.load(shifted, sess)
                        values.append(sess.run(loss, feed))
                    numeric[idx] = (values[0] - values[1]) / 2e-6
                    var.load(base, sess)
                np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("build", [
    lambda x: tf.random_normal(tf.shape(x)),
    lambda x: tf.random_uniform(tf.shape(x)),
    lambda x: tf.truncated_normal(tf.shape(x)),
    lambda x: tf.random_shuffle(x),
    lambda x: tf.one_hot([0, 2], 3, on_value=tf.reduce_sum(x), off_value=0.0),
    lambda x: tf.range(0.0, tf.reduce_sum(x) * 0.0 + 4.0, 1.0),
])
def test_a_path_only_through_a_not_differentiable_op_gets_none(build):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        y = tf.reduce_sum(build(x))
        assert tf.gradients(y, x) == [None]
        (g,) = tf.gradients(y + tf.reduce_sum(x * 2.0), x)   # the other path still counts
        np.testing.assert_array_equal(tf.Session(config=CONFIG).run(
            g, {x: np.ones(3, np.float32)}), [2.0, 2.0, 2.0])


def test_the_declared_set_is_tensorflows():
    """Every registered op TensorFlow declares not differentiable (its `NotDifferentiable`,
    recorded in fixtures/tf1_api.json by fixtures/record_tf1_api.py) is declared so here,
    and no other."""
    recorded = json.load(open(os.path.join(FIXTURES, "tf1_api.json")))["not_differentiable"]
    registered = {d.name for d in registry.all_op_defs()}
    declared = sorted(d.name for d in registry.all_op_defs()
                      if d.gradient is registry.not_differentiable)
    assert declared == sorted(registered & set(recorded))
    assert {"Assign", "Equal", "Shape", "ZerosLike", "StopGradient", "RandomUniform",
            "ScatterAdd"} <= set(declared)


def test_an_op_without_a_gradient_on_the_path_is_still_an_error():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [2], name="x")
        v = tf.Variable(np.zeros(2), name="v")
        # TensorFlow registers no gradient for ApplyGradientDescent either: LookupError
        with pytest.raises(LookupError, match="No gradient defined .*ApplyGradientDescent"):
            tf.gradients(training_ops.apply_gradient_descent(v, 0.5, x * 2.0), x)
        (g,) = tf.gradients(tf.assign(v, x * 2.0) + x, x)   # Assign: the path stops there
        np.testing.assert_array_equal(tf.Session(config=CONFIG).run(
            g, {x: np.ones(2)}), [1.0, 1.0])


def test_arg_max_and_arg_min_are_tensorflow_1_names():
    values = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], np.float32)
    with tf.Graph().as_default():
        x = tf.constant(values)
        out = tf.Session(config=CONFIG).run([
            tf.arg_max(x, 1), tf.arg_min(x, 0), tf.arg_max(x, dimension=0,
                                                           output_type=tf.int32)])
    np.testing.assert_array_equal(out[0], values.argmax(1))
    np.testing.assert_array_equal(out[1], values.argmin(0))
    assert out[2].dtype == np.int32 and list(out[2]) == list(values.argmax(0))
    assert out[0].dtype == np.int64


def test_stop_gradient_stops_inside_loops_branches_and_jit_gradients():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [], name="x")
        _, looped = tf.while_loop(lambda i, acc: i < 3,
                                  lambda i, acc: (i + 1, acc + x * tf.stop_gradient(x)),
                                  [tf.constant(0), tf.constant(0.0, tf.float64)])
        branched = tf.cond(x > 0.0, lambda: tf.stop_gradient(x * x) + x, lambda: x * x)
        g_loop, g_branch = tf.gradients([looped], x) + tf.gradients([branched], x)
        with tf.Session(config=CONFIG) as sess:
            got = sess.run([g_loop, g_branch], {x: 2.0})
    np.testing.assert_allclose(got, [3 * 2.0, 1.0])   # d/dx of 3 * x * c and c + x

    def f(a):
        return tf.reduce_sum(a * tf.stop_gradient(a))

    np.testing.assert_allclose(tf.grad(tf.jit(f))(np.array([1.0, -2.0])), [1.0, -2.0])
