"""Unique and UniqueWithCounts (`tf.unique`, `tf.unique_with_counts`): the distinct elements of
a vector in order of first appearance.

`y, idx = unique(x)`: `y` holds each distinct value of the 1-D `x` once, in the order it
first appears, and `x[i] == y[idx[i]]`; `unique_with_counts` also gives how often each
appears.  NaNs are all distinct (a NaN equals nothing), as in TensorFlow's hash-map kernel.
`idx` and the counts are int32 or int64 (`out_idx`).  The optimizers sum the rows of an
IndexedSlices gradient per distinct index with it (optimizers/).  The output's length
depends on the data, so the ops have no lowering; TensorFlow registers no gradient for them.
"""

from __future__ import annotations

import collections

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.shapes import TensorShape
from ..errors import InvalidArgumentError
from .builder import INDEX_TYPES, make_op, to_tensor
from .registry import OpDef

__all__ = ["unique", "unique_with_counts"]

UniqueOutput = collections.namedtuple("Unique", ["y", "idx"])
UniqueWithCountsOutput = collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])


def _infer(op):
    x = op.inputs[0]
    if x.dtype.is_complex or x.dtype is _dtypes.string:
        raise TypeError(f"{op.type} takes real numbers or bools, got {x.dtype.name}.")
    if x.shape.ndims not in (None, 1):
        raise ValueError(f"{op.type}: x must be a vector, got shape {x.shape} ({x.name}).")
    out_idx = op.get_attr("out_idx")
    if out_idx not in INDEX_TYPES:
        raise TypeError(f"{op.type}: out_idx must be int32 or int64, got {out_idx.name}.")
    outputs = [(x.dtype, TensorShape([None])), (out_idx, x.shape.merge_with([None]))]
    if op.type == "UniqueWithCounts":
        outputs.append((out_idx, TensorShape([None])))
    return outputs


def _first_appearance(x):
    """(distinct values in order of first appearance, idx, counts) of vector x."""
    if x.size == 0:
        return x[:0], np.zeros(0, np.intp), np.zeros(0, np.intp)
    _, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                          return_counts=True, equal_nan=False)
    order = np.argsort(first, kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    return x[first[order]], position[inverse.reshape(-1)], counts[order]


def _kernel(ctx, inputs, attrs):
    x = inputs[0]
    if x.ndim != 1:
        raise InvalidArgumentError(None, ctx.op, f"unique expects a 1D vector, got shape "
                                                 f"{list(x.shape)}")
    y, idx, counts = _first_appearance(x)
    dtype = attrs["out_idx"].np_dtype
    out = [np.array(y), idx.astype(dtype)]
    if ctx.op.type == "UniqueWithCounts":
        out.append(counts.astype(dtype))
    return out


UNIQUE = OpDef("Unique", _infer, _kernel,
               doc="The distinct values of a vector (first appearance order) and each "
                   "element's position among them.")
UNIQUE_WITH_COUNTS = OpDef("UniqueWithCounts", _infer, _kernel,
                           doc="Unique, and how often each distinct value appears.")

OP_DEFS = (UNIQUE, UNIQUE_WITH_COUNTS)


def unique(x, out_idx=_dtypes.int32, name=None):
    """(y, idx): the distinct values of vector `x` in order of first appearance, and for
    each element of x its position in y (x == gather(y, idx))."""
    x = to_tensor(x, name="x")
    op = make_op(UNIQUE, [x], {"out_idx": _dtypes.as_dtype(out_idx)}, name or "Unique")
    return UniqueOutput(*op.outputs)


def unique_with_counts(x, out_idx=_dtypes.int32, name=None):
    """(y, idx, count): as `unique`, and how many times each value of y appears in x."""
    x = to_tensor(x, name="x")
    op = make_op(UNIQUE_WITH_COUNTS, [x], {"out_idx": _dtypes.as_dtype(out_idx)},
                 name or "UniqueWithCounts")
    return UniqueWithCountsOutput(*op.outputs)
