"""Shared pieces for lowering reductions and last-axis (row) softmax-style ops to kernel IR.

Holds the lowerings of the reductions (reduction_ops.py, arg_ops.py: Sum, Mean, Max, ...,
ArgMax; given to their OpDefs there) and the pieces the lowerings of activation_ops.py
(Softmax, LogSoftmax) and loss_ops.py (L2Loss, the cross entropies) share.  Conventions
kept so the ops agree with their kernels:

- float16 values are computed (and summed) in float32 and rounded back once, at the end;
- reduction axes are static (NotLowerable otherwise), normalized and deduplicated;
- `RowSoftmax` builds the three row-wise pieces — a MAX reduce, an ADD reduce whose body
  is exp(x - max), and the per-element expressions reading both at the row's index — so
  the scheduler puts max, sum and the consumer in one loop nest over rows.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.ir import Combiner, Expr, Node
from ..compiler.core.ir import Scalar as S
from ..compiler.core.ir_build import cast, load_broadcast, reduce_axes
from ..compiler.core.ir_build import NotLowerable
from .lower_util import require_real


def compute_dtype(dtype):
    """The dtype values are computed in: float32 for float16 (as the kernels do), else dtype."""
    return _dtypes.float32 if dtype is _dtypes.float16 else dtype


def static_axes(ctx, tensor, rank: int) -> list:
    """The sorted, distinct, non-negative axes held in the static int tensor `tensor`."""
    out = set()
    for a in np.asarray(ctx.static(tensor, "reduction axes")).reshape(-1):
        a = int(a)
        if not -rank <= a < rank:
            raise NotLowerable(f"axis {a} is out of range for rank {rank}")
        out.add(a % rank)
    return sorted(out)


def product(dims) -> Expr:
    """The int64 product of size Exprs (1 for none)."""
    out = ir.index(1)
    for d in dims:
        out = d if ir.is_const(out, 1) else ir.make(S.MUL, ir.INDEX, (out, d))
    return out


def cast_node(node: Node, dtype) -> Node:
    """`node` converted elementwise to `dtype` (the node itself when already of it)."""
    dtype = _dtypes.as_dtype(dtype)
    if node.dtype is dtype:
        return node
    axes = ir.axis_vars(len(node.shape))
    return ir.compute(dtype, node.shape, axes, cast(load_broadcast(node, axes), dtype))


def require_nonzero(ctx, size: Expr, message: str):
    """Require a size to be non-zero at run time (NotLowerable when it is statically 0, so
    the reference kernel reports the error)."""
    if ir.is_const(size):
        if size.attr == 0:
            raise NotLowerable(message)
        return
    ctx.checks.append((ir.make(S.NE, _dtypes.bool_, (size, ir.index(0))), message))


def reduction_lowering(combiner: Combiner):
    """A lowering for Sum/Prod/Max/Min/Any/All(input, axes) with attr keep_dims."""

    def lower(ctx, op, inputs):
        require_real(op)
        x = inputs[0]
        axes = static_axes(ctx, op.inputs[1], len(x.shape))
        if not axes:
            return [x]  # reducing over no axes is the identity
        acc = compute_dtype(x.dtype) if combiner in (Combiner.ADD, Combiner.MUL) else x.dtype
        total = reduce_axes(x, axes, op.get_attr("keep_dims"), combiner, acc,
                            lambda e: cast(e, acc))
        return [cast_node(total, x.dtype)]

    return lower


def lower_mean(ctx, op, inputs):
    """The lowering of Mean.  Float: the sum (float16's in float32, rounded to float16)
    divided by the count.  Integer: the 64-bit sum divided by the count, truncated toward
    zero (0 for an empty reduction), as the reference kernel."""
    require_real(op)
    x = inputs[0]
    axes = static_axes(ctx, op.inputs[1], len(x.shape))
    if not axes:
        return [x]
    dt = x.dtype
    wide = compute_dtype(dt) if dt.is_floating else \
        (_dtypes.uint64 if dt.is_unsigned else _dtypes.int64)
    total = reduce_axes(x, axes, op.get_attr("keep_dims"), Combiner.ADD, wide,
                        lambda e: cast(e, wide))
    count = product([x.shape[k] for k in axes])
    out_axes = ir.axis_vars(len(total.shape))
    s = load_broadcast(total, out_axes)  # index 0 on kept (size-1) axes
    if dt.is_floating:
        s = cast(cast(s, dt), wide)  # the sum is rounded to the input dtype first
        body = ir.make(S.DIV, wide, (s, cast(count, wide)))
    else:
        c = cast(ir.make(S.MAX, ir.INDEX, (count, ir.index(1))), wide)
        body = ir.make(S.FLOORDIV, wide, (s, c))
        if not dt.is_unsigned:  # floor -> truncation: add 1 to negative inexact quotients
            inexact = ir.make(S.NE, _dtypes.bool_, (ir.make(S.MOD, wide, (s, c)),
                                                     ir.const(0, wide)))
            negative = ir.make(S.LT, _dtypes.bool_, (s, ir.const(0, wide)))
            up = ir.make(S.AND, _dtypes.bool_, (inexact, negative))
            body = ir.make(S.ADD, wide, (body, cast(up, wide)))
    mean = ir.compute(wide, total.shape, out_axes, body)
    return [cast_node(mean, dt)]


def arg_lowering(combiner: Combiner):
    """A lowering for ArgMax/ArgMin(input, dimension) with attr output_type.

    NaNs are replaced by -inf (ArgMax) or +inf (ArgMin) in the body, so the accumulator
    keeps the first strict extreme, as the reference kernel's NumPy argmax of that array."""

    def lower(ctx, op, inputs):
        require_real(op)
        x = inputs[0]
        rank = len(x.shape)
        if rank == 0:
            raise NotLowerable("arg max/min of a scalar")
        dim = np.asarray(ctx.static(op.inputs[1], "dimension")).reshape(-1)
        if dim.size != 1 or not -rank <= int(dim[0]) < rank:
            raise NotLowerable("dimension out of range")
        axis = int(dim[0]) % rank
        require_nonzero(ctx, x.shape[axis], f"Reduction axis {axis} is empty in the input "
                                            f"of {op.type}.")
        def skip_nan(e):
            if not x.dtype.is_floating:
                return e
            fill = ir.const(-np.inf if combiner is Combiner.ARGMAX else np.inf, x.dtype)
            return ir.make(S.SELECT, x.dtype, (ir.make(S.ISNAN, _dtypes.bool_, (e,)), fill, e))

        return [reduce_axes(x, [axis], False, combiner, op.get_attr("output_type"), skip_nan)]

    return lower


class RowSoftmax:
    """The pieces of a softmax over the last axis of `x`, in the compute dtype.

    `top` (REDUCE MAX) and `total` (REDUCE ADD of exp(x - top)) keep the last axis as size
    1.  `shifted(idx)` is x[idx] - top[row] and `log_total(idx)` is log(total[row]), for a
    full index `idx` into x; log-probabilities are shifted - log_total, as in the kernels.
    """

    def __init__(self, x: Node):
        if not x.shape:
            raise NotLowerable("softmax of a scalar")
        self.x = x
        self.dtype = compute_dtype(x.dtype)
        last = len(x.shape) - 1
        self.top = reduce_axes(x, [last], True, Combiner.MAX, self.dtype,
                               lambda e: cast(e, self.dtype))
        self.total = reduce_axes(x, [last], True, Combiner.ADD, self.dtype,
                                 lambda e: self.op(S.EXP, self.shifted(e.args)))

    def op(self, kind: S, *args: Expr) -> Expr:
        return ir.make(kind, self.dtype, args)

    def value(self, idx) -> Expr:
        return cast(ir.load(self.x, idx), self.dtype)

    def _row(self, node: Node, idx) -> Expr:
        return ir.load(node, tuple(idx[:-1]) + (ir.index(0),))

    def shifted(self, idx) -> Expr:
        return self.op(S.SUB, self.value(idx), self._row(self.top, idx))

    def log_total(self, idx) -> Expr:
        return self.op(S.LOG, self._row(self.total, idx))

    def log_prob(self, idx) -> Expr:
        return self.op(S.SUB, self.shifted(idx), self.log_total(idx))
