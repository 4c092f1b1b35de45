"""Cast: conversion between dtypes, and TensorFlow 1.x's `cast`, `to_float`, `to_double`,
`to_int32`, `to_int64`.

Cast truncates floats toward zero, maps complex to real by dropping the imaginary part, and
to bool by `x != 0`; strings cast to nothing else.  Its gradient casts the output gradient
back to the input's dtype between float types and is None otherwise.  This module imports
no op module, so every op module can import `cast` by name.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir import Scalar as S
from .builder import graph_for, make_op, to_tensor
from .lower_util import elementwise_lowering
from .registry import OpDef, Trait

__all__ = ["cast", "to_float", "to_double", "to_int32", "to_int64"]


def _cast_infer(op):
    x = op.inputs[0]
    dst = op.get_attr("DstT")
    if (x.dtype is _dtypes.string) != (dst is _dtypes.string):
        raise TypeError(f"Cast {x.dtype.name} to {dst.name} is not supported.")
    return [(dst, x.shape)]


def _cast_kernel(ctx, inputs, attrs):
    x = inputs[0]
    dst = attrs["DstT"]
    if x.dtype.kind == "c" and not dst.is_complex:
        x = x.real  # TensorFlow drops the imaginary part (also before a cast to bool)
    with np.errstate(all="ignore"):
        y = (x != 0) if dst is _dtypes.bool_ else x.astype(dst.np_dtype)
    return [np.asarray(y, dtype=dst.np_dtype)]


def _cast_grad(op, g):
    src, dst = op.inputs[0].dtype, op.outputs[0].dtype
    if src.is_floating and dst.is_floating:
        return [cast(g, src)]
    return [None]


CAST = OpDef("Cast", _cast_infer, _cast_kernel, traits={Trait.ELEMENTWISE},
             gradient=_cast_grad,
             lower=elementwise_lowering(lambda dt, x: ir.make(S.CAST, dt, (x,))),
             doc="convert to DstT: floats truncate toward zero, bool is x != 0")


def cast(x, dtype, name: str | None = None) -> Tensor:
    """`x` converted to `dtype` (TensorFlow's `tf.cast`).

    Floats convert to integers by truncation toward zero, anything to bool by `x != 0`,
    complex to real by dropping the imaginary part.  A tensor already of `dtype` is returned
    unchanged.  Strings cannot be cast to or from other types (TypeError).
    """
    dtype = _dtypes.as_dtype(dtype)
    x = to_tensor(x, graph=graph_for((x,)), name="x")
    if x.dtype is dtype:
        return x
    return make_op(CAST, [x], {"SrcT": x.dtype, "DstT": dtype, "Truncate": False},
                   name or "Cast").outputs[0]


def to_float(x, name: str = "ToFloat") -> Tensor:
    """cast(x, float32) (deprecated TensorFlow 1.x name)."""
    return cast(x, _dtypes.float32, name=name)


def to_double(x, name: str = "ToDouble") -> Tensor:
    """cast(x, float64) (deprecated TensorFlow 1.x name)."""
    return cast(x, _dtypes.float64, name=name)


def to_int32(x, name: str = "ToInt32") -> Tensor:
    """cast(x, int32) (deprecated TensorFlow 1.x name)."""
    return cast(x, _dtypes.int32, name=name)


def to_int64(x, name: str = "ToInt64") -> Tensor:
    """cast(x, int64) (deprecated TensorFlow 1.x name)."""
    return cast(x, _dtypes.int64, name=name)


OP_DEFS = (CAST,)
