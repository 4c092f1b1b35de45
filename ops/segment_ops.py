"""Segment reductions: UnsortedSegmentSum (`unsorted_segment_sum`).

`output[j, ...] = sum of data[i..., ...] over the index tuples i with segment_ids[i...] == j`;
the output has shape [num_segments] + data.shape[segment_ids.rank:].  As in TensorFlow, a
negative id drops its row and an id >= num_segments is an InvalidArgumentError.  It is
the scatter-add that the gradients of gathers and slices use (ops/array_grad.py).  No
lowering: it runs as a runtime op with its NumPy kernel.  Its gradient (a gather) lives in
ops/array_grad.py.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor
from ..compiler.core.shapes import TensorShape, unknown_shape
from ..errors import InvalidArgumentError
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


UNSORTED_SEGMENT_SUM = OpDef("UnsortedSegmentSum", _segment_infer, _segment_kernel,
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


OP_DEFS = (UNSORTED_SEGMENT_SUM,)
