"""Ops that rearrange one tensor's elements: Transpose, ConjugateTranspose, ExpandDims,
Squeeze and ReverseV2 (`transpose`, `expand_dims`, `squeeze`, `reverse_v2`/`reverse`).

Re-exported by `array_ops`.  The permutation and axis arguments are int32/int64 tensor
inputs, as in TensorFlow; their values are read with `static_value` for shape inference when
known.  Each op lowers to an index remap (ir_build.remap) that the scheduler fuses into its
consumers; gradients apply the inverse rearrangement (Transpose by the inverse permutation,
ExpandDims and Squeeze a reshape back, ReverseV2 itself).  `move_axis_to_end` (a transpose
that puts one axis last, and its inverse) serves the softmax and cross-entropy functions.
"""

from __future__ import annotations

import builtins

import numpy as np

from ..compiler.core import ir
from ..compiler.core.graph import Tensor, name_scope
from ..compiler.core.ir_build import NotLowerable
from ..compiler.core.ir_build import remap
from ..compiler.core.shapes import unknown_shape
from . import fill_ops, reshape_ops, segment_ops, shape_ops
from . import lower_index as lx
from .array_common import (check_rank, index_tensor, normalize_axis, runtime_error, static_int,
                           static_ints)
from .builder import INDEX_TYPES, check_dtype, make_op, to_tensor
from .conversion import static_value
from .lower_util import require_real
from .registry import OpDef

__all__ = ["transpose", "expand_dims", "squeeze", "reverse", "reverse_v2"]


# --- Transpose -----------------------------------------------------------------------------


def _transpose_infer(op):
    x, perm = op.inputs
    check_dtype(perm, INDEX_TYPES, "perm")
    check_rank(perm, 1, "perm")
    rank = x.shape.ndims
    n = perm.shape.dims[0] if perm.shape.ndims == 1 else None
    if rank is not None and n is not None and rank != n:
        raise ValueError(f"Dimension must be {rank} but is {n}: perm has {n} entries for a "
                         f"tensor of rank {rank}.")
    rank = rank if rank is not None else n
    values = static_ints(perm)
    if values is None or rank is None:
        return [(x.dtype, unknown_shape(rank))]
    axes = [normalize_axis(p, rank, "perm entry") for p in values]
    if sorted(axes) != list(builtins.range(rank)):
        raise ValueError(f"perm {values} is not a permutation of [0, ..., {rank - 1}].")
    if x.shape.ndims is None:
        return [(x.dtype, unknown_shape(rank))]
    return [(x.dtype, [x.shape.dims[a] for a in axes])]


def _make_transpose_kernel(conjugate: bool):
    def kernel(ctx, inputs, attrs):
        x, perm = inputs
        axes = [int(p) for p in perm.reshape(-1)]
        rank = x.ndim
        valid = len(axes) == rank and all(-rank <= a < rank for a in axes)
        if not valid or len({a % rank for a in axes}) != rank:
            raise runtime_error(ctx, f"transpose expects a permutation of [0, ..., {rank - 1}]"
                                     f" for input of shape {list(x.shape)}; got perm {axes}")
        out = np.transpose(x, [a % rank for a in axes])
        return [np.asarray(np.conj(out)) if conjugate else out]

    return kernel


def _inverse_permutation(perm):
    value = static_value(perm)
    if value is not None:
        inverse = [0] * value.size
        for i, p in enumerate(value.reshape(-1)):
            inverse[int(p)] = i
        return inverse
    n = shape_ops.size(perm)
    return segment_ops.unsorted_segment_sum(fill_ops.range(0, n), perm, n)


def _transpose_grad(op, g):
    conjugate = op.op_def is CONJUGATE_TRANSPOSE
    return [transpose(g, _inverse_permutation(op.inputs[1]), conjugate=conjugate), None]


# Index remaps (ir_build.remap), fused into their consumers by the scheduler.
def _lower_transpose(ctx, op, inputs):
    # a ConjugateTranspose of complex values conjugates too: not compiled (only a plain
    # Transpose moves complex values)
    require_real(op, complex_ok=op.type == "Transpose")
    x = inputs[0]
    rank = len(x.shape)
    perm = [int(p) % max(rank, 1) for p in ctx.static(op.inputs[1], "perm").reshape(-1)]
    if sorted(perm) != list(builtins.range(rank)):
        raise NotLowerable(f"perm {perm} is not a permutation")
    inverse = [perm.index(k) for k in builtins.range(rank)]
    shape = lx.out_shape(op.outputs[0], [x.shape[p] for p in perm])
    return [remap(x, shape, lambda a: [a[inverse[k]] for k in builtins.range(rank)])]


TRANSPOSE = OpDef("Transpose", _transpose_infer, _make_transpose_kernel(False),
                  default_name="transpose", gradient=_transpose_grad, lower=_lower_transpose)
CONJUGATE_TRANSPOSE = OpDef("ConjugateTranspose", _transpose_infer,
                            _make_transpose_kernel(True), default_name="transpose",
                            gradient=_transpose_grad,
                            lower=_lower_transpose)  # real tensors only: a plain transpose


def transpose(a, perm=None, name="transpose", conjugate=False):
    """Permute `a`'s dimensions by `perm` (default: reversed); conjugate complex values too."""
    with name_scope(name, "transpose", [a]) as scope:
        x = to_tensor(a)
        if perm is None:
            if x.shape.ndims is not None:
                perm = list(builtins.range(x.shape.ndims))[::-1]
            else:  # reversed at run time: ReverseV2(Range(Rank(a)))
                perm = reverse_v2(fill_ops.range(shape_ops.rank(x)), [0])
        p = index_tensor(perm, "perm", graph=x.graph)
        op_def = CONJUGATE_TRANSPOSE if conjugate and x.dtype.is_complex else TRANSPOSE
        return make_op(op_def, [x, p], {}, scope).outputs[0]


# --- ExpandDims / Squeeze -----------------------------------------------------------------


def _expand_dims_infer(op):
    x, dim = op.inputs
    check_dtype(dim, INDEX_TYPES, "dim")
    if dim.shape.num_elements() not in (None, 1):
        raise ValueError(f"'dim' input must be a tensor with a single value, got shape "
                         f"{dim.shape}.")
    rank = x.shape.ndims
    axis = static_int(dim)
    if rank is None:
        return [(x.dtype, unknown_shape())]
    if axis is None:
        return [(x.dtype, unknown_shape(rank + 1))]
    if not -rank - 1 <= axis <= rank:
        raise ValueError(f"dim {axis} not in the interval [{-rank - 1}, {rank}] for a tensor "
                         f"of rank {rank}.")
    axis = axis % (rank + 1)
    dims = list(x.shape.dims)
    return [(x.dtype, dims[:axis] + [1] + dims[axis:])]


def _expand_dims_kernel(ctx, inputs, attrs):
    x, dim = inputs
    axis = int(dim.reshape(-1)[0]) if dim.size == 1 else None
    if axis is None or not -x.ndim - 1 <= axis <= x.ndim:
        raise runtime_error(ctx, f"Tried to expand dim index {axis} for tensor of shape "
                                 f"{list(x.shape)} (valid: [{-x.ndim - 1}, {x.ndim}])")
    return [np.expand_dims(x, axis)]


def _to_input_shape(op, g):
    """The gradient of an op that keeps the elements in order (ExpandDims, Squeeze)."""
    return [reshape_ops.reshape(g, shape_ops.shape(op.inputs[0]))] + [None] * (len(op.inputs) - 1)


def _lower_expand_dims(ctx, op, inputs):
    require_real(op, complex_ok=True)
    x = inputs[0]
    axis = lx.static_axis(ctx, op.inputs[1], len(x.shape) + 1, "dim")
    shape = list(x.shape[:axis]) + [ir.index(1)] + list(x.shape[axis:])
    return [remap(x, lx.out_shape(op.outputs[0], shape), lambda a: lx.drop(a, axis))]


EXPAND_DIMS = OpDef("ExpandDims", _expand_dims_infer, _expand_dims_kernel,
                    gradient=_to_input_shape, lower=_lower_expand_dims)


def expand_dims(input, axis=None, name=None, dim=None):
    """`input` with a new dimension of size 1 inserted at `axis` (negative counts from end)."""
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'dim' and 'axis'.")
        axis = dim
    if axis is None:
        raise ValueError("Must specify an axis argument to flowjit.expand_dims()")
    x = to_tensor(input)
    d = index_tensor(axis, "dim", graph=x.graph)
    return make_op(EXPAND_DIMS, [x, d], {}, name or "ExpandDims").outputs[0]


def _squeeze_infer(op):
    x = op.inputs[0]
    axes = op.get_attr("squeeze_dims")
    rank = x.shape.ndims
    if rank is None:
        return [(x.dtype, unknown_shape())]
    wanted = {normalize_axis(a, rank, f"squeeze_dims[{i}]") for i, a in enumerate(axes)}
    out = []
    for i, d in enumerate(x.shape.dims):
        if wanted and i in wanted:
            if d is not None and d != 1:
                raise ValueError(f"Can not squeeze dim[{i}], expected a dimension of 1, got "
                                 f"{d}.")
            continue
        if not wanted:
            if d is None:
                return [(x.dtype, unknown_shape())]  # whether it is 1 is known only at run
            if d == 1:
                continue
        out.append(d)
    return [(x.dtype, out)]


def _squeeze_kernel(ctx, inputs, attrs):
    x = inputs[0]
    axes = attrs["squeeze_dims"]
    if not axes:
        return [x.reshape([d for d in x.shape if d != 1])]
    rank = x.ndim
    for a in axes:
        if not -rank <= a < rank or x.shape[a] != 1:
            raise runtime_error(ctx, f"Can not squeeze dim[{a}], expected a dimension of 1 "
                                     f"in input of shape {list(x.shape)}")
    drop = {a % rank for a in axes}
    return [x.reshape([d for i, d in enumerate(x.shape) if i not in drop])]


def _lower_squeeze(ctx, op, inputs):
    require_real(op, complex_ok=True)
    x = inputs[0]
    rank = len(x.shape)
    axes = {a % rank for a in op.get_attr("squeeze_dims") if -rank <= a < rank}
    for k, d in enumerate(x.shape):
        if axes and k in axes:
            lx.require_equal(ctx, d, 1, f"Can not squeeze dim[{k}], expected a dimension of 1")
        elif not axes and not ir.is_const(d):
            # compiled code has a fixed rank: a runtime size here must not be 1
            lx.require(ctx, lx.ne(d, 1), f"{op.name} was compiled for dimension {k} != 1 "
                                         "(size-1 dimensions must be known when compiling)")
    if not axes:
        axes = {k for k, d in enumerate(x.shape) if ir.is_const(d, 1)}
    keep = [k for k in builtins.range(rank) if k not in axes]
    shape = lx.out_shape(op.outputs[0], [x.shape[k] for k in keep])

    def index_fn(a):
        return [a[keep.index(k)] if k in keep else ir.index(0) for k in builtins.range(rank)]

    return [remap(x, shape, index_fn)]


SQUEEZE = OpDef("Squeeze", _squeeze_infer, _squeeze_kernel, gradient=_to_input_shape,
                lower=_lower_squeeze)


def squeeze(input, axis=None, name=None, squeeze_dims=None):
    """`input` without size-1 dimensions (only those in `axis`, if given; others error)."""
    if squeeze_dims is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'squeeze_dims' and 'axis'.")
        axis = squeeze_dims
    if axis is None:
        axis = []
    elif not isinstance(axis, (list, tuple)):
        axis = [axis]
    axis = [int(a) for a in axis]
    x = to_tensor(input)
    return make_op(SQUEEZE, [x], {"squeeze_dims": tuple(axis)}, name or "Squeeze").outputs[0]


# --- ReverseV2 ------------------------------------------------------------------------------


def _reverse_infer(op):
    x, axis = op.inputs
    check_dtype(axis, INDEX_TYPES, "axis")
    check_rank(axis, 1, "axis")
    values = static_ints(axis)
    rank = x.shape.ndims
    if values is not None and rank is not None:
        seen = set()
        for i, a in enumerate(values):
            if not -rank <= a < rank:
                raise ValueError(f"'axis'[{i}] = {a} is out of valid range [{-rank}, {rank}) "
                                 f"for a tensor of rank {rank}.")
            if a % rank in seen:
                raise ValueError(f"axis {a % rank} specified more than once in {values}.")
            seen.add(a % rank)
    return [(x.dtype, x.shape)]


def _reverse_kernel(ctx, inputs, attrs):
    x, axis = inputs
    values = [int(a) for a in axis.reshape(-1)]
    rank = x.ndim
    axes = {a % rank for a in values if -rank <= a < rank}
    if len(axes) != len(values):
        raise runtime_error(ctx, f"reverse axes {values} must be distinct and in "
                                 f"[{-rank}, {rank}) for input of shape {list(x.shape)}")
    return [np.flip(x, tuple(axes)) if axes else x]


def _reverse_grad(op, g):
    return [reverse_v2(g, op.inputs[1]), None]


def _lower_reverse(ctx, op, inputs):
    require_real(op, complex_ok=True)
    x = inputs[0]
    rank = len(x.shape)
    axes = {int(a) % max(rank, 1) for a in ctx.static(op.inputs[1], "axis").reshape(-1)}
    return [remap(x, x.shape, lambda a: [lx.sub(lx.sub(d, 1), a[k]) if k in axes else a[k]
                                         for k, d in enumerate(x.shape)])]


REVERSE_V2 = OpDef("ReverseV2", _reverse_infer, _reverse_kernel, gradient=_reverse_grad,
                   lower=_lower_reverse)


def reverse_v2(tensor, axis, name=None):
    """`tensor` with the order of elements reversed along each dimension in `axis` (1-D)."""
    x = to_tensor(tensor)
    a = index_tensor(axis, "axis", graph=x.graph)
    return make_op(REVERSE_V2, [x, a], {}, name or "ReverseV2").outputs[0]


reverse = reverse_v2


def move_axis_to_end(x: Tensor, axis: int):
    """(x with `axis` moved last, other axes in order; inverse perm or None if unchanged).

    Needs a known rank unless axis is -1; ValueError for an out-of-range axis.
    """
    if axis == -1:
        return x, None
    rank = x.shape.ndims
    if rank is None:
        raise ValueError(f"An axis other than -1 needs a known rank; {x.name} has unknown "
                         "rank.")
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for {x.name} of rank {rank}.")
    axis %= rank
    if axis == rank - 1:
        return x, None
    perm = [d for d in range(rank) if d != axis] + [axis]
    inverse = [perm.index(d) for d in range(rank)]
    return transpose(x, perm), inverse


OP_DEFS = (TRANSPOSE, CONJUGATE_TRANSPOSE, EXPAND_DIMS, SQUEEZE, REVERSE_V2)
