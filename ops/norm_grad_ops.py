"""FusedBatchNormGradV3 (TensorFlow's op type and attrs): the gradients of
FusedBatchNormV3 (norm_ops.py).

FusedBatchNormGradV3(y_backprop, x, scale, reserve_space_1, reserve_space_2,
reserve_space_3) -> (x_backprop, scale_backprop, offset_backprop, reserve_space_4,
reserve_space_5).  reserve_space_1/2 are the forward op's mean and biased variance (its
reserve spaces); with r = 1 / sqrt(variance + epsilon) and sums over every dim but the
channel: scale_backprop = sum(dy * (x - mean)) * r, offset_backprop = sum(dy), and
x_backprop = scale * r * (dy - sum(dy) / n - (x - mean) * r^2 * sum(dy * (x - mean)) / n)
when `is_training` (the mean and variance were the batch's), dy * scale * r otherwise.
reserve_space_4/5 are empty.  No gradient of its own here (TensorFlow builds one from the
composite formula; not done yet).  Lowered to per-channel REDUCEs and an elementwise body.
"""

from __future__ import annotations

import numpy as np

from ..compiler.core.ir import Scalar as S
from ..compiler.core.ir_build import cast
from ..compiler.core.shapes import TensorShape
from . import norm_common as nc
from .array_common import runtime_error
from .builder import make_op, to_tensor
from .lower_reduce import cast_node
from .lower_util import require_real
from .registry import OpDef


# --- shape inference and reference kernel --------------------------------------------------------


def _batch_norm_grad_infer(op):
    x = op.inputs[1]
    _, channels, u = nc.check_operands(op, ("y_backprop", "x"),
                                       ("scale", "reserve_space_1", "reserve_space_2"))
    vec = TensorShape([channels])
    return [(x.dtype, x.shape), (u, vec), (u, vec), (u, TensorShape([0])),
            (u, TensorShape([0]))]


def _batch_norm_grad_kernel(ctx, inputs, attrs):
    eps, _, data_format, training = nc.settings(attrs)
    dy, x, u = inputs[0], inputs[1], inputs[2].dtype
    if dy.shape != x.shape:
        raise runtime_error(ctx, f"FusedBatchNormGradV3: y_backprop {list(dy.shape)} and x "
                                 f"{list(x.shape)} must have one shape")
    xl, (scale, m, v), acc = nc.channels_last(ctx, "FusedBatchNormGradV3", attrs, x,
                                              inputs[2:5], ("scale", "reserve_space_1",
                                                            "reserve_space_2"))
    dyl = np.moveaxis(dy, nc.channel_axis(data_format), -1).astype(acc)
    axes = tuple(range(xl.ndim - 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = 1 / np.sqrt(v + acc(eps))
        sum_dy = np.sum(dyl, axis=axes)
        sum_dy_xc = np.sum(dyl * (xl - m), axis=axes)
        if training:
            count = acc(xl.size // max(xl.shape[-1], 1))
            dx = scale * r * (dyl - sum_dy / count - (xl - m) * (r * r * sum_dy_xc / count))
        else:
            dx = dyl * (scale * r)
    return [nc.restore(dx, x, data_format), (sum_dy_xc * r).astype(u), sum_dy.astype(u),
            np.zeros(0, u), np.zeros(0, u)]


# --- lowering ------------------------------------------------------------------------------------


def _lower_batch_norm_grad(ctx, op, inputs):
    require_real(op)
    eps, _, data_format, training = nc.settings(op.attrs)
    dy, x, scale, m, v = inputs[:5]
    u, k = scale.dtype, nc.Channels(x, data_format, nc.accumulator(x.dtype))
    for a, b in zip(dy.shape, x.shape):
        ctx.check_equal(a, b, f"{op.type}: y_backprop and x must have one shape")
    nc.require_channels(ctx, k, [(scale, "scale"), (m, "reserve_space_1"),
                                 (v, "reserve_space_2")], op.type)
    r = k.vector(lambda c: k.op(S.DIV, k.const(1), k.op(
        S.SQRT, k.op(S.ADD, k.at(v, c), k.const(eps)))))
    sum_dy = k.sum(lambda idx: k.load(dy, idx))
    sum_dy_xc = k.sum(lambda idx: k.op(S.MUL, k.load(dy, idx), k.op(
        S.SUB, k.load(x, idx), k.at(m, idx[k.axis]))))
    gain = k.vector(lambda c: k.op(S.MUL, k.at(scale, c), k.at(r, c)))
    if training:
        n = cast(k.count, k.acc)

        def dx_fn(idx, c):
            mean_dy = k.op(S.DIV, k.at(sum_dy, c), n)
            slope = k.op(S.DIV, k.op(S.MUL, k.op(S.MUL, k.at(r, c), k.at(r, c)),
                                     k.at(sum_dy_xc, c)), n)
            centered = k.op(S.SUB, k.load(x, idx), k.at(m, c))
            inner = k.op(S.SUB, k.op(S.SUB, k.load(dy, idx), mean_dy),
                         k.op(S.MUL, centered, slope))
            return k.op(S.MUL, k.at(gain, c), inner)
    else:
        def dx_fn(idx, c):
            return k.op(S.MUL, k.load(dy, idx), k.at(gain, c))
    dscale = k.vector(lambda c: k.op(S.MUL, k.at(sum_dy_xc, c), k.at(r, c)))
    return [k.elementwise(dx_fn, x.dtype), cast_node(dscale, u), cast_node(sum_dy, u),
            nc.empty(u), nc.empty(u)]


FUSED_BATCH_NORM_GRAD_V3 = OpDef(
    "FusedBatchNormGradV3", _batch_norm_grad_infer, _batch_norm_grad_kernel,
    lower=_lower_batch_norm_grad, doc="The gradients of FusedBatchNormV3.")


# --- function (TensorFlow's raw op name; not in tf.nn) -------------------------------------------


def fused_batch_norm_grad_v3(y_backprop, x, scale, reserve_space_1, reserve_space_2,
                             reserve_space_3, epsilon=1e-4, data_format="NHWC",
                             is_training=True, name=None):
    """FusedBatchNormGradV3's five outputs (TensorFlow's raw op; not in tf.nn)."""
    inputs = [to_tensor(t) for t in (y_backprop, x, scale, reserve_space_1, reserve_space_2,
                                      reserve_space_3)]
    attrs = {"epsilon": nc.float_attr(epsilon), "data_format": data_format,
             "is_training": bool(is_training)}
    return make_op(FUSED_BATCH_NORM_GRAD_V3, inputs, attrs,
                   name or "FusedBatchNormGradV3").outputs


OP_DEFS = (FUSED_BATCH_NORM_GRAD_V3,)
