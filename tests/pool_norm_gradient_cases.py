"""Finite-difference cases of the pooling and normalization ops, for tests/test_gradients.py
(gradient_cases.py adds them to its `CASES`).

Max pooling inputs are distinct values 0.37 apart, so no perturbation moves a window's
maximum; batch norm runs in float64 (its vectors then float64 too) with every output the
gradient reaches: y, and batch_mean / batch_variance, whose gradients TensorFlow leaves
out but flowjit's include.
"""

import numpy as np

import flowjit as tf
from flowjit.ops import pool_grad_ops

_RNG = np.random.RandomState(30)


def _distinct(*shape):
    return _RNG.permutation(np.arange(int(np.prod(shape)), dtype=np.float64)).reshape(shape) \
        * 0.37 - 3.0


def _u(*shape, lo=-1.0, hi=1.0):
    return _RNG.uniform(lo, hi, shape)


def _pool_attrs(ksize, strides, padding, data_format="NHWC"):
    full = (lambda v: [1, *v, 1]) if data_format == "NHWC" else (lambda v: [1, 1, *v])
    return {"ksize": full(ksize), "strides": full(strides), "padding": padding,
            "data_format": data_format}


def cases(GradCase) -> dict:
    """{op type: [GradCase]} of every differentiable op of the pooling and normalization
    modules (`GradCase` is gradient_cases.py's)."""
    same = _pool_attrs([3, 3], [2, 2], "SAME")
    nchw = _pool_attrs([2, 2], [1, 2], "VALID", "NCHW")
    explicit = [[0, 0], [1, 0], [1, 1], [0, 0]]

    def bn(training, factor, data_format, stats):
        def build(x, scale, offset, *mean_variance):
            y, m, v = tf.nn.fused_batch_norm(x, scale, offset, *mean_variance, epsilon=0.01,
                                             data_format=data_format, is_training=training,
                                             exponential_avg_factor=factor)
            return [y, m, v] if training else [y]

        channels = 3
        shape = (2, 3, 2, channels) if data_format == "NHWC" else (2, channels, 3, 2)
        inputs = [_u(*shape) * 2, _u(channels, lo=0.5, hi=1.5), _u(channels)]
        if stats:
            inputs += [_u(channels), _u(channels, lo=0.5, hi=1.5)]
        return build, inputs

    return {
        "MaxPool": [
            GradCase("SAME 3x3 / 2", lambda x: tf.nn.max_pool(x, 3, 2, "SAME"),
                     [_distinct(2, 4, 5, 2)]),
            GradCase("VALID NCHW 2x2 / (1, 2)", lambda x: tf.nn.max_pool(
                x, 2, [1, 2], "VALID", data_format="NCHW"), [_distinct(1, 2, 4, 5)]),
            GradCase("EXPLICIT 3x2", lambda x: tf.nn.max_pool(x, [3, 2], 1, explicit),
                     [_distinct(1, 4, 3, 2)])],
        "AvgPool": [
            GradCase("SAME 3x3 / 2", lambda x: tf.nn.avg_pool(x, 3, 2, "SAME"), [_u(2, 4, 5, 2)]),
            GradCase("VALID NCHW", lambda x: tf.nn.avg_pool(x, 2, [1, 2], "VALID", "NCHW"),
                     [_u(1, 2, 4, 5)])],
        "MaxPoolGrad": [
            GradCase("SAME 3x3 / 2", lambda x, g: pool_grad_ops.max_pool_grad(
                x, tf.nn.max_pool(x, 3, 2, "SAME"), g, same), [_distinct(1, 4, 5, 2),
                                                              _u(1, 2, 3, 2)]),
            GradCase("VALID NCHW", lambda x, g: pool_grad_ops.max_pool_grad(
                x, tf.nn.max_pool(x, 2, [1, 2], "VALID", "NCHW"), g, nchw),
                [_distinct(1, 2, 4, 5), _u(1, 2, 3, 2)])],
        "MaxPoolGradGrad": [
            GradCase("SAME 3x3 / 2", lambda x, g: pool_grad_ops.max_pool_grad_grad(
                x, tf.nn.max_pool(x, 3, 2, "SAME"), g, same), [_distinct(1, 4, 5, 2),
                                                              _u(1, 4, 5, 2)])],
        "AvgPoolGrad": [
            GradCase("SAME 3x3 / 2", lambda g: pool_grad_ops.avg_pool_grad(
                [1, 4, 5, 2], g, same), [_u(1, 2, 3, 2)]),
            GradCase("VALID NCHW", lambda g: pool_grad_ops.avg_pool_grad(
                [1, 2, 4, 5], g, nchw), [_u(1, 2, 3, 2)])],
        "FusedBatchNormV3": [
            GradCase("training, with batch statistics", *bn(True, 1.0, "NHWC", False)),
            GradCase("training, blended, NCHW", *bn(True, 0.3, "NCHW", True)),
            GradCase("inference", *bn(False, 1.0, "NHWC", True))],
        "MaxPoolWithArgmax": [GradCase("SAME 3x3 / 2", lambda x: tf.nn.max_pool_with_argmax(
            x, 3, 2, "SAME")[0], [_distinct(2, 4, 5, 2)])],
        "LRN": [GradCase("radius 2", lambda x: tf.nn.lrn(x, 2, 1.5, 0.5, 0.75),
                         [_u(1, 2, 2, 6)])],
    }
