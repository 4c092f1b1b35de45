"""Builders of elementwise OpDefs and of the ops that apply them.

`unary_def` and `binary_def` make an elementwise OpDef (inference, a NumPy kernel run under
`np.errstate(all="ignore")`, and the gradient and lowering they are given) from a NumPy
function and the dtypes it accepts; `apply_unary`/`apply_binary` add such an op to the
graph with TensorFlow's operand typing (`builder.binary_operands`); `broadcast_gradient`
makes the gradient of a broadcasting binary op.  Used by the math,
comparison and bitwise modules; this module imports no op module, so those can import it by
name in any order (docs/architecture.md, "A new op").
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor
from ..compiler.core.shapes import broadcast_shape
from ..errors import InvalidArgumentError
from .builder import binary_operands, check_dtype, check_same_dtype, graph_for, make_op
from .builder import to_tensor
from .registry import OpDef, Trait


def unary_def(name: str, fn, allowed, out=None, doc: str = "", *, gradient=None,
              lower=None) -> OpDef:
    """An elementwise one-input OpDef computing `fn(x)`, complete with its `gradient` and
    `lower` (see registry.OpDef).

    `out(dtype) -> dtype` gives the output dtype (default: the input's).
    """

    def infer(op):
        x = op.inputs[0]
        check_dtype(x, allowed, "x")
        return [(out(x.dtype) if out else x.dtype, x.shape)]

    def kernel(ctx, inputs, attrs):
        x = inputs[0]
        dtype = out(_dtypes.as_dtype(x.dtype)).np_dtype if out else x.dtype
        with np.errstate(all="ignore"):
            y = fn(x)
        return [np.asarray(y, dtype=dtype)]

    return OpDef(name, infer, kernel, traits={Trait.ELEMENTWISE}, gradient=gradient,
                 lower=lower, doc=doc)


def op_of(ctx):
    """The Operation a kernel runs for (None when a kernel is called directly)."""
    return ctx.op if ctx is not None else None


def check_broadcast(ctx, *arrays):
    """InvalidArgumentError (TensorFlow's message) unless the arrays' shapes broadcast."""
    try:
        return np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        shapes = " vs. ".join(str(list(a.shape)) for a in arrays)
        raise InvalidArgumentError(None, op_of(ctx), f"Incompatible shapes: {shapes}") from None


def binary_def(name: str, fn, allowed, *, out=None, commutative=False, check=None,
               arg_names=("x", "y"), doc: str = "", gradient=None, lower=None) -> OpDef:
    """An elementwise, broadcasting two-input OpDef computing `fn(x, y)`, complete with its
    `gradient` and `lower` (see registry.OpDef).

    `out` fixes the output dtype (default: the inputs'); `check(x, y)` returns an error
    message for values the op rejects at run time (or None).
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
                raise InvalidArgumentError(None, op_of(ctx), message)
        with np.errstate(all="ignore"):
            z = fn(x, y)
        return [np.asarray(z, dtype=out.np_dtype if out else x.dtype)]

    traits = {Trait.ELEMENTWISE, Trait.COMMUTATIVE} if commutative else {Trait.ELEMENTWISE}
    return OpDef(name, infer, kernel, traits=traits, gradient=gradient, lower=lower, doc=doc)


def apply_unary(op_def: OpDef, x, name) -> Tensor:
    """Convert `x` to a tensor and add an `op_def` op on it."""
    x = to_tensor(x, graph=graph_for((x,)), name="x")
    return make_op(op_def, [x], {"T": x.dtype}, name or op_def.name).outputs[0]


def apply_binary(op_def: OpDef, x, y, name, default_name: str, arg_names=("x", "y"),
                 attrs=None) -> Tensor:
    """Convert `x`, `y` with TensorFlow's strict typing and add an `op_def` op on them."""
    x, y = binary_operands(x, y, op_def.name, arg_names)
    return make_op(op_def, [x, y], {"T": x.dtype, **(attrs or {})},
                   name or default_name).outputs[0]


def broadcast_gradient(fn, sum_to):
    """The gradient of a broadcasting z = f(x, y) from `fn(x, y, z, g) -> (dx, dy)`, which
    gives them at z's shape (None for no gradient); `sum_to(d, x)` sums each back to its
    input's shape (sum_to_shape.sum_to_shape, passed in: this module imports no op module)."""
    def gradient(op, g):
        x, y = op.inputs
        dx, dy = fn(x, y, op.outputs[0], g)
        return [None if dx is None else sum_to(dx, x), None if dy is None else sum_to(dy, y)]

    return gradient
