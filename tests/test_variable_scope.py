"""variable_scope / get_variable sharing rules and the initializers."""

import numpy as np
import pytest

import flowjit as tf


def test_get_variable_names_and_sharing():
    with tf.variable_scope("layer"):
        w = tf.get_variable("w", [3, 4], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", [4], initializer=tf.constant_initializer(0.5))
    assert w.name == "layer/w:0" and b.name == "layer/b:0"
    with tf.variable_scope("layer", reuse=True):
        assert tf.get_variable("w", [3, 4]) is w
    with tf.variable_scope("layer", reuse=tf.AUTO_REUSE):
        assert tf.get_variable("b") is b
        c = tf.get_variable("c", [2], initializer=tf.ones_initializer())
    assert c.name == "layer/c:0"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        wv, bv, cv = sess.run([w, b, c])
    np.testing.assert_array_equal(wv, np.zeros((3, 4), np.float32))
    np.testing.assert_array_equal(bv, np.full(4, 0.5, np.float32))
    np.testing.assert_array_equal(cv, np.ones(2, np.float32))
    assert set(tf.trainable_variables()) == {w, b, c}


def test_sharing_errors_are_clear():
    with tf.variable_scope("s"):
        tf.get_variable("v", [2])
        with pytest.raises(ValueError, match="already exists"):
            tf.get_variable("v", [2])
    with tf.variable_scope("s", reuse=True):
        with pytest.raises(ValueError, match="does not exist"):
            tf.get_variable("nope", [2])
        with pytest.raises(ValueError, match="specified shape"):
            tf.get_variable("v", [3])
    with pytest.raises(ValueError, match="shape must be given"):
        tf.get_variable("noshape")


def test_nested_scopes_and_name_scopes():
    with tf.variable_scope("outer"):
        with tf.variable_scope("inner") as scope:
            v = tf.get_variable("v", [1])
            op = tf.constant(1.0, name="c")
        scope.reuse_variables()
    assert v.name == "outer/inner/v:0"
    assert op.name == "outer/inner/c:0"
    with tf.variable_scope(scope, reuse=True):
        assert tf.get_variable("v") is v


def test_default_name_scopes_are_unique():
    with tf.variable_scope(None, default_name="dense"):
        a = tf.get_variable("k", [1])
    with tf.variable_scope(None, default_name="dense"):
        b = tf.get_variable("k", [1])
    assert (a.name, b.name) == ("dense/k:0", "dense_1/k:0")


def test_constant_value_initializer_and_dtype():
    v = tf.get_variable("v", initializer=np.arange(6, dtype=np.float64).reshape(2, 3))
    i = tf.get_variable("i", [3], dtype=tf.int32)  # ints default to zeros
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(v), np.arange(6.0).reshape(2, 3))
        assert sess.run(i).dtype == np.int32
        assert not sess.run(i).any()


def _run_init(init, shape):
    with tf.Session() as sess:
        return sess.run(init(shape))


def test_random_initializers_statistics_and_seeds():
    tf.set_random_seed(3)
    shape = [200, 300]
    glorot = _run_init(tf.glorot_uniform_initializer(), shape)
    limit = np.sqrt(6.0 / (200 + 300))
    assert glorot.dtype == np.float32 and np.abs(glorot).max() <= limit
    assert abs(glorot.std() - limit / np.sqrt(3)) < 0.05 * limit
    tn = _run_init(tf.truncated_normal_initializer(stddev=0.1, seed=7), shape)
    assert np.abs(tn).max() <= 0.2 + 1e-6 and abs(tn.std() - 0.088) < 0.005
    he = _run_init(tf.variance_scaling_initializer(2.0, "fan_in", "untruncated_normal"), shape)
    assert abs(he.std() - np.sqrt(2.0 / 200)) < 0.005
    u = _run_init(tf.random_uniform_initializer(-1, 1, seed=1), [1000])
    assert u.min() >= -1 and u.max() < 1
    again = _run_init(tf.truncated_normal_initializer(stddev=0.1, seed=7), shape)
    np.testing.assert_array_equal(again, tn)   # the same seeds: the same values
    other = _run_init(tf.truncated_normal_initializer(stddev=0.1, seed=8), shape)
    assert not np.array_equal(other, tn)


def test_initializer_rejects_unknown_shape_and_bad_mode():
    with pytest.raises(ValueError, match="fully known shape"):
        tf.zeros_initializer()([None, 2])
    with pytest.raises(ValueError, match="mode"):
        tf.variance_scaling_initializer(mode="fan_sideways")
