"""Gradients of the array, slicing, gather and plumbing ops (basic_ops, array_ops and the
modules it gathers, slicing_ops, gather_ops, segment_ops).

Kept beside those modules, which are at their size limit, as one table `GRADIENTS` of
(OpDef, `fn(op, *output_grads) -> [input grads]`); `ops/__init__.py` installs each entry as
`OpDef.gradient` at registration.  Shape, axis, index and size inputs get None.

Ops that only pick (and maybe repeat) elements of their input — StridedSlice, Tile,
MirrorPad, GatherNd and gathers along a non-leading axis — share one gradient,
`_scatter_back`: the same op is applied to the int32 positions 0..size(x)-1 laid out in x's
shape, which says where each output element came from, and the output gradient is
scatter-added (UnsortedSegmentSum) back into those positions.  This is exact for every mask
combination and for repeated picks.  StopGradient's gradient is None (that is its purpose);
ZerosLike and OnesLike have None too (their values do not depend on the input's values).
"""

from __future__ import annotations

from .. import dtypes as _dtypes
from . import array_ops, basic_ops, fill_ops, gather_ops, join_ops, pad_ops, reshape_ops
from . import segment_ops, slicing_ops, split_ops
from . import math_ops as mo
from .array_ops import concat, pad, reshape, reverse_v2, stack, transpose, unstack, zeros
from .array_ops import range as _range
from .builder import make_op
from .conversion import static_value
from .math_grad import sum_to_shape
from .reduction_ops import reduce_sum
from .segment_ops import unsorted_segment_sum
from .shape_ops import rank, shape, size
from .slicing_ops import gather, slice as _slice


def _same_op(op, first):
    """`op`'s op type and attributes applied to `first` in place of its first input."""
    return make_op(op.op_def, [first, *op.inputs[1:]], op.attrs).outputs[0]


def _scatter_back(op, g):
    """The gradient of an op that selects elements of its first input (see the docstring)."""
    x = op.inputs[0]
    n = size(x)
    positions = _same_op(op, reshape(_range(0, n), shape(x)))
    summed = unsorted_segment_sum(reshape(g, [-1]), reshape(positions, [-1]), n)
    return [reshape(summed, shape(x))] + [None] * (len(op.inputs) - 1)


def _pass_through(op, g):
    return [g]


def _blocked(op, *grads):
    return [None] * len(op.inputs)


def _to_input_shape(op, g):
    """For ops that keep the elements in order (Reshape, ExpandDims, Squeeze)."""
    return [reshape(g, shape(op.inputs[0]))] + [None] * (len(op.inputs) - 1)


def _inverse_permutation(perm):
    value = static_value(perm)
    if value is not None:
        inverse = [0] * value.size
        for i, p in enumerate(value.reshape(-1)):
            inverse[int(p)] = i
        return inverse
    n = size(perm)
    return unsorted_segment_sum(_range(0, n), perm, n)


def _transpose(op, g):
    conjugate = op.op_def is array_ops.CONJUGATE_TRANSPOSE
    return [transpose(g, _inverse_permutation(op.inputs[1]), conjugate=conjugate), None]


def _index_int32(t):
    return mo.cast(t, _dtypes.int32)


def _slice_grad(op, g):
    x, begin, _ = op.inputs
    begin = _index_int32(begin)
    after = shape(x) - begin - shape(g)
    return [pad(g, stack([begin, after], axis=1)), None, None]


def _pad(op, g):
    x, paddings = op.inputs[:2]
    begin = reshape(_slice(_index_int32(paddings), [0, 0], [-1, 1]), [-1])
    dx = _slice(g, begin, shape(x))
    if op.op_def is pad_ops.PAD_V2:  # every padded element is the constant
        return [dx, None, reduce_sum(g) - reduce_sum(dx)]
    return [dx, None]


def _concat(op, g):
    *xs, axis = op.inputs
    a, r = static_value(axis), xs[0].shape.ndims
    if a is not None and r is not None and all(x.shape[int(a) % r].value is not None
                                               for x in xs):
        sizes = [x.shape[int(a) % r].value for x in xs]
    else:
        axis_n = mo.floormod(_index_int32(axis), rank(xs[0]))
        sizes = stack([gather(shape(x), axis_n) for x in xs])
    return [*split_ops.split(g, sizes, axis=axis, num=len(xs)), None]


def _pack(op, g):
    return unstack(g, num=len(op.inputs), axis=op.get_attr("axis"))


def _unpack(op, *grads):
    return [stack(list(grads), axis=op.get_attr("axis"))]


def _split(op, *grads):
    return [None, concat(list(grads), op.inputs[0])]


def _split_v(op, *grads):
    return [concat(list(grads), op.inputs[2]), None, None]


def _gather(op, g):
    params, indices, axis = op.inputs
    a, r = static_value(axis), params.shape.ndims
    leading = a is not None and (int(a) == 0 or (r is not None and int(a) + r == 0))
    if op.get_attr("batch_dims") == 0 and leading:
        return [unsorted_segment_sum(g, indices, shape(params)[0]), None, None]
    return _scatter_back(op, g)


def _fill(op, g):
    return [None, reduce_sum(g)]


def _unsorted_segment_sum(op, g):
    data, ids, num = op.inputs
    # Rows with a negative id were dropped: read them from an extra row of zeros.
    zero_row = zeros(concat([[1], shape(g)[1:]], 0), dtype=g.dtype)
    safe = mo.where_v2(ids < 0, mo.cast(num, ids.dtype), ids)
    return [gather(concat([g, zero_row], 0), safe), None, None]


GRADIENTS = (
    (basic_ops.IDENTITY, _pass_through),
    (basic_ops.PLACEHOLDER_WITH_DEFAULT, _pass_through),
    (basic_ops.STOP_GRADIENT, _blocked),
    (reshape_ops.RESHAPE, _to_input_shape),
    (array_ops.EXPAND_DIMS, _to_input_shape),
    (array_ops.SQUEEZE, _to_input_shape),
    (array_ops.TRANSPOSE, _transpose),
    (array_ops.CONJUGATE_TRANSPOSE, _transpose),
    (array_ops.REVERSE_V2, lambda op, g: [reverse_v2(g, op.inputs[1]), None]),
    (pad_ops.BROADCAST_TO, lambda op, g: [sum_to_shape(g, op.inputs[0]), None]),
    (pad_ops.TILE, _scatter_back),
    (pad_ops.PAD, _pad),
    (pad_ops.PAD_V2, _pad),
    (pad_ops.MIRROR_PAD, _scatter_back),
    (join_ops.CONCAT_V2, _concat),
    (join_ops.PACK, _pack),
    (join_ops.UNPACK, _unpack),
    (split_ops.SPLIT, _split),
    (split_ops.SPLIT_V, _split_v),
    (slicing_ops.SLICE, _slice_grad),
    (slicing_ops.STRIDED_SLICE, _scatter_back),
    (gather_ops.GATHER_V2, _gather),
    (gather_ops.GATHER_ND, _scatter_back),
    (segment_ops.UNSORTED_SEGMENT_SUM, _unsorted_segment_sum),
    (fill_ops.FILL, _fill),
    (fill_ops.ZEROS_LIKE, _blocked),
    (fill_ops.ONES_LIKE, _blocked),
)
