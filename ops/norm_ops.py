"""Batch normalization: FusedBatchNormV3 (TensorFlow's op type, attrs and six outputs), and
the public `batch_normalization` and `fused_batch_norm`.

FusedBatchNormV3(x, scale, offset, mean, variance) normalizes each channel of x (the last
dim for NHWC/NDHWC, dim 1 for NCHW/NCDHW): y = (x - m) * scale / sqrt(v + epsilon) +
offset.  With `is_training` m and v are the batch's mean and (biased) variance over every
other dim, and the outputs batch_mean / batch_variance are the batch mean and the
*unbiased* variance (times n / (n - 1), n the elements per channel; 1 for n = 1), blended
into the `mean` / `variance` inputs when `exponential_avg_factor` f != 1 (out = (1 - f) *
input + f * batch; with f = 1 those inputs may be empty).  For inference m and v are the
`mean` and `variance` inputs, passed through as batch_mean / batch_variance.  The reserve
spaces hold m and the biased v (what the gradient needs); reserve_space_3 is empty.
x is float16 (computed in float32), float32 or float64; the four vectors ("U") are
float32 or x's dtype (norm_common.py).

The gradient is FusedBatchNormGradV3 (norm_grad_ops.py) plus what TensorFlow's leaves
out: the gradients reaching batch_mean / batch_variance (training: into x and, for f != 1,
into the mean / variance inputs) and, for inference, those of the mean and variance
inputs.  The lowering is two per-channel REDUCEs (sum, then the sum of squared deviations:
the two-pass variance of the reference kernel) and an elementwise COMPUTE.
`batch_normalization` is TensorFlow's composition of elementwise ops.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.ir import Scalar as S
from ..compiler.core.graph import Tensor
from ..compiler.core.ir_build import cast
from ..compiler.core.shapes import TensorShape
from . import math_binary, math_cast, math_unary, norm_grad_ops, reshape_ops, shape_ops
from . import lower_index as lx
from . import norm_common as nc
from .builder import graph_for, make_op, to_tensor
from .conversion import static_value
from .lower_reduce import cast_node
from .lower_util import require_real
from .registry import OpDef

__all__ = ["batch_normalization", "fused_batch_norm"]


def _batch_norm_infer(op):
    x = op.inputs[0]
    _, channels, u = nc.check_operands(op, ("x",), ("scale", "offset", "mean", "variance"))
    vec = TensorShape([channels])
    return [(x.dtype, x.shape)] + [(u, vec)] * 4 + [(u, TensorShape([0]))]


def _batch_norm_kernel(ctx, inputs, attrs):
    eps, factor, data_format, training = nc.settings(attrs)
    x, u = inputs[0], inputs[1].dtype
    xl, (scale, offset, mean, var), acc = nc.channels_last(
        ctx, "FusedBatchNormV3", attrs, x, inputs[1:], ("scale", "offset", "mean", "variance"))
    with np.errstate(invalid="ignore", divide="ignore"):
        if training:
            axes = tuple(range(xl.ndim - 1))
            count = xl.size // max(xl.shape[-1], 1)
            m = np.mean(xl, axis=axes) if count else np.full(xl.shape[-1], np.nan, acc)
            v = np.mean(np.square(xl - m), axis=axes) if count else m.copy()
            unbiased = v * acc(count / max(count - 1, 1))
            out_mean, out_var = (m, unbiased) if factor == 1.0 else (
                (1 - factor) * mean + factor * m, (1 - factor) * var + factor * unbiased)
        else:
            m, v, out_mean, out_var = mean, var, mean, var
        y = (xl - m) * (scale / np.sqrt(v + acc(eps))) + offset
    vectors = [np.asarray(a).astype(u) for a in (out_mean, out_var, m, v)]
    return [nc.restore(y, x, data_format)] + vectors + [np.zeros(0, u)]


# --- gradients -----------------------------------------------------------------------------------


def _is_zero(g) -> bool:
    """Whether `g` is the zeros the gradient machinery gives an output nothing reached."""
    if g is None or g.op.type == "ZerosLike":
        return True
    value = static_value(g)
    return value is not None and not np.any(value)


def _per_channel(v, x, data_format):
    """Vector `v` shaped to broadcast along x's channel dim."""
    if not data_format.startswith("NC"):
        return v
    return reshape_ops.reshape(v, [-1] + [1] * (nc.RANKS[data_format] - 2))


def _batch_norm_grad(op, g_y, g_mean, g_var, *unused):
    x, scale, _, mean, var = op.inputs
    eps, factor, data_format, training = nc.settings(op.attrs)
    dx, dscale, doffset = norm_grad_ops.fused_batch_norm_grad_v3(
        g_y, x, scale, *op.outputs[3:6], epsilon=eps, data_format=data_format,
        is_training=training)[:3]
    u = scale.dtype
    if not training:   # y = (x - mean) * scale * r + offset, r = 1 / sqrt(variance + eps)
        r = math_unary.rsqrt(var + eps)
        dmean = -doffset * scale * r + g_mean
        dvar = dscale * scale * r * r * -0.5 + g_var
        return [dx, dscale, doffset, dmean, dvar]
    stats = []
    if factor != 0 and not _is_zero(g_mean):   # batch mean = sum(x) / n
        count = math_cast.cast(shape_ops.size(x), u) / math_cast.cast(shape_ops.size(scale), u)
        stats.append(_per_channel(g_mean * factor / count, x, data_format))
    if factor != 0 and not _is_zero(g_var):    # unbiased variance = sum((x - m)^2) / (n - 1)
        count = math_cast.cast(shape_ops.size(x), u) / math_cast.cast(shape_ops.size(scale), u)
        denominator = math_binary.maximum(count - 1.0, 1.0)
        centered = x - math_cast.cast(_per_channel(op.outputs[3], x, data_format), x.dtype)
        stats.append(centered * math_cast.cast(
            _per_channel(g_var * (2.0 * factor) / denominator, x, data_format), x.dtype))
    for term in stats:
        dx = dx + math_cast.cast(term, x.dtype)
    blended = factor != 1.0
    dmean = g_mean * (1.0 - factor) if blended and not _is_zero(g_mean) else None
    dvar = g_var * (1.0 - factor) if blended and not _is_zero(g_var) else None
    return [dx, dscale, doffset, dmean, dvar]


# --- lowering ------------------------------------------------------------------------------------


def _lower_batch_norm(ctx, op, inputs):
    require_real(op)
    eps, factor, data_format, training = nc.settings(op.attrs)
    x, scale, offset, mean, var = inputs
    u, k = scale.dtype, nc.Channels(x, data_format, nc.accumulator(x.dtype))
    vectors = [(scale, "scale"), (offset, "offset")]
    if not nc.stats_optional(op.attrs):
        vectors += [(mean, "mean"), (var, "variance")]
    nc.require_channels(ctx, k, vectors, op.type)
    if training:
        n = cast(k.count, k.acc)
        total = k.sum(lambda idx: k.load(x, idx))
        m = k.vector(lambda c: k.op(S.DIV, k.at(total, c), n))
        squares = k.sum(lambda idx: nc.square(k, k.op(S.SUB, k.load(x, idx),
                                                        k.at(m, idx[k.axis]))))
        v = k.vector(lambda c: k.op(S.DIV, k.at(squares, c), n))
        wide = _dtypes.float64   # n / (n - 1) rounded once, as the reference kernel does
        ratio = cast(ir.make(S.DIV, wide, (cast(k.count, wide), cast(
            lx.maximum(lx.sub(k.count, 1), 1), wide))), k.acc)
        blend = (lambda given, batch: batch) if factor == 1.0 else (
            lambda given, batch: k.op(S.ADD, k.op(S.MUL, k.const(1 - factor), given),
                                      k.op(S.MUL, k.const(factor), batch)))
        out_mean = k.vector(lambda c: blend(k.at(mean, c) if factor != 1.0 else None,
                                            k.at(m, c)))
        out_var = k.vector(lambda c: blend(k.at(var, c) if factor != 1.0 else None,
                                           k.op(S.MUL, k.at(v, c), ratio)))
    else:
        m, v, out_mean, out_var = mean, var, mean, var
    inv = k.vector(lambda c: k.op(S.DIV, k.at(scale, c), k.op(
        S.SQRT, k.op(S.ADD, k.at(v, c), k.const(eps)))))
    y = k.elementwise(lambda idx, c: k.op(S.ADD, k.op(S.MUL, k.op(
        S.SUB, k.load(x, idx), k.at(m, c)), k.at(inv, c)), k.at(offset, c)), x.dtype)
    return [y] + [cast_node(t, u) for t in (out_mean, out_var, m, v)] + [nc.empty(u)]


FUSED_BATCH_NORM_V3 = OpDef(
    "FusedBatchNormV3", _batch_norm_infer, _batch_norm_kernel, gradient=_batch_norm_grad,
    lower=_lower_batch_norm, doc="Batch normalization of each channel (six outputs).")


# --- functions ---------------------------------------------------------------------------------


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, name=None,
                     exponential_avg_factor=1.0):
    """(y, batch_mean, batch_variance) of FusedBatchNormV3 (see the module docstring);
    `mean`/`variance` may be None when training without blending."""
    graph = graph_for((x, scale, offset, mean, variance))
    with graph.as_default():
        x = to_tensor(x, name="x")
        scale = to_tensor(scale, name="scale")
        offset = to_tensor(offset, dtype=scale.dtype, name="offset")
        if mean is None or variance is None:
            if not is_training or exponential_avg_factor != 1.0:
                raise ValueError("fused_batch_norm: both mean and variance must be 1-D "
                                 "tensors when is_training is False or "
                                 "exponential_avg_factor != 1.0.")
            mean = np.zeros(0, scale.dtype.np_dtype)
            variance = np.zeros(0, scale.dtype.np_dtype)
        mean = to_tensor(mean, dtype=scale.dtype, name="mean")
        variance = to_tensor(variance, dtype=scale.dtype, name="variance")
        attrs = {"epsilon": nc.float_attr(epsilon), "data_format": data_format,
                 "is_training": bool(is_training),
                 "exponential_avg_factor": nc.float_attr(exponential_avg_factor)}
        op = make_op(FUSED_BATCH_NORM_V3, [x, scale, offset, mean, variance], attrs,
                     name or "FusedBatchNormV3")
    return op.outputs[0], op.outputs[1], op.outputs[2]


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) * scale / sqrt(variance + variance_epsilon) + offset, broadcasting
    (TensorFlow's composition: x * inv + (offset - mean * inv), inv = scale * rsqrt(...));
    `offset` and `scale` may be None."""
    graph = graph_for((x, mean, variance, offset, scale))
    with graph.as_default(), graph.name_scope(name or "batchnorm"):
        x = to_tensor(x, name="x")

        def operand(value, what):   # tensors keep their dtype, other values take x's
            is_tensor = isinstance(value, Tensor) or hasattr(value, "_as_graph_tensor")
            return to_tensor(value, dtype=None if is_tensor else x.dtype, name=what)

        mean, variance = operand(mean, "mean"), operand(variance, "variance")
        scale = operand(scale, "scale") if scale is not None else None
        offset = operand(offset, "offset") if offset is not None else None
        inv = math_unary.rsqrt(variance + variance_epsilon)
        if scale is not None:
            inv = inv * scale
        shift = offset - mean * inv if offset is not None else -mean * inv
        return x * math_cast.cast(inv, x.dtype) + math_cast.cast(shift, x.dtype)


OP_DEFS = (FUSED_BATCH_NORM_V3,)
