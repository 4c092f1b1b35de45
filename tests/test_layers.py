"""`tf.layers` (models/layers*.py): values against NumPy references written from TensorFlow's
definitions, variable names, scopes and collections as TensorFlow 1.x makes them, dropout
and batch normalization in training and inference, regularization losses, TensorFlow-recorded
programs (fixtures/layers_cases.py), and an MLP whose training step compiles."""

import os

import numpy as np
import pytest

import flowjit as tf
from flowjit.runtime import clustering
from layers_recorded import PROGRAMS, RECORDED, check_program

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")

RNG = np.random.default_rng(0)


def _run(fetches, feed=None, init=True):
    with tf.Session() as sess:
        if init:
            sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


def _names(variables):
    return [v.name for v in variables]


# --- TensorFlow-recorded programs ------------------------------------------------------------

def test_the_fixture_records_every_program_and_is_small():
    recorded = {key.split(":")[0] for key in RECORDED if not key.startswith("_meta")}
    assert recorded == set(PROGRAMS.PROGRAMS)
    assert os.path.getsize(os.path.join(FIXTURES, "layers_cases.npz")) < 150_000


@pytest.mark.parametrize("name", ["mlp_adam", "dense_variants", "cnn_momentum",
                                  "batch_norm_training"])
def test_program_matches_tensorflow(name, compiled_calls):
    check_program(name, compiled_calls)


# --- dense ------------------------------------------------------------------------------------

def test_dense_computes_activation_of_x_kernel_plus_bias():
    x_data = RNG.normal(size=(5, 4)).astype(np.float32)
    z_data = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 4])
    z = tf.placeholder(tf.float32, [None, 3, 4])
    y = tf.layers.dense(x, 3, activation=tf.nn.relu, bias_initializer=tf.ones_initializer())
    w = tf.layers.dense(z, 2, use_bias=False, activation="tanh")
    assert w.shape.as_list() == [None, 3, 2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_y, got_w, k0, b0, k1 = sess.run([y, w] + tf.global_variables(),
                                            {x: x_data, z: z_data})
    np.testing.assert_allclose(got_y, np.maximum(x_data @ k0 + b0, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(b0, np.ones(3, np.float32))
    np.testing.assert_allclose(got_w, np.tanh(z_data @ k1), rtol=1e-5, atol=1e-6)


def test_dense_variables_are_named_and_collected_as_tensorflow():
    x = tf.placeholder(tf.float32, [None, 4])
    tf.layers.dense(x, 3)
    tf.layers.dense(x, 2, trainable=False)
    with tf.variable_scope("block"):
        tf.layers.dense(x, 2, name="out")
    assert _names(tf.global_variables()) == [
        "dense/kernel:0", "dense/bias:0", "dense_1/kernel:0", "dense_1/bias:0",
        "block/out/kernel:0", "block/out/bias:0"]
    assert _names(tf.trainable_variables()) == [
        "dense/kernel:0", "dense/bias:0", "block/out/kernel:0", "block/out/bias:0"]
    assert tf.get_variable_scope().name == ""


def test_dense_default_initializers_are_glorot_uniform_and_zeros():
    x = tf.placeholder(tf.float32, [None, 60])
    tf.layers.dense(x, 40)
    kernel, bias = _run(tf.global_variables())
    limit = np.sqrt(6.0 / (60 + 40))
    assert np.abs(kernel).max() <= limit and np.abs(kernel).max() > 0.9 * limit
    assert abs(kernel.var() - limit ** 2 / 3) < 0.1 * limit ** 2 / 3   # uniform's variance
    np.testing.assert_array_equal(bias, np.zeros(40, np.float32))


def test_reuse_shares_variables_and_a_taken_name_is_an_error():
    x = tf.placeholder(tf.float32, [None, 4])
    a = tf.layers.dense(x, 3, name="fc")
    with pytest.raises(ValueError, match="fc/kernel already exists"):
        tf.layers.dense(x, 3, name="fc")
    b = tf.layers.dense(x, 3, name="fc", reuse=True)
    with tf.variable_scope("shared", reuse=tf.AUTO_REUSE):
        c = tf.layers.dense(x, 3, name="fc")
    with tf.variable_scope("shared", reuse=tf.AUTO_REUSE):
        d = tf.layers.dense(x, 3, name="fc")
    assert _names(tf.global_variables()) == ["fc/kernel:0", "fc/bias:0",
                                             "shared/fc/kernel:0", "shared/fc/bias:0"]
    x_data = RNG.normal(size=(2, 4)).astype(np.float32)
    got = _run([a, b, c, d], {x: x_data})
    np.testing.assert_array_equal(got[0], got[1])
    np.testing.assert_array_equal(got[2], got[3])


def test_a_layer_object_called_twice_shares_its_variables():
    x = tf.placeholder(tf.float32, [None, 4])
    layer = tf.layers.Dense(2, name="proj")
    first, second = layer(x), layer(2.0 * x)
    assert first.op.name == "proj/BiasAdd" and second.op.name == "proj/BiasAdd_1"
    assert _names(layer.variables) == ["proj/kernel:0", "proj/bias:0"]
    assert layer.trainable_weights == layer.variables and layer.non_trainable_weights == []
    assert layer.kernel.shape.as_list() == [4, 2] and layer.count_params() == 10
    x_data = RNG.normal(size=(3, 4)).astype(np.float32)
    a, b, kernel, bias = _run([first, second, layer.kernel, layer.bias], {x: x_data})
    np.testing.assert_allclose(b - bias, 2 * (a - bias), rtol=1e-5, atol=1e-6)


class _Scale(tf.layers.Layer):
    """A user-defined layer: one variable, built from the input shape."""

    def build(self, input_shape):
        self.w = self.add_variable("w", [input_shape[-1].value],
                                   initializer=tf.constant_initializer(2.0))
        super().build(input_shape)

    def call(self, inputs):
        return inputs * self.w


def test_a_subclass_of_layer_builds_its_variables_in_its_scope():
    x = tf.placeholder(tf.float32, [None, 3])
    layer = _Scale()
    y = layer(x)
    assert layer.built and layer.name == layer.scope_name == "private__scale"
    assert [v.name for v in layer.trainable_variables] == ["private__scale/w:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(layer.get_weights(sess), [np.full(3, 2.0)])
        layer.set_weights([np.array([1.0, -1.0, 0.5], np.float32)], sess)
        np.testing.assert_array_equal(sess.run(y, {x: np.ones((2, 3))}),
                                      [[1.0, -1.0, 0.5]] * 2)
    with pytest.raises(ValueError, match="has not been used yet"):
        _Scale().scope_name


def test_regularizers_add_losses_once_and_get_total_loss_sums_them():
    x = tf.placeholder(tf.float32, [None, 3])
    layer = tf.layers.Dense(2, kernel_regularizer=lambda w: 0.1 * tf.reduce_sum(w * w),
                            bias_regularizer=lambda b: tf.reduce_sum(tf.abs(b)),
                            activity_regularizer=lambda y: tf.reduce_sum(tf.square(y)),
                            bias_initializer=tf.constant_initializer(0.5))
    y = layer(x)
    layer(x)   # a second call adds an activity loss, no weight loss
    regs = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(regs) == 4 and len(layer.losses) == 4
    assert regs[0].name.startswith("dense/kernel/Regularizer/")
    data_loss = tf.losses.mean_squared_error(tf.zeros_like(y), y)
    total = tf.losses.get_total_loss()
    no_regs = tf.losses.get_total_loss(add_regularization_losses=False)
    x_data = RNG.normal(size=(4, 3)).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        kernel, y_val, reg_vals, got_total, got_data, got_no_regs = sess.run(
            [layer.kernel, y, regs, total, data_loss, no_regs], {x: x_data})
    activity = np.sum(y_val ** 2) / 4
    np.testing.assert_allclose(reg_vals, [0.1 * np.sum(kernel ** 2), 1.0, activity, activity],
                               rtol=1e-5)
    np.testing.assert_allclose(got_total, got_data + sum(reg_vals), rtol=1e-5)
    assert got_no_regs == got_data


def test_dense_input_errors_are_clear():
    with pytest.raises(ValueError, match="last dimension of the inputs to Dense"):
        tf.layers.dense(tf.placeholder(tf.float32, [None, None]), 2)
    with pytest.raises(TypeError, match="non-floating point"):
        tf.layers.dense(tf.placeholder(tf.int32, [None, 3]), 2)
    with pytest.raises(ValueError, match="expected min_ndim=2"):
        tf.layers.dense(tf.placeholder(tf.float32, [3]), 2)
    layer = tf.layers.Dense(2)
    layer(tf.placeholder(tf.float32, [None, 3]))
    with pytest.raises(ValueError, match="axis -1 should have size 3"):
        layer(tf.placeholder(tf.float32, [None, 5]))
    with pytest.raises(ValueError, match="Unknown activation"):
        tf.layers.Dense(2, activation="nope")


# --- dropout and flatten ----------------------------------------------------------------------

def test_dropout_zeros_a_rate_fraction_and_scales_the_rest_while_training():
    x = tf.placeholder(tf.float32, [200, 100])
    x_data = RNG.uniform(1.0, 2.0, size=(200, 100)).astype(np.float32)
    training = tf.placeholder(tf.bool, [])
    fixed = tf.layers.dropout(x, rate=0.3, seed=7, training=True)
    off = tf.layers.dropout(x, rate=0.3, training=False)
    switched = tf.layers.dropout(x, rate=0.3, seed=8, training=training)
    rows = tf.layers.dropout(x, rate=0.5, noise_shape=[None, 1], seed=9, training=True)
    got, got_off, on, by_flag_off, got_rows = _run(
        [fixed, off, switched, switched, rows], {x: x_data, training: True}, init=False)
    for dropped in (got, on):
        zeros = dropped == 0
        assert abs(zeros.mean() - 0.3) < 0.02   # 20000 draws: std 0.0032
        np.testing.assert_allclose(dropped[~zeros], x_data[~zeros] / 0.7, rtol=1e-6)
    np.testing.assert_array_equal(got_off, x_data)
    inference = _run(switched, {x: x_data, training: False}, init=False)
    np.testing.assert_array_equal(inference, x_data)
    row_zero = (got_rows == 0).all(axis=1)
    assert ((got_rows == 0).any(axis=1) == row_zero).all()   # whole rows or none
    np.testing.assert_allclose(got_rows[~row_zero], 2 * x_data[~row_zero], rtol=1e-6)
    assert 60 < row_zero.sum() < 140


def test_dropout_arguments_are_checked():
    x = tf.placeholder(tf.float32, [None, 3])
    with pytest.raises(ValueError, match="rate must be in"):
        tf.layers.dropout(x, rate=1.0)
    with pytest.raises(TypeError, match="training must be"):
        tf.layers.dropout(x, training="yes")
    with pytest.raises(TypeError, match="scalar bool tensor"):
        tf.layers.dropout(x, training=tf.placeholder(tf.float32, []))


def test_flatten_keeps_the_batch_and_orders_channels_first_inputs_channels_last():
    x_data = RNG.normal(size=(2, 3, 4, 5)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 3, 4, 5])
    last = tf.layers.flatten(x)
    first = tf.layers.Flatten(data_format="channels_first")(x)
    unknown = tf.layers.flatten(tf.placeholder_with_default(x_data, [2, None, 4, 5]))
    assert last.shape.as_list() == [None, 60] and unknown.shape.as_list() == [2, None]
    got = _run([last, first, unknown], {x: x_data}, init=False)
    np.testing.assert_array_equal(got[0], x_data.reshape(2, 60))
    np.testing.assert_array_equal(got[1], x_data.transpose(0, 2, 3, 1).reshape(2, 60))
    np.testing.assert_array_equal(got[2], x_data.reshape(2, 60))


# --- the compiled training step ---------------------------------------------------------------

def _mlp_losses(config, steps=4):
    rng = np.random.default_rng(5)
    x_data = rng.normal(size=(32, 6)).astype(np.float32)
    y_data = (x_data[:, 0] + x_data[:, 1] > 0).astype(np.int32) + (x_data[:, 2] > 1)
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        x = tf.placeholder(tf.float32, [None, 6])
        y = tf.placeholder(tf.int32, [None])
        hidden = tf.layers.dense(x, 16, activation=tf.nn.relu,
                                 kernel_regularizer=tf.contrib.layers.l2_regularizer(1e-3))
        logits = tf.layers.dense(hidden, 3)
        tf.losses.sparse_softmax_cross_entropy(y, logits)
        loss = tf.losses.get_total_loss()
        train = tf.train.AdamOptimizer(0.05).minimize(loss)
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([loss, train], {x: x_data, y: y_data})[0]
                      for _ in range(steps)]
            clusters = {node.name: {op.type for op in node.ops}
                        for plan in sess._plans.values() for node in plan.ops
                        if isinstance(node, clustering.ClusterStep)}
    return np.array(losses), clusters


def test_an_mlp_training_step_of_layers_losses_and_adam_compiles(compiled_calls):
    """Every cluster of the step (forward, backward, Adam's updates) runs compiled (CPU)."""
    compiled, clusters = _mlp_losses(tf.ConfigProto(jit=tf.JitOptions.always()))
    assert set(clusters) <= set(compiled_calls)
    step_ops = set().union(*clusters.values())
    assert {"MatMul", "SparseSoftmaxCrossEntropyWithLogits", "AssignSub"} <= step_ops
    compiled_calls.clear()
    reference, _ = _mlp_losses(tf.ConfigProto(jit=tf.JitOptions(policy="never")))
    assert not compiled_calls
    np.testing.assert_allclose(compiled, reference, rtol=1e-5)
    assert compiled[-1] < compiled[0]
