"""`tf.layers` convolution, pooling and batch normalization (models/layers_conv.py,
layers_norm.py) against NumPy references written from TensorFlow's definitions, and the
`tf.contrib.layers` functions (models/contrib_layers.py)."""

import itertools

import numpy as np
import pytest

import flowjit as tf

RNG = np.random.default_rng(3)


def _window_geometry(size, k, stride, dilation, padding):
    """(output size, padding before) of one spatial dimension, TensorFlow's rule."""
    span = (k - 1) * dilation + 1
    if padding == "valid":
        return (size - span) // stride + 1, 0
    out = -(-size // stride)
    return out, max((out - 1) * stride + span - size, 0) // 2


def _conv_reference(x, kernel, strides, dilations, padding):
    """A channels-last convolution over len(strides) spatial dims, by its definition."""
    spatial = x.shape[1:-1]
    geo = [_window_geometry(n, k, s, d, padding)
           for n, k, s, d in zip(spatial, kernel.shape, strides, dilations)]
    out = np.zeros((x.shape[0], *[g[0] for g in geo], kernel.shape[-1]))
    for pos in itertools.product(*[range(g[0]) for g in geo]):
        for taps in itertools.product(*[range(k) for k in kernel.shape[:-2]]):
            src = [p * s + t * d - g[1] for p, s, t, d, g in
                   zip(pos, strides, taps, dilations, geo)]
            if all(0 <= i < n for i, n in zip(src, spatial)):
                out[(slice(None), *pos)] += x[(slice(None), *src)] @ kernel[taps]
    return out


def _pool_reference(x, size, strides, padding, kind):
    """Max or average (over the window's elements inside the input) of each window."""
    spatial = x.shape[1:-1]
    geo = [_window_geometry(n, k, s, 1, padding) for n, k, s in zip(spatial, size, strides)]
    out = np.zeros((x.shape[0], *[g[0] for g in geo], x.shape[-1]))
    for pos in itertools.product(*[range(g[0]) for g in geo]):
        box = tuple(slice(max(p * s - g[1], 0), min(p * s - g[1] + k, n))
                    for p, s, g, k, n in zip(pos, strides, geo, size, spatial))
        window = x[(slice(None), *box)].reshape(x.shape[0], -1, x.shape[-1])
        out[(slice(None), *pos)] = window.max(1) if kind == "max" else window.mean(1)
    return out


@pytest.mark.parametrize("padding,strides,dilation", [("valid", 1, 1), ("same", 2, 1),
                                                      ("same", 1, 2), ("valid", (2, 1), 1)])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_conv2d_matches_the_definition(padding, strides, dilation, data_format):
    x_data = RNG.normal(size=(2, 7, 6, 3)).astype(np.float32)
    first = data_format == "channels_first"
    x = tf.constant(x_data.transpose(0, 3, 1, 2) if first else x_data)
    y = tf.layers.conv2d(x, 4, (3, 2), strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation,
                         activation=tf.nn.relu, bias_initializer=tf.constant_initializer(0.1))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, kernel, bias = sess.run([y] + tf.global_variables())
    s = (strides,) * 2 if isinstance(strides, int) else strides
    want = np.maximum(_conv_reference(x_data, kernel, s, (dilation,) * 2, padding) + bias, 0)
    if first:
        got = got.transpose(0, 2, 3, 1)
    assert kernel.shape == (3, 2, 3, 4) and y.shape.as_list()[0] == 2
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert [v.name for v in tf.global_variables()] == ["conv2d/kernel:0", "conv2d/bias:0"]


def test_conv1d_matches_the_definition():
    x_data = RNG.normal(size=(2, 9, 3)).astype(np.float32)
    y = tf.layers.conv1d(tf.constant(x_data), 5, 3, strides=2, padding="same")
    z = tf.layers.Conv1D(2, 2, dilation_rate=3)(tf.constant(x_data))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_y, got_z, k1, b1, k2, b2 = sess.run([y, z] + tf.global_variables())
    np.testing.assert_allclose(got_y, _conv_reference(x_data, k1, (2,), (1,), "same") + b1,
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_z, _conv_reference(x_data, k2, (1,), (3,), "valid") + b2,
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("size,strides,padding", [(2, 2, "valid"), (3, 2, "same"),
                                                  ((2, 3), (1, 2), "same")])
def test_pooling_matches_the_definition(kind, size, strides, padding):
    x_data = RNG.normal(size=(2, 5, 7, 3)).astype(np.float32)
    pool = tf.layers.max_pooling2d if kind == "max" else tf.layers.average_pooling2d
    y = pool(tf.constant(x_data), size, strides, padding=padding)
    first = pool(tf.constant(x_data.transpose(0, 3, 1, 2)), size, strides, padding=padding,
                 data_format="channels_first")
    one_d = (tf.layers.max_pooling1d if kind == "max" else tf.layers.average_pooling1d)(
        tf.constant(x_data[:, 0]), 3, 2, padding=padding)
    with tf.Session() as sess:
        got, got_first, got_1d = sess.run([y, first, one_d])
    size2 = (size,) * 2 if isinstance(size, int) else size
    strides2 = (strides,) * 2 if isinstance(strides, int) else strides
    want = _pool_reference(x_data, size2, strides2, padding, kind)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_first.transpose(0, 2, 3, 1), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_1d, _pool_reference(x_data[:, 0], (3,), (2,), padding,
                                                       kind), rtol=1e-5, atol=1e-6)


def test_conv_and_pool_arguments_are_checked():
    x = tf.placeholder(tf.float32, [None, 5, 5, 2])
    with pytest.raises(ValueError, match="padding must be 'valid' or 'same'"):
        tf.layers.conv2d(x, 2, 3, padding="full")
    with pytest.raises(ValueError, match="kernel_size must be"):
        tf.layers.conv2d(x, 2, (3, 3, 3))
    with pytest.raises(ValueError, match="data_format"):
        tf.layers.max_pooling2d(x, 2, 2, data_format="NHWC")
    with pytest.raises(ValueError, match="expected ndim=4"):
        tf.layers.conv2d(tf.placeholder(tf.float32, [None, 5, 2]), 2, 3)
    with pytest.raises(ValueError, match="channel dimension"):
        tf.layers.conv2d(tf.placeholder(tf.float32, [None, 5, 5, None]), 2, 3)


# --- batch normalization ---------------------------------------------------------------------

@pytest.mark.parametrize("shape,axis", [((6, 4), -1), ((3, 4, 5, 2), -1), ((3, 2, 4, 5), 1),
                                        ((4, 3, 2), 1)])
def test_batch_normalization_trains_on_batch_statistics_and_updates_moving_averages(
        shape, axis):
    x_data = (RNG.normal(size=shape) * 2 + 0.5).astype(np.float32)
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(tf.constant(x_data), axis=axis, momentum=0.75,
                                      epsilon=0.01, training=training,
                                      gamma_initializer=tf.constant_initializer(1.5),
                                      beta_initializer=tf.constant_initializer(-0.5))
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert [op.name for op in updates] == ["batch_normalization/AssignMovingAvg",
                                           "batch_normalization/AssignMovingAvg_1"]
    assert [v.name for v in tf.trainable_variables()] == ["batch_normalization/gamma:0",
                                                          "batch_normalization/beta:0"]
    moving = tf.global_variables()[2:]
    assert [v.name for v in moving] == ["batch_normalization/moving_mean:0",
                                        "batch_normalization/moving_variance:0"]
    axes = tuple(a for a in range(len(shape)) if a != axis % len(shape))
    mean, var = x_data.mean(axes, keepdims=True), x_data.var(axes, keepdims=True)
    n = x_data.size / shape[axis]
    unbiased = var * n / (n - 1) if len(shape) == 4 else var   # TensorFlow's fused kernel
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        inference = sess.run(y, {training: False})
        sess.run(updates, {training: False})            # momentum 1: nothing moves
        np.testing.assert_array_equal(sess.run(moving[0]), np.zeros(shape[axis]))
        trained, _ = sess.run([y, updates], {training: True})
        moved = sess.run(moving)
        sess.run(updates, {training: True})
        moved_twice = sess.run(moving)
    np.testing.assert_allclose(inference, 1.5 * x_data / np.sqrt(1.01) - 0.5, rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(trained, 1.5 * (x_data - mean) / np.sqrt(var + 0.01) - 0.5,
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(moved[0], 0.25 * mean.ravel(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(moved[1], 0.75 + 0.25 * unbiased.ravel(), rtol=1e-5)
    np.testing.assert_allclose(moved_twice[0], 0.4375 * mean.ravel(), rtol=1e-5, atol=1e-6)


def test_batch_normalization_with_python_flags():
    x = tf.placeholder(tf.float32, [None, 3])
    inference = tf.layers.batch_normalization(x, training=False)
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    layer = tf.layers.BatchNormalization(scale=False, center=False)
    layer(x, training=True)
    assert len(layer.updates) == 2 and len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2
    assert [v.name for v in layer.variables] == ["batch_normalization_1/moving_mean:0",
                                                 "batch_normalization_1/moving_variance:0"]
    assert layer.trainable_weights == []
    x_data = RNG.normal(size=(4, 3)).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(inference, {x: x_data}),
                                   x_data / np.sqrt(1.001), rtol=1e-6)
    with pytest.raises(ValueError, match="fused=True"):
        tf.layers.batch_normalization(x, fused=True)
    with pytest.raises(ValueError, match="invalid axis"):
        tf.layers.batch_normalization(x, axis=2)


# --- tf.contrib.layers -------------------------------------------------------------------------

def test_contrib_layers_names_defaults_and_regularizers():
    x_data = RNG.normal(size=(3, 4)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 4])
    h = tf.contrib.layers.fully_connected(
        x, 5, weights_regularizer=tf.contrib.layers.l2_regularizer(0.1),
        biases_initializer=tf.constant_initializer(0.2))
    out = tf.contrib.layers.fully_connected(h, 2, activation_fn=None,
                                            weights_regularizer=tf.contrib.layers
                                            .l1_regularizer(0.3))
    images = tf.placeholder(tf.float32, [None, 6, 6, 2])
    pooled = tf.contrib.layers.max_pool2d(tf.contrib.layers.conv2d(images, 3, 3), 2)
    flat = tf.contrib.layers.flatten(pooled)
    assert [v.name for v in tf.global_variables()] == [
        "fully_connected/weights:0", "fully_connected/biases:0",
        "fully_connected_1/weights:0", "fully_connected_1/biases:0", "Conv/weights:0",
        "Conv/biases:0"]
    assert len(tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)) == 6
    assert pooled.shape.as_list() == [None, 3, 3, 3] and flat.shape.as_list() == [None, 27]
    regs = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_h, got_out, w1, b1, w2, b2, reg_values = sess.run(
            [h, out] + tf.global_variables()[:4] + [regs], {x: x_data})
    np.testing.assert_allclose(got_h, np.maximum(x_data @ w1 + b1, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_out, got_h @ w2 + b2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(reg_values, [0.1 * np.sum(w1 ** 2) / 2,
                                            0.3 * np.sum(np.abs(w2))], rtol=1e-5)
    limit = np.sqrt(6 / (4 + 5))   # xavier uniform
    assert np.abs(w1).max() <= limit
    assert tf.contrib.layers.l2_regularizer(0.0)(tf.constant(1.0)) is None
    with pytest.raises(ValueError, match="less than 0"):
        tf.contrib.layers.l2_regularizer(-1.0)


def test_contrib_batch_norm_updates_in_place_without_an_updates_collection():
    x_data = RNG.normal(size=(5, 3)).astype(np.float32) + 2
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.contrib.layers.batch_norm(x, decay=0.5, updates_collections=None)
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    assert [v.name for v in tf.global_variables()] == [
        "BatchNorm/beta:0", "BatchNorm/moving_mean:0", "BatchNorm/moving_variance:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(y, {x: x_data})
        moving_mean = sess.run(tf.global_variables()[1])
    np.testing.assert_allclose(got, (x_data - x_data.mean(0)) / np.sqrt(x_data.var(0) + 1e-3),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(moving_mean, 0.5 * x_data.mean(0), rtol=1e-5)
