"""The convolution ops' group for tests/compiled_op_groups.py: every convolution op in one
graph (so one compiled cluster, one numba compile), in the forms whose lowerings differ:
SAME / VALID / EXPLICIT padding, strides, dilations, NCHW, depthwise, the backprop ops.

Inputs x [N, H, W, C], w [K, K, C, M] of runtime sizes (never 1: a size-1 dim is another
signature) and w11 [1, 1, C, M]; values are multiples of 1/2 in [-2, 2], so every sum is
exact in float32 and the compiled kernels must equal the reference kernels exactly
whatever order they sum in.
"""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import flowjit as tf


def _nchw(t):
    return tf.transpose(t, [0, 3, 1, 2])


def conv_ops():
    """(op type, build(P)) for the group; P.x, P.w and P.w11 as above.  One form per
    lowering path: im2col with padding (SAME) and with strides, dilations, explicit padding
    and NCHW; the 1x1 window read in place; the input gradient gathered (unit strides) and
    by col2im (strided), and through the 1x1 window; the depthwise reductions."""
    explicit = [[0, 0], [0, 0], [1, 2], [0, 1]]     # NCHW: (before, after) for H and W

    def forward(P):
        return [tf.nn.conv2d(P.x, P.w, 1, "SAME"),
                tf.nn.conv2d(_nchw(P.x), P.w, [1, 1, 2, 1], explicit, data_format="NCHW",
                             dilations=[1, 1, 1, 2]),
                tf.nn.conv2d(P.x, P.w11, 1, "VALID")]

    def input_grads(P):
        same, strided, pointwise = forward(P)
        return [tf.nn.conv2d_backprop_input(tf.shape(P.x), P.w, same, 1, "SAME"),
                tf.nn.conv2d_backprop_input(tf.shape(_nchw(P.x)), P.w, strided, [1, 1, 2, 1],
                                            explicit, data_format="NCHW",
                                            dilations=[1, 1, 1, 2]),
                tf.nn.conv2d_backprop_input(tf.shape(P.x), P.w11, pointwise, 1, "VALID")]

    def filter_grads(P):
        same, strided, _ = forward(P)
        return [tf.nn.conv2d_backprop_filter(P.x, tf.shape(P.w), same, 1, "SAME"),
                tf.nn.conv2d_backprop_filter(_nchw(P.x), tf.shape(P.w), strided,
                                             [1, 1, 2, 1], explicit, data_format="NCHW",
                                             dilations=[1, 1, 1, 2])]

    def depthwise(P):
        return [tf.nn.depthwise_conv2d_native(P.x, P.w, 2, "SAME", dilations=1)]

    def depthwise_input(P):
        return [tf.nn.depthwise_conv2d_native_backprop_input(tf.shape(P.x), P.w,
                                                             depthwise(P)[0], 2, "SAME")]

    def depthwise_filter(P):
        return [tf.nn.depthwise_conv2d_native_backprop_filter(P.x, tf.shape(P.w),
                                                              depthwise(P)[0], 2, "SAME")]

    return [("Conv2D", forward), ("Conv2DBackpropInput", input_grads),
            ("Conv2DBackpropFilter", filter_grads), ("DepthwiseConv2dNative", depthwise),
            ("DepthwiseConv2dNativeBackpropInput", depthwise_input),
            ("DepthwiseConv2dNativeBackpropFilter", depthwise_filter)]


CONV_INPUTS = {"x": (tf.float32, [None] * 4), "w": (tf.float32, [None] * 4),
               "w11": (tf.float32, [1, 1, None, None])}


@st.composite
def conv_feeds(draw):
    """x, w and w11 of the group: sizes where every form's window fits (H, W >= 5 >= the
    largest dilated window), an empty batch among them."""
    batch = draw(st.sampled_from([0, 2, 3]))
    height, width = draw(st.sampled_from([5, 6, 7])), draw(st.sampled_from([5, 6, 9]))
    channels, multiplier = draw(st.sampled_from([2, 3])), draw(st.sampled_from([2, 3]))
    window = draw(st.sampled_from([2, 3]))
    halves = st.integers(-4, 4).map(lambda v: v / 2)
    return {"x": draw(hnp.arrays(np.float32, (batch, height, width, channels), elements=halves)),
            "w": draw(hnp.arrays(np.float32, (window, window, channels, multiplier),
                                 elements=halves)),
            "w11": draw(hnp.arrays(np.float32, (1, 1, channels, multiplier),
                                   elements=halves))}
