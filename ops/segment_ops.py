"""Segment reductions: UnsortedSegmentSum (`unsorted_segment_sum`).

`output[j, ...] = sum of data[i..., ...] over the index tuples i with segment_ids[i...] == j`;
the output has shape [num_segments] + data.shape[segment_ids.rank:].  As in TensorFlow, a
negative id drops its row and an id >= num_segments is an InvalidArgumentError.  It is
the scatter-add that the gradients of gathers and slices use (`scatter_back`).  No
lowering: it runs as a runtime op with its NumPy kernel.  Its gradient is a gather of the
output gradient at the ids (rows with a negative id get 0).

`scatter_back(op, g)` is the gradient of every op that only picks (and maybe repeats)
elements of its first input (StridedSlice, Tile, MirrorPad, GatherNd, gathers along a
non-leading axis): the same op is applied to the int32 positions 0..size(x)-1 laid out in
x's shape, which says where each output element came from, and the output gradient is
scatter-added back into those positions.  This is exact for every mask combination and for
repeated picks.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor
from ..compiler.core.shapes import TensorShape, unknown_shape
from ..errors import InvalidArgumentError
from . import fill_ops, gather_ops, join_ops, math_cast, reshape_ops, select_ops, shape_ops
from .builder import INDEX_TYPES, NUMERIC, check_dtype, graph_for, make_op, to_tensor
from .conversion import static_value
from .registry import OpDef

__all__ = ["unsorted_segment_sum"]


def _segment_infer(op):
    data, ids, num = op.inputs
    check_dtype(data, NUMERIC, "data")
    check_dtype(ids, INDEX_TYPES, "segment_ids")
    check_dtype(num, INDEX_TYPES, "num_segments")
    if num.shape.ndims not in (None, 0):
        raise ValueError(f"num_segments must be a scalar, but has shape {num.shape}.")
    if ids.shape.ndims is not None and data.shape.ndims is not None:
        if ids.shape.ndims > data.shape.ndims or not ids.shape.is_compatible_with(
                data.shape[:ids.shape.ndims]):
            raise ValueError(f"segment_ids.shape {ids.shape} must be a prefix of data.shape "
                             f"{data.shape}.")
    n = static_value(num)
    first = None if n is None else int(n)
    if data.shape.ndims is None or ids.shape.ndims is None:
        return [(data.dtype, unknown_shape())]
    return [(data.dtype, TensorShape([first, *data.shape.dims[ids.shape.ndims:]]))]


def _segment_kernel(ctx, inputs, attrs):
    data, ids, num = inputs
    op = ctx.op if ctx else None
    num = int(num)
    if ids.shape != data.shape[:ids.ndim]:
        raise InvalidArgumentError(None, op, f"segment_ids.shape {list(ids.shape)} must be a "
                                             f"prefix of data.shape {list(data.shape)}")
    if num < 0:
        raise InvalidArgumentError(None, op, f"num_segments must be >= 0, got {num}")
    if np.any(ids >= num):
        bad = ids[ids >= num].reshape(-1)[0]
        raise InvalidArgumentError(None, op, f"segment_ids[...] = {bad} is out of range "
                                             f"[0, {num})")
    rows = data.reshape((ids.size,) + data.shape[ids.ndim:])
    flat = ids.reshape(-1)
    keep = flat >= 0
    acc = np.float32 if data.dtype == np.float16 else data.dtype
    out = np.zeros((num,) + data.shape[ids.ndim:], dtype=acc)
    np.add.at(out, flat[keep], rows[keep].astype(acc, copy=False))
    return [out.astype(data.dtype, copy=False)]


def _unsorted_segment_sum_grad(op, g):
    data, ids, num = op.inputs
    # Rows with a negative id were dropped: read them from an extra row of zeros.
    zero_row = fill_ops.zeros(join_ops.concat([[1], shape_ops.shape(g)[1:]], 0), dtype=g.dtype)
    safe = select_ops.where_v2(ids < 0, math_cast.cast(num, ids.dtype), ids)
    return [gather_ops.gather(join_ops.concat([g, zero_row], 0), safe), None, None]


UNSORTED_SEGMENT_SUM = OpDef("UnsortedSegmentSum", _segment_infer, _segment_kernel,
                             gradient=_unsorted_segment_sum_grad,
                             doc="sums of data's rows grouped by segment_ids (a scatter-add)")


def unsorted_segment_sum(data, segment_ids, num_segments, name=None) -> Tensor:
    """Sum `data`'s rows into `num_segments` rows by `segment_ids` (negative ids dropped).

    The result has shape [num_segments] + data.shape[rank(segment_ids):].
    """
    graph = graph_for((data, segment_ids, num_segments))
    data = to_tensor(data, graph=graph, name="data")
    ids = to_tensor(segment_ids, graph=graph, name="segment_ids")
    num = to_tensor(num_segments, graph=graph, name="num_segments",
                    preferred_dtype=_dtypes.int32)
    return make_op(UNSORTED_SEGMENT_SUM, [data, ids, num], {},
                   name or "UnsortedSegmentSum").outputs[0]


def scatter_back(op, g):
    """The gradient of an op that selects elements of its first input (see the docstring)."""
    x = op.inputs[0]
    n = shape_ops.size(x)
    positions = make_op(op.op_def, [reshape_ops.reshape(fill_ops.range(0, n), shape_ops.shape(x)),
                                    *op.inputs[1:]], op.attrs).outputs[0]
    summed = unsorted_segment_sum(reshape_ops.reshape(g, [-1]),
                                  reshape_ops.reshape(positions, [-1]), n)
    return [reshape_ops.reshape(summed, shape_ops.shape(x))] + [None] * (len(op.inputs) - 1)


OP_DEFS = (UNSORTED_SEGMENT_SUM,)
