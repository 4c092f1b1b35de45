"""Run-time checks that NumPy semantics need where TensorFlow's ops have none.

Owns: EnsureNonEmpty, the identity that fails when one of the given axes has length 0.
The NumPy front end puts it before `np.max`/`np.min`/`np.argmax`/`np.argmin` over an axis
whose length is known only at run time: NumPy raises "zero-size array to reduction
operation maximum which has no identity" there, where TensorFlow's Max returns -inf.
Compiled, the check is one size comparison before the kernel's loops; its gradient passes
through.
"""

from __future__ import annotations

from ..compiler.core import ir
from ..compiler.core.ir import Scalar
from ..errors import InvalidArgumentError
from .builder import make_op, to_tensor
from .registry import OpDef


def _infer(op):
    t = op.inputs[0]
    return [(t.dtype, t.shape)]


def _kernel(ctx, inputs, attrs):
    x = inputs[0]
    if any(x.shape[a] == 0 for a in attrs["axes"]):
        raise InvalidArgumentError(None, ctx.op if ctx is not None else None,
                                   attrs["message"])
    return [x]


def _pass_through(op, g):
    return [g]


def _lower(ctx, op, inputs):
    x = inputs[0]
    for a in op.get_attr("axes"):
        ctx.check(ir.make(Scalar.GT, "bool", (x.shape[a], ir.index(0))), op.get_attr("message"))
    return [x]


ENSURE_NON_EMPTY = OpDef("EnsureNonEmpty", _infer, _kernel, gradient=_pass_through, lower=_lower,
                         doc="x, failing with `message` when an axis in `axes` has length 0")


def ensure_non_empty(x, axes, message: str, name=None):
    """`x`, checked at run time to have no axis of length 0 among `axes`."""
    x = to_tensor(x)
    return make_op(ENSURE_NON_EMPTY, [x], {"axes": [int(a) for a in axes],
                                           "message": str(message)},
                   name or "EnsureNonEmpty").outputs[0]


OP_DEFS = (ENSURE_NON_EMPTY,)
