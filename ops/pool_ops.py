"""Pooling: MaxPool and AvgPool (TensorFlow's op types and attrs).

MaxPool(input): out[n, oh, ow, c] = the maximum of input[n, oh * sh + kh - top, ow * sw +
kw - left, c] over the window taps (kh, kw) inside the input; AvgPool: their average.
Attrs: `ksize` and `strides` (one per input dim, 1 on batch and channels), `padding` SAME /
VALID (MaxPool also EXPLICIT, with `explicit_paddings`: a (before, after) pair per dim,
each smaller than the window), `data_format` NHWC or NCHW.  The window conventions (NaN
counts as -inf in a maximum; SAME averages only the elements inside the input) are
pool_windows.py's.  MaxPool takes the real types, AvgPool floats (float16 summed in
float32).

Gradients are the ops of pool_grad_ops.py (MaxPoolGrad, AvgPoolGrad).  Lowerings: one
REDUCE per op over the window taps (MAX; ADD then a division by the tap count), bounds
checked by a SELECT where padding is possible.  Public functions (TensorFlow 1.x/2.x
signatures): `max_pool`, `max_pool2d`, `avg_pool`, `avg_pool2d`, `max_pool1d`,
`avg_pool1d` (a 2-D pool over an inserted size-1 dim, as TensorFlow builds them) and
`pool` (MAX or AVG windows of 1 or 2 dims, without dilation).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir import Combiner
from ..compiler.core.ir import Scalar as S
from ..compiler.core.ir_build import NotLowerable
from . import pool_grad_ops, rearrange_ops, shape_ops
from . import lower_index as lx
from . import lower_window as lw
from . import pool_windows as pw
from .array_common import check_rank, runtime_error
from .builder import FLOATS, REALS, check_dtype, graph_for, make_op, to_tensor
from .lower_reduce import cast_node, compute_dtype
from .lower_util import require_real
from .registry import OpDef

__all__ = ["max_pool", "max_pool2d", "avg_pool", "avg_pool2d", "max_pool1d", "avg_pool1d",
           "pool"]

_MAX_TYPES = tuple(t for t in REALS if t is not _dtypes.bool_)


def _infer(allowed, explicit_ok):
    def infer(op):
        x = op.inputs[0]
        check_dtype(x, allowed, "input")
        check_rank(x, 4, "input")
        spec = pw.PoolSpec.of(op.type, op.attrs, explicit_ok)
        return [(x.dtype, spec.output_shape(x.shape))]

    return infer


def _checked_input(ctx, spec, x):
    if x.ndim != 4:
        raise runtime_error(ctx, f"{spec.op_type}: input must be 4-dimensional, got shape "
                                 f"{list(x.shape)}")
    x_last = spec.layout.to_channels_last(x)
    return x_last, pw.run_geometry(ctx, spec, x_last.shape[1:-1])


def _max_pool_kernel(ctx, inputs, attrs):
    spec = pw.PoolSpec.of("MaxPool", attrs)
    x_last, geo = _checked_input(ctx, spec, inputs[0])
    keys = pw.tap_stack(spec, pw.max_key(x_last), geo, pw.lowest(x_last.dtype))
    out = np.max(keys, axis=-1, initial=pw.lowest(x_last.dtype))
    return [np.ascontiguousarray(spec.layout.from_channels_last(out.astype(x_last.dtype)))]


def avg_pool_values(spec, x_last, geo):
    """[N, *out, C]: the average of each window's inputs inside the input (float16 summed
    in float32), in the input's dtype."""
    acc = np.float32 if x_last.dtype == np.float16 else x_last.dtype
    taps = pw.tap_stack(spec, x_last.astype(acc), geo, 0)
    total = np.zeros(taps.shape[:-1], acc)
    for j in range(taps.shape[-1]):   # tap by tap, in the lowering's order
        total += taps[..., j]
    counts = pw.inside_mask(spec, x_last.shape[1:-1], geo).sum(-1)
    return (total / counts.astype(acc)).astype(x_last.dtype)


def _avg_pool_kernel(ctx, inputs, attrs):
    spec = pw.PoolSpec.of("AvgPool", attrs, explicit_ok=False)
    x_last, geo = _checked_input(ctx, spec, inputs[0])
    out = avg_pool_values(spec, x_last, geo)
    return [np.ascontiguousarray(spec.layout.from_channels_last(out))]


# --- gradients -----------------------------------------------------------------------------------


def _max_pool_grad(op, g):
    return [pool_grad_ops.max_pool_grad(op.inputs[0], op.outputs[0], g, pw.op_attrs(op))]


def _avg_pool_grad(op, g):
    return [pool_grad_ops.avg_pool_grad(shape_ops.shape(op.inputs[0]), g, pw.op_attrs(op))]


# --- lowerings ---------------------------------------------------------------------------------


def _geometry(ctx, op, x, explicit_ok=True):
    require_real(op)
    spec = pw.PoolSpec.of(op.type, op.attrs, explicit_ok)
    return pw.PoolGeometry.of(ctx, spec, x.shape, op.inputs[0])


def _lower_max_pool(ctx, op, inputs):
    x = inputs[0]
    g = _geometry(ctx, op, x)
    return [pw.max_node(g, x, g.out_shape(op.outputs[0]))]


def avg_pool_node(g: pw.PoolGeometry, x, shape):
    """The AvgPool of node `x` (of shape `shape` pooled): the window sums in the compute
    dtype divided by the tap counts, in x's dtype."""
    dtype = compute_dtype(x.dtype)
    axes = pw.body_axes(shape)
    n, outs, c = g.split(axes)
    taps = tuple(ir.reduce_var(j) for j in range(len(outs)))
    cond, positions = g.taps(outs, taps)
    body = lx.select(cond, pw.value(g.load(x, n, positions, c), dtype), ir.const(0, dtype))
    total = ir.reduce(dtype, shape, ir.axis_vars(len(shape)), taps,
                      tuple(ir.index(k) for k in g.spec.ksize), body, Combiner.ADD)
    count = pw.value(g.count(outs), dtype)
    mean = ir.make(S.DIV, dtype, (ir.load(total, axes), count))
    return cast_node(ir.compute(dtype, shape, ir.axis_vars(len(shape)), mean), x.dtype)


def _lower_avg_pool(ctx, op, inputs):
    x = inputs[0]
    if not x.dtype.is_floating:
        raise NotLowerable(f"AvgPool on {x.dtype.name}")
    g = _geometry(ctx, op, x, explicit_ok=False)
    return [avg_pool_node(g, x, g.out_shape(op.outputs[0]))]


MAX_POOL = OpDef("MaxPool", _infer(_MAX_TYPES, True), _max_pool_kernel,
                 gradient=_max_pool_grad, lower=_lower_max_pool,
                 doc="The maximum of each pooling window.")
AVG_POOL = OpDef("AvgPool", _infer(FLOATS, False), _avg_pool_kernel,
                 gradient=_avg_pool_grad, lower=_lower_avg_pool,
                 doc="The average of each pooling window (over its taps inside the input).")


# --- public functions --------------------------------------------------------------------------


def _pick(first, second, names: str):
    if first is not None and second is not None:
        raise ValueError(f"give only one of {names}.")
    return first if first is not None else second


def _pool(op_def, value, ksize, strides, padding, data_format, name, n_spatial=2) -> Tensor:
    data_format = data_format or "NHWC"
    if padding is None:
        raise ValueError(f"{op_def.name}: padding must be given ('SAME', 'VALID' or pairs).")
    layout = lw.Layout.of(data_format, op_def.name)
    attrs = {"ksize": lw.sequence_arg(ksize, n_spatial, layout, "ksize"),
             "strides": lw.sequence_arg(strides, n_spatial, layout, "strides"),
             "data_format": data_format}
    attrs["padding"], explicit = lw.padding_arg(padding, layout)
    if op_def is MAX_POOL:
        attrs["explicit_paddings"] = explicit
    elif explicit:
        raise ValueError(f"{op_def.name} does not take explicit padding (got {padding}).")
    if any(k == 0 for k in attrs["ksize"]):
        raise ValueError(f"`ksize` cannot be zero. Received: ksize={attrs['ksize']}")
    graph = graph_for((value,))
    with graph.as_default(), graph.name_scope(name or op_def.name) as scope:
        x = to_tensor(value, name="input")
        return make_op(op_def, [x], attrs, name=scope).outputs[0]


def max_pool(value=None, ksize=None, strides=None, padding=None, data_format="NHWC", name=None,
             input=None) -> Tensor:
    """The maximum of each window of a 4-D `value` (`input`); `ksize`/`strides` an int or 1,
    2 or 4 ints; `padding` "SAME", "VALID" or a (before, after) pair per dimension."""
    return _pool(MAX_POOL, _pick(value, input, "value and input"), ksize, strides, padding,
                 data_format, name)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None) -> Tensor:
    """`max_pool` under TensorFlow 2's name."""
    return _pool(MAX_POOL, input, ksize, strides, padding, data_format, name)


def avg_pool(value=None, ksize=None, strides=None, padding=None, data_format="NHWC", name=None,
             input=None) -> Tensor:
    """The average of each window of a 4-D float `value` (`input`) over its elements inside
    the input; `padding` "SAME" or "VALID"."""
    return _pool(AVG_POOL, _pick(value, input, "value and input"), ksize, strides, padding,
                 data_format, name)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None) -> Tensor:
    """`avg_pool` under TensorFlow 2's name."""
    return _pool(AVG_POOL, input, ksize, strides, padding, data_format, name)


def _pool1d(op_def, input, ksize, strides, padding, data_format, name) -> Tensor:
    """A 1-D pool: ExpandDims to a height of 1, the 2-D pool, Squeeze (TensorFlow's
    construction)."""
    data_format = data_format or "NWC"
    if data_format not in ("NWC", "NCW"):
        raise ValueError(f"{op_def.name} 1-D: data_format must be 'NWC' or 'NCW', got "
                         f"{data_format!r}.")
    layout = lw.Layout.of(data_format, op_def.name, (data_format,))
    ksize = lw.sequence_arg(ksize, 1, layout, "ksize")
    strides = lw.sequence_arg(strides, 1, layout, "strides")
    axis = layout.spatial[0]   # the new height goes before the width
    if not isinstance(padding, str):
        padding = [list(p) for p in padding]
        padding = padding[:axis] + [[0, 0]] + padding[axis:]
    graph = graph_for((input,))
    default = "MaxPool1d" if op_def is MAX_POOL else "AvgPool1D"
    with graph.as_default(), graph.name_scope(name or default) as scope:
        x = rearrange_ops.expand_dims(to_tensor(input, name="input"), axis)
        out = _pool(op_def, x, ksize[:axis] + [1] + ksize[axis:],
                    strides[:axis] + [1] + strides[axis:], padding,
                    "NHWC" if data_format == "NWC" else "NCHW", None)
        return rearrange_ops.squeeze(out, [axis], name=scope)


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None) -> Tensor:
    """The maximum of each window of a 3-D `input` [N, W, C] (NWC) or [N, C, W] (NCW)."""
    return _pool1d(MAX_POOL, input, ksize, strides, padding, data_format, name)


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None) -> Tensor:
    """The average of each window of a 3-D float `input` [N, W, C] (NWC) or [N, C, W]."""
    return _pool1d(AVG_POOL, input, ksize, strides, padding, data_format, name)


def pool(input, window_shape, pooling_type, padding, dilation_rate=None, strides=None,
         name=None, data_format=None, dilations=None) -> Tensor:
    """MAX or AVG pooling over 1 or 2 spatial dims (TensorFlow's `tf.nn.pool`); windows are
    not dilated (a dilation rate other than 1 is a ValueError here)."""
    window_shape = [int(k) for k in np.atleast_1d(window_shape)]
    n = len(window_shape)
    if n not in (1, 2):
        raise ValueError(f"pool: window_shape must have 1 or 2 entries, got {window_shape}.")
    if pooling_type not in ("MAX", "AVG"):
        raise ValueError(f"pool: pooling_type must be 'MAX' or 'AVG', got {pooling_type!r}.")
    rate = _pick(dilation_rate, dilations, "dilation_rate and dilations")
    if rate is not None and any(int(d) != 1 for d in np.atleast_1d(rate)):
        raise ValueError(f"pool: dilation_rate {rate} is not supported (only 1).")
    strides = [1] * n if strides is None else [int(s) for s in np.atleast_1d(strides)]
    if len(strides) != n:
        raise ValueError(f"pool: strides {strides} must have {n} entries, as window_shape.")
    op_def = MAX_POOL if pooling_type == "MAX" else AVG_POOL
    if n == 1:
        return _pool1d(op_def, input, window_shape, strides, padding, data_format, name)
    return _pool(op_def, input, window_shape, strides, padding, data_format, name)


OP_DEFS = (MAX_POOL, AVG_POOL)
