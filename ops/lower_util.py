"""Shared pieces for op lowerings (graph op -> kernel IR), so each op's lowering is a line.

`elementwise_lowering(scalar_fn)` turns "how one output element is computed from one
element of each input" into a full lowering with NumPy broadcasting; `lower_as(kind)` does
so for ops that are exactly one IR scalar operation.  String tensors are never compiled;
complex ones only by the ops that say `complex_ok` (data movement, +, -, *, negation: what
numba computes on complex scalars exactly as NumPy does); the rest stay with the reference
kernels.
"""

from __future__ import annotations

from ..compiler.core import ir
from ..compiler.core.ir_build import map_nodes
from ..compiler.core.ir_build import NotLowerable


def require_real(op, nodes=None, complex_ok: bool = False):
    """NotLowerable unless every input and output is a real number or bool tensor (or a
    complex one, with `complex_ok`)."""
    for t in list(op.inputs) + list(op.outputs):
        if (t.dtype.is_complex and not complex_ok) or t.dtype.name == "string":
            raise NotLowerable(f"{op.type} on {t.dtype.name} tensors is not compiled")


def elementwise_lowering(scalar_fn, check=None, complex_ok: bool = False):
    """A lowering computing output = scalar_fn(out_dtype, *input_elements), broadcasting
    (complex tensors too with `complex_ok`)."""

    def lower(ctx, op, inputs):
        require_real(op, complex_ok=complex_ok)
        if check is not None:
            check(op)
        dtype = op.outputs[0].dtype
        return [map_nodes(ctx, lambda *xs: scalar_fn(dtype, *xs), inputs, dtype, op.type)]

    return lower


def lower_as(kind: ir.Scalar, check=None, complex_ok: bool = False):
    """A lowering for ops that are one scalar operation applied elementwise."""
    return elementwise_lowering(lambda dtype, *xs: ir.make(kind, dtype, xs), check,
                                complex_ok)


def not_for_integers(op):
    if op.inputs[0].dtype.is_integer:
        raise NotLowerable(f"{op.type} on integer tensors is not compiled")
