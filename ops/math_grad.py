"""Gradients of the elementwise math ops (math_unary, math_binary, math_ops: Select, ClipByValue).

The op modules are near the size limit, so each op's gradient lives here, in a table next to
nothing else: `GRADIENTS` pairs an OpDef with `fn(op, *output_grads) -> [input grads]`, and
`ops/__init__.py` installs it as `OpDef.gradient` when it registers the ops.  A gradient is
written with the public op functions, so the gradient graph is ordinary ops.

`sum_to_shape(grad, x)` undoes broadcasting: it sums `grad` over the axes along which `x` was
broadcast and reshapes it to x's shape.  When both static shapes are fully known the axes
are computed while building; otherwise from runtime shapes (`shape`, `where` of the size-1
dims), so unknown dimensions and unknown ranks work.  Piecewise-constant ops (Floor, Ceil,
Round, FloorDiv, TruncateDiv) have gradient None; Sign has zeros, as in TensorFlow.
"""

from __future__ import annotations

import math

from . import math_binary as mb
from . import math_ops as mo
from . import math_unary as mu
from .array_ops import ones_like, reshape, zeros_like
from .reduction_ops import reduce_sum
from .shape_ops import shape


def sum_to_shape(grad, x):
    """`grad` (shaped like the broadcast result) summed back to the shape of `x`."""
    gs, xs = grad.shape, x.shape
    if gs.is_fully_defined() and xs.is_fully_defined():
        g_dims, x_dims = gs.as_tuple(), xs.as_tuple()
        if g_dims == x_dims:
            return grad
        lead = len(g_dims) - len(x_dims)
        axes = list(range(lead)) + [lead + i for i, d in enumerate(x_dims)
                                    if d == 1 and g_dims[lead + i] != 1]
        summed = reduce_sum(grad, axes) if axes else grad
        return reshape(summed, x_dims)
    if gs.ndims is not None and gs.ndims == xs.ndims and all(
            d is not None and d != 1 for d in xs.dims):
        return grad  # no dimension of x can have been broadcast
    from .sum_to_shape import sum_to_shape_of   # axes decided when compiled (see there)

    return sum_to_shape_of(grad, shape(x))


def _zero(g):
    return zeros_like(g)


def _mask(cond, g):
    """g where cond holds, else 0 (cond broadcasts against g)."""
    return mo.where_v2(cond, g, _zero(g))


# --- unary --------------------------------------------------------------------------------


def _unary(fn):
    """A gradient for y = f(x) given `fn(x, y, g) -> dx`."""
    def gradient(op, g):
        return [fn(op.inputs[0], op.outputs[0], g)]

    return gradient


def _none(op, *grads):
    return [None] * len(op.inputs)


def _zero_where_no_gradient(fn):
    """`fn(x, y, g)`, but 0 where g is 0: TensorFlow's SqrtGrad/RsqrtGrad/ReciprocalGrad
    kernels return 0 there, so a masked branch (`where(x > 0, sqrt(x), 0)`) at x == 0 gets
    0, not 0 * inf = NaN."""
    def gradient(x, y, g):
        return mo.where_v2(mo.equal(g, _zero(g)), _zero(g), fn(x, y, g))
    return gradient


def _rsqrt(x, y, g):
    return g * (y * y * y) * -0.5


def _erf(x, y, g):
    return g * (2.0 / math.sqrt(math.pi)) * mu.exp(-mu.square(x))


def _cast(op, g):
    src, dst = op.inputs[0].dtype, op.outputs[0].dtype
    if src.is_floating and dst.is_floating:
        return [mu.cast(g, src)]
    return [None]


_UNARY = (
    (mu.NEG, lambda x, y, g: -g),
    (mu.ABS, lambda x, y, g: g * mu.sign(x)),
    (mu.SIGN, lambda x, y, g: _zero(x)),
    (mu.SQUARE, lambda x, y, g: g * (x * 2.0)),
    (mu.SQRT, _zero_where_no_gradient(lambda x, y, g: g * 0.5 / y)),
    (mu.RSQRT, _zero_where_no_gradient(_rsqrt)),
    (mu.RECIPROCAL, _zero_where_no_gradient(lambda x, y, g: -g * y * y)),
    (mu.EXP, lambda x, y, g: g * y),
    (mu.EXPM1, lambda x, y, g: g * (y + 1.0)),
    (mu.LOG, lambda x, y, g: g / x),
    (mu.LOG1P, lambda x, y, g: g / (x + 1.0)),
    (mu.SIN, lambda x, y, g: g * mu.cos(x)),
    (mu.COS, lambda x, y, g: -g * mu.sin(x)),
    (mu.TAN, lambda x, y, g: g * (y * y + 1.0)),
    (mu.TANH, lambda x, y, g: g * (1.0 - y * y)),
    (mu.SIGMOID, lambda x, y, g: g * y * (1.0 - y)),
    (mu.ERF, _erf),
)


# --- binary (with broadcasting) -------------------------------------------------------------


def _binary(fn):
    """A gradient for z = f(x, y) given `fn(x, y, z, g) -> (dx, dy)` before un-broadcasting."""
    def gradient(op, g):
        x, y = op.inputs
        dx, dy = fn(x, y, op.outputs[0], g)
        return [None if dx is None else sum_to_shape(dx, x),
                None if dy is None else sum_to_shape(dy, y)]

    return gradient


def _pow(x, y, z, g):
    dx = g * y * mb.pow(x, y - 1.0)
    safe = mo.where_v2(x > 0, x, ones_like(x))
    dy = g * z * mo.where_v2(x > 0, mu.log(safe), _zero(x))
    return dx, dy


def _select_xy(x, y, g, x_wins):
    return _mask(x_wins, g), _mask(mo.logical_not(x_wins), g)


def _squared_difference(x, y, z, g):
    d = g * 2.0 * (x - y)
    return d, -d


def _atan2(y, x, z, g):
    r = x * x + y * y
    return g * x / r, -g * y / r


_BINARY = (
    (mb.ADD, lambda x, y, z, g: (g, g)),
    (mb.SUB, lambda x, y, z, g: (g, -g)),
    (mb.MUL, lambda x, y, z, g: (g * y, g * x)),
    (mb.REAL_DIV, lambda x, y, z, g: (g / y, -g * x / y / y)),
    (mb.POW, _pow),
    (mb.MAXIMUM, lambda x, y, z, g: _select_xy(x, y, g, x >= y)),
    (mb.MINIMUM, lambda x, y, z, g: _select_xy(x, y, g, x <= y)),
    (mb.SQUARED_DIFFERENCE, _squared_difference),
    (mb.ATAN2, _atan2),
    (mb.FLOOR_MOD, lambda x, y, z, g: (g, -g * mb.floordiv(x, y))),
    (mb.TRUNCATE_MOD, lambda x, y, z, g: (g, -g * mb.truncatediv(x, y))),
)


def _add_n(op, g):
    return [g] * len(op.inputs)


# --- selection and clipping -------------------------------------------------------------------


def _select(op, g):
    cond = op.inputs[0]
    zeros = _zero(g)
    return [None, mo.where(cond, g, zeros), mo.where(cond, zeros, g)]


def _select_v2(op, g):
    cond, t, e = op.inputs
    return [None, sum_to_shape(_mask(cond, g), t),
            sum_to_shape(_mask(mo.logical_not(cond), g), e)]


def _clip_by_value(op, g):
    # z = max(m, lo) with m = min(t, hi): d/dt = [m >= lo][t <= hi], d/dhi = [m >= lo][t > hi],
    # d/dlo = [m < lo]; ties go to t, then to m, matching the kernel's choice of value.
    t, lo, hi = op.inputs
    m = mb.minimum(t, hi)
    above_lo = m >= lo
    return [_mask(mo.logical_and(above_lo, t <= hi), g),
            sum_to_shape(_mask(mo.logical_not(above_lo), g), lo),
            sum_to_shape(_mask(mo.logical_and(above_lo, t > hi), g), hi)]


GRADIENTS = (
    *((op_def, _unary(fn)) for op_def, fn in _UNARY),
    *((op_def, _none) for op_def in (mu.FLOOR, mu.CEIL, mu.ROUND, mb.FLOOR_DIV,
                                     mb.TRUNCATE_DIV)),
    (mu.CAST, _cast),
    *((op_def, _binary(fn)) for op_def, fn in _BINARY),
    (mb.ADD_N, _add_n),
    (mo.SELECT, _select),
    (mo.SELECT_V2, _select_v2),
    (mo.CLIP_BY_VALUE, _clip_by_value),
)

__all__ = ["sum_to_shape"]
