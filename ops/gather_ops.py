"""Gathers: GatherV2 (`gather`), GatherNd (`gather_nd`), and `boolean_mask` built on them.

Indices are checked when the graph runs, as TensorFlow's CPU kernels do: an index outside
[0, limit) is an InvalidArgumentError naming the index's position, its value and the valid
range.  `axis` is a tensor input; a negative axis counts from the end of params.
`boolean_mask` is a composition, as in TensorFlow: Reshape (the masked dimensions into one),
Where (coordinates of the true elements), Squeeze and GatherV2.  A gather along the leading
axis has an IndexedSlices as its gradient (ops/indexed_slices.py: the output gradient's rows
at the gathered rows, so an embedding table's gradient is never dense), or inside a cond or
while loop a scatter-add (UnsortedSegmentSum); other gathers and GatherNd scatter back
through `segment_ops.scatter_back`.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir_build import NotLowerable
from ..compiler.core.shapes import TensorShape, unknown_shape
from ..errors import InvalidArgumentError
from . import (getitem_ops, indexed_slices, join_ops, rearrange_ops, reduction_ops, reshape_ops,
               segment_ops, select_ops, shape_ops)
from . import lower_index as lx
from .builder import INDEX_TYPES, check_dtype, graph_for, make_op, to_tensor
from .conversion import static_value
from .lower_util import require_real
from .registry import OpDef

__all__ = ["gather", "gather_nd", "boolean_mask"]


def _position(index) -> str:
    return f"[{','.join(str(int(i)) for i in index)}]" if len(index) else ""


# --- GatherV2 -------------------------------------------------------------------------------


def _normalize_axis(axis: int, rank: int, batch_dims: int) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for params of rank {rank} (expected "
                         f"{-rank} <= axis < {rank}); params must have rank at least "
                         f"{(axis + 1) if axis >= 0 else -axis}.")
    axis = axis + rank if axis < 0 else axis
    if axis < batch_dims:
        raise ValueError(f"batch_dims ({batch_dims}) must be less than or equal to axis "
                         f"({axis}).")
    return axis


def _normalize_batch_dims(batch_dims: int, indices_rank):
    if batch_dims < 0:
        if indices_rank is None:
            return None
        batch_dims += indices_rank
        if batch_dims < 0:
            raise ValueError(f"batch_dims {batch_dims - indices_rank} is out of range for "
                             f"indices of rank {indices_rank}.")
    if indices_rank is not None and batch_dims > indices_rank:
        raise ValueError(f"batch_dims ({batch_dims}) must be <= rank(indices) "
                         f"({indices_rank}).")
    return batch_dims


def _gather_infer(op):
    params, indices, axis_t = op.inputs
    check_dtype(indices, INDEX_TYPES, "indices")
    check_dtype(axis_t, INDEX_TYPES, "axis")
    if axis_t.shape.ndims not in (None, 0):
        raise ValueError(f"axis must be a scalar, but {axis_t.name} has shape {axis_t.shape}.")
    p, i = params.shape, indices.shape
    batch_dims = _normalize_batch_dims(op.get_attr("batch_dims"), i.ndims)
    if p.ndims is None or i.ndims is None or batch_dims is None:
        return [(params.dtype, unknown_shape())]
    axis = static_value(axis_t)
    if axis is None:
        rank = p.ndims + i.ndims - 1 - batch_dims
        return [(params.dtype, unknown_shape(rank))]
    axis = _normalize_axis(int(axis), p.ndims, batch_dims)
    batch = TensorShape(p.dims[:batch_dims])
    if not batch.is_compatible_with(i.dims[:batch_dims]):
        raise ValueError(f"params.shape[:{batch_dims}] {batch} and indices.shape[:{batch_dims}]"
                         f" {TensorShape(i.dims[:batch_dims])} must match (batch_dims = "
                         f"{batch_dims}).")
    batch = batch.merge_with(i.dims[:batch_dims])
    dims = batch.dims + p.dims[batch_dims:axis] + i.dims[batch_dims:] + p.dims[axis + 1:]
    return [(params.dtype, TensorShape(dims))]


def _check_range(ctx, indices, limit):
    bad = (indices < 0) | (indices >= limit)
    if bad.any():
        where = tuple(np.argwhere(bad)[0])
        raise InvalidArgumentError(None, ctx.op if ctx else None,
                                   f"indices{_position(where)} = {indices[where]} is not in "
                                   f"[0, {limit})")


def _gather_kernel(ctx, inputs, attrs):
    params, indices, axis = inputs
    op = ctx.op if ctx else None
    try:
        batch_dims = _normalize_batch_dims(attrs["batch_dims"], indices.ndim)
        axis = _normalize_axis(int(axis), params.ndim, batch_dims)
    except ValueError as e:
        raise InvalidArgumentError(None, op, str(e)) from None
    batch = params.shape[:batch_dims]
    if indices.shape[:batch_dims] != batch:
        raise InvalidArgumentError(None, op, f"params.shape[:{batch_dims}] {batch} should "
                                             f"equal indices.shape[:{batch_dims}] "
                                             f"{indices.shape[:batch_dims]}.")
    _check_range(ctx, indices, params.shape[axis])
    idx = indices.astype(np.intp)
    if batch_dims == 0:
        return [np.asarray(np.take(params, idx, axis=axis), dtype=params.dtype)]
    out_shape = params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis + 1:]
    nb = int(np.prod(batch, dtype=np.int64))
    p = params.reshape((nb,) + params.shape[batch_dims:])
    i = idx.reshape((nb,) + indices.shape[batch_dims:])
    out = np.empty((nb,) + out_shape[batch_dims:], dtype=params.dtype)
    for k in range(nb):
        out[k] = np.take(p[k], i[k], axis=axis - batch_dims)
    return [out.reshape(out_shape)]


# --- gradients --------------------------------------------------------------------------------


def _gather_grad(op, g):
    params, indices, axis = op.inputs
    a, r = static_value(axis), params.shape.ndims
    leading = a is not None and (int(a) == 0 or (r is not None and int(a) + r == 0))
    if op.get_attr("batch_dims") == 0 and leading:
        if op._cf_context is None:
            return [indexed_slices.rows_gradient(params, indices, g), None, None]
        # inside a cond or loop the gradient stays dense (compiler/gradients.py's loops
        # and branches carry tensors)
        return [segment_ops.unsorted_segment_sum(g, indices, shape_ops.shape(params)[0]), None,
                None]
    return segment_ops.scatter_back(op, g)


def _gather_nd_grad(op, g):
    """GatherNd only picks elements of its input (see segment_ops.scatter_back)."""
    return segment_ops.scatter_back(op, g)


# --- lowerings ---------------------------------------------------------------------------------
# A gather loads params at an index read from `indices`.  Bad indices must raise, as the
# reference kernels do: a REDUCE over the indices computes "every index is in range", a
# data-dependent runtime check (LowerContext.check) reads it, and the gather's loads are
# clamped with an upper bound that depends on that flag, so the check runs first (its loop
# nest precedes the gather's) and no load ever leaves the params buffer.


def _index_check(ctx, indices, bound_fn, message):
    """The rank-0 bool node "bound_fn(reduce vars) holds everywhere", checked at run time."""
    rvars = [ir.reduce_var(k) for k in range(len(indices.shape))]
    value = lx.index(ir.load(indices, rvars))
    ok = ir.reduce(_dtypes.bool_, [], [], rvars, indices.shape, bound_fn(value, rvars),
                   ir.Combiner.AND)
    flag = ir.load(ok, ())
    ctx.check(flag, message)
    return flag


def _guarded(flag, value, size):
    """`value` clamped into [0, size) with a bound that reads `flag` (ordering the check)."""
    return lx.maximum(lx.minimum(value, lx.select(flag, lx.sub(size, 1), ir.index(0))), 0)


def _lower_gather(ctx, op, inputs):
    require_real(op)
    params, indices = inputs[:2]
    p_rank, i_rank = len(params.shape), len(indices.shape)
    bd = op.get_attr("batch_dims")
    bd = bd + i_rank if bd < 0 else bd
    axis = lx.static_axis(ctx, op.inputs[2], p_rank)
    for k in range(bd):
        lx.require_equal(ctx, params.shape[k], indices.shape[k],
                         f"params.shape[{k}] must equal indices.shape[{k}] (batch_dims {bd})")
    limit = params.shape[axis]
    flag = _index_check(ctx, indices, lambda v, r: lx.all_of([lx.ge(v, 0), lx.lt(v, limit)]),
                        f"{op.name}: an index is out of range [0, params.shape[{axis}])")
    n_idx = i_rank - bd
    dims = list(params.shape[:axis]) + list(indices.shape[bd:]) + list(params.shape[axis + 1:])
    shape = lx.out_shape(op.outputs[0], dims)
    axes = ir.axis_vars(len(shape))
    where = lx.index(ir.load(indices, axes[:bd] + axes[axis:axis + n_idx]))
    at = _guarded(flag, where, limit)
    body = ir.load(params, axes[:axis] + (at,) + axes[axis + n_idx:])
    return [ir.compute(params.dtype, shape, axes, body)]


GATHER_V2 = OpDef("GatherV2", _gather_infer, _gather_kernel,
                  doc="Slices of params along axis at the given indices (TF's GatherV2).",
                  gradient=_gather_grad, lower=_lower_gather)


def gather(params, indices, validate_indices=None, name=None, axis=None,
           batch_dims: int = 0) -> Tensor:
    """Gather slices of `params` along `axis` (default: `batch_dims`) at `indices`.

    The result has shape params.shape[:axis] + indices.shape[batch_dims:] +
    params.shape[axis + 1:].  Indices outside [0, params.shape[axis]) are an
    InvalidArgumentError when the graph runs.  `validate_indices` is accepted and ignored
    (indices are always validated), as in TensorFlow.
    """
    del validate_indices
    if axis is None:
        axis = batch_dims
    graph = graph_for((params, indices, axis))
    params = to_tensor(params, graph=graph, name="params")
    indices = to_tensor(indices, graph=graph, name="indices")
    axis = to_tensor(axis, graph=graph, name="axis")
    return make_op(GATHER_V2, [params, indices, axis], {"batch_dims": int(batch_dims)},
                   name, graph=graph).outputs[0]


# --- GatherNd -------------------------------------------------------------------------------


def _gather_nd_infer(op):
    params, indices = op.inputs
    check_dtype(indices, INDEX_TYPES, "indices")
    p, i = params.shape, indices.shape
    if i.ndims == 0:
        raise ValueError(f"indices must be at least a vector, but {indices.name} is a scalar.")
    if i.ndims is None or i.dims[-1] is None:
        return [(params.dtype, unknown_shape())]
    k = i.dims[-1]
    if p.ndims is None:
        return [(params.dtype, unknown_shape())]
    if k > p.ndims:
        raise ValueError(f"indices.shape[-1] must be <= params.rank, but saw indices shape "
                         f"{i} and params shape {p}.")
    return [(params.dtype, TensorShape(i.dims[:-1] + p.dims[k:]))]


def _gather_nd_kernel(ctx, inputs, attrs):
    params, indices = inputs
    k = indices.shape[-1]
    lead = indices.shape[:-1]
    n = int(np.prod(lead, dtype=np.int64))
    if k > params.ndim:
        raise InvalidArgumentError(None, ctx.op if ctx else None,
                                   f"indices.shape[-1] ({k}) must be <= params.rank "
                                   f"({params.ndim}).")
    flat = indices.reshape((n, k)).astype(np.intp)
    limits = np.array(params.shape[:k], dtype=np.intp)
    bad = ((flat < 0) | (flat >= limits)).any(axis=1)
    if bad.any():
        row = int(np.argmax(bad))
        where = np.unravel_index(row, lead) if lead else ()
        shape = ",".join(str(d) for d in params.shape)
        raise InvalidArgumentError(
            None, ctx.op if ctx else None,
            f"indices{_position(where)} = [{', '.join(str(v) for v in flat[row])}] does "
            f"not index into param shape [{shape}]")
    if k == 0:
        out = np.broadcast_to(params, (n,) + params.shape)
    else:
        out = params[tuple(flat.T)]
    return [np.array(out.reshape(lead + params.shape[k:]), copy=True)]


def _lower_gather_nd(ctx, op, inputs):
    require_real(op)
    params, indices = inputs
    last = indices.shape[-1] if indices.shape else None
    if last is None or not ir.is_const(last):
        raise NotLowerable("GatherNd needs indices.shape[-1] known when compiling")
    k = last.attr
    if k > len(params.shape):
        raise NotLowerable("GatherNd indices.shape[-1] exceeds the rank of params")
    limits = list(params.shape[:k])
    if k:
        flag = _index_check(ctx, indices, lambda v, r: lx.all_of(
            [lx.ge(v, 0), lx.lt(v, lx.choose(r[-1], limits))]),
            f"{op.name}: an index does not index into params")
    lead = list(indices.shape[:-1])
    shape = lx.out_shape(op.outputs[0], lead + list(params.shape[k:]))
    axes = ir.axis_vars(len(shape))
    pos = axes[:len(lead)]
    at = [_guarded(flag, lx.index(ir.load(indices, pos + (ir.index(c),))), limits[c])
          for c in range(k)]
    return [ir.compute(params.dtype, shape, axes,
                       ir.load(params, at + list(axes[len(lead):])))]


GATHER_ND = OpDef("GatherNd", _gather_nd_infer, _gather_nd_kernel,
                  doc="params[tuple(indices[..., :])] for each leading position of indices.",
                  gradient=_gather_nd_grad, lower=_lower_gather_nd)


def gather_nd(params, indices, name=None, batch_dims: int = 0) -> Tensor:
    """Gather slices of `params` addressed by the last dimension of `indices`.

    The result has shape indices.shape[:-1] + params.shape[indices.shape[-1]:].  Only
    batch_dims=0 is supported (NotImplementedError otherwise).
    """
    if batch_dims != 0:
        raise NotImplementedError("gather_nd with batch_dims != 0 is not supported; use "
                                  "gather with batch_dims, or add the batch index columns "
                                  "to indices.")
    graph = graph_for((params, indices))
    params = to_tensor(params, graph=graph, name="params")
    indices = to_tensor(indices, graph=graph, name="indices")
    return make_op(GATHER_ND, [params, indices], {}, name, graph=graph).outputs[0]


# --- boolean_mask (a composition) ------------------------------------------------------------


def _flattened_shape(tensor: Tensor, axis: int, k: int):
    """tensor's shape with dims [axis, axis + k) merged into one: a list of ints when known,
    else a 1-D tensor (a Pack of known ints and read dims, so known dims stay known)."""
    getitem, prod = getitem_ops.tensor_getitem, reduction_ops.reduce_prod
    dims = tensor.shape.dims
    if dims is None:
        s = shape_ops.shape(tensor)
        merged = prod(getitem(s, slice(axis, axis + k)), keepdims=True)
        return join_ops.concat([getitem(s, slice(None, axis)), merged,
                                getitem(s, slice(axis + k, None))], 0)
    covered = dims[axis:axis + k]
    if all(d is not None for d in covered):
        merged = int(np.prod(covered, dtype=np.int64))
    else:
        merged = prod(getitem(shape_ops.shape(tensor), slice(axis, axis + k)))
    parts = [*dims[:axis], merged, *dims[axis + k:]]
    if all(isinstance(d, int) for d in parts):
        return parts
    read = [d if d is not None else getitem(shape_ops.shape(tensor), i)
            for i, d in enumerate(dims)]
    parts = [*read[:axis], merged, *read[axis + k:]]
    return join_ops.stack([p if isinstance(p, Tensor) else to_tensor(p, dtype=_dtypes.int32)
                           for p in parts])


def boolean_mask(tensor, mask, name: str = "boolean_mask", axis=None) -> Tensor:
    """The elements (or slices) of `tensor` where the boolean `mask` is true.

    `mask` (of known rank k >= 1) covers dimensions [axis, axis + k) of `tensor` (axis
    defaults to 0); the result has those dimensions replaced by one of unknown size: the
    number of true elements, taken in row-major order.
    """
    graph = graph_for((tensor, mask))
    with graph.as_default(), graph.name_scope(name):
        tensor = to_tensor(tensor, name="tensor")
        mask = to_tensor(mask, dtype=_dtypes.bool_, name="mask")
        k = mask.shape.ndims
        if k is None:
            raise ValueError("Number of mask dimensions must be specified, even if some "
                             "dimensions are None (shape=[None] is fine, shape=None is not).")
        if k == 0:
            raise ValueError("mask cannot be scalar.")
        axis = 0 if axis is None else int(axis)
        rank = tensor.shape.ndims
        if axis < 0:
            if rank is None:
                raise ValueError(f"A negative axis ({axis}) needs a tensor of known rank.")
            axis += rank
        if rank is not None:
            if not 0 <= axis <= rank - k:
                raise ValueError(f"mask of rank {k} at axis {axis} does not fit a tensor of "
                                 f"rank {rank}.")
            covered = TensorShape(tensor.shape.dims[axis:axis + k])
            if not covered.is_compatible_with(mask.shape):
                raise ValueError(f"Shapes {covered} (dimensions {axis}..{axis + k - 1} of "
                                 f"the tensor) and {mask.shape} (the mask) are incompatible")
        flat = reshape_ops.reshape(tensor, _flattened_shape(tensor, axis, k))
        indices = rearrange_ops.squeeze(select_ops.where(reshape_ops.reshape(mask, [-1])), axis=[1])
        return gather(flat, indices, axis=axis)


OP_DEFS = (GATHER_V2, GATHER_ND)
