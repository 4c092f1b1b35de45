"""Selection and clipping: Select and SelectV2 (`where`, `where_v2`), Where (coordinates of
true elements) and ClipByValue (`clip_by_value`).

`where` is TensorFlow 1.x's: op Select, whose x and y have one shape and whose condition
has that shape too, is a scalar, or is a vector choosing whole rows (x's first dimension).
`where_v2` is op SelectV2, broadcasting condition, x and y together.  Select is not marked
ELEMENTWISE (a vector condition indexes rows, not NumPy broadcasting); SelectV2 is.  With
neither x nor y, both return the int64 coordinates of true (non-zero) elements, shape
[N, rank] (op Where).  ClipByValue computes max(min(t, clip_value_max), clip_value_min),
like TensorFlow 1.x's composite, so a minimum above the maximum gives the minimum and NaN
stays NaN; the bounds must broadcast to t's shape without enlarging it.  Gradients send the
output gradient to the chosen operand (summed back over broadcasting); the condition and
Where's integer output have none.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir import Scalar as S
from ..compiler.core.ir_build import NotLowerable, load_broadcast
from ..compiler.core.shapes import broadcast_shape, unknown_shape
from ..errors import InvalidArgumentError
from . import fill_ops, math_binary, math_compare, math_unary, sum_to_shape
from .builder import REALS, binary_operands, check_dtype, check_same_dtype, graph_for, make_op
from .builder import to_tensor
from .lower_util import elementwise_lowering, require_real
from .registry import OpDef, Trait

__all__ = ["where", "where_v2", "clip_by_value"]


def _op_of(ctx):
    return ctx.op if ctx is not None else None


def _shape_list(a) -> str:
    return str(list(a.shape))


# --- SelectV2 ------------------------------------------------------------------------------


def _select_infer(op):
    cond, t, e = op.inputs
    check_dtype(cond, (_dtypes.bool_,), "condition")
    check_same_dtype([t, e], ["t", "e"])
    return [(t.dtype, broadcast_shape(broadcast_shape(cond.shape, t.shape), e.shape))]


def _select_kernel(ctx, inputs, attrs):
    cond, t, e = inputs
    try:
        np.broadcast_shapes(cond.shape, t.shape, e.shape)
    except ValueError:
        raise InvalidArgumentError(
            None, _op_of(ctx), f"condition {_shape_list(cond)}, then {_shape_list(t)}, and "
                               f"else {_shape_list(e)} must be broadcastable") from None
    return [np.asarray(np.where(cond, t, e), dtype=t.dtype)]


def _mask(cond, g):
    """g where cond holds, else 0 (cond broadcasts against g)."""
    return where_v2(cond, g, fill_ops.zeros_like(g))


def _select_v2_grad(op, g):
    cond, t, e = op.inputs
    return [None, sum_to_shape.sum_to_shape(_mask(cond, g), t),
            sum_to_shape.sum_to_shape(_mask(math_unary.logical_not(cond), g), e)]


def _select_ir(dt, c, t, e):
    return ir.make(S.SELECT, dt, (c, t, e))


SELECT_V2 = OpDef("SelectV2", _select_infer, _select_kernel, traits={Trait.ELEMENTWISE},
                  gradient=_select_v2_grad, lower=elementwise_lowering(_select_ir),
                  doc="condition ? t : e, broadcasting all three")

# --- Where (coordinates of true elements) --------------------------------------------------


def _where_infer(op):
    x = op.inputs[0]
    check_dtype(x, (_dtypes.bool_, *_dtypes.NUMERIC_DTYPES), "input")
    return [(_dtypes.int64, unknown_shape(2) if x.shape.ndims is None
             else [None, x.shape.ndims])]


def _where_kernel(ctx, inputs, attrs):
    return [np.asarray(np.argwhere(inputs[0]), dtype=np.int64)]


WHERE = OpDef("Where", _where_infer, _where_kernel,
              doc="int64 [N, rank] coordinates of the true (non-zero) elements")


# --- Select (TensorFlow 1.x where) ---------------------------------------------------------


def _select_v1_infer(op):
    cond, t, e = op.inputs
    check_dtype(cond, (_dtypes.bool_,), "condition")
    check_same_dtype([t, e], ["t", "e"])
    if not t.shape.is_compatible_with(e.shape):
        raise ValueError(f"x and y of where (Select) must have one shape, got {t.shape} and "
                         f"{e.shape}; use where_v2 to broadcast them.")
    out = t.shape.merge_with(e.shape)
    rank, crank = out.ndims, cond.shape.ndims
    if rank is None or crank is None or crank == 0:
        return [(t.dtype, out)]
    if crank == 1 and rank > 1:
        if not cond.shape[0].is_compatible_with(out[0]):
            raise ValueError(f"A vector condition of where (Select) chooses rows: its length "
                             f"{cond.shape[0]} must equal x's first dimension {out[0]}.")
        return [(t.dtype, out)]
    if not cond.shape.is_compatible_with(out):
        raise ValueError(f"The condition of where (Select) must be a scalar, a vector of "
                         f"x's first dimension, or of x's shape {out}; got {cond.shape}. "
                         "Use where_v2 to broadcast.")
    return [(t.dtype, out.merge_with(cond.shape))]


def _select_v1_kernel(ctx, inputs, attrs):
    cond, t, e = inputs
    if t.shape != e.shape:
        raise InvalidArgumentError(
            None, _op_of(ctx), f"Inputs to operation Select must have the same size and shape."
                               f"  Input 1: {_shape_list(t)} != input 2: {_shape_list(e)}")
    if cond.ndim == 0:
        return [t if cond else e]
    if cond.shape == t.shape:
        return [np.asarray(np.where(cond, t, e), dtype=t.dtype)]
    if cond.ndim == 1 and t.ndim == 0:
        raise InvalidArgumentError(None, _op_of(ctx), "'then' must be at least a vector, but "
                                                      "saw shape: []")
    if cond.ndim == 1:
        if cond.shape[0] != t.shape[0]:
            raise InvalidArgumentError(
                None, _op_of(ctx), f"Number of batches of 'then' must match size of 'cond', "
                                   f"but saw: {t.shape[0]} vs. {cond.shape[0]}")
        rows = cond.reshape((-1,) + (1,) * (t.ndim - 1))
        return [np.asarray(np.where(rows, t, e), dtype=t.dtype)]
    raise InvalidArgumentError(
        None, _op_of(ctx), f"Inputs to operation Select must have the same size and shape.  "
                           f"Input 0: {_shape_list(cond)} != input 1: {_shape_list(t)}")


def _select_grad(op, g):
    cond = op.inputs[0]
    zeros = fill_ops.zeros_like(g)
    return [None, where(cond, g, zeros), where(cond, zeros, g)]


def _lower_select(ctx, op, inputs):
    """TF1 Select: t and e of one shape; the condition a scalar, t's shape, or (for t of
    rank > 1) a vector choosing rows."""
    require_real(op)
    cond, t, e = inputs
    if len(t.shape) != len(e.shape):
        raise NotLowerable("Select of t and e with different ranks")
    same = "Inputs to operation Select must have the same size and shape"
    for a, b in zip(t.shape, e.shape):
        ctx.check_equal(a, b, same)
    shape = [b if ir.is_const(b) else a for a, b in zip(t.shape, e.shape)]
    axes = ir.axis_vars(len(shape))
    if not cond.shape:
        c = ir.load(cond, ())
    elif len(cond.shape) == 1 and len(shape) > 1:
        ctx.check_equal(cond.shape[0], shape[0], "Number of batches of 'then' must match "
                                                 "size of 'cond'")
        c = ir.load(cond, axes[:1])
    elif len(cond.shape) == len(shape):
        for a, b in zip(cond.shape, shape):
            ctx.check_equal(a, b, same)
        c = ir.load(cond, axes)
    else:
        raise NotLowerable("Select with a condition of another rank")
    body = ir.make(S.SELECT, t.dtype, (c, ir.load(t, axes), ir.load(e, axes)))
    return [ir.compute(t.dtype, shape, axes, body)]


SELECT = OpDef("Select", _select_v1_infer, _select_v1_kernel, gradient=_select_grad,
               lower=_lower_select,
               doc="condition ? t : e; a vector condition selects rows of t and e")


def _coordinates(condition, name) -> Tensor:
    condition = to_tensor(condition, graph=graph_for((condition,)), name="condition")
    return make_op(WHERE, [condition], {"T": condition.dtype}, name or "Where").outputs[0]


def _select(op_def: OpDef, condition, x, y, name) -> Tensor:
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    graph = graph_for((condition, x, y))
    x, y = binary_operands(x, y, op_def.name, ("t", "e"))
    condition = to_tensor(condition, dtype=_dtypes.bool_, graph=graph, name="condition")
    return make_op(op_def, [condition, x, y], {"T": x.dtype}, name or op_def.name).outputs[0]


def where(condition, x=None, y=None, name: str | None = None) -> Tensor:
    """TensorFlow 1.x `where`: elements of `x` where `condition` is true, else of `y` (op
    Select).  `x` and `y` must have one shape; `condition` has that shape, is a scalar, or
    is a vector that picks whole rows (slices along x's first dimension).  With neither `x`
    nor `y`: the int64 [N, rank] coordinates of the true elements, row-major (op Where).
    """
    if x is None and y is None:
        return _coordinates(condition, name)
    return _select(SELECT, condition, x, y, name)


def where_v2(condition, x=None, y=None, name: str | None = None) -> Tensor:
    """Elements of `x` where `condition` is true, else of `y`, with `condition`, `x` and `y`
    broadcast together (op SelectV2).  With neither `x` nor `y`: as `where`."""
    if x is None and y is None:
        return _coordinates(condition, name)
    return _select(SELECT_V2, condition, x, y, name)


# --- ClipByValue ---------------------------------------------------------------------------


def _clip_infer(op):
    t, lo, hi = op.inputs
    check_dtype(t, REALS, "t")
    check_same_dtype([t, lo, hi], ["t", "clip_value_min", "clip_value_max"])
    full = broadcast_shape(broadcast_shape(t.shape, lo.shape), hi.shape)
    if not full.is_compatible_with(t.shape):
        raise ValueError(f"clip_value_min {lo.shape} and clip_value_max {hi.shape} must "
                         f"broadcast to t's shape {t.shape}, but together they give {full}.")
    return [(t.dtype, t.shape.merge_with(full))]


def _clip_kernel(ctx, inputs, attrs):
    t, lo, hi = inputs
    try:
        full = np.broadcast_shapes(t.shape, lo.shape, hi.shape)
    except ValueError:
        full = None
    if full != t.shape:
        raise InvalidArgumentError(
            None, _op_of(ctx), f"clip_value_min {_shape_list(lo)} and clip_value_max "
                               f"{_shape_list(hi)} must broadcast to t's shape "
                               f"{_shape_list(t)}")
    return [np.asarray(np.maximum(np.minimum(t, hi), lo), dtype=t.dtype)]


def _clip_by_value_grad(op, g):
    # z = max(m, lo) with m = min(t, hi): d/dt = [m >= lo][t <= hi], d/dhi = [m >= lo][t > hi],
    # d/dlo = [m < lo]; ties go to t, then to m, matching the kernel's choice of value.
    t, lo, hi = op.inputs
    m = math_binary.minimum(t, hi)
    above_lo = m >= lo
    return [_mask(math_compare.logical_and(above_lo, t <= hi), g),
            sum_to_shape.sum_to_shape(_mask(math_unary.logical_not(above_lo), g), lo),
            sum_to_shape.sum_to_shape(_mask(math_compare.logical_and(above_lo, t > hi), g), hi)]


def _lower_clip(ctx, op, inputs):
    """max(min(t, hi), lo) with NaN-propagating min/max, as the reference kernel; the bounds
    broadcast to t's shape and may not enlarge it."""
    require_real(op)
    t, lo, hi = inputs
    rank = len(t.shape)
    for bound in (lo, hi):
        if len(bound.shape) > rank:
            raise NotLowerable("clip bounds of a higher rank than t")
        for k, d in enumerate(bound.shape):
            if not ir.is_const(d, 1):
                ctx.check_equal(d, t.shape[rank - len(bound.shape) + k],
                                "clip_value_min and clip_value_max must broadcast to t's shape")
    axes = ir.axis_vars(rank)
    dt = t.dtype
    low = ir.make(S.MIN, dt, (ir.load(t, axes), load_broadcast(hi, axes)))
    return [ir.compute(dt, t.shape, axes, ir.make(S.MAX, dt, (low, load_broadcast(lo, axes))))]


CLIP_BY_VALUE = OpDef("ClipByValue", _clip_infer, _clip_kernel, traits={Trait.ELEMENTWISE},
                      gradient=_clip_by_value_grad, lower=_lower_clip,
                      doc="max(min(t, clip_value_max), clip_value_min)")


def clip_by_value(t, clip_value_min, clip_value_max, name: str | None = None) -> Tensor:
    """`t` with values below `clip_value_min` raised to it and above `clip_value_max`
    lowered to it.  The bounds take t's dtype (strict typing) and must broadcast to t's
    shape; NaN stays NaN; if the minimum exceeds the maximum the result is the minimum."""
    t, lo = binary_operands(t, clip_value_min, "ClipByValue", ("t", "clip_value_min"))
    t, hi = binary_operands(t, clip_value_max, "ClipByValue", ("t", "clip_value_max"))
    return make_op(CLIP_BY_VALUE, [t, lo, hi], {"T": t.dtype},
                   name or "clip_by_value").outputs[0]


OP_DEFS = (SELECT, SELECT_V2, WHERE, CLIP_BY_VALUE)
