"""Division: RealDiv, FloorDiv, FloorMod, TruncateDiv, TruncateMod, elementwise with NumPy
broadcasting, and TensorFlow 1.x's `truediv`, `divide`, `div`, `floordiv`, `floormod`/`mod`,
`truncatediv`, `truncatemod`.

`truediv` on integers first casts both sides (8/16-bit to float32, 32/64-bit to float64)
and then uses RealDiv, as TensorFlow does.  Semantics follow TensorFlow's CPU kernels:
FloorDiv on floats is floor(x / y); FloorMod's result has the divisor's sign; integer
division or modulo by zero is an InvalidArgumentError, never NumPy's silent 0.  Gradients:
RealDiv's quotient rule; FloorMod/TruncateMod x - q * y with q held constant; FloorDiv and
TruncateDiv are piecewise constant (None).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir import Scalar as S
from . import math_cast, sum_to_shape
from .builder import FLOAT_OR_COMPLEX, FLOATS, REALS, binary_operands, graph_for, make_op
from .elementwise import apply_binary, binary_def, broadcast_gradient
from .lower_util import lower_as

_TRUNCMOD_TYPES = (_dtypes.int32, _dtypes.int64, *FLOATS)


# --- kernels ----------------------------------------------------------------------------------


def _int_zero_divisor(x, y):
    if y.dtype.kind in "iu" and not np.all(y):
        return "Integer division by zero"
    return None


def _floor_div(x, y):
    if x.dtype.kind in "iu":
        return np.floor_divide(x, y)
    return np.floor(x / y)  # TensorFlow: floor(x / y), so -5 // inf is -0, not -1


def _floor_mod(x, y):
    if x.dtype.kind in "iu":
        return np.mod(x, y)
    r = np.fmod(x, y)
    return np.where((r != 0) & ((r < 0) != (y < 0)), r + y, r)


def _truncate_div(x, y):
    if x.dtype.kind in "iu":
        q = np.floor_divide(x, y)
        inexact = (np.mod(x, y) != 0) & ((x < 0) != (y < 0))
        return q + inexact.astype(q.dtype)
    return np.trunc(x / y)


# --- lowerings --------------------------------------------------------------------------------
# The kernel IR's integer FLOORDIV and MOD give 0 for a zero divisor (numba's numpy error
# model), so the loops computing them have one exit and run under prange.  TensorFlow's
# FloorDiv/FloorMod raise instead, as their reference kernels do: a REDUCE over the divisor
# computes "no element is zero" and a runtime check (LowerContext.check) reads it, unless the
# divisor is a constant.  NumPy's floor_divide/remainder (np_ufuncs._numpy_floor_division) replace
# zero divisors before dividing, so their check always passes.


def _constant_value(node):
    """The value of a node whose every element is one constant, else None."""
    body = getattr(node, "body", None)
    if node.kind is ir.NodeKind.COMPUTE and body is not None and ir.is_const(body):
        return body.attr
    return None


def _checked_integer_division(lower):
    """`lower` preceded, for integer outputs, by the run-time check of a zero divisor."""
    def checked(ctx, op, inputs):
        divisor = inputs[1]
        value = _constant_value(divisor)
        if op.outputs[0].dtype.is_integer and (value is None or value == 0):
            rvars = [ir.reduce_var(k) for k in range(len(divisor.shape))]
            nonzero = ir.make(S.NE, _dtypes.bool_, (ir.load(divisor, rvars),
                                                    ir.const(0, divisor.dtype)))
            ok = ir.reduce(_dtypes.bool_, [], [], rvars, divisor.shape, nonzero,
                           ir.Combiner.AND)
            ctx.check(ir.load(ok, ()), "Integer division by zero")
        return lower(ctx, op, inputs)

    return checked


def _none(op, *grads):
    return [None] * len(op.inputs)


def _broadcast(fn):
    """The gradient of a broadcasting op from `fn(x, y, z, g) -> (dx, dy)`."""
    return broadcast_gradient(fn, _sum_to)


def _sum_to(grad, x):
    return sum_to_shape.sum_to_shape(grad, x)


# --- the ops -----------------------------------------------------------------------------------

REAL_DIV = binary_def("RealDiv", np.true_divide, FLOAT_OR_COMPLEX, doc="x / y (floats)",
                      gradient=_broadcast(lambda x, y, z, g: (g / y, -g * x / y / y)),
                      lower=lower_as(S.DIV))
FLOOR_DIV = binary_def("FloorDiv", _floor_div, REALS, check=_int_zero_divisor,
                       doc="floor(x / y)", gradient=_none,
                       lower=_checked_integer_division(lower_as(S.FLOORDIV)))
FLOOR_MOD = binary_def("FloorMod", _floor_mod, REALS, check=_int_zero_divisor,
                       doc="x - floor(x / y) * y: sign of y",
                       gradient=_broadcast(lambda x, y, z, g: (g, -g * floordiv(x, y))),
                       lower=_checked_integer_division(lower_as(S.MOD)))
TRUNCATE_DIV = binary_def("TruncateDiv", _truncate_div, REALS, check=_int_zero_divisor,
                          doc="x / y rounded toward zero", gradient=_none)
TRUNCATE_MOD = binary_def("TruncateMod", np.fmod, _TRUNCMOD_TYPES, check=_int_zero_divisor,
                          doc="C-style remainder: sign of x",
                          gradient=_broadcast(
                              lambda x, y, z, g: (g, -g * truncatediv(x, y))))


# TensorFlow's truediv: integers become floats wide enough to hold them exactly-ish.
_TRUEDIV_DTYPE = {
    _dtypes.int8: _dtypes.float32, _dtypes.uint8: _dtypes.float32,
    _dtypes.int16: _dtypes.float32, _dtypes.uint16: _dtypes.float32,
    _dtypes.int32: _dtypes.float64, _dtypes.uint32: _dtypes.float64,
    _dtypes.int64: _dtypes.float64, _dtypes.uint64: _dtypes.float64,
}


def truediv(x, y, name: str | None = None) -> Tensor:
    """x / y as floats (Python 3 division): integer inputs are math_cast.cast to float first.

    int8/int16/uint8/uint16 divide as float32, int32/int64/uint32/uint64 as float64;
    float and complex inputs keep their dtype.  bool and string are a TypeError.
    """
    graph = graph_for((x, y))
    with graph.name_scope(name or "truediv") as scope:
        x, y = binary_operands(x, y, "truediv")
        dtype = x.dtype
        target = _TRUEDIV_DTYPE.get(dtype, dtype)
        if target not in FLOAT_OR_COMPLEX:
            allowed = ", ".join(d.name for d in (*_TRUEDIV_DTYPE, *FLOAT_OR_COMPLEX))
            raise TypeError(f"Invalid dtype {dtype.name} in truediv (x / y): expected one of "
                            f"{allowed}.")
        if target is not dtype:
            x, y = math_cast.cast(x, target), math_cast.cast(y, target)
        return make_op(REAL_DIV, [x, y], {"T": target}, scope).outputs[0]


def divide(x, y, name: str | None = None) -> Tensor:
    """x / y; the same as `truediv` (TensorFlow 1.x `tf.divide`)."""
    return truediv(x, y, name=name)


def div(x, y, name: str | None = None) -> Tensor:
    """Python 2 division (TensorFlow 1.x `tf.div`): floor division for integers, true
    division for floats and complex."""
    x, y = binary_operands(x, y, "div")
    if x.dtype.is_floating or x.dtype.is_complex:
        return make_op(REAL_DIV, [x, y], {"T": x.dtype}, name or "div").outputs[0]
    return make_op(FLOOR_DIV, [x, y], {"T": x.dtype}, name or "div").outputs[0]


def floordiv(x, y, name: str | None = None) -> Tensor:
    """floor(x / y) with broadcasting; integer division by zero is an error at run time."""
    return apply_binary(FLOOR_DIV, x, y, name, "floordiv")


def floormod(x, y, name: str | None = None) -> Tensor:
    """x - floor(x / y) * y (the result has y's sign), as Python's `%`."""
    return apply_binary(FLOOR_MOD, x, y, name, "FloorMod")


mod = floormod


def truncatediv(x, y, name: str | None = None) -> Tensor:
    """x / y rounded toward zero (C integer division)."""
    return apply_binary(TRUNCATE_DIV, x, y, name, "TruncateDiv")


def truncatemod(x, y, name: str | None = None) -> Tensor:
    """C-style remainder x - truncatediv(x, y) * y (the result has x's sign)."""
    return apply_binary(TRUNCATE_MOD, x, y, name, "TruncateMod")


__all__ = ["truediv", "divide", "div", "floordiv", "floormod", "mod", "truncatediv",
           "truncatemod"]

OP_DEFS = (REAL_DIV, FLOOR_DIV, FLOOR_MOD, TRUNCATE_DIV, TRUNCATE_MOD)
