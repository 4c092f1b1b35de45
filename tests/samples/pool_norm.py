"""Samples for pooling and normalization (ops/pool_ops.py, pool_grad_ops.py, norm_ops.py,
norm_grad_ops.py, lrn_ops.py), and the NumPy oracles tests/test_pool_ops.py and
tests/test_norm_ops.py share.

The pooling oracles are written from the definitions with direct loops over every output
position and window tap (no padding tricks, no strides): a window is the taps inside the
input; its maximum takes NaN as -inf, its gradient goes to the first tap (row-major)
holding the maximum, its average divides by the taps inside.  Batch norm and LRN are their
formulas in float64.
"""

import math

import numpy as np
from hypothesis import strategies as st

import flowjit as tf
from flowjit.ops import lrn_ops, norm_grad_ops, pool_grad_ops
from flowjit.ops.builder import make_op

from . import OpCase
from .strategies import arrays

# --- pooling oracles ------------------------------------------------------------------------------


def window_geometry(size, k, s, padding, pads=(0, 0)):
    """(output size, padding before) along one dim, from TensorFlow's definitions."""
    if padding == "VALID":
        return (size - k) // s + 1, 0
    if padding == "SAME":
        out = math.ceil(size / s)
        return out, max((out - 1) * s + k - size, 0) // 2
    return (size + pads[0] + pads[1] - k) // s + 1, pads[0]


def pool_windows(shape, ksize, strides, padding, pads=((0, 0), (0, 0))):
    """{(oh, ow): [(h, w) inside the input, in row-major tap order]} of an NHWC shape."""
    (oh_n, top), (ow_n, left) = (window_geometry(shape[d], ksize[d - 1], strides[d - 1],
                                                 padding, pads[d - 1]) for d in (1, 2))
    out = {}
    for oh in range(oh_n):
        for ow in range(ow_n):
            out[oh, ow] = [(oh * strides[0] + i - top, ow * strides[1] + j - left)
                           for i in range(ksize[0]) for j in range(ksize[1])
                           if 0 <= oh * strides[0] + i - top < shape[1]
                           and 0 <= ow * strides[1] + j - left < shape[2]]
    return (oh_n, ow_n), out


def _nhwc(a, data_format):
    return a if data_format == "NHWC" else np.transpose(a, (0, 2, 3, 1))


def _back(a, data_format):
    return a if data_format == "NHWC" else np.ascontiguousarray(np.transpose(a, (0, 3, 1, 2)))


def loop_pool(x, ksize, strides, padding, pads=((0, 0), (0, 0)), data_format="NHWC",
              kind="max"):
    """MaxPool ("max"), AvgPool ("avg") or the first-maximum positions ("argmax": int
    [N, OH, OW, C, 2] of (h, w)) of a 4-D array, by direct loops."""
    x = _nhwc(x, data_format)
    (oh_n, ow_n), windows = pool_windows(x.shape, ksize, strides, padding, pads)
    n_, _, _, c_ = x.shape
    out = np.zeros((n_, oh_n, ow_n, c_) + ((2,) if kind == "argmax" else ()),
                   np.int64 if kind == "argmax" else x.dtype)
    for n in range(n_):
        for (oh, ow), taps in windows.items():
            for c in range(c_):
                values = [x[n, h, w, c] for h, w in taps]
                if kind == "avg":
                    out[n, oh, ow, c] = np.sum(np.array(values, np.float64)) / len(values)
                    continue
                keys = [-np.inf if v != v else v for v in values]
                if not keys:   # a window in the padding only (EXPLICIT, empty input)
                    out[n, oh, ow, c] = -1 if kind == "argmax" else (
                        -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min)
                    continue
                best = keys.index(max(keys))
                if kind == "argmax":
                    out[n, oh, ow, c] = taps[best]
                else:
                    out[n, oh, ow, c] = keys[best]
    return out if kind == "argmax" else _back(out, data_format)


def loop_max_pool_grad(x, dy, ksize, strides, padding, pads=((0, 0), (0, 0)),
                       data_format="NHWC"):
    """MaxPoolGrad by loops: each window's dy added at its first maximum."""
    arg = loop_pool(x, ksize, strides, padding, pads, data_format, "argmax")
    dy = _nhwc(dy, data_format).astype(np.float64)
    dx = np.zeros(_nhwc(x, data_format).shape, np.float64)
    for n, oh, ow, c in np.ndindex(*arg.shape[:4]):
        h, w = arg[n, oh, ow, c]
        if h >= 0:
            dx[n, h, w, c] += dy[n, oh, ow, c]
    return _back(dx.astype(x.dtype), data_format)


def loop_max_pool_grad_grad(x, g, ksize, strides, padding, pads=((0, 0), (0, 0)),
                            data_format="NHWC"):
    """MaxPoolGradGrad by loops: g (input-shaped) read at each window's first maximum."""
    arg = loop_pool(x, ksize, strides, padding, pads, data_format, "argmax")
    g = _nhwc(g, data_format)
    out = np.zeros(arg.shape[:4], g.dtype)
    for n, oh, ow, c in np.ndindex(*arg.shape[:4]):
        h, w = arg[n, oh, ow, c]
        out[n, oh, ow, c] = g[n, h, w, c] if h >= 0 else 0   # 0 for a window of padding
    return _back(out, data_format)


def loop_avg_pool_grad(shape, dy, ksize, strides, padding, data_format="NHWC"):
    """AvgPoolGrad by loops: each window's dy shared evenly by its taps inside the input."""
    nhwc = tuple(_nhwc(np.empty(shape, bool), data_format).shape)
    dy = _nhwc(dy, data_format).astype(np.float64)
    _, windows = pool_windows(nhwc, ksize, strides, padding)
    dx = np.zeros(nhwc, np.float64)
    for n in range(nhwc[0]):
        for (oh, ow), taps in windows.items():
            for h, w in taps:
                dx[n, h, w, :] += dy[n, oh, ow, :] / len(taps)
    return _back(dx, data_format)


# --- normalization oracles --------------------------------------------------------------------


def bn_reference(x, scale, offset, mean, variance, epsilon, data_format, training,
                 factor=1.0):
    """FusedBatchNormV3's (y, batch_mean, batch_variance) in float64 from its definition."""
    axis = 1 if data_format == "NCHW" else 3
    xl = np.moveaxis(x.astype(np.float64), axis, -1)
    if training:
        n = xl.size // xl.shape[-1]
        m, v = xl.mean((0, 1, 2)), xl.var((0, 1, 2))
        unbiased = v * n / max(n - 1, 1)
        out_m = m if factor == 1 else (1 - factor) * mean + factor * m
        out_v = unbiased if factor == 1 else (1 - factor) * variance + factor * unbiased
    else:
        m, v, out_m, out_v = mean, variance, mean, variance
    y = (xl - m) / np.sqrt(v + epsilon) * scale + offset
    return np.moveaxis(y, -1, axis), out_m, out_v


def bn_grad_reference(dy, x, scale, m, v, epsilon, data_format, training):
    """FusedBatchNormGradV3's (dx, dscale, doffset) in float64 from the derivative."""
    axis = 1 if data_format == "NCHW" else 3
    xl, dyl = (np.moveaxis(a.astype(np.float64), axis, -1) for a in (x, dy))
    r = 1 / np.sqrt(v.astype(np.float64) + epsilon)
    xhat = (xl - m) * r
    dscale, doffset = (dyl * xhat).sum((0, 1, 2)), dyl.sum((0, 1, 2))
    if training:
        dx = scale * r * (dyl - dyl.mean((0, 1, 2)) - xhat * (dyl * xhat).mean((0, 1, 2)))
    else:
        dx = dyl * scale * r
    return np.moveaxis(dx, -1, axis), dscale, doffset


def lrn_reference(x, radius, bias, alpha, beta):
    """(LRN output, N = bias + alpha * window sums of squares) in float64 by loops over
    the depth."""
    x = x.astype(np.float64)
    depth = x.shape[-1]
    norm = np.empty_like(x)
    for d in range(depth):
        lo, hi = max(0, d - radius), min(depth, d + radius + 1)
        norm[..., d] = bias + alpha * (x[..., lo:hi] ** 2).sum(-1)
    return x / norm ** beta, norm


def lrn_grad_reference(dy, x, radius, bias, alpha, beta):
    """LRNGrad in float64: the derivative of LRN, by loops over the depth."""
    y, norm = lrn_reference(x, radius, bias, alpha, beta)
    dy = dy.astype(np.float64)
    dx = dy * norm ** -beta
    depth = x.shape[-1]
    for d in range(depth):
        for j in range(max(0, d - radius), min(depth, d + radius + 1)):
            dx[..., d] -= 2 * alpha * beta * x[..., d] * dy[..., j] * y[..., j] / norm[..., j]
    return dx


# --- samples -------------------------------------------------------------------------------------


def _tol(dtype):
    return {np.float16: 1e-2, np.float32: 1e-5}.get(dtype, 1e-10)


@st.composite
def pool_config(draw, explicit_ok=True):
    """(ksize, strides, padding, pads (None unless EXPLICIT), data_format, NHWC shape)."""
    ksize = [draw(st.integers(1, 3)), draw(st.integers(1, 3))]
    strides = [draw(st.integers(1, 3)), draw(st.integers(1, 3))]
    padding = draw(st.sampled_from(["VALID", "SAME"] + (["EXPLICIT"] if explicit_ok else [])))
    pads = [(draw(st.integers(0, k - 1)), draw(st.integers(0, k - 1))) for k in ksize]
    low = ksize if padding == "VALID" else [0, 0]
    shape = (draw(st.integers(0, 2)), draw(st.integers(low[0], 6)),
             draw(st.integers(low[1], 6)), draw(st.integers(1, 3)))
    if padding == "EXPLICIT":
        shape = (shape[0], max(shape[1], ksize[0] - sum(pads[0])),
                 max(shape[2], ksize[1] - sum(pads[1])), shape[3])
    return ksize, strides, padding, pads, draw(st.sampled_from(["NHWC", "NCHW"])), shape


def pool_padding_arg(padding, pads, data_format):
    """tf.nn.max_pool's `padding`: the string, or one pair per dim for EXPLICIT."""
    if padding != "EXPLICIT":
        return padding
    return [[0, 0], [0, 0], *pads] if data_format == "NCHW" else [[0, 0], *pads, [0, 0]]


def _layout(shape, data_format):
    return shape if data_format == "NHWC" else (shape[0], shape[3], shape[1], shape[2])


_POOL_ELEMENTS = st.one_of(st.integers(-3, 3).map(float),
                           st.sampled_from([np.nan, np.inf, -np.inf, 0.5]))


@st.composite
def _pool_sample(draw, op_type):
    max_like = op_type != "AvgPool" and op_type != "AvgPoolGrad"
    ksize, strides, padding, pads, fmt, shape = draw(pool_config(explicit_ok=max_like))
    dtypes = (np.float32, np.float64, np.float16) + ((np.int32,) if op_type == "MaxPool"
                                                     else ())
    dtype = draw(st.sampled_from(dtypes))
    elements = _POOL_ELEMENTS if dtype != np.int32 and op_type == "MaxPool" else \
        st.integers(-3, 3).map(float)
    x = draw(arrays(np.float64, _layout(shape, fmt), elements)).astype(dtype)
    pad_arg = pool_padding_arg(padding, pads, fmt)
    pairs = tuple(pads) if padding == "EXPLICIT" else ((0, 0), (0, 0))
    out_shape = _layout((shape[0],) + tuple(window_geometry(shape[d], ksize[d - 1],
                        strides[d - 1], padding, pairs[d - 1])[0] for d in (1, 2))
                        + (shape[3],), fmt)
    g = draw(arrays(np.float64, out_shape, st.integers(-4, 4).map(float))).astype(dtype)
    gx = draw(arrays(np.float64, x.shape, st.integers(-4, 4).map(float))).astype(dtype)
    attrs = {"ksize": _layout((1, *ksize, 1), fmt), "strides": _layout((1, *strides, 1), fmt),
             "padding": padding if padding != "EXPLICIT" else "EXPLICIT", "data_format": fmt}
    if padding == "EXPLICIT":
        attrs["explicit_paddings"] = [v for p in pad_arg for v in p]
    tfd = tf.as_dtype(dtype)
    feeds = {"x": x, "g": g, "gx": gx}

    def build():
        xp = tf.placeholder(tfd, [None] * 4, name="x")
        gp = tf.placeholder(tfd, [None] * 4, name="g")
        gxp = tf.placeholder(tfd, [None] * 4, name="gx")
        if op_type == "MaxPool":
            return [tf.nn.max_pool(xp, ksize, strides, pad_arg, data_format=fmt)]
        if op_type == "AvgPool":
            return [tf.nn.avg_pool(xp, ksize, strides, padding, data_format=fmt)]
        if op_type == "AvgPoolGrad":
            return [pool_grad_ops.avg_pool_grad(tf.shape(xp), gp, attrs)]
        y = tf.nn.max_pool(xp, ksize, strides, pad_arg, data_format=fmt)
        if op_type == "MaxPoolGrad":
            return [pool_grad_ops.max_pool_grad(xp, y, gp, attrs)]
        return [pool_grad_ops.max_pool_grad_grad(xp, y, gxp, attrs)]

    def expected(f):
        args = (ksize, strides, padding)
        if op_type == "MaxPool":
            return [loop_pool(x, *args, pairs, fmt)]
        if op_type == "AvgPool":
            return [loop_pool(x, *args, pairs, fmt, "avg").astype(dtype)]
        if op_type == "AvgPoolGrad":
            return [loop_avg_pool_grad(x.shape, g, *args, fmt).astype(dtype)]
        if op_type == "MaxPoolGrad":
            return [loop_max_pool_grad(x, g, *args, pairs, fmt)]
        return [loop_max_pool_grad_grad(x, gx, *args, pairs, fmt)]

    return OpCase(build, feeds, expected, rtol=_tol(dtype), atol=_tol(dtype))


def loop_argmax_positions(x, ksize, strides, padding, include_batch):
    """MaxPoolWithArgmax's flattened positions of the first maxima of an NHWC array."""
    arg = loop_pool(x, ksize, strides, padding, kind="argmax")
    n, h, w, c = x.shape
    batch = np.arange(n).reshape(-1, 1, 1, 1) * (h * w * c) if include_batch else 0
    return (arg[..., 0] * w + arg[..., 1]) * c + np.arange(c) + batch


@st.composite
def _argmax_sample(draw):
    ksize, strides, padding, _, _, shape = draw(pool_config(explicit_ok=False))
    dtype = draw(st.sampled_from((np.float32, np.float64, np.int32)))
    elements = _POOL_ELEMENTS if dtype != np.int32 else st.integers(-3, 3).map(float)
    x = draw(arrays(np.float64, shape, elements)).astype(dtype)
    include_batch = draw(st.booleans())
    index_type = draw(st.sampled_from((tf.int64, tf.int32)))

    def build():
        xp = tf.placeholder(tf.as_dtype(dtype), [None] * 4, name="x")
        return list(tf.nn.max_pool_with_argmax(xp, ksize, strides, padding, Targmax=index_type,
                                               include_batch_in_index=include_batch))

    def expected(f):
        return [loop_pool(x, ksize, strides, padding),
                loop_argmax_positions(x, ksize, strides, padding, include_batch)
                .astype(index_type.np_dtype)]

    return OpCase(build, {"x": x}, expected)


@st.composite
def _batch_norm_sample(draw, op_type):
    dtype = draw(st.sampled_from((np.float32, np.float64, np.float16)))
    u = np.float32 if dtype != np.float64 else draw(st.sampled_from((np.float32, np.float64)))
    fmt = draw(st.sampled_from(["NHWC", "NCHW"]))
    training = draw(st.booleans())
    factor = draw(st.sampled_from([1.0, 0.5])) if training else 1.0
    shape = (draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3)),
             draw(st.integers(1, 3)))
    c = shape[3]
    x = draw(arrays(np.float64, _layout(shape, fmt), st.floats(-3, 3))).astype(dtype)
    dy = draw(arrays(np.float64, x.shape, st.floats(-3, 3))).astype(dtype)
    vec = {k: draw(arrays(np.float64, (c,), st.floats(lo, 2))).astype(u)
           for k, lo in (("scale", 0.5), ("offset", -2), ("mean", -2), ("variance", 0.25))}
    eps = 0.01
    feeds = {"x": x, "dy": dy, **vec}

    def build():
        p = {k: tf.placeholder(tf.as_dtype(v.dtype), [None] * v.ndim, name=k)
             for k, v in feeds.items()}
        y, m, v = tf.nn.fused_batch_norm(p["x"], p["scale"], p["offset"], p["mean"],
                                         p["variance"], eps, fmt, training,
                                         exponential_avg_factor=factor)
        if op_type == "FusedBatchNormV3":
            return [y, m, v]
        reserve = y.op.outputs[3:6]
        return list(norm_grad_ops.fused_batch_norm_grad_v3(
            p["dy"], p["x"], p["scale"], *reserve, epsilon=eps, data_format=fmt,
            is_training=training)[:3])

    def expected(f):
        y, m, v = bn_reference(x, vec["scale"], vec["offset"], vec["mean"], vec["variance"],
                               np.float32(eps), fmt, training, factor)
        if op_type == "FusedBatchNormV3":
            return [y.astype(dtype), m.astype(u), v.astype(u)]
        mean, var = (vec["mean"], vec["variance"]) if not training else \
            (np.moveaxis(x.astype(np.float64), 1 if fmt == "NCHW" else 3, -1).mean((0, 1, 2)),
             np.moveaxis(x.astype(np.float64), 1 if fmt == "NCHW" else 3, -1).var((0, 1, 2)))
        dx, ds, do = bn_grad_reference(dy, x, vec["scale"], mean, var, np.float32(eps), fmt,
                                       training)
        return [dx.astype(dtype), ds.astype(u), do.astype(u)]

    tol = 3e-2 if dtype == np.float16 else (1e-4 if np.float32 in (dtype, u) else 1e-9)
    return OpCase(build, feeds, expected, rtol=tol, atol=tol)


@st.composite
def _lrn_sample(draw, op_type):
    dtype = draw(st.sampled_from((np.float32, np.float64, np.float16)))
    shape = (draw(st.integers(0, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 3)),
             draw(st.integers(1, 7)))
    x = draw(arrays(np.float64, shape, st.floats(-2, 2))).astype(dtype)
    dy = draw(arrays(np.float64, shape, st.floats(-2, 2))).astype(dtype)
    radius = draw(st.integers(0, 4))
    bias, alpha = draw(st.sampled_from([1.0, 2.0])), draw(st.sampled_from([1.0, 0.25]))
    beta = draw(st.sampled_from([0.5, 0.75, 1.0]))
    attrs = {"depth_radius": radius, "bias": bias, "alpha": alpha, "beta": beta}

    def build():
        xp = tf.placeholder(tf.as_dtype(dtype), [None] * 4, name="x")
        y = tf.nn.lrn(xp, radius, bias, alpha, beta)
        if op_type == "LRN":
            return [y]
        dyp = tf.placeholder(tf.as_dtype(dtype), [None] * 4, name="dy")
        return [make_op(lrn_ops.LRN_GRAD, [dyp, xp, y], attrs).outputs[0]]

    def expected(f):
        if op_type == "LRN":
            return [lrn_reference(x, radius, bias, alpha, beta)[0].astype(dtype)]
        return [lrn_grad_reference(dy, x, radius, bias, alpha, beta).astype(dtype)]

    feeds = {"x": x} if op_type == "LRN" else {"x": x, "dy": dy}
    tol = 3e-2 if dtype == np.float16 else _tol(dtype) * 10
    return OpCase(build, feeds, expected, rtol=tol, atol=tol)


SAMPLES = {
    **{name: _pool_sample(name) for name in ("MaxPool", "AvgPool", "MaxPoolGrad",
                                             "MaxPoolGradGrad", "AvgPoolGrad")},
    **{name: _batch_norm_sample(name) for name in ("FusedBatchNormV3", "FusedBatchNormGradV3")},
    **{name: _lrn_sample(name) for name in ("LRN", "LRNGrad")},
    "MaxPoolWithArgmax": _argmax_sample(),
}
