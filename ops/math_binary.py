"""Elementwise two-input arithmetic with NumPy broadcasting, and AddN (division:
math_division.py).

Owns: Add, AddV2 (TensorFlow's current op for x + y: Add under another name, which graphs
TensorFlow writes use; `add` keeps building Add), Sub, Mul, Pow, Maximum, Minimum,
SquaredDifference, Atan2, AddN, the TensorFlow 1.x functions `add`, `subtract`, `multiply`,
`pow`, `maximum`, `minimum`, `squared_difference`, `atan2`, `add_n` (and the raw op's
`add_v2`, not in `__all__`), and their gradients and lowerings.

Typing is TensorFlow's (`builder.binary_operands`): two tensors must share a dtype, a
Python/NumPy operand takes the tensor's dtype if it converts without loss.  Integers raised
to negative integer powers are InvalidArgumentErrors, never NumPy's silent 0.  Float kernels
run under `np.errstate(all="ignore")`.  Gradients of broadcasting ops are summed back to
each operand's shape (`sum_to_shape.broadcast_gradient`); Maximum/Minimum send the gradient
to the chosen operand (ties to x).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir import Scalar as S
from ..errors import InvalidArgumentError
from . import basic_ops, fill_ops, math_unary, select_ops, sum_to_shape
from .builder import (FLOAT_OR_COMPLEX, FLOATS, NUMERIC, REALS, check_dtype,
                      check_same_dtype, graph_for, make_op, to_tensor)
from .elementwise import apply_binary, binary_def, broadcast_gradient, op_of
from .lower_util import elementwise_lowering, lower_as, not_for_integers
from .registry import OpDef, Trait

_ADD_TYPES = (*NUMERIC, _dtypes.string)
_POW_TYPES = (_dtypes.int8, _dtypes.int16, _dtypes.int32, _dtypes.int64, *FLOAT_OR_COMPLEX)
_SQDIFF_TYPES = (_dtypes.int32, _dtypes.int64, *FLOAT_OR_COMPLEX)


# --- kernels ----------------------------------------------------------------------------------


def _negative_int_power(x, y):
    if y.dtype.kind == "i" and np.any(y < 0):
        return "Integers to negative integer powers are not allowed"
    return None


def _squared_difference(x, y):
    d = x - y
    return d * np.conj(d) if d.dtype.kind == "c" else d * d


# --- gradients (before un-broadcasting: `fn(x, y, z, g) -> (dx, dy)`) -------------------------


def _mask(cond, g):
    """g where cond holds, else 0 (cond broadcasts against g)."""
    return select_ops.where_v2(cond, g, fill_ops.zeros_like(g))


def _pow_grad(x, y, z, g):
    dx = g * y * pow(x, y - 1.0)
    safe = select_ops.where_v2(x > 0, x, fill_ops.ones_like(x))
    dy = g * z * select_ops.where_v2(x > 0, math_unary.log(safe), fill_ops.zeros_like(x))
    return dx, dy


def _select_xy(g, x_wins):
    return _mask(x_wins, g), _mask(math_unary.logical_not(x_wins), g)


def _squared_difference_grad(x, y, z, g):
    d = g * 2.0 * (x - y)
    return d, -d


def _atan2_grad(y, x, z, g):
    r = x * x + y * y
    return g * x / r, -g * y / r


# --- lowerings ---------------------------------------------------------------------------------


def _squared_difference_ir(dt, x, y):
    d = ir.make(S.SUB, dt, (x, y))
    return ir.make(S.MUL, dt, (d, d))


def _broadcast(fn):
    """The gradient of a broadcasting op from `fn(x, y, z, g) -> (dx, dy)`."""
    return broadcast_gradient(fn, _sum_to)


def _sum_to(grad, x):
    return sum_to_shape.sum_to_shape(grad, x)


# --- the ops -----------------------------------------------------------------------------------

ADD = binary_def("Add", np.add, _ADD_TYPES, commutative=True, doc="x + y (strings concatenate)",
                 gradient=_broadcast(lambda x, y, z, g: (g, g)), lower=lower_as(S.ADD, complex_ok=True))
ADD_V2 = dataclasses.replace(ADD, name="AddV2", default_name="AddV2")
SUB = binary_def("Sub", np.subtract, NUMERIC, doc="x - y",
                 gradient=_broadcast(lambda x, y, z, g: (g, -g)), lower=lower_as(S.SUB, complex_ok=True))
MUL = binary_def("Mul", np.multiply, NUMERIC, commutative=True, doc="x * y",
                 gradient=_broadcast(lambda x, y, z, g: (g * y, g * x)),
                 lower=lower_as(S.MUL, complex_ok=True))
POW = binary_def("Pow", np.power, _POW_TYPES, check=_negative_int_power, doc="x ** y",
                 gradient=_broadcast(_pow_grad),
                 lower=lower_as(S.POW, check=not_for_integers))
MAXIMUM = binary_def("Maximum", np.maximum, REALS, commutative=True,
                     doc="larger of x and y (NaN propagates)",
                     gradient=_broadcast(lambda x, y, z, g: _select_xy(g, x >= y)),
                     lower=lower_as(S.MAX))
MINIMUM = binary_def("Minimum", np.minimum, REALS, commutative=True,
                     doc="smaller of x and y (NaN propagates)",
                     gradient=_broadcast(lambda x, y, z, g: _select_xy(g, x <= y)),
                     lower=lower_as(S.MIN))
SQUARED_DIFFERENCE = binary_def("SquaredDifference", _squared_difference, _SQDIFF_TYPES,
                                commutative=True, doc="(x - y) * conj(x - y)",
                                gradient=_broadcast(_squared_difference_grad),
                                lower=elementwise_lowering(_squared_difference_ir))
ATAN2 = binary_def("Atan2", np.arctan2, FLOATS, arg_names=("y", "x"),
                   doc="angle of the point (x, y): arctan(y / x) in the right quadrant",
                   gradient=_broadcast(_atan2_grad), lower=lower_as(S.ATAN2))


def add(x, y, name: str | None = None) -> Tensor:
    """x + y with broadcasting (numbers; strings concatenate)."""
    return apply_binary(ADD, x, y, name, "Add")


def add_v2(x, y, name: str | None = None) -> Tensor:
    """x + y with broadcasting, as an AddV2 op (TensorFlow's raw op; `add` builds Add)."""
    return apply_binary(ADD_V2, x, y, name, "AddV2")


def subtract(x, y, name: str | None = None) -> Tensor:
    """x - y with broadcasting."""
    return apply_binary(SUB, x, y, name, "Sub")


def multiply(x, y, name: str | None = None) -> Tensor:
    """x * y with broadcasting."""
    return apply_binary(MUL, x, y, name, "Mul")


def pow(x, y, name: str | None = None) -> Tensor:  # noqa: A001 - TensorFlow's name
    """x ** y, elementwise with broadcasting; negative integer powers of integers are errors."""
    return apply_binary(POW, x, y, name, "Pow")


def maximum(x, y, name: str | None = None) -> Tensor:
    """The larger of x and y, elementwise with broadcasting (NaN wins)."""
    return apply_binary(MAXIMUM, x, y, name, "Maximum")


def minimum(x, y, name: str | None = None) -> Tensor:
    """The smaller of x and y, elementwise with broadcasting (NaN wins)."""
    return apply_binary(MINIMUM, x, y, name, "Minimum")


def squared_difference(x, y, name: str | None = None) -> Tensor:
    """(x - y) * conj(x - y), elementwise with broadcasting."""
    return apply_binary(SQUARED_DIFFERENCE, x, y, name, "SquaredDifference")


def atan2(y, x, name: str | None = None) -> Tensor:
    """arctan(y / x) with the quadrant of the point (x, y), in [-pi, pi] (float types)."""
    return apply_binary(ATAN2, y, x, name, "Atan2", arg_names=("y", "x"))


# --- AddN ----------------------------------------------------------------------------------


def _add_n_infer(op):
    inputs = op.inputs
    if not inputs:
        raise ValueError("AddN needs at least one input.")
    check_dtype(inputs[0], NUMERIC, "inputs")
    check_same_dtype(list(inputs), [f"inputs[{i}]" for i in range(len(inputs))])
    shape = inputs[0].shape
    for i, t in enumerate(inputs[1:], 1):
        if not shape.is_compatible_with(t.shape):
            raise ValueError(f"AddN inputs must have the same shape: inputs[{i}] has shape "
                             f"{t.shape}, but the inputs before it have {shape}.")
        shape = shape.merge_with(t.shape)
    return [(inputs[0].dtype, shape)]


def _add_n_kernel(ctx, inputs, attrs):
    first = inputs[0]
    for i, v in enumerate(inputs[1:], 1):
        if v.shape != first.shape:
            raise InvalidArgumentError(
                None, op_of(ctx), f"Inputs to operation AddN must have the same size and "
                                   f"shape.  Input 0: {list(first.shape)} != input {i}: "
                                   f"{list(v.shape)}")
    total = np.array(first, copy=True)
    with np.errstate(all="ignore"):
        for v in inputs[1:]:
            total += v
    return [total]


def _add_n_grad(op, g):
    return [g] * len(op.inputs)


def _add_n_ir(dt, *xs):
    out = xs[0]
    for x in xs[1:]:
        out = ir.make(S.ADD, dt, (out, x))
    return out


ADD_N = OpDef("AddN", _add_n_infer, _add_n_kernel,
              traits={Trait.ELEMENTWISE, Trait.COMMUTATIVE}, gradient=_add_n_grad,
              lower=elementwise_lowering(_add_n_ir), doc="sum of N same-shape tensors")


def add_n(inputs, name: str | None = None) -> Tensor:
    """The elementwise sum of a list of tensors of one dtype and shape (no broadcasting).

    Python/NumPy values in the list take the dtype of the first tensor in it.  A single
    input is returned as it is (through `basic_ops.identity` when `name` is given).
    """
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError("inputs must be a non-empty list of Tensors with the same dtype and "
                         f"shape, got {inputs!r}.")
    graph = graph_for(inputs)
    inputs = [t._as_graph_tensor() if hasattr(t, "_as_graph_tensor") else t for t in inputs]
    dtype = next((t.dtype for t in inputs if isinstance(t, Tensor)), None)
    tensors = [to_tensor(t, dtype=None if isinstance(t, Tensor) else dtype, graph=graph)
               for t in inputs]
    if len(tensors) == 1:
        return basic_ops.identity(tensors[0], name=name) if name else tensors[0]
    return make_op(ADD_N, tensors, {"N": len(tensors), "T": tensors[0].dtype},
                   name or "AddN").outputs[0]


__all__ = ["add", "subtract", "multiply", "pow", "maximum", "minimum", "squared_difference",
           "atan2", "add_n"]

OP_DEFS = (ADD, ADD_V2, SUB, MUL, POW, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, ATAN2, ADD_N)
