"""TensorScatterUpdate (`tensor_scatter_nd_update`): a copy of a tensor with slices replaced.

`output = tensor` except `output[indices[i]] = updates[i]` for each leading position i of
`indices` (its last dimension indexes the first `indices.shape[-1]` axes of `tensor`). When
an index repeats, the later update wins, as NumPy's assignment `a[idx] = v` leaves it (the
NumPy front end writes `a[idx] = v` with a traced `idx` through this op). An index out of
range is an InvalidArgumentError.

Lowered to the kernel IR's SCATTER node when the indices address rows (shape [k, 1], as the
NumPy front end writes them): a runtime check that every row index is in range, then the
row writes in order; the CPU target writes in place when the tensor is a dead temporary or
a donated argument of `flowjit.jit` (compiler/schedule.py). Other index depths run as a
runtime op with the NumPy kernel.

The gradient is defined here too: the tensor's gradient is zero where it was overwritten,
the updates' gradient is the output gradient gathered at `indices` (for a repeated index
every occurrence receives it, although only the last one is kept).
"""

from __future__ import annotations

import numpy as np

from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir_build import NotLowerable
from ..compiler.core.shapes import TensorShape, unknown_shape
from ..errors import InvalidArgumentError
from . import lower_index as lx
from .builder import INDEX_TYPES, check_dtype, graph_for, make_op, to_tensor
from .fill_ops import zeros_like
from .gather_ops import _guarded, _index_check, gather_nd
from .registry import OpDef

__all__ = ["tensor_scatter_nd_update"]


def _infer(op):
    tensor, indices, updates = op.inputs
    check_dtype(indices, INDEX_TYPES, "indices")
    if updates.dtype is not tensor.dtype:
        raise TypeError(f"updates ({updates.dtype.name}) must have the dtype of tensor "
                        f"({tensor.dtype.name}).")
    t, i, u = tensor.shape, indices.shape, updates.shape
    if i.ndims == 0:
        raise ValueError(f"indices must be at least a vector, but {indices.name} is a scalar.")
    if None not in (t.ndims, i.ndims, u.ndims) and i.dims[-1] is not None:
        k = i.dims[-1]
        want = TensorShape(list(i.dims[:-1]) + list(t.dims[k:]))
        if k > t.ndims or not u.is_compatible_with(want):
            raise ValueError(f"updates shape {u} must be indices.shape[:-1] + "
                             f"tensor.shape[indices.shape[-1]:] = {want} (tensor {t}, "
                             f"indices {i}).")
    return [(tensor.dtype, t if t.ndims is not None else unknown_shape())]


def _kernel(ctx, inputs, attrs):
    tensor, indices, updates = inputs
    k = indices.shape[-1]
    flat = indices.reshape(-1, k).astype(np.intp)
    limits = np.array(tensor.shape[:k], dtype=np.intp)
    bad = ((flat < 0) | (flat >= limits)).any(axis=1)
    if bad.any():
        row = int(np.argmax(bad))
        raise InvalidArgumentError(None, ctx.op if ctx else None,
                                   f"indices[{row}] = {flat[row].tolist()} does not index "
                                   f"into shape {list(tensor.shape)}")
    out = np.array(tensor, copy=True)
    out[tuple(flat.T)] = updates.reshape((len(flat),) + tensor.shape[k:])
    return [out]


def _gradient(op, grad):
    _, indices, updates = op.inputs
    return [tensor_scatter_nd_update(grad, indices, zeros_like(updates)), None,
            gather_nd(grad, indices)]


def _lower(ctx, op, inputs):
    """Row scatter (indices of shape [k, 1]) as SCATTER; anything else stays a runtime op."""
    tensor, indices, updates = inputs
    if len(indices.shape) != 2 or not ir.is_const(indices.shape[1], 1) or not tensor.shape:
        raise NotLowerable("TensorScatterUpdate is compiled for row indices of shape [k, 1]")
    limit = tensor.shape[0]
    flag = _index_check(ctx, indices, lambda v, r: lx.all_of([lx.ge(v, 0), lx.lt(v, limit)]),
                        f"{op.name}: an index does not index into the tensor's first axis")
    axes = ir.axis_vars(1)
    row = lx.index(ir.load(indices, [axes[0], ir.index(0)]))
    rows = ir.compute(ir.INDEX, [indices.shape[0]], axes, _guarded(flag, row, limit))
    return [ir.scatter_rows(tensor, rows, updates)]


TENSOR_SCATTER_UPDATE = OpDef("TensorScatterUpdate", _infer, _kernel, gradient=_gradient,
                              lower=_lower,
                              doc="tensor with tensor[indices[i]] = updates[i] (last wins).")


def tensor_scatter_nd_update(tensor, indices, updates, name=None) -> Tensor:
    """A copy of `tensor` with the slices addressed by `indices` replaced by `updates`."""
    graph = graph_for((tensor, indices, updates))
    tensor = to_tensor(tensor, graph=graph, name="tensor")
    indices = to_tensor(indices, graph=graph, name="indices")
    updates = to_tensor(updates, dtype=tensor.dtype, graph=graph, name="updates")
    return make_op(TENSOR_SCATTER_UPDATE, [tensor, indices, updates], {}, name,
                   graph=graph).outputs[0]


OP_DEFS = (TENSOR_SCATTER_UPDATE,)
