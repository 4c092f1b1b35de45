"""Elementwise comparisons and boolean logic, with NumPy broadcasting and bool outputs.

Owns: Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual, LogicalAnd, LogicalOr and the
TensorFlow 1.x functions `equal`, `not_equal`, `less`, `less_equal`, `greater`,
`greater_equal`, `logical_and`, `logical_or`, `logical_xor` (a composite, as in
TensorFlow: (x or y) and not (x and y)).

Equal/NotEqual accept every dtype (strings and bools too); the ordering comparisons accept
real numbers only; the logical ops accept bool only.  Bool outputs have no gradient; each op
lowers to one IR comparison.  Operand typing is TensorFlow's strict
rule (see `builder.binary_operands`).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor
from ..compiler.core.ir import Scalar as S
from . import math_unary
from .builder import REALS, binary_operands, graph_for, make_op
from .elementwise import apply_binary, binary_def
from .lower_util import lower_as
from .registry import not_differentiable

_BOOL = _dtypes.bool_

# comparisons and logic are not differentiable (TensorFlow's NotDifferentiable): bool outputs
_ND = not_differentiable
EQUAL = binary_def("Equal", np.equal, _dtypes.ALL_DTYPES, out=_BOOL, commutative=True,
                   doc="x == y", gradient=_ND, lower=lower_as(S.EQ))
NOT_EQUAL = binary_def("NotEqual", np.not_equal, _dtypes.ALL_DTYPES, out=_BOOL,
                       commutative=True, doc="x != y", gradient=_ND, lower=lower_as(S.NE))
LESS = binary_def("Less", np.less, REALS, out=_BOOL, doc="x < y", gradient=_ND,
                  lower=lower_as(S.LT))
LESS_EQUAL = binary_def("LessEqual", np.less_equal, REALS, out=_BOOL, doc="x <= y",
                        gradient=_ND, lower=lower_as(S.LE))
GREATER = binary_def("Greater", np.greater, REALS, out=_BOOL, doc="x > y", gradient=_ND,
                     lower=lower_as(S.GT))
GREATER_EQUAL = binary_def("GreaterEqual", np.greater_equal, REALS, out=_BOOL, doc="x >= y",
                           gradient=_ND, lower=lower_as(S.GE))
LOGICAL_AND = binary_def("LogicalAnd", np.logical_and, (_BOOL,), out=_BOOL, commutative=True,
                         doc="x and y", gradient=_ND, lower=lower_as(S.AND))
LOGICAL_OR = binary_def("LogicalOr", np.logical_or, (_BOOL,), out=_BOOL, commutative=True,
                        doc="x or y", gradient=_ND, lower=lower_as(S.OR))


def equal(x, y, name: str | None = None) -> Tensor:
    """x == y elementwise with broadcasting (any dtype, including strings and bools)."""
    return apply_binary(EQUAL, x, y, name, "Equal", attrs={"incompatible_shape_error": True})


def not_equal(x, y, name: str | None = None) -> Tensor:
    """x != y elementwise with broadcasting (any dtype, including strings and bools)."""
    return apply_binary(NOT_EQUAL, x, y, name, "NotEqual",
                        attrs={"incompatible_shape_error": True})


def less(x, y, name: str | None = None) -> Tensor:
    """x < y elementwise with broadcasting (real numbers)."""
    return apply_binary(LESS, x, y, name, "Less")


def less_equal(x, y, name: str | None = None) -> Tensor:
    """x <= y elementwise with broadcasting (real numbers)."""
    return apply_binary(LESS_EQUAL, x, y, name, "LessEqual")


def greater(x, y, name: str | None = None) -> Tensor:
    """x > y elementwise with broadcasting (real numbers)."""
    return apply_binary(GREATER, x, y, name, "Greater")


def greater_equal(x, y, name: str | None = None) -> Tensor:
    """x >= y elementwise with broadcasting (real numbers)."""
    return apply_binary(GREATER_EQUAL, x, y, name, "GreaterEqual")


def logical_and(x, y, name: str | None = None) -> Tensor:
    """x and y elementwise with broadcasting (bool only)."""
    return apply_binary(LOGICAL_AND, x, y, name, "LogicalAnd")


def logical_or(x, y, name: str | None = None) -> Tensor:
    """x or y elementwise with broadcasting (bool only)."""
    return apply_binary(LOGICAL_OR, x, y, name, "LogicalOr")


def logical_xor(x, y, name: str | None = None) -> Tensor:
    """x xor y elementwise with broadcasting (bool only), built as TensorFlow 1.x builds it:
    logical_and(logical_or(x, y), logical_not(logical_and(x, y)))."""
    graph = graph_for((x, y))
    with graph.name_scope(name or "LogicalXor") as scope:
        x, y = binary_operands(x, y, "LogicalXor")
        either = logical_or(x, y)
        not_both = math_unary.logical_not(logical_and(x, y))
        return make_op(LOGICAL_AND, [either, not_both], {"T": _BOOL}, scope).outputs[0]


__all__ = [
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "logical_xor",
]

OP_DEFS = (EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL, LOGICAL_AND, LOGICAL_OR)
