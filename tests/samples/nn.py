"""Samples for the nn ops (ops/activation_ops.py, ops/loss_ops.py).

Activations, BiasAdd (NHWC and NCHW), Softmax/LogSoftmax, L2Loss and both softmax cross
entropies (fetching the loss and the op's `backprop` output).  Oracles are written from the
textbook formulas in float64 and rounded to the op's dtype; float16 gets a loose tolerance.
"""

import numpy as np
from hypothesis import strategies as st

import flowjit as tf

from . import OpCase
from .strategies import arrays, shapes

_FLOATS = (np.float16, np.float32, np.float64)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _tol(dtype):
    return {np.float16: 5e-3, np.float32: 1e-5}.get(dtype, 1e-10)


def _leaky(x, alpha):
    return np.where(x > 0, x, alpha * x)


_ACTIVATIONS = {
    "Relu": (tf.nn.relu, lambda x, a: np.where(x > 0, x, 0)),
    "Relu6": (tf.nn.relu6, lambda x, a: np.minimum(np.where(x > 0, x, 0), 6)),
    "Elu": (tf.nn.elu, lambda x, a: np.where(x > 0, x, np.exp(x) - 1)),
    "Selu": (tf.nn.selu,
             lambda x, a: _SELU_SCALE * np.where(x > 0, x, _SELU_ALPHA * (np.exp(x) - 1))),
    "Softplus": (tf.nn.softplus, lambda x, a: np.log(1 + np.exp(x))),
    "Softsign": (tf.nn.softsign, lambda x, a: x / (1 + np.abs(x))),
    "LeakyRelu": (None, _leaky),
}


@st.composite
def _activation(draw, op_type):
    ints = (np.int32, np.int64) if op_type in ("Relu", "Relu6") else ()
    dtype = draw(st.sampled_from(_FLOATS + ints))
    x = draw(arrays(dtype, draw(shapes())))
    alpha = draw(st.floats(0, 1))
    fed = draw(st.booleans())
    fn, oracle = _ACTIVATIONS[op_type]

    def build():
        inp = tf.placeholder(tf.as_dtype(dtype), name="x") if fed else tf.constant(x)
        if op_type == "LeakyRelu":
            return [tf.nn.leaky_relu(inp, alpha=alpha)]
        return [fn(inp)]

    def expected(f):
        # LeakyRelu's alpha is a 32-bit float attr, as in TensorFlow (a GraphDef holds it so)
        return [np.asarray(oracle(x.astype(np.float64), float(np.float32(alpha))))
                .astype(dtype)]

    return OpCase(build, {"x": x} if fed else {}, expected, rtol=_tol(dtype), atol=_tol(dtype))


@st.composite
def _bias_add(draw):
    dtype = draw(st.sampled_from(_FLOATS + (np.int32,)))
    nchw = draw(st.booleans())
    shape = draw(shapes(min_dims=3 if nchw else 2))
    channels = shape[1] if nchw else shape[-1]
    x = draw(arrays(dtype, shape))
    bias = draw(arrays(dtype, (channels,)))

    def build():
        return [tf.nn.bias_add(tf.constant(x), tf.constant(bias),
                               data_format="NCHW" if nchw else "NHWC")]

    def expected(f):
        if nchw:  # move the channels last, add, move them back
            return [np.moveaxis(np.moveaxis(x, 1, -1) + bias, -1, 1)]
        return [x + bias]

    return OpCase(build, {}, expected, rtol=_tol(dtype), atol=_tol(dtype))


def _naive_log_softmax(x):
    with np.errstate(divide="ignore"):  # an empty class axis gives log(0)
        return x - np.log(np.sum(np.exp(x), axis=-1, keepdims=True))


@st.composite
def _softmax(draw, op_type):
    dtype = draw(st.sampled_from(_FLOATS))
    x = draw(arrays(dtype, draw(shapes(min_dims=1))))
    fed = draw(st.booleans())

    def build():
        inp = tf.placeholder(tf.as_dtype(dtype), name="x") if fed else tf.constant(x)
        return [(tf.nn.softmax if op_type == "Softmax" else tf.nn.log_softmax)(inp)]

    def expected(f):
        wide = x.astype(np.float64)
        if op_type == "Softmax":
            e = np.exp(wide)
            return [(e / e.sum(axis=-1, keepdims=True)).astype(dtype)]
        return [_naive_log_softmax(wide).astype(dtype)]

    return OpCase(build, {"x": x} if fed else {}, expected, rtol=_tol(dtype), atol=_tol(dtype))


@st.composite
def _l2_loss(draw):
    dtype = draw(st.sampled_from(_FLOATS))
    x = draw(arrays(dtype, draw(shapes()), st.floats(-3, 3, width=np.dtype(dtype).itemsize * 8)))
    return OpCase(lambda: [tf.nn.l2_loss(tf.constant(x))], {},
                  lambda f: [np.asarray(0.5 * (x.astype(np.float64) ** 2).sum(), dtype)],
                  rtol=_tol(dtype) * 10, atol=_tol(dtype) * 10)


@st.composite
def _softmax_xent(draw):
    dtype = draw(st.sampled_from((np.float32, np.float64)))
    shape = draw(shapes(min_dims=1, max_dims=3))
    logits = draw(arrays(dtype, shape))
    weights = draw(arrays(dtype, shape, st.floats(0, 1, width=np.dtype(dtype).itemsize * 8)))
    labels = (weights / np.maximum(weights.sum(axis=-1, keepdims=True), 1e-3)).astype(dtype)

    def build():
        loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.constant(labels),
                                                          logits=tf.constant(logits))
        return [loss, loss.op.outputs[1]]

    def expected(f):
        wide, z = logits.astype(np.float64), labels.astype(np.float64)
        log_p = _naive_log_softmax(wide)
        return [(-(z * log_p).sum(axis=-1)).astype(dtype), (np.exp(log_p) - z).astype(dtype)]

    return OpCase(build, {}, expected, rtol=1e-4, atol=1e-5)


@st.composite
def _sparse_xent(draw):
    dtype = draw(st.sampled_from((np.float32, np.float64)))
    batch = draw(shapes(max_dims=2))
    classes = draw(st.integers(1, 5))
    logits = draw(arrays(dtype, tuple(batch) + (classes,)))
    label_type = draw(st.sampled_from((np.int32, np.int64)))
    labels = draw(arrays(label_type, batch, st.integers(0, classes - 1)))

    def build():
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant(labels),
                                                              logits=tf.constant(logits))
        return [loss, loss.op.outputs[1]]

    def expected(f):
        log_p = _naive_log_softmax(logits.astype(np.float64))
        onehot = np.eye(classes)[labels]
        return [(-(onehot * log_p).sum(axis=-1)).astype(dtype),
                (np.exp(log_p) - onehot).astype(dtype)]

    return OpCase(build, {}, expected, rtol=1e-4, atol=1e-5)


SAMPLES = {
    **{name: _activation(name) for name in _ACTIVATIONS},
    "BiasAdd": _bias_add(),
    "Softmax": _softmax("Softmax"),
    "LogSoftmax": _softmax("LogSoftmax"),
    "L2Loss": _l2_loss(),
    "SoftmaxCrossEntropyWithLogits": _softmax_xent(),
    "SparseSoftmaxCrossEntropyWithLogits": _sparse_xent(),
}
