"""Bitwise operations on integers: TensorFlow's `tf.bitwise` module.

Owns: BitwiseAnd, BitwiseOr, BitwiseXor, Invert, LeftShift, RightShift and the functions
`bitwise_and`, `bitwise_or`, `bitwise_xor`, `invert`, `left_shift`, `right_shift`.

Integer dtypes only (as TensorFlow's kernels); both operands of one dtype, broadcasting.
Shifts follow NumPy where TensorFlow leaves the result undefined: a count that is negative
or at least the type's width gives 0 for a left shift, and 0 or -1 (the sign) for a right
shift, in the reference kernel and in compiled code alike.  Integer outputs have no
gradient; each op lowers to one IR scalar operation.
"""

from __future__ import annotations

import numpy as np

from ..compiler.core.graph import Tensor
from ..compiler.core.ir import Scalar as S
from .builder import INTEGERS
from .elementwise import apply_binary, apply_unary, binary_def, unary_def
from .lower_util import lower_as
from .registry import not_differentiable


def _shift(fn):
    def shifted(x, y):
        bits = x.dtype.itemsize * 8
        y = np.asarray(y)
        inside = (y >= 0) & (y < bits)
        safe = np.where(inside, y, 0).astype(x.dtype)
        out = fn(x, safe)
        if fn is np.left_shift:
            return np.where(inside, out, 0).astype(x.dtype)
        sign = np.where(np.asarray(x) < 0, -1, 0) if x.dtype.kind == "i" else 0
        return np.where(inside, out, sign).astype(x.dtype)
    return shifted


_ND = not_differentiable   # integer ops: TensorFlow declares them not differentiable
BITWISE_AND = binary_def("BitwiseAnd", np.bitwise_and, INTEGERS, commutative=True,
                         doc="x & y, bit by bit", gradient=_ND, lower=lower_as(S.BITAND))
BITWISE_OR = binary_def("BitwiseOr", np.bitwise_or, INTEGERS, commutative=True,
                        doc="x | y, bit by bit", gradient=_ND, lower=lower_as(S.BITOR))
BITWISE_XOR = binary_def("BitwiseXor", np.bitwise_xor, INTEGERS, commutative=True,
                         doc="x ^ y, bit by bit", gradient=_ND, lower=lower_as(S.BITXOR))
LEFT_SHIFT = binary_def("LeftShift", _shift(np.left_shift), INTEGERS, doc="x << y",
                        gradient=_ND, lower=lower_as(S.SHL))
RIGHT_SHIFT = binary_def("RightShift", _shift(np.right_shift), INTEGERS,
                         doc="x >> y (arithmetic for signed types)", gradient=_ND,
                         lower=lower_as(S.SHR))
INVERT = unary_def("Invert", np.invert, INTEGERS, doc="~x, every bit flipped",
                   gradient=_ND, lower=lower_as(S.BITNOT))


def bitwise_and(x, y, name: str | None = None) -> Tensor:
    """x & y elementwise with broadcasting (integers of one dtype)."""
    return apply_binary(BITWISE_AND, x, y, name, "BitwiseAnd")


def bitwise_or(x, y, name: str | None = None) -> Tensor:
    """x | y elementwise with broadcasting (integers of one dtype)."""
    return apply_binary(BITWISE_OR, x, y, name, "BitwiseOr")


def bitwise_xor(x, y, name: str | None = None) -> Tensor:
    """x ^ y elementwise with broadcasting (integers of one dtype)."""
    return apply_binary(BITWISE_XOR, x, y, name, "BitwiseXor")


def left_shift(x, y, name: str | None = None) -> Tensor:
    """x << y elementwise with broadcasting; counts outside [0, width) give 0."""
    return apply_binary(LEFT_SHIFT, x, y, name, "LeftShift")


def right_shift(x, y, name: str | None = None) -> Tensor:
    """x >> y elementwise with broadcasting (arithmetic for signed types); counts outside
    [0, width) give 0, or -1 for negative x."""
    return apply_binary(RIGHT_SHIFT, x, y, name, "RightShift")


def invert(x, name: str | None = None) -> Tensor:
    """~x elementwise: every bit flipped (integers)."""
    return apply_unary(INVERT, x, name)


__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "invert"]

OP_DEFS = (BITWISE_AND, BITWISE_OR, BITWISE_XOR, LEFT_SHIFT, RIGHT_SHIFT, INVERT)
