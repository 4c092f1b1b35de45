"""Convolution ops (ops/conv_ops.py, ops/conv_grad_ops.py): values and static shapes for
every padding (SAME, VALID, EXPLICIT), stride and dilation combination and both data
formats, against the plain-loop definitions of tests/conv_reference.py; the public
functions built on them (conv1d, depthwise_conv2d, conv2d_transpose, convolution,
atrous_conv2d, separable_conv2d); and the errors for bad attrs, shapes and dtypes.

The NumPy reference kernels run here (jit off); TensorFlow's recorded results are checked
in tests/test_conv_tf.py, compiled kernels in tests/test_conv_compiled.py and the samples
of tests/samples/conv.py, gradients by finite differences in tests/test_gradients.py.
"""

import numpy as np
import pytest

import flowjit as tf
from flowjit.errors import InvalidArgumentError

import conv_reference as ref

OFF = tf.ConfigProto(jit=False)
RNG = np.random.default_rng(7)

# (padding, strides, dilations, explicit (before, after) pairs for H and W)
CONFIGS = [(p, s, d, ((1, 2), (0, 1)) if p == "EXPLICIT" else None)
           for p in ("SAME", "VALID", "EXPLICIT")
           for s in ((1, 1), (2, 2), (2, 1), (3, 2))
           for d in ((1, 1), (2, 2), (1, 2))]
FORMATS = ("NHWC", "NCHW")


def _attrs(padding, strides, dilations, explicit, data_format):
    """conv2d keyword arguments of a config, in `data_format`."""
    if padding == "EXPLICIT":
        pairs = [[0, 0], list(explicit[0]), list(explicit[1]), [0, 0]]
        padding = pairs if data_format == "NHWC" else [pairs[0], pairs[3], pairs[1], pairs[2]]
    full = (lambda v: [1, *v, 1]) if data_format == "NHWC" else (lambda v: [1, 1, *v])
    return dict(strides=full(strides), padding=padding, dilations=full(dilations),
                data_format=data_format)


def _layout(a, data_format):
    return a if data_format == "NHWC" else ref.to_nchw(a)


def _run(fetches, feeds=None, graph=None):
    with tf.Session(graph=graph, config=OFF) as sess:
        return sess.run(fetches, feeds)


def _cases(op: str, data_format: str):
    """(config, x, w, dy, pads) for every config, with sizes where the window fits."""
    out = []
    for padding, strides, dilations, explicit in CONFIGS:
        x = RNG.standard_normal((2, 7, 6, 3))
        w = RNG.standard_normal((3, 2, 3, 2 if op == "depthwise" else 4))
        pads = ref.window_pads(padding, x.shape[1:3], w.shape[:2], strides, dilations,
                               explicit)
        outs = ref.out_sizes(x.shape[1:3], w.shape[:2], strides, dilations, pads)
        channels = 6 if op == "depthwise" else 4
        dy = RNG.standard_normal((2, *outs, channels))
        out.append(((padding, strides, dilations, explicit), x, w, dy, pads))
    return out


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("op", ["conv2d", "depthwise"])
def test_forward_and_backprop_ops_equal_the_definitions(op, data_format):
    """Conv2D / DepthwiseConv2dNative and both backprop ops, each config: the static shape
    and the value (float64) equal the plain loops."""
    depthwise = op == "depthwise"
    forward = tf.nn.depthwise_conv2d_native if depthwise else tf.nn.conv2d
    backprop_input = tf.nn.depthwise_conv2d_native_backprop_input if depthwise else \
        tf.nn.conv2d_backprop_input
    backprop_filter = tf.nn.depthwise_conv2d_native_backprop_filter if depthwise else \
        tf.nn.conv2d_backprop_filter
    graph = tf.Graph()
    fetches, expected = [], []
    with graph.as_default():
        for config, x, w, dy, pads in _cases(op, data_format):
            kw = _attrs(*config, data_format)
            strides, dilations = config[1], config[2]
            xt = tf.constant(_layout(x, data_format))
            dyt = tf.constant(_layout(dy, data_format))
            fetches += [forward(xt, w, **kw),
                        backprop_input(list(_layout(x, data_format).shape), w, dyt, **kw),
                        backprop_filter(xt, list(w.shape), dyt, **kw)]
            expected += [_layout(ref.conv(x, w, strides, dilations, pads, depthwise),
                                 data_format),
                         _layout(ref.conv_input_grad(dy, w, x.shape, strides, dilations, pads,
                                                     depthwise), data_format),
                         ref.conv_filter_grad(x, dy, w.shape, strides, dilations, pads,
                                              depthwise)]
    got = _run(fetches, graph=graph)
    for t, g, e in zip(fetches, got, expected):
        assert t.shape.as_list() == list(g.shape), t.name
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-10, err_msg=t.name)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_narrow_floats_compute_like_float64_rounded(dtype):
    x = RNG.uniform(-1, 1, (2, 5, 5, 3)).astype(dtype)
    w = RNG.uniform(-1, 1, (3, 3, 3, 2)).astype(dtype)
    out = _run(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"))
    assert out.dtype == dtype
    want = ref.conv(x.astype(np.float64), w.astype(np.float64), (1, 1), (1, 1),
                    [(1, 1), (1, 1)])
    tol = 2e-2 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)


def test_unknown_sizes_give_partial_static_shapes_and_run():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, [None, None, 9, 3])
        w = tf.placeholder(tf.float64, [3, 3, 3, 5])
        y = tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME")
        assert y.shape.as_list() == [None, None, 5, 5]
        z = tf.nn.conv2d(x, w, [1, 1, 1, 1], "VALID")
        assert z.shape.as_list() == [None, None, 7, 5]
        xv, wv = RNG.standard_normal((1, 4, 9, 3)), RNG.standard_normal((3, 3, 3, 5))
    got = _run([y, z], {x: xv, w: wv}, graph)
    assert got[0].shape == (1, 2, 5, 5) and got[1].shape == (1, 2, 7, 5)
    np.testing.assert_allclose(got[1], ref.conv(xv, wv, (1, 1), (1, 1), [(0, 0)] * 2))


def test_empty_batch_and_one_by_one_window():
    x = np.zeros((0, 4, 4, 3))
    w = RNG.standard_normal((1, 1, 3, 2))
    assert _run(tf.nn.conv2d(x, w, 1, "SAME")).shape == (0, 4, 4, 2)
    x = RNG.standard_normal((2, 4, 5, 3))
    np.testing.assert_allclose(_run(tf.nn.conv2d(x, w, 1, "VALID")), x @ w[0, 0])


# --- the public functions -----------------------------------------------------------------------


def test_conv2d_argument_forms():
    """Strides and dilations as an int or 2 values, `filters=`, explicit padding pairs."""
    x, w = RNG.standard_normal((1, 6, 5, 2)), RNG.standard_normal((2, 3, 2, 3))
    got = _run([tf.nn.conv2d(x, filters=w, strides=2, padding="SAME"),
                tf.nn.conv2d(x, w, strides=[1, 2], padding="VALID", dilations=2),
                tf.nn.conv2d(x, w, 1, [[0, 0], [2, 0], [1, 1], [0, 0]])])
    np.testing.assert_allclose(got[0], ref.conv(x, w, (2, 2), (1, 1), ref.window_pads(
        "SAME", (6, 5), (2, 3), (2, 2), (1, 1))))
    np.testing.assert_allclose(got[1], ref.conv(x, w, (1, 2), (2, 2), [(0, 0)] * 2))
    np.testing.assert_allclose(got[2], ref.conv(x, w, (1, 1), (1, 1), [(2, 0), (1, 1)]))


@pytest.mark.parametrize("data_format", ["NWC", "NCW"])
def test_conv1d_is_conv2d_over_an_inserted_height(data_format):
    x, w = RNG.standard_normal((2, 9, 3)), RNG.standard_normal((3, 3, 4))
    xin = x if data_format == "NWC" else np.moveaxis(x, -1, 1)
    graph = tf.Graph()
    with graph.as_default():
        outs = [tf.nn.conv1d(xin, w, 2, "SAME", data_format=data_format),
                tf.nn.conv1d(input=xin, filters=w, stride=1, padding="VALID",
                             data_format=data_format, dilations=2),
                tf.nn.convolution(xin, w, "SAME", strides=[2], data_format=data_format)]
        types = {op.type for op in graph.get_operations()}
    assert {"ExpandDims", "Conv2D", "Squeeze"} <= types
    got = _run(outs, graph=graph)
    x4, w4 = x[:, None], w[None]
    want = [ref.conv(x4, w4, (1, 2), (1, 1), ref.window_pads("SAME", (1, 9), (1, 3), (1, 2),
                                                              (1, 1)))[:, 0],
            ref.conv(x4, w4, (1, 1), (1, 2), [(0, 0)] * 2)[:, 0]]
    want.append(want[0])
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e if data_format == "NWC" else np.moveaxis(e, -1, 1))


def test_conv2d_transpose_is_the_input_gradient():
    w = RNG.standard_normal((3, 3, 2, 4))      # [KH, KW, out channels, in channels]
    value = RNG.standard_normal((2, 4, 3, 4))
    graph = tf.Graph()
    with graph.as_default():
        out = tf.nn.conv2d_transpose(value, w, [2, 8, 6, 2], [1, 2, 2, 1], "SAME")
        out_valid = tf.nn.conv2d_transpose(value, w, [2, 9, 7, 2], [1, 2, 2, 1], "VALID")
        assert out.op.type == "Conv2DBackpropInput"
        assert out.shape.as_list() == [2, 8, 6, 2]
    got = _run([out, out_valid], graph=graph)
    pads = ref.window_pads("SAME", (8, 6), (3, 3), (2, 2), (1, 1))
    np.testing.assert_allclose(got[0], ref.conv_input_grad(value, w, (2, 8, 6, 2), (2, 2),
                                                           (1, 1), pads))
    np.testing.assert_allclose(got[1], ref.conv_input_grad(value, w, (2, 9, 7, 2), (2, 2),
                                                           (1, 1), [(0, 0)] * 2))


@pytest.mark.parametrize("data_format", ["NWC", "NCW"])
def test_conv1d_transpose_is_conv1d_input_gradient(data_format):
    w = RNG.standard_normal((3, 2, 4))          # [KW, out channels, in channels]
    value = RNG.standard_normal((2, 5, 4))
    nwc = data_format == "NWC"
    out = _run(tf.nn.conv1d_transpose(value if nwc else np.moveaxis(value, -1, 1), w,
                                      [2, 10, 2] if nwc else [2, 2, 10], 2, "SAME",
                                      data_format=data_format))
    pads = ref.window_pads("SAME", (1, 10), (1, 3), (1, 2), (1, 1))
    want = ref.conv_input_grad(value[:, None], w[None], (2, 1, 10, 2), (1, 2), (1, 1),
                               pads)[:, 0]
    np.testing.assert_allclose(out, want if nwc else np.moveaxis(want, -1, 1))


def test_depthwise_separable_and_atrous():
    x = RNG.standard_normal((2, 7, 7, 3))
    dw, pw = RNG.standard_normal((3, 3, 3, 2)), RNG.standard_normal((1, 1, 6, 4))
    w = RNG.standard_normal((3, 3, 3, 4))
    got = _run([tf.nn.depthwise_conv2d(x, dw, [1, 1, 1, 1], "SAME", rate=[2, 2]),
                tf.nn.depthwise_conv2d(x, dw, [1, 2, 2, 1], "VALID"),
                tf.nn.separable_conv2d(x, dw, pw, [1, 1, 1, 1], "VALID"),
                tf.nn.atrous_conv2d(x, w, 2, "SAME"),
                tf.nn.convolution(x, w, "VALID", dilation_rate=[2, 1])])
    same2 = ref.window_pads("SAME", (7, 7), (3, 3), (1, 1), (2, 2))
    depthwise = ref.conv(x, dw, (1, 1), (2, 2), same2, depthwise=True)
    np.testing.assert_allclose(got[0], depthwise)
    np.testing.assert_allclose(got[1], ref.conv(x, dw, (2, 2), (1, 1), [(0, 0)] * 2, True))
    valid = ref.conv(x, dw, (1, 1), (1, 1), [(0, 0)] * 2, depthwise=True)
    np.testing.assert_allclose(got[2], valid @ pw[0, 0])
    np.testing.assert_allclose(got[3], ref.conv(x, w, (1, 1), (2, 2), same2))
    np.testing.assert_allclose(got[4], ref.conv(x, w, (1, 1), (2, 1), [(0, 0)] * 2))


# --- errors ---------------------------------------------------------------------------------------

X = np.zeros((1, 5, 5, 4), np.float32)
W = np.zeros((3, 3, 4, 2), np.float32)


@pytest.mark.parametrize("build, match", [
    (lambda: tf.nn.conv2d(X, W, 1, "same"), "Attr 'padding' of 'Conv2D'.*'same'"),
    (lambda: tf.nn.conv2d(X, W, 1, "FULL"), "not in"),
    (lambda: tf.nn.conv2d(X, W, [1, 1, 1], "SAME"), "strides should be of length"),
    (lambda: tf.nn.conv2d(X, W, [2, 1, 1, 1], "SAME"), "batch and depth"),
    (lambda: tf.nn.conv2d(X, W, 1, "SAME", dilations=[1, 0, 1, 1]), "must be positive"),
    (lambda: tf.nn.conv2d(X, W[:, :, :3], 1, "SAME"), r"depth of the input \(4\).*\(3\)"),
    (lambda: tf.nn.conv2d(X[0], W, 1, "SAME"), "must be rank 4"),
    (lambda: tf.nn.conv2d(X, np.zeros((7, 7, 4, 2), np.float32), 1, "VALID"),
     "Negative dimension size caused by subtracting 7 from 5"),
    (lambda: tf.nn.conv2d(X, W, 1, [[1, 0], [1, 1], [1, 1], [0, 0]]), "batch or depth"),
    (lambda: tf.nn.conv2d(X, W, 1, [[1, 1]] * 3), "must have 4"),
    (lambda: tf.nn.conv2d(X, W, 1, "SAME", data_format="NWHC"), "data_format"),
    (lambda: tf.nn.conv2d_backprop_input([1, 5, 5, 4], W, np.zeros((1, 4, 5, 2), np.float32),
                                         [1, 1, 1, 1], "SAME"),
     "Size of out_backprop doesn't match computed: actual = 4, computed = 5"),
    (lambda: tf.nn.conv2d_transpose(np.zeros((1, 5, 5, 3), np.float32), W, [1, 5, 5, 4], 1),
     "input channels does not match filter's input channels, 3 != 2"),
    (lambda: tf.nn.conv2d_transpose(np.zeros((1, 5, 5, 2), np.float32), W, [1, 5, 5, 3], 1),
     "output_shape does not match filter's output channels, 3 != 4"),
    (lambda: tf.nn.depthwise_conv2d(X, W, [1, 2, 2, 1], "SAME", rate=2),
     "strides > 1 not supported in conjunction with dilation_rate > 1"),
    (lambda: tf.nn.convolution(X, W, "SAME", strides=2, dilation_rate=2),
     "strides > 1 not supported"),
    (lambda: tf.nn.atrous_conv2d(X, W, 0, "SAME"), "rate 0 cannot be less than one"),
    (lambda: tf.nn.conv1d(X[0], W[0], 1, "SAME", data_format="NHWC"), "data_format"),
])
def test_bad_arguments_raise_value_errors(build, match):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=match):
            build()


def test_bad_dtypes_raise_type_errors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="int32 not in list of allowed values"):
            tf.nn.conv2d(X.astype(np.int32), W.astype(np.int32), 1, "SAME")
        with pytest.raises(TypeError, match="float64 that does not match type float32"):
            tf.nn.conv2d(X, tf.constant(W.astype(np.float64)), 1, "SAME")
        # a value that is no tensor takes the input's dtype, as in TensorFlow
        assert tf.nn.conv2d(X, W.astype(np.float64), 1, "SAME").dtype is tf.float32
        with pytest.raises(TypeError, match="input_sizes"):
            tf.nn.conv2d_backprop_input(tf.constant([1, 5, 5, 4], tf.int64), W,
                                        np.zeros((1, 5, 5, 2), np.float32), 1, "SAME")


@pytest.mark.parametrize("feeds, match", [
    ({"x": np.zeros((1, 5, 5, 3))}, "input depth must equal filter depth: 3 vs 4"),
    ({"x": np.zeros((1, 2, 5, 4))}, "Computed output size would be negative"),
    ({"x": np.zeros((5, 5, 4))}, "must be 4-dimensional"),
])
def test_bad_values_at_run_time_raise_invalid_argument(feeds, match):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, None, name="x")
        y = tf.nn.conv2d(x, W.astype(np.float64), 1, "VALID")
    with pytest.raises(InvalidArgumentError, match=match):
        _run(y, {x: feeds["x"]}, graph)


def test_backprop_ops_check_out_backprop_at_run_time():
    graph = tf.Graph()
    with graph.as_default():
        dy = tf.placeholder(tf.float64, None, name="dy")
        dx = tf.nn.conv2d_backprop_input([1, 5, 5, 4], W.astype(np.float64), dy, 2, "SAME")
        dw = tf.nn.conv2d_backprop_filter(np.zeros((1, 5, 5, 4)), [3, 3, 4, 2], dy, 2, "SAME")
    for fetch in (dx, dw):
        with pytest.raises(InvalidArgumentError, match="actual = 2, computed = 3"):
            _run(fetch, {dy: np.zeros((1, 2, 3, 2))}, graph)
