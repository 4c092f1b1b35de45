"""Splitting a tensor into pieces along one dimension: Split and SplitV.

Public function (re-exported by `array_ops`): `split`.  The number of outputs is fixed when
the op is built (attr `num_split`); SplitV's sizes may hold one -1 (the rest of the
dimension).  Each piece lowers to an index remap of the input.
"""

from __future__ import annotations

import numpy as np

from ..compiler.core import ir
from ..compiler.core.ir_build import NotLowerable
from ..compiler.core.ir_build import remap
from ..compiler.core.shapes import Dimension, unknown_shape
from . import join_ops
from . import lower_index as lx
from .array_common import (check_rank, index_tensor, normalize_axis, runtime_error, static_int,
                           static_ints)
from .builder import INDEX_TYPES, check_dtype, graph_for, make_op, to_tensor
from .lower_util import require_real
from .registry import OpDef


def _split_infer(op):
    axis_t, x = op.inputs
    check_dtype(axis_t, INDEX_TYPES, "split_dim")
    check_rank(axis_t, 0, "split_dim")
    num = op.get_attr("num_split")
    axis = static_int(axis_t)
    if x.shape.ndims is None or axis is None:
        return [(x.dtype, unknown_shape(x.shape.ndims))] * num
    axis = normalize_axis(axis, x.shape.ndims, "split_dim")
    dims = list(x.shape.dims)
    size = dims[axis]
    if size is not None:
        if size % num:
            raise ValueError(f"Dimension size must be evenly divisible by {num} but is {size}: "
                             f"the number of ways to split should evenly divide the split "
                             f"dimension (axis {axis} of shape {x.shape}).")
        dims[axis] = size // num
    return [(x.dtype, dims)] * num


def _split_kernel(ctx, inputs, attrs):
    axis, x = inputs
    num = attrs["num_split"]
    axis = int(axis)
    if not -x.ndim <= axis < x.ndim or x.shape[axis] % num:
        raise runtime_error(ctx, f"Cannot split input of shape {list(x.shape)} along axis "
                                 f"{axis} into {num} equal parts")
    return list(np.split(x, num, axis=axis))


# --- gradients --------------------------------------------------------------------------------


def _split_grad(op, *grads):
    return [None, join_ops.concat(list(grads), op.inputs[0])]


def _split_v_grad(op, *grads):
    return [join_ops.concat(list(grads), op.inputs[2]), None, None]


# --- lowerings ---------------------------------------------------------------------------------
def _split_pieces(x, axis, starts, sizes, outputs):
    """One remap per piece: out_k[i] = x[i + starts[k] along axis]."""
    out = []
    for start, size, t in zip(starts, sizes, outputs):
        dims = list(x.shape)
        dims[axis] = size
        out.append(remap(x, lx.out_shape(t, dims), lambda a, s=start: [
            lx.add(v, s) if k == axis else v for k, v in enumerate(a)]))
    return out


def _lower_split(ctx, op, inputs):
    require_real(op)
    x = inputs[1]
    num = op.get_attr("num_split")
    axis = lx.static_axis(ctx, op.inputs[0], len(x.shape), "split_dim")
    n = x.shape[axis]
    lx.require(ctx, lx.eq(lx.mod(n, num), 0), f"Number of ways to split should evenly divide "
                                              f"the split dimension ({num} ways, axis {axis})")
    piece = lx.floordiv(n, num)
    return _split_pieces(x, axis, [lx.mul(piece, k) for k in range(num)], [piece] * num,
                         op.outputs)


SPLIT = OpDef("Split", _split_infer, _split_kernel, default_name="split",
              gradient=_split_grad, lower=_lower_split)


def resolve_split_sizes(sizes, total, fail):
    """`sizes` with its one -1 filled in so they sum to `total`; raises `fail(message)`."""
    unknown = [i for i, s in enumerate(sizes) if s == -1]
    if len(unknown) > 1:
        raise fail(f"size_splits can only have one -1, got {sizes}")
    for i, s in enumerate(sizes):
        if s < -1:
            raise fail(f"Split size at index {i} must be >= 0. Got: {s}")
    known = sum(s for s in sizes if s >= 0)
    out = list(sizes)
    if unknown:
        if known > total:
            raise fail(f"Split size at index {unknown[0]} must be >= 0: sizes {sizes} already "
                       f"exceed the dimension's size {total}")
        out[unknown[0]] = total - known
    elif known != total:
        raise fail(f"Can't split axis of size {total} into pieces of size {sizes}: they "
                   f"must sum to the dimension's size")
    return out


def _split_v_infer(op):
    x, sizes_t, axis_t = op.inputs
    check_dtype(sizes_t, INDEX_TYPES, "size_splits")
    check_dtype(axis_t, INDEX_TYPES, "split_dim")
    check_rank(sizes_t, 1, "size_splits")
    check_rank(axis_t, 0, "split_dim")
    num = op.get_attr("num_split")
    if sizes_t.shape.dims is not None and sizes_t.shape.dims[0] not in (None, num):
        raise ValueError(f"size_splits has {sizes_t.shape.dims[0]} entries but num_split is "
                         f"{num}.")
    axis = static_int(axis_t)
    sizes = static_ints(sizes_t)
    if x.shape.ndims is None or axis is None:
        return [(x.dtype, unknown_shape(x.shape.ndims))] * num
    axis = normalize_axis(axis, x.shape.ndims, "split_dim")
    dims = list(x.shape.dims)
    if sizes is None:
        return [(x.dtype, dims[:axis] + [None] + dims[axis + 1:])] * num
    if dims[axis] is not None:
        sizes = resolve_split_sizes(sizes, dims[axis], ValueError)
    return [(x.dtype, dims[:axis] + [None if s == -1 else s] + dims[axis + 1:])
            for s in sizes]


def _split_v_kernel(ctx, inputs, attrs):
    x, sizes, axis = inputs
    axis = int(axis)
    if not -x.ndim <= axis < x.ndim:
        raise runtime_error(ctx, f"split_dim {axis} out of range for input of shape "
                                 f"{list(x.shape)}")
    sizes = resolve_split_sizes([int(s) for s in sizes], x.shape[axis],
                                lambda m: runtime_error(ctx, f"{m} (input shape "
                                                             f"{list(x.shape)})"))
    return list(np.split(x, np.cumsum(sizes)[:-1], axis=axis))


def _lower_split_v(ctx, op, inputs):
    require_real(op)
    x = inputs[0]
    axis = lx.static_axis(ctx, op.inputs[2], len(x.shape), "split_dim")
    sizes = ctx.symbolic_ints(op.inputs[1])
    free = [k for k, s in enumerate(sizes) if ir.is_const(s, -1)]
    known = [s for k, s in enumerate(sizes) if k not in free]
    if len(free) > 1 or not all(lx.provably_nonneg(s) for s in known):
        raise NotLowerable("SplitV sizes must be non-negative sizes and at most one -1")
    n = x.shape[axis]
    if free:
        sizes[free[0]] = lx.sub(n, lx.total(known))
        lx.require(ctx, lx.ge(sizes[free[0]], 0), f"SplitV sizes exceed dimension {axis}")
    else:
        lx.require_equal(ctx, lx.total(sizes), n, f"SplitV sizes must sum to dimension {axis}")
    starts = [ir.index(0)]
    for s in sizes[:-1]:
        starts.append(lx.add(starts[-1], s))
    return _split_pieces(x, axis, starts, sizes, op.outputs)


SPLIT_V = OpDef("SplitV", _split_v_infer, _split_v_kernel, default_name="split",
                gradient=_split_v_grad, lower=_lower_split_v)


def split(value, num_or_size_splits, axis=0, num=None, name="split") -> list:
    """Split `value` along `axis` into `num_or_size_splits` equal parts, or parts of the sizes
    listed (one size may be -1: the rest of the dimension)."""
    x = to_tensor(value)
    graph = graph_for([x])
    a = index_tensor(axis, "split_dim", graph=graph)
    if isinstance(num_or_size_splits, (int, np.integer, Dimension)) and \
            not isinstance(num_or_size_splits, bool):
        n = int(num_or_size_splits)
        if n < 1:
            raise ValueError(f"num_split must be at least 1, got {n}.")
        return list(make_op(SPLIT, [a, x], {"num_split": n}, name or "split").outputs)
    sizes = index_tensor(num_or_size_splits, "size_splits", graph=graph)
    if sizes.shape.ndims == 0:
        raise ValueError("Rank-0 tensors are not supported as the num_or_size_splits argument "
                         f"to split (got {num_or_size_splits!r}); pass a Python int for equal "
                         "parts or a 1-D list/tensor of sizes.")
    if num is None:
        num = sizes.shape.dims[0] if sizes.shape.ndims == 1 else None
        if num is None:
            raise ValueError(f"Cannot infer argument `num` from shape {sizes.shape} of "
                             "size_splits; pass num=.")
    if int(num) < 1:
        raise ValueError(f"split needs at least one size in size_splits, got {num}.")
    return list(make_op(SPLIT_V, [x, sizes, a], {"num_split": int(num)},
                        name or "split").outputs)


OP_DEFS = (SPLIT, SPLIT_V)
__all__ = ["split"]
