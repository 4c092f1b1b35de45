"""Sorting along the last axis: Sort (values) and ArgSort (positions), and `sort`/`argsort`.

- `Sort(x)`: each row of the last axis in ascending order, NaNs last (NumPy's order).
- `ArgSort(x)`: int64 positions that sort each row, stable (equal values keep their order).

`sort(values, axis=-1, direction='ASCENDING')` and `argsort(values, axis=-1, direction=
'ASCENDING', stable=False)` are TensorFlow's functions: another axis is moved last and back,
and DESCENDING sorts an order-reversing image of the values (`-x` for floats, `~x` for
integers, which never overflows) and maps it back.  Reference kernels are NumPy's
`np.sort`/`np.argsort(kind='stable')`; the lowering is the kernel IR's LIBCALL node.

Gradient of Sort: the output gradient goes back to the positions the values came from
(a scatter-add through the flattened ArgSort permutation, `unsorted_segment_sum`).  ArgSort's
integer output has none.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir_build import NotLowerable
from ..compiler.core.shapes import unknown_shape
from . import fill_ops, gather_ops, reduction_ops, reshape_ops, segment_ops, shape_ops, \
    slicing_ops
from .array_ops import transpose
from .bitwise_ops import invert
from .builder import REALS, check_dtype, graph_for, make_op, to_tensor
from .math_cast import cast
from .math_unary import negative
from .registry import OpDef

__all__ = ["sort", "argsort", "top_k"]


def _infer(out_dtype):
    def infer(op):
        (x,) = op.inputs
        check_dtype(x, REALS, "values")
        shape = x.shape
        if shape.ndims == 0:
            raise ValueError(f"values must have rank >= 1, but {x.name} is a scalar.")
        return [(out_dtype or x.dtype, shape if shape.ndims is not None else unknown_shape())]

    return infer


# --- gradient ----------------------------------------------------------------------------------
def _sort_grad(op, grad):
    x = op.inputs[0]
    shape = shape_ops.shape(x, out_type=_dtypes.int64)
    n = shape[-1]
    total = reduction_ops.reduce_prod(shape)
    positions = make_op(ARG_SORT, [x], {}).outputs[0]
    zero = cast(0, _dtypes.int64)
    row_start = reshape_ops.reshape(fill_ops.range(zero, total, n), [-1, 1])
    flat_ids = reshape_ops.reshape(reshape_ops.reshape(positions, [-1, n]) + row_start, [-1])
    flat = segment_ops.unsorted_segment_sum(reshape_ops.reshape(grad, [-1]), flat_ids, total)
    return [reshape_ops.reshape(flat, shape)]


# --- lowerings to kernel IR --------------------------------------------------------------------
def _lowering(routine_name: str):
    def lower(ctx, op, inputs):
        (x,) = inputs
        if op.inputs[0].dtype.is_bool or not x.shape:
            raise NotLowerable(f"{op.type} of bool values or of a scalar is not compiled")
        return [ir.libcall(ir.Routine[routine_name], [x], op.outputs[0].dtype, x.shape)]

    return lower


SORT = OpDef("Sort", _infer(None), lambda ctx, inputs, attrs: [np.sort(inputs[0], axis=-1)],
             gradient=_sort_grad, lower=_lowering("SORT"),
             doc="each row of the last axis sorted ascending, NaNs last")
ARG_SORT = OpDef("ArgSort", _infer(_dtypes.int64),
                 lambda ctx, inputs, attrs: [np.argsort(inputs[0], axis=-1, kind="stable")
                                             .astype(np.int64)],
                 lower=_lowering("ARGSORT"),
                 doc="int64 positions sorting each row of the last axis (stable)")

OP_DEFS = (SORT, ARG_SORT)


def _last_axis_moves(x: Tensor, axis: int):
    """(perm, rank): the transpose that puts `axis` last (an involution), or None."""
    rank = x.shape.ndims
    if rank is None:
        if axis in (-1,):
            return None, rank
        raise ValueError(f"sorting {x.name} of unknown rank along axis {axis}: use axis=-1.")
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of bounds for {x.name} of rank {rank}.")
    axis %= rank
    if axis == rank - 1:
        return None, rank
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return perm, rank


def _sorted(op_def, values, axis, descending, name):
    graph = graph_for((values,))
    x = to_tensor(values, graph=graph, name="values")
    perm, _ = _last_axis_moves(x, axis)
    with graph.as_default(), graph.name_scope(name or op_def.name) as scope:
        if perm is not None:
            x = transpose(x, perm)
        flip = (invert if x.dtype.is_integer else negative) if descending else None
        if flip is not None:
            x = flip(x)
        out = make_op(op_def, [x], {}, name=scope if perm is None and flip is None else None,
                      graph=graph).outputs[0]
        if flip is not None and op_def is SORT:
            out = flip(out)
        if perm is not None:
            out = transpose(out, perm)
    return out


def _direction(direction: str) -> bool:
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"direction must be 'ASCENDING' or 'DESCENDING', not {direction!r}")
    return direction == "DESCENDING"


def sort(values, axis=-1, direction="ASCENDING", name=None) -> Tensor:
    """`values` sorted along `axis` (ASCENDING or DESCENDING)."""
    return _sorted(SORT, values, axis, _direction(direction), name)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None) -> Tensor:
    """int32 positions that sort `values` along `axis`, as TensorFlow's; always stable (ties
    keep their order)."""
    positions = sort_positions(values, axis, direction, name)
    with positions.graph.as_default():
        return cast(positions, "int32")


def sort_positions(values, axis=-1, direction="ASCENDING", name=None) -> Tensor:
    """int64 positions that sort `values` along `axis`, stably (the ArgSort op's output;
    NumPy's np.argsort traces onto it)."""
    return _sorted(ARG_SORT, values, axis, _direction(direction), name)


def top_k(input, k=1, sorted=True, name=None):  # noqa: A002 - TensorFlow's names
    """(values, indices) of the `k` largest entries along the last axis, largest first
    (TF 1.x `tf.nn.top_k`): equal values in order of position (a stable descending sort,
    then a gather), indices int32; differentiable through the values."""
    graph = graph_for((input,))
    with graph.as_default(), graph.name_scope(name or "TopKV2"):
        x = to_tensor(input, name="input")
        rank = x.shape.ndims
        if rank is None or rank == 0:
            raise ValueError(f"top_k: input {x.name} must have a known rank >= 1, got shape "
                             f"{x.shape}.")
        k = int(k)
        last = x.shape.dims[-1]
        if k < 0 or (last is not None and k > last):
            raise ValueError(f"top_k: k = {k} must be in [0, {last}] for input {x.name} of "
                             f"shape {x.shape}.")
        order = sort_positions(x, axis=-1, direction="DESCENDING")
        begin = [0] * rank
        size = [-1] * (rank - 1) + [k]
        indices = cast(slicing_ops.slice(order, begin, size), _dtypes.int32)
        values = gather_ops.gather(x, indices, axis=rank - 1, batch_dims=rank - 1)
    return values, indices
