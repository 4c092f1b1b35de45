"""Elementwise two-input arithmetic with NumPy broadcasting, and AddN.

Owns: Add, Sub, Mul, RealDiv, FloorDiv, FloorMod, TruncateDiv, TruncateMod, Pow, Maximum,
Minimum, SquaredDifference, Atan2, AddN, and the TensorFlow 1.x functions `add`,
`subtract`, `multiply`, `truediv`, `divide`, `div`, `floordiv`, `floormod`/`mod`,
`truncatediv`, `truncatemod`, `pow`, `maximum`, `minimum`, `squared_difference`, `atan2`,
`add_n`.

Typing is TensorFlow's (`builder.binary_operands`): two tensors must share a dtype, a
Python/NumPy operand takes the tensor's dtype if it converts without loss.  `truediv` on
integers first casts both sides (8/16-bit to float32, 32/64-bit to float64) and then uses
RealDiv, as TensorFlow does.  Semantics follow TensorFlow's CPU kernels: FloorDiv on floats
is floor(x / y); FloorMod's result has the divisor's sign; integer division or modulo by
zero and integers raised to negative integer powers are InvalidArgumentErrors, never
NumPy's silent 0.  Float kernels run under `np.errstate(all="ignore")`.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor
from ..compiler.core.shapes import broadcast_shape
from ..errors import InvalidArgumentError
from .basic_ops import identity
from .builder import (FLOAT_OR_COMPLEX, FLOATS, NUMERIC, REALS, binary_operands,
                      check_dtype, check_same_dtype, graph_for, make_op, to_tensor)
from .math_unary import cast
from .registry import OpDef, Trait

_INTS = _dtypes.INTEGER_DTYPES
_ADD_TYPES = (*NUMERIC, _dtypes.string)
_POW_TYPES = (_dtypes.int8, _dtypes.int16, _dtypes.int32, _dtypes.int64, *FLOAT_OR_COMPLEX)
_SQDIFF_TYPES = (_dtypes.int32, _dtypes.int64, *FLOAT_OR_COMPLEX)
_TRUNCMOD_TYPES = (_dtypes.int32, _dtypes.int64, *FLOATS)


def _op_of(ctx):
    return ctx.op if ctx is not None else None


def check_broadcast(ctx, *arrays):
    """InvalidArgumentError (TensorFlow's message) unless the arrays' shapes broadcast."""
    try:
        return np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        shapes = " vs. ".join(str(list(a.shape)) for a in arrays)
        raise InvalidArgumentError(None, _op_of(ctx), f"Incompatible shapes: {shapes}") from None


def binary_def(name: str, fn, allowed, *, out=None, commutative=False, check=None,
               arg_names=("x", "y"), doc: str = "") -> OpDef:
    """An elementwise, broadcasting two-input OpDef computing `fn(x, y)`.

    `out` fixes the output dtype (default: the inputs'); `check(x, y)` returns an error
    message for values the op rejects at run time (or None).  Also used by comparisons.
    """

    def infer(op):
        x, y = op.inputs
        check_dtype(x, allowed, arg_names[0])
        check_same_dtype([x, y], list(arg_names))
        return [(out or x.dtype, broadcast_shape(x.shape, y.shape))]

    def kernel(ctx, inputs, attrs):
        x, y = inputs
        shape = check_broadcast(ctx, x, y)
        if check is not None and 0 not in shape:  # an empty result evaluates nothing
            message = check(x, y)
            if message:
                raise InvalidArgumentError(None, _op_of(ctx), message)
        with np.errstate(all="ignore"):
            z = fn(x, y)
        return [np.asarray(z, dtype=out.np_dtype if out else x.dtype)]

    traits = {Trait.ELEMENTWISE, Trait.COMMUTATIVE} if commutative else {Trait.ELEMENTWISE}
    return OpDef(name, infer, kernel, traits=traits, doc=doc)


def _int_zero_divisor(x, y):
    if y.dtype.kind in "iu" and not np.all(y):
        return "Integer division by zero"
    return None


def _negative_int_power(x, y):
    if y.dtype.kind == "i" and np.any(y < 0):
        return "Integers to negative integer powers are not allowed"
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


def _squared_difference(x, y):
    d = x - y
    return d * np.conj(d) if d.dtype.kind == "c" else d * d


ADD = binary_def("Add", np.add, _ADD_TYPES, commutative=True, doc="x + y (strings concatenate)")
SUB = binary_def("Sub", np.subtract, NUMERIC, doc="x - y")
MUL = binary_def("Mul", np.multiply, NUMERIC, commutative=True, doc="x * y")
REAL_DIV = binary_def("RealDiv", np.true_divide, FLOAT_OR_COMPLEX, doc="x / y (floats)")
FLOOR_DIV = binary_def("FloorDiv", _floor_div, REALS, check=_int_zero_divisor,
                       doc="floor(x / y)")
FLOOR_MOD = binary_def("FloorMod", _floor_mod, REALS, check=_int_zero_divisor,
                       doc="x - floor(x / y) * y: sign of y")
TRUNCATE_DIV = binary_def("TruncateDiv", _truncate_div, REALS, check=_int_zero_divisor,
                          doc="x / y rounded toward zero")
TRUNCATE_MOD = binary_def("TruncateMod", np.fmod, _TRUNCMOD_TYPES, check=_int_zero_divisor,
                          doc="C-style remainder: sign of x")
POW = binary_def("Pow", np.power, _POW_TYPES, check=_negative_int_power, doc="x ** y")
MAXIMUM = binary_def("Maximum", np.maximum, REALS, commutative=True,
                     doc="larger of x and y (NaN propagates)")
MINIMUM = binary_def("Minimum", np.minimum, REALS, commutative=True,
                     doc="smaller of x and y (NaN propagates)")
SQUARED_DIFFERENCE = binary_def("SquaredDifference", _squared_difference, _SQDIFF_TYPES,
                                commutative=True, doc="(x - y) * conj(x - y)")
ATAN2 = binary_def("Atan2", np.arctan2, FLOATS, arg_names=("y", "x"),
                   doc="angle of the point (x, y): arctan(y / x) in the right quadrant")


def apply_binary(op_def: OpDef, x, y, name, default_name: str, arg_names=("x", "y"),
                 attrs=None) -> Tensor:
    """Convert `x`, `y` with TensorFlow's strict typing and add an `op_def` op on them."""
    x, y = binary_operands(x, y, op_def.name, arg_names)
    return make_op(op_def, [x, y], {"T": x.dtype, **(attrs or {})},
                   name or default_name).outputs[0]


def add(x, y, name: str | None = None) -> Tensor:
    """x + y with broadcasting (numbers; strings concatenate)."""
    return apply_binary(ADD, x, y, name, "Add")


def subtract(x, y, name: str | None = None) -> Tensor:
    """x - y with broadcasting."""
    return apply_binary(SUB, x, y, name, "Sub")


def multiply(x, y, name: str | None = None) -> Tensor:
    """x * y with broadcasting."""
    return apply_binary(MUL, x, y, name, "Mul")


# TensorFlow's truediv: integers become floats wide enough to hold them exactly-ish.
_TRUEDIV_DTYPE = {
    _dtypes.int8: _dtypes.float32, _dtypes.uint8: _dtypes.float32,
    _dtypes.int16: _dtypes.float32, _dtypes.uint16: _dtypes.float32,
    _dtypes.int32: _dtypes.float64, _dtypes.uint32: _dtypes.float64,
    _dtypes.int64: _dtypes.float64, _dtypes.uint64: _dtypes.float64,
}


def truediv(x, y, name: str | None = None) -> Tensor:
    """x / y as floats (Python 3 division): integer inputs are cast to float first.

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
            x, y = cast(x, target), cast(y, target)
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
                None, _op_of(ctx), f"Inputs to operation AddN must have the same size and "
                                   f"shape.  Input 0: {list(first.shape)} != input {i}: "
                                   f"{list(v.shape)}")
    total = np.array(first, copy=True)
    with np.errstate(all="ignore"):
        for v in inputs[1:]:
            total += v
    return [total]


ADD_N = OpDef("AddN", _add_n_infer, _add_n_kernel,
              traits={Trait.ELEMENTWISE, Trait.COMMUTATIVE}, doc="sum of N same-shape tensors")


def add_n(inputs, name: str | None = None) -> Tensor:
    """The elementwise sum of a list of tensors of one dtype and shape (no broadcasting).

    Python/NumPy values in the list take the dtype of the first tensor in it.  A single
    input is returned as it is (through `identity` when `name` is given).
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
        return identity(tensors[0], name=name) if name else tensors[0]
    return make_op(ADD_N, tensors, {"N": len(tensors), "T": tensors[0].dtype},
                   name or "AddN").outputs[0]


__all__ = [
    "add", "subtract", "multiply", "truediv", "divide", "div", "floordiv", "floormod", "mod",
    "truncatediv", "truncatemod", "pow", "maximum", "minimum", "squared_difference", "atan2",
    "add_n",
]

OP_DEFS = (ADD, SUB, MUL, REAL_DIV, FLOOR_DIV, FLOOR_MOD, TRUNCATE_DIV, TRUNCATE_MOD, POW,
           MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, ATAN2, ADD_N)


# --- lowerings to kernel IR ---------------------------------------------------------------------
# The kernel IR's integer FLOORDIV and MOD give 0 for a zero divisor (numba's numpy error
# model), so the loops computing them have one exit and run under prange.  TensorFlow's
# FloorDiv/FloorMod raise instead, as their reference kernels do: a REDUCE over the divisor
# computes "no element is zero" and a runtime check (LowerContext.check) reads it, unless the
# divisor is a constant.  NumPy's floor_divide/remainder (np_ufuncs._numpy_floor_division) replace
# zero divisors before dividing, so their check always passes.


def _constant_value(node):
    """The value of a node whose every element is one constant, else None."""
    from ..compiler.core import ir

    body = getattr(node, "body", None)
    if node.kind is ir.NodeKind.COMPUTE and body is not None and ir.is_const(body):
        return body.attr
    return None


def _checked_integer_division(lower):
    """`lower` preceded, for integer outputs, by the run-time check of a zero divisor."""
    from .. import dtypes as _dtypes
    from ..compiler.core import ir
    from ..compiler.core.ir import Scalar as S

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


def _attach_lowerings():
    from ..compiler.core import ir
    from ..compiler.core.ir import Scalar as S
    from .lower_util import elementwise_lowering, lower_as, not_for_integers

    for op_def, kind in ((ADD, S.ADD), (SUB, S.SUB), (MUL, S.MUL), (REAL_DIV, S.DIV),
                         (MAXIMUM, S.MAX), (MINIMUM, S.MIN), (ATAN2, S.ATAN2)):
        op_def.lower = lower_as(kind)
    for op_def, kind in ((FLOOR_DIV, S.FLOORDIV), (FLOOR_MOD, S.MOD)):
        op_def.lower = _checked_integer_division(lower_as(kind))
    POW.lower = lower_as(S.POW, check=not_for_integers)

    def sqdiff(dt, x, y):
        d = ir.make(S.SUB, dt, (x, y))
        return ir.make(S.MUL, dt, (d, d))

    SQUARED_DIFFERENCE.lower = elementwise_lowering(sqdiff)

    def add_n(dt, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = ir.make(S.ADD, dt, (out, x))
        return out

    ADD_N.lower = elementwise_lowering(add_n)


_attach_lowerings()
