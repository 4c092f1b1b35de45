"""Convolutions written from their definitions as plain loops, for the tests: an oracle
independent of ops/conv_ops.py's tap-by-tap kernels and of the compiled im2col GEMM.

Everything is channels-last (NHWC input, [KH, KW, C, OC] filter) in float64.  Padding is
computed here from TensorFlow's documented rules: SAME gives ceil(in / stride) outputs and
pads max((out - 1) * stride + (k - 1) * dilation + 1 - in, 0) in total, the smaller half
before; VALID pads nothing; EXPLICIT pads the given (before, after) pairs.  Output position
o reads input position o * stride + tap * dilation - before at each tap.
"""

import itertools

import numpy as np


def window_pads(padding, in_sizes, window, strides, dilations, explicit=None) -> list:
    """(before, after) per spatial dim."""
    if padding == "VALID":
        return [(0, 0)] * len(in_sizes)
    if padding == "EXPLICIT":
        return [tuple(p) for p in explicit]
    pads = []
    for n, k, s, d in zip(in_sizes, window, strides, dilations):
        out = -(-n // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
        pads.append((total // 2, total - total // 2))
    return pads


def out_sizes(in_sizes, window, strides, dilations, pads) -> list:
    return [(n + b + a - (k - 1) * d - 1) // s + 1
            for n, k, s, d, (b, a) in zip(in_sizes, window, strides, dilations, pads)]


def _reads(outs, window, strides, dilations, pads, in_sizes):
    """(output position, tap, input position) for every tap that reads inside the input."""
    for o in itertools.product(*map(range, outs)):
        for k in itertools.product(*map(range, window)):
            i = tuple(oo * s + kk * d - b for oo, kk, s, d, (b, _) in
                      zip(o, k, strides, dilations, pads))
            if all(0 <= ii < n for ii, n in zip(i, in_sizes)):
                yield o, k, i


def conv(x, w, strides, dilations, pads, depthwise=False):
    """Conv2D (or DepthwiseConv2dNative) of x [N, H, W, C] with w [KH, KW, C, OC|M]."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    outs = out_sizes(x.shape[1:3], w.shape[:2], strides, dilations, pads)
    channels = x.shape[3] * w.shape[3] if depthwise else w.shape[3]
    y = np.zeros((x.shape[0], *outs, channels))
    for o, k, i in _reads(outs, w.shape[:2], strides, dilations, pads, x.shape[1:3]):
        for n in range(x.shape[0]):
            if depthwise:
                y[(n, *o)] += (x[(n, *i)][:, None] * w[k]).reshape(-1)
            else:
                y[(n, *o)] += x[(n, *i)] @ w[k]
    return y


def conv_input_grad(dy, w, input_shape, strides, dilations, pads, depthwise=False):
    """The gradient of sum(conv(x, w) * dy) with respect to x (of `input_shape`)."""
    dy, w = np.asarray(dy, np.float64), np.asarray(w, np.float64)
    dx = np.zeros(input_shape)
    outs = dy.shape[1:3]
    for o, k, i in _reads(outs, w.shape[:2], strides, dilations, pads, input_shape[1:3]):
        for n in range(input_shape[0]):
            g = dy[(n, *o)]
            if depthwise:
                dx[(n, *i)] += (g.reshape(w.shape[2], w.shape[3]) * w[k]).sum(1)
            else:
                dx[(n, *i)] += w[k] @ g
    return dx


def conv_filter_grad(x, dy, filter_shape, strides, dilations, pads, depthwise=False):
    """The gradient of sum(conv(x, w) * dy) with respect to w (of `filter_shape`)."""
    x, dy = np.asarray(x, np.float64), np.asarray(dy, np.float64)
    dw = np.zeros(filter_shape)
    outs = dy.shape[1:3]
    for o, k, i in _reads(outs, filter_shape[:2], strides, dilations, pads, x.shape[1:3]):
        for n in range(x.shape[0]):
            g = dy[(n, *o)]
            if depthwise:
                dw[k] += x[(n, *i)][:, None] * g.reshape(filter_shape[2], filter_shape[3])
            else:
                dw[k] += np.outer(x[(n, *i)], g)
    return dw


def to_nchw(a):
    return np.ascontiguousarray(np.moveaxis(a, -1, 1))


def to_nhwc(a):
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))
