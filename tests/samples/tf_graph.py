"""Samples for the ops of TensorFlow-written graphs: ops/grad_ops.py and ops/training_ops.py.

TanhGrad, SigmoidGrad and ReluGrad on two same-shape inputs (real and complex), BiasAddGrad
(NHWC and NCHW), BroadcastGradientArgs on shapes that broadcast, and the Apply* updates of
freshly initialized variables (one step, fetching var's new value).  Oracles are the
textbook formulas in float64 (complex128), rounded to the op's dtype.
"""

import numpy as np
from hypothesis import strategies as st

import flowjit as tf
from flowjit.ops import grad_ops, training_ops

from . import OpCase
from .strategies import arrays, broadcast_pair, shapes

_FLOATS = (np.float16, np.float32, np.float64)
_COMPLEX = (np.complex64, np.complex128)


def _tol(dtype):
    return {np.float16: 5e-3, np.float32: 1e-5, np.complex64: 1e-5}.get(dtype, 1e-10)


def _elements(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return st.complex_numbers(max_magnitude=3, width=dtype.itemsize * 8)
    return None


def _wide(x):
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


_ELEMENTWISE = {
    "TanhGrad": (grad_ops.tanh_grad, lambda y, dy: dy * np.conj(1 - y * y)),
    "SigmoidGrad": (grad_ops.sigmoid_grad, lambda y, dy: dy * np.conj(y * (1 - y))),
    "ReluGrad": (grad_ops.relu_grad, lambda g, f: np.where(f > 0, g, 0 * g)),
}


@st.composite
def _elementwise(draw, op_type):
    ints = (np.int32, np.int64) if op_type == "ReluGrad" else _COMPLEX
    dtype = draw(st.sampled_from(_FLOATS + ints))
    shape = draw(shapes())
    a = draw(arrays(dtype, shape, _elements(dtype)))
    b = draw(arrays(dtype, shape, _elements(dtype)))
    static = draw(st.sampled_from([list(shape), [None] * len(shape), None]))
    fn, oracle = _ELEMENTWISE[op_type]

    def build():
        t = tf.as_dtype(dtype)
        return [fn(tf.placeholder(t, static, name="a"), tf.placeholder(t, static, name="b"))]

    def expected(f):
        if np.dtype(dtype).kind in "iu":
            return [oracle(a, b).astype(dtype)]
        return [np.asarray(oracle(_wide(a), _wide(b))).astype(dtype)]

    return OpCase(build, {"a": a, "b": b}, expected, rtol=_tol(dtype), atol=_tol(dtype))


@st.composite
def _bias_add_grad(draw):
    dtype = draw(st.sampled_from(_FLOATS + (np.int32,)))
    nchw = draw(st.booleans())
    shape = draw(shapes(min_dims=3 if nchw else 2))
    x = draw(arrays(dtype, shape))

    def build():
        return [grad_ops.bias_add_grad(tf.placeholder(tf.as_dtype(dtype), name="x"),
                                       data_format="NCHW" if nchw else "NHWC")]

    def expected(f):
        channels_last = np.moveaxis(x, 1, -1) if nchw else x
        rows = int(np.prod(channels_last.shape[:-1]))
        total = channels_last.reshape(rows, channels_last.shape[-1]).astype(np.float64).sum(0)
        return [total.astype(dtype)]

    tol = {np.float16: 5e-3, np.float32: 1e-4}.get(dtype, 1e-10)
    return OpCase(build, {"x": x}, expected, rtol=tol, atol=tol)


def _axes_of_ones(own, other):
    """The axes of the broadcast shape where `own`, padded on the left with 1s, is 1."""
    if tuple(own) == tuple(other):
        return []
    n = max(len(own), len(other))
    padded = (1,) * (n - len(own)) + tuple(own)
    return [i for i in range(n) if padded[i] == 1]


@st.composite
def _broadcast_gradient_args(draw):
    s0, s1 = draw(broadcast_pair())
    if draw(st.booleans()):
        s1 = s0   # identical shapes: nothing to reduce
    dtype = draw(st.sampled_from((np.int32, np.int64)))
    a, b = np.array(s0, dtype), np.array(s1, dtype)
    fed = draw(st.booleans())

    def build():
        t = tf.as_dtype(dtype)
        x, y = (tf.placeholder(t, [None], name="s0"), tf.placeholder(t, [None], name="s1")) \
            if fed else (tf.constant(a), tf.constant(b))
        return list(grad_ops.broadcast_gradient_args(x, y))

    def expected(f):
        return [np.array(_axes_of_ones(s0, s1), dtype), np.array(_axes_of_ones(s1, s0), dtype)]

    return OpCase(build, {"s0": a, "s1": b} if fed else {}, expected)


def _hyper(dtype):
    return st.floats(0.05, 0.95).map(lambda v: np.array(v, dtype))


@st.composite
def _apply(draw, op_type):
    dtype = draw(st.sampled_from((np.float32, np.float64)))
    shape = draw(shapes(max_dims=3))
    var, grad = draw(arrays(dtype, shape)), draw(arrays(dtype, shape))
    slots = [draw(arrays(dtype, shape, st.floats(0, 5, width=np.dtype(dtype).itemsize * 8)))
             for _ in range({"ApplyMomentum": 1, "ApplyAdam": 2}.get(op_type, 0))]
    h = [draw(_hyper(dtype)) for _ in range(6)]
    nesterov = draw(st.booleans())

    def build():
        v = tf.Variable(var, name="var")
        s = [tf.Variable(x, name=f"slot{i}") for i, x in enumerate(slots)]
        g = tf.placeholder(tf.as_dtype(dtype), shape, name="grad")
        with tf.control_dependencies([x.initializer for x in [v, *s]]):
            if op_type == "ApplyGradientDescent":
                return [training_ops.apply_gradient_descent(v, h[0], g)]
            if op_type == "ApplyMomentum":
                return [training_ops.apply_momentum(v, s[0], h[0], g, h[1],
                                                    use_nesterov=nesterov)]
            return [training_ops.apply_adam(v, s[0], s[1], h[0], h[1], h[2] * 0.1, h[3],
                                            h[4], h[5] * 1e-3, g, use_nesterov=nesterov)]

    def expected(f):
        w, d = var.astype(np.float64), grad.astype(np.float64)
        hp = [float(x) for x in h]
        if op_type == "ApplyGradientDescent":
            new = w - hp[0] * d
        elif op_type == "ApplyMomentum":
            acc = slots[0] * hp[1] + d
            new = w - hp[0] * (d + hp[1] * acc if nesterov else acc)
        else:
            m = hp[3] * slots[0] + (1 - hp[3]) * d
            u = hp[4] * slots[1] + (1 - hp[4]) * d * d
            step = (1 - hp[3]) * d + hp[3] * m if nesterov else m
            rate = hp[2] * 0.1 * np.sqrt(1 - hp[1]) / (1 - hp[0])
            new = w - rate * step / (np.sqrt(u) + hp[5] * 1e-3)
        return [new.astype(dtype)]

    tol = 1e-4 if dtype == np.float32 else 1e-9
    return OpCase(build, {"grad": grad}, expected, rtol=tol, atol=tol)


SAMPLES = {
    **{k: _elementwise(k) for k in _ELEMENTWISE},
    "BiasAddGrad": _bias_add_grad(),
    "BroadcastGradientArgs": _broadcast_gradient_args(),
    **{k: _apply(k) for k in ("ApplyGradientDescent", "ApplyMomentum", "ApplyAdam")},
}
