"""Samples for the convolution ops (ops/conv_ops.py, ops/conv_grad_ops.py).

Each case draws sizes (an empty batch included), a window, strides, dilations, a padding
(SAME, VALID or EXPLICIT, VALID only where the window fits) and a data format, with values
that are multiples of 1/2 in [-2, 2]: every product and sum is exact in float32, so the
reference kernels, the compiled kernels and the oracle (the plain loops of
tests/conv_reference.py) agree exactly whatever order they sum in.
"""

import numpy as np
from hypothesis import strategies as st

import flowjit as tf

import conv_reference as ref

from . import OpCase
from .strategies import arrays

_HALVES = st.integers(-4, 4).map(lambda v: v / 2)


@st.composite
def _geometry(draw, depthwise=False):
    """(x shape, w shape, strides, dilations, padding name, explicit pairs, pads)."""
    window = [draw(st.integers(1, 3)) for _ in range(2)]
    strides = [draw(st.integers(1, 2)) for _ in range(2)]
    dilations = [draw(st.integers(1, 2)) for _ in range(2)]
    sizes = [draw(st.integers(1, 6)) for _ in range(2)]
    padding = draw(st.sampled_from(["SAME", "VALID", "EXPLICIT"]))
    effective = [(k - 1) * d + 1 for k, d in zip(window, dilations)]
    explicit = [(draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(2)]
    if padding == "VALID" and any(n < e for n, e in zip(sizes, effective)) or \
            padding == "EXPLICIT" and any(n + b + a < e for n, (b, a), e in
                                          zip(sizes, explicit, effective)):
        padding = "SAME"
    channels, out_channels = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    x_shape = (draw(st.integers(0, 2)), *sizes, channels)
    w_shape = (*window, channels, out_channels)
    pads = ref.window_pads(padding, sizes, window, strides, dilations, explicit)
    return x_shape, w_shape, strides, dilations, padding, explicit, pads


def _kwargs(strides, dilations, padding, explicit, data_format):
    if padding == "EXPLICIT":
        pairs = [[0, 0], list(explicit[0]), list(explicit[1]), [0, 0]]
        padding = pairs if data_format == "NHWC" else [pairs[0], pairs[3], pairs[1], pairs[2]]
    full = (lambda v: [1, *v, 1]) if data_format == "NHWC" else (lambda v: [1, 1, *v])
    return dict(strides=full(strides), padding=padding, dilations=full(dilations),
                data_format=data_format)


def _layout(a, data_format):
    return a if data_format == "NHWC" else ref.to_nchw(a)


@st.composite
def _case(draw, kind: str, depthwise: bool):
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    x_shape, w_shape, strides, dilations, padding, explicit, pads = draw(_geometry(depthwise))
    data_format = draw(st.sampled_from(["NHWC", "NCHW"]))
    outs = ref.out_sizes(x_shape[1:3], w_shape[:2], strides, dilations, pads)
    y_channels = w_shape[2] * w_shape[3] if depthwise else w_shape[3]
    x = draw(arrays(dtype, x_shape, _HALVES))
    w = draw(arrays(dtype, w_shape, _HALVES))
    dy = draw(arrays(dtype, (x_shape[0], *outs, y_channels), _HALVES))
    fed = draw(st.booleans())
    kwargs = _kwargs(strides, dilations, padding, explicit, data_format)
    tf_dtype = tf.as_dtype(dtype)
    x_in, dy_in = _layout(x, data_format), _layout(dy, data_format)
    feeds = {"x": x_in, "w": w, "dy": dy_in}

    def tensor(name, value):
        return tf.placeholder(tf_dtype, [None] * 4, name=name) if fed else tf.constant(value)

    def build():
        if kind == "forward":
            fn = tf.nn.depthwise_conv2d_native if depthwise else tf.nn.conv2d
            return [fn(tensor("x", x_in), tensor("w", w), **kwargs)]
        if kind == "input":
            fn = tf.nn.depthwise_conv2d_native_backprop_input if depthwise else \
                tf.nn.conv2d_backprop_input
            return [fn(list(x_in.shape), tensor("w", w), tensor("dy", dy_in), **kwargs)]
        fn = tf.nn.depthwise_conv2d_native_backprop_filter if depthwise else \
            tf.nn.conv2d_backprop_filter
        return [fn(tensor("x", x_in), list(w_shape), tensor("dy", dy_in), **kwargs)]

    def expected(f):
        if kind == "forward":
            out = _layout(ref.conv(x, w, strides, dilations, pads, depthwise), data_format)
        elif kind == "input":
            out = _layout(ref.conv_input_grad(dy, w, x_shape, strides, dilations, pads,
                                              depthwise), data_format)
        else:
            out = ref.conv_filter_grad(x, dy, w_shape, strides, dilations, pads, depthwise)
        return [out.astype(dtype)]

    used = {"forward": ("x", "w"), "input": ("w", "dy"), "filter": ("x", "dy")}[kind]
    return OpCase(build, {k: feeds[k] for k in used} if fed else {}, expected)


SAMPLES = {
    "Conv2D": _case("forward", False),
    "Conv2DBackpropInput": _case("input", False),
    "Conv2DBackpropFilter": _case("filter", False),
    "DepthwiseConv2dNative": _case("forward", True),
    "DepthwiseConv2dNativeBackpropInput": _case("input", True),
    "DepthwiseConv2dNativeBackpropFilter": _case("filter", True),
}
