"""Finite-difference cases for tests/test_gradients.py: op type -> list of `GradCase`.

Each case builds the op from float64 placeholders (one per entry of `inputs`) and returns its
output(s).  Inputs are small and kept away from kinks and ties (|x| >= 0.2 for Abs/Relu,
distinct values for Max/Maximum, quotients away from integers for FloorDiv), so central
differences are accurate.  Non-float arguments (indices, axes, conditions) are constants.
"""

import dataclasses
from typing import Callable

import numpy as np

import flowjit as tf
from flowjit.ops.sum_to_shape import sum_to_shape_of
from flowjit.ops.array_ops import CONJUGATE_TRANSPOSE
from flowjit.ops.builder import make_op
from flowjit.ops.check_ops import ensure_non_empty
from flowjit.ops.grad_ops import bias_add_grad, relu_grad, sigmoid_grad, tanh_grad
from flowjit.ops.math_binary import add_v2

_RNG = np.random.RandomState(0)


@dataclasses.dataclass
class GradCase:
    """build(*placeholders) -> output tensor or list; inputs: float64 arrays."""

    name: str
    build: Callable
    inputs: list
    eps: float = 1e-6
    tol: float = 1e-6


def _u(*shape, lo=-1.0, hi=1.0):
    return _RNG.uniform(lo, hi, shape)


def _away0(*shape):
    return _u(*shape, lo=0.2, hi=1.0) * np.where(_u(*shape) > 0, 1.0, -1.0)


def _pos(*shape):
    return _u(*shape, lo=0.3, hi=2.0)


def _distinct(*shape):
    return _RNG.permutation(np.arange(int(np.prod(shape)), dtype=np.float64)).reshape(shape) \
        * 0.37 - 1.0


def _c(*cases):
    return list(cases)


def _one(name, build, *inputs, **kw):
    return [GradCase(name, build, list(inputs), **kw)]


_UNARY = {
    "Neg": (tf.negative, _u), "Abs": (tf.abs, _away0), "Sign": (tf.sign, _away0),
    "Square": (tf.square, _u), "Sqrt": (tf.sqrt, _pos), "Rsqrt": (tf.rsqrt, _pos),
    "Reciprocal": (tf.reciprocal, _away0), "Exp": (tf.exp, _u), "Expm1": (tf.expm1, _u),
    "Log": (tf.log, _pos), "Log1p": (tf.log1p, _pos), "Sin": (tf.sin, _u),
    "Cos": (tf.cos, _u), "Tan": (tf.tan, _u), "Tanh": (tf.tanh, _u),
    "Sigmoid": (tf.sigmoid, _u), "Erf": (tf.erf, _u),
    "Floor": (tf.floor, lambda *s: _u(*s, lo=0.2, hi=0.8) + 2.0),
    "Ceil": (tf.ceil, lambda *s: _u(*s, lo=0.2, hi=0.8) - 2.0),
    "Round": (tf.round, lambda *s: _u(*s, lo=0.1, hi=0.4) + 1.0),
    "Relu": (tf.nn.relu, _away0), "Elu": (tf.nn.elu, _away0), "Selu": (tf.nn.selu, _away0),
    "Softplus": (tf.nn.softplus, _u), "Softsign": (tf.nn.softsign, _away0),
    "Relu6": (tf.nn.relu6, lambda *s: _RNG.choice([-1.0, 0.5, 3.0, 5.5, 7.0], s)),
    "LeakyRelu": (lambda x: tf.nn.leaky_relu(x, alpha=0.3), _away0),
}

_BINARY = {
    "Add": (tf.add, _u, _u), "AddV2": (add_v2, _u, _u), "Sub": (tf.subtract, _u, _u),
    "Mul": (tf.multiply, _u, _u),
    "RealDiv": (tf.truediv, _u, _away0), "Pow": (tf.pow, _pos, _u),
    "Maximum": (tf.maximum, _distinct, lambda *s: _distinct(*s) + 0.1),
    "Minimum": (tf.minimum, _distinct, lambda *s: _distinct(*s) + 0.1),
    "SquaredDifference": (tf.squared_difference, _u, _u), "Atan2": (tf.atan2, _away0, _away0),
}

# Quotients x / y whose fractional part is in [0.3, 0.7]: floor/trunc do not jump nearby.
_DIV_Y = np.array([[1.5, -2.0, 2.5], [1.25, 3.0, -1.75]])
_DIV_X = _DIV_Y * np.array([[2.5, -1.4, 3.6], [-0.5, 0.45, 1.55]])

CASES = {
    **{op: _one(op, fn, make(2, 3)) for op, (fn, make) in _UNARY.items()},
    **{op: _c(GradCase("same shape", fn, [mx(2, 3), my(2, 3)]),
              GradCase("broadcast", fn, [mx(2, 3), my(3)]),
              GradCase("both broadcast", fn, [mx(2, 1), my(1, 3)]))
       for op, (fn, mx, my) in _BINARY.items()},
    **{op: _one(op, fn, _DIV_X, _DIV_Y) for op, fn in (
        ("FloorDiv", tf.floordiv), ("TruncateDiv", tf.truncatediv),
        ("FloorMod", tf.floormod), ("TruncateMod", tf.truncatemod))},
    "Cast": _one("f64 -> f32 -> f64", lambda x: tf.cast(tf.cast(x, tf.float32), tf.float64),
                 _u(2, 3), eps=1e-2, tol=1e-4),
    "AddN": _one("three", lambda a, b, c: tf.add_n([a, b, c]), _u(2, 3), _u(2, 3), _u(2, 3)),
    "Select": _c(GradCase("same shape", lambda t, e: tf.where(
        tf.constant([[True, False, True], [False, False, True]]), t, e), [_u(2, 3), _u(2, 3)]),
        GradCase("rows", lambda t, e: tf.where(tf.constant([False, True]), t, e),
                 [_u(2, 3), _u(2, 3)])),
    "SelectV2": _one("broadcast", lambda t, e: tf.where_v2(
        tf.constant([True, False, True]), t, e), _u(2, 3), _u(2, 1)),
    "ClipByValue": _c(
        GradCase("scalar bounds", tf.clip_by_value, [_distinct(2, 3), np.array(-0.45),
                                                     np.array(0.2)]),
        GradCase("vector bounds", tf.clip_by_value, [_distinct(2, 3), _u(3, lo=-1.5, hi=-0.6)
                                                     + 0.013, np.array([0.15, 0.66, 0.9])])),
    # --- reductions and products
    "Sum": _c(GradCase("axis 1", lambda x: tf.reduce_sum(x, 1), [_u(2, 3)]),
              GradCase("keepdims, repeated negative axes", lambda x: tf.reduce_sum(
                  x, reduction_indices=[0, -1, 2], keepdims=True), [_u(2, 3, 2)]),
              GradCase("all", tf.reduce_sum, [_u(2, 3)])),
    "Mean": _c(GradCase("axis 0", lambda x: tf.reduce_mean(x, 0), [_u(2, 3)]),
               GradCase("keepdims", lambda x: tf.reduce_mean(x, [1, 2], keepdims=True),
                        [_u(2, 3, 2)])),
    "Prod": _c(GradCase("axis 1", lambda x: tf.reduce_prod(x, 1), [_u(2, 3)]),
               GradCase("with zeros", lambda x: tf.reduce_prod(x, 1, keepdims=True),
                        [np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 1.5], [1.0, 2.0, -0.5]])])),
    "Max": _c(GradCase("axis 1", lambda x: tf.reduce_max(x, 1), [_distinct(2, 3)]),
              GradCase("all, keepdims", lambda x: tf.reduce_max(x, keepdims=True),
                       [_distinct(2, 3)])),
    "Min": _one("axis 0", lambda x: tf.reduce_min(x, 0), _distinct(2, 3)),
    "MatMul": [GradCase(f"ta={ta} tb={tb}", (lambda ta, tb: lambda a, b: tf.matmul(
        a, b, transpose_a=ta, transpose_b=tb))(ta, tb),
        [_u(*((3, 2) if ta else (2, 3))), _u(*((4, 3) if tb else (3, 4)))])
        for ta in (False, True) for tb in (False, True)],
    "BatchMatMulV2": _c(
        GradCase("batch", tf.matmul, [_u(2, 2, 3), _u(2, 3, 2)]),
        GradCase("broadcast batch", lambda a, b: tf.matmul(a, b, transpose_b=True),
                 [_u(2, 1, 2, 3), _u(3, 2, 3)]),
        GradCase("adjoint a", lambda a, b: tf.matmul(a, b, adjoint_a=True),
                 [_u(2, 3, 2), _u(3, 4)])),
    # --- nn
    "BiasAdd": _c(GradCase("NHWC", tf.nn.bias_add, [_u(2, 2, 3), _u(3)]),
                  GradCase("NCHW", lambda v, b: tf.nn.bias_add(v, b, data_format="NCHW"),
                           [_u(2, 3, 2), _u(3)])),
    # convolutions (ops/conv_ops.py, conv_grad_ops.py): the backprop ops' cases check the
    # second derivatives of a convolution
    "Conv2D": _c(GradCase("SAME stride 2", lambda x, w: tf.nn.conv2d(x, w, 2, "SAME"),
                          [_u(2, 5, 4, 2), _u(3, 2, 2, 3)]),
                 GradCase("NCHW explicit dilated", lambda x, w: tf.nn.conv2d(
                     x, w, 1, [[0, 0], [0, 0], [1, 0], [2, 1]], data_format="NCHW",
                     dilations=2), [_u(1, 2, 5, 4), _u(2, 2, 2, 2)])),
    "Conv2DBackpropInput": _one("VALID stride 2", lambda w, dy: tf.nn.conv2d_backprop_input(
        [2, 5, 6, 2], w, dy, 2, "VALID"), _u(3, 2, 2, 3), _u(2, 2, 3, 3)),
    "Conv2DBackpropFilter": _one("SAME dilated", lambda x, dy: tf.nn.conv2d_backprop_filter(
        x, [2, 3, 2, 3], dy, 1, "SAME", dilations=2), _u(2, 4, 4, 2), _u(2, 4, 4, 3)),
    "DepthwiseConv2dNative": _one("SAME stride 2, multiplier 2", lambda x, w: tf.nn.
                                  depthwise_conv2d_native(x, w, 2, "SAME"),
                                  _u(2, 5, 4, 2), _u(3, 2, 2, 2)),
    "DepthwiseConv2dNativeBackpropInput": _one(
        "VALID", lambda w, dy: tf.nn.depthwise_conv2d_native_backprop_input(
            [1, 5, 4, 2], w, dy, 1, "VALID"), _u(2, 3, 2, 2), _u(1, 4, 2, 4)),
    "DepthwiseConv2dNativeBackpropFilter": _one(
        "SAME stride 2", lambda x, dy: tf.nn.depthwise_conv2d_native_backprop_filter(
            x, [3, 3, 2, 1], dy, 2, "SAME"), _u(2, 5, 5, 2), _u(2, 3, 3, 2)),
    "Softmax": _one("last axis", tf.nn.softmax, _u(2, 4)),
    "LogSoftmax": _one("last axis", tf.nn.log_softmax, _u(2, 4)),
    "L2Loss": _one("matrix", tf.nn.l2_loss, _u(2, 3)),
    "SoftmaxCrossEntropyWithLogits": _one(
        "loss and backprop", lambda logits, labels: (lambda loss: [loss, loss.op.outputs[1]])(
            tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)),
        _u(2, 4), _pos(2, 4)),
    "SparseSoftmaxCrossEntropyWithLogits": _one(
        "loss and backprop", lambda logits: (lambda loss: [loss, loss.op.outputs[1]])(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1, 0, 3], logits=logits)),
        _u(3, 4)),
    # --- TensorFlow's gradient ops (their gradients are second-order ones)
    "TanhGrad": _one("y, dy", tanh_grad, _u(2, 3), _u(2, 3)),
    "SigmoidGrad": _one("y, dy", sigmoid_grad, _u(2, 3), _u(2, 3)),
    "ReluGrad": _one("features away from 0", relu_grad, _u(2, 3), _away0(2, 3)),
    "BiasAddGrad": _c(GradCase("NHWC", bias_add_grad, [_u(2, 2, 3)]),
                      GradCase("NCHW", lambda x: bias_add_grad(x, "NCHW"), [_u(2, 3, 2)])),
    # --- plumbing and arrays
    "Identity": _one("identity", tf.identity, _u(2, 3)),
    "EnsureNonEmpty": _one("ensure_non_empty",
                           lambda x: ensure_non_empty(x, [0, 1], "empty"), _u(2, 3)),
    "PlaceholderWithDefault": _one("fed default", lambda x: tf.placeholder_with_default(
        x, [None, 3]), _u(2, 3)),
    "Reshape": _one("to 3x2", lambda x: tf.reshape(x, [3, -1]), _u(2, 3)),
    "ExpandDims": _one("axis 1", lambda x: tf.expand_dims(x, 1), _u(2, 3)),
    "Squeeze": _one("axis 1", lambda x: tf.squeeze(x, [1]), _u(2, 1, 3)),
    "Transpose": _one("perm 2 0 1", lambda x: tf.transpose(x, [2, 0, 1]), _u(2, 3, 2)),
    "ConjugateTranspose": _one("of reals", lambda x: make_op(
        CONJUGATE_TRANSPOSE, [x, tf.constant([1, 2, 0])], {}).outputs[0], _u(2, 3, 2)),
    "ReverseV2": _one("axis 1", lambda x: tf.reverse_v2(x, [1]), _u(2, 3)),
    "ReverseSequence": _c(
        GradCase("batch 0, seq 1", lambda x: tf.reverse_sequence(x, [3, 0, 1], seq_axis=1),
                 [_u(3, 4)]),
        GradCase("time-major, depth", lambda x: tf.reverse_sequence(
            x, np.array([2, 4], np.int64), seq_axis=0, batch_axis=1), [_u(4, 2, 2)])),
    "BroadcastTo": _c(GradCase("vector", lambda x: tf.broadcast_to(x, [2, 3]), [_u(3)]),
                      GradCase("column", lambda x: tf.broadcast_to(x, [2, 2, 3]), [_u(2, 1)])),
    "Tile": _one("2x1 of 2x3", lambda x: tf.tile(x, [2, 2]), _u(2, 3)),
    "Pad": _one("zeros", lambda x: tf.pad(x, [[1, 0], [2, 1]]), _u(2, 3)),
    "PadV2": _one("constant input", lambda x, c: tf.pad(x, [[0, 1], [1, 1]], constant_values=c),
                  _u(2, 3), np.array(0.7)),
    "MirrorPad": _c(GradCase("reflect", lambda x: tf.pad(x, [[1, 1], [2, 1]], "REFLECT"),
                             [_u(2, 3)]),
                    GradCase("symmetric", lambda x: tf.pad(x, [[2, 1], [0, 3]], "SYMMETRIC"),
                             [_u(2, 3)])),
    "ConcatV2": _one("axis 1", lambda a, b, c: tf.concat([a, b, c], 1), _u(2, 1), _u(2, 3),
                     _u(2, 2)),
    "Pack": _one("axis 1", lambda a, b: tf.stack([a, b], axis=1), _u(2, 3), _u(2, 3)),
    "Unpack": _one("axis 1", lambda x: tf.unstack(x, axis=1), _u(2, 3)),
    "Split": _one("3 parts", lambda x: tf.split(x, 3, axis=1), _u(2, 6)),
    "SplitV": _one("sizes", lambda x: tf.split(x, [1, -1, 2], axis=1), _u(2, 6)),
    "Slice": _one("middle", lambda x: tf.slice(x, [1, 1], [2, -1]), _u(3, 4)),
    "StridedSlice": _c(GradCase("reversed, strided", lambda x: x[1:, ::-2], [_u(3, 4)]),
                       GradCase("shrink and new axis", lambda x: x[0, None, 1:], [_u(3, 4)]),
                       GradCase("ellipsis", lambda x: x[..., 1], [_u(2, 2, 3)])),
    "GatherV2": _c(GradCase("axis 0, repeats", lambda p: tf.gather(p, [2, 0, 2]), [_u(3, 2)]),
                   GradCase("axis 1", lambda p: tf.gather(p, [[1, 1], [0, 2]], axis=1),
                            [_u(2, 3)]),
                   GradCase("batch dims", lambda p: tf.gather(p, [[1], [0]], axis=1,
                                                              batch_dims=1), [_u(2, 3)])),
    "SumToShape": _one("lead and size-1 axes", lambda g: sum_to_shape_of(g, [3, 1]),
                       _u(2, 3, 4)),
    "TensorScatterUpdate": _one("rows, one repeated", lambda t, u: tf.tensor_scatter_nd_update(
        t, [[2], [0]], u), _u(3, 2), _u(2, 2)),
    "TensorStridedSliceUpdate": _one("a strided box", lambda t, u: tf.tensor_strided_slice_update(
        t, [1, 0], [3, 3], [1, 2], u), _u(3, 3), _u(2, 2)),
    "GatherNd": _one("pairs", lambda p: tf.gather_nd(p, [[1, 0], [0, 2], [1, 0]]), _u(2, 3)),
    "UnsortedSegmentSum": _one("dropped and repeated", lambda d: tf.unsorted_segment_sum(
        d, [1, -1, 1, 0], 3), _u(4, 2)),
    "Fill": _one("scalar value", lambda v: tf.fill([2, 3], v), np.array(0.5)),
    "Sort": _one("rows of distinct values, sorted along axis 0", lambda x: tf.sort(
        x, axis=0), _RNG.permutation(12).reshape(4, 3) / 7.0 - 0.8),
    "MatrixInverse": _one("batch of two", tf.linalg.inv, _u(2, 3, 3) + 2 * np.eye(3)),
    "MatrixDeterminant": _one("batch of two", tf.linalg.det, _u(2, 3, 3) + 2 * np.eye(3)),
    "MatrixSolve": _one("two right-hand sides", tf.linalg.solve, _u(3, 3) + 2 * np.eye(3),
                        _u(3, 2)),
    # the input is symmetrized first: Cholesky reads only its lower triangle
    "Cholesky": _one("symmetrized", lambda a: tf.linalg.cholesky(
        (a + tf.linalg.transpose(a)) * 0.5), _u(3, 3) * 0.3 + 2 * np.eye(3)),
}

# the pooling and normalization ops' cases live in their own module
from pool_norm_gradient_cases import cases as _pool_norm_cases  # noqa: E402

CASES.update(_pool_norm_cases(GradCase))
