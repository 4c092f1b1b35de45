"""MaxPoolWithArgmax (TensorFlow's op type and attrs) and the public `max_pool_with_argmax`.

MaxPoolWithArgmax(input) -> (output, argmax): output is MaxPool's (NHWC only, padding SAME
or VALID, pool_windows.py's conventions), argmax the flattened position of each window's
first maximum (row-major over the window, as TensorFlow's ties): (y * width + x) *
channels + c, or ((b * height + y) * width + x) * channels + c with
`include_batch_in_index`; `Targmax` int64 (default) or int32.  The gradient goes to those
positions: it is MaxPoolGrad's, which picks the same maximum (TensorFlow builds
MaxPoolGradWithArgmax, which gives the same values).  Lowered to MaxPool's MAX REDUCE and
the ARGMAX REDUCE of the first maxima, turned into positions by index arithmetic.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.ir_build import NotLowerable, cast
from . import pool_grad_ops
from . import lower_index as lx
from . import lower_window as lw
from . import pool_windows as pw
from .array_common import check_rank, runtime_error
from .builder import REALS, check_dtype, graph_for, make_op, to_tensor
from .lower_util import require_real
from .registry import OpDef

__all__ = ["max_pool_with_argmax"]

_TYPES = tuple(t for t in REALS if t is not _dtypes.bool_)
_ARGMAX_TYPES = (_dtypes.int32, _dtypes.int64)


def _spec(op_type, attrs):
    return pw.PoolSpec.of(op_type, {**attrs, "data_format": "NHWC"}, explicit_ok=False)


def _argmax_dtype(attrs):
    dtype = _dtypes.as_dtype(attrs.get("Targmax", _dtypes.int64))
    if dtype not in _ARGMAX_TYPES:
        raise TypeError(f"MaxPoolWithArgmax: Targmax must be int32 or int64, got {dtype.name}.")
    return dtype


def _infer(op):
    x = op.inputs[0]
    check_dtype(x, _TYPES, "input")
    check_rank(x, 4, "input")
    shape = _spec(op.type, op.attrs).output_shape(x.shape)
    return [(x.dtype, shape), (_argmax_dtype(op.attrs), shape)]


def _kernel(ctx, inputs, attrs):
    spec = _spec("MaxPoolWithArgmax", attrs)
    x = inputs[0]
    if x.ndim != 4:
        raise runtime_error(ctx, f"MaxPoolWithArgmax: input must be 4-dimensional, got shape "
                                 f"{list(x.shape)}")
    geo = pw.run_geometry(ctx, spec, x.shape[1:-1])
    keys = pw.tap_stack(spec, pw.max_key(x), geo, pw.lowest(x.dtype))
    out = np.max(keys, axis=-1, initial=pw.lowest(x.dtype)).astype(x.dtype)
    tap = pw.first_max_taps(spec, x, geo)
    n, h, w, c = x.shape
    rows = np.arange(geo[0][0]).reshape(1, -1, 1, 1) * spec.strides[0] - geo[0][1] \
        + tap // spec.ksize[1]
    cols = np.arange(geo[1][0]).reshape(1, 1, -1, 1) * spec.strides[1] - geo[1][1] \
        + tap % spec.ksize[1]
    flat = (rows * w + cols) * c + np.arange(c)
    if attrs.get("include_batch_in_index", False):
        flat = flat + np.arange(n).reshape(-1, 1, 1, 1) * (h * w * c)
    return [out, flat.astype(_argmax_dtype(attrs).np_dtype)]


def _gradient(op, g, g_argmax=None):
    attrs = {k: op.attrs[k] for k in ("ksize", "strides", "padding")}
    return [pool_grad_ops.max_pool_grad(op.inputs[0], op.outputs[0], g,
                                        {**attrs, "data_format": "NHWC"})]


def _lower(ctx, op, inputs):
    require_real(op)
    x = inputs[0]
    if not x.dtype.is_floating:
        raise NotLowerable("MaxPoolWithArgmax's positions compile for floats")
    g = pw.PoolGeometry.of(ctx, _spec(op.type, op.attrs), x.shape, op.inputs[0])
    shape = g.out_shape(op.outputs[0])
    best = pw.first_max_node(g, x, shape)
    axes = pw.body_axes(shape)
    n, outs, c = g.split(axes)
    _, positions = g.taps(outs, g.window_taps(ir.load(best, axes)))
    height, width = g.in_sizes
    flat = lx.add(lx.mul(lx.add(lx.mul(positions[0], width), positions[1]), g.channels), c)
    if op.attrs.get("include_batch_in_index", False):
        flat = lx.add(flat, lx.mul(n, lx.product((height, width, g.channels))))
    dtype = _argmax_dtype(op.attrs)
    argmax = ir.compute(dtype, shape, ir.axis_vars(4), cast(flat, dtype))
    return [pw.max_node(g, x, shape), argmax]


MAX_POOL_WITH_ARGMAX = OpDef("MaxPoolWithArgmax", _infer, _kernel, gradient=_gradient,
                             lower=_lower,
                             doc="MaxPool and the flattened position of each maximum.")


def max_pool_with_argmax(input, ksize, strides, padding, data_format="NHWC", Targmax=None,
                         name=None, output_dtype=None, include_batch_in_index=False) -> tuple:
    """(MaxPool of a 4-D NHWC `input`, the flattened position of each window's first
    maximum); `ksize`/`strides` an int or 1, 2 or 4 ints, `padding` "SAME" or "VALID"."""
    if data_format != "NHWC":
        raise ValueError(f"max_pool_with_argmax supports only NHWC, got {data_format!r}.")
    if Targmax is not None and output_dtype is not None and Targmax != output_dtype:
        raise ValueError("give only one of Targmax and output_dtype.")
    layout = lw.Layout.of("NHWC", "MaxPoolWithArgmax")
    attrs = {"ksize": lw.sequence_arg(ksize, 2, layout, "ksize"),
             "strides": lw.sequence_arg(strides, 2, layout, "strides"), "padding": padding,
             "Targmax": _dtypes.as_dtype(Targmax or output_dtype or _dtypes.int64),
             "include_batch_in_index": bool(include_batch_in_index)}
    graph = graph_for((input,))
    with graph.as_default():
        x = to_tensor(input, name="input")
        op = make_op(MAX_POOL_WITH_ARGMAX, [x], attrs, name or "MaxPoolWithArgmax")
    return op.outputs[0], op.outputs[1]


OP_DEFS = (MAX_POOL_WITH_ARGMAX,)
