"""OneHot (`one_hot`): one-hot vectors of a given depth for integer indices.

Re-exported by `array_ops`.  The vectors are inserted at `axis` (default last); entries are
`on_value` where the class matches and `off_value` elsewhere, and indices outside
[0, depth) give all-off vectors, as in TensorFlow.  No gradient (the indices are integers);
lowered as a select on the index comparison.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import name_scope
from ..compiler.core.shapes import unknown_shape
from . import lower_index as lx
from .array_common import check_rank, runtime_error, static_int
from .builder import check_dtype, check_same_dtype, make_op, to_tensor
from .lower_util import require_real
from .registry import OpDef, not_differentiable

__all__ = ["one_hot"]

_ONE_HOT_INDEX_TYPES = (_dtypes.uint8, _dtypes.int8, _dtypes.int32, _dtypes.int64)


def _one_hot_infer(op):
    indices, depth, on_value, off_value = op.inputs
    check_dtype(indices, _ONE_HOT_INDEX_TYPES, "indices")
    check_dtype(depth, (_dtypes.int32,), "depth")
    check_same_dtype([on_value, off_value], ("on_value", "off_value"))
    for t, param in ((depth, "depth"), (on_value, "on_value"), (off_value, "off_value")):
        check_rank(t, 0, param)
    axis = op.get_attr("axis")
    n = static_int(depth)
    if n is not None and n < 0:
        raise ValueError(f"depth must be non-negative, got {n}.")
    rank = indices.shape.ndims
    if axis < -1 or (rank is not None and axis > rank):
        raise ValueError(f"axis must be -1 or in [0, {rank}] for indices of rank {rank}; got "
                         f"{axis}.")
    if rank is None:
        return [(on_value.dtype, unknown_shape())]
    dims = list(indices.shape.dims)
    at = rank if axis == -1 else axis
    return [(on_value.dtype, dims[:at] + [n] + dims[at:])]


def _one_hot_kernel(ctx, inputs, attrs):
    indices, depth, on_value, off_value = inputs
    depth = int(depth)
    if depth < 0:
        raise runtime_error(ctx, f"OneHot depth must be non-negative, got {depth}")
    axis = attrs["axis"]
    at = indices.ndim if axis == -1 else axis
    classes_shape = [1] * (indices.ndim + 1)
    classes_shape[at] = depth
    classes = np.arange(depth, dtype=np.int64).reshape(classes_shape)
    hot = np.expand_dims(indices.astype(np.int64), at) == classes  # out of range: all off
    out = np.where(hot, on_value, off_value)
    return [out.astype(on_value.dtype, copy=False)]


def _lower_one_hot(ctx, op, inputs):
    require_real(op)
    indices, _, on, off = inputs
    (depth,) = ctx.symbolic_ints(op.inputs[1])
    lx.require(ctx, lx.ge(depth, 0), f"OneHot depth must be non-negative ({op.name})")
    rank = len(indices.shape)
    at = rank if op.get_attr("axis") == -1 else op.get_attr("axis")
    shape = lx.out_shape(op.outputs[0], list(indices.shape[:at]) + [depth] +
                         list(indices.shape[at:]))
    axes = ir.axis_vars(rank + 1)
    hot = lx.eq(lx.index(ir.load(indices, lx.drop(axes, at))), axes[at])
    return [ir.compute(on.dtype, shape, axes, lx.select(hot, ir.load(on, ()), ir.load(off, ())))]


ONE_HOT = OpDef("OneHot", _one_hot_infer, _one_hot_kernel, default_name="one_hot",
                gradient=not_differentiable,
                lower=_lower_one_hot)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """One-hot vectors of length `depth` for `indices`, inserted at `axis` (default last).

    Entries equal `on_value` (default 1) where the class matches and `off_value` (default 0)
    elsewhere; indices outside [0, depth) give all-off vectors.  The dtype is `dtype`, else
    that of on_value/off_value, else float32.
    """
    with name_scope(name, "one_hot", [indices, depth, on_value, off_value]) as scope:
        idx = to_tensor(indices, name="indices")
        want = _dtypes.as_dtype(dtype) if dtype is not None else None
        given = {}
        for param, v in (("on_value", on_value), ("off_value", off_value)):
            if v is not None:
                given[param] = to_tensor(v, name=param, preferred_dtype=want)
                if want is not None and given[param].dtype is not want:
                    raise TypeError(f"dtype {given[param].dtype.name} of {param} does not "
                                    f"match dtype parameter {want.name}.")
        if want is None:
            want = next(iter(given.values())).dtype if given else _dtypes.float32
        on = given.get("on_value")
        off = given.get("off_value")
        on = on if on is not None else to_tensor(1, dtype=want, name="on_value")
        off = off if off is not None else to_tensor(0, dtype=want, name="off_value")
        if on.dtype is not off.dtype:
            raise TypeError(f"dtype {on.dtype.name} of on_value does not match dtype "
                            f"{off.dtype.name} of off_value.")
        d = to_tensor(depth, dtype=_dtypes.int32, name="depth")
        attrs = {"axis": -1 if axis is None else int(axis)}
        return make_op(ONE_HOT, [idx, d, on, off], attrs, scope).outputs[0]


OP_DEFS = (ONE_HOT,)
