"""Joining tensors and taking them apart: ConcatV2, Pack and Unpack (Split and SplitV are in
split_ops.py).

Public functions (re-exported by `array_ops`): `concat`, `stack`, `unstack`.
Invariants: every input of a join has one dtype (TypeError naming them otherwise); the
number of outputs of Unpack is fixed when the op is built (attr `num`), so a dimension whose
size is unknown needs an explicit `num`.  Following TensorFlow 1.x, `concat` of a single
value is an Identity and `stack` of Python constants along axis 0 is a Const.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir_build import NotLowerable
from ..compiler.core.ir_build import remap
from ..compiler.core.shapes import unknown_shape
from . import basic_ops, gather_ops, math_cast, math_division, shape_ops, split_ops
from . import lower_index as lx
from .array_common import (check_rank, convert_list, index_tensor, normalize_axis,
                           runtime_error, static_int, static_ints)
from .builder import INDEX_TYPES, check_dtype, make_op, to_tensor
from .conversion import convert_to_tensor, static_value
from .lower_util import require_real
from .registry import OpDef

# --- ConcatV2 ---------------------------------------------------------------------------------


def _merge_dims(a, b, where):
    if a is not None and b is not None and a != b:
        raise ValueError(f"Dimension {where} in both shapes must be equal, but are {a} and {b}.")
    return a if a is not None else b


def _concat_infer(op):
    *values, axis_t = op.inputs
    check_dtype(axis_t, INDEX_TYPES, "axis")
    check_rank(axis_t, 0, "axis")
    dtype = values[0].dtype
    rank = next((v.shape.ndims for v in values if v.shape.ndims is not None), None)
    if rank is None:
        return [(dtype, unknown_shape())]
    for i, v in enumerate(values):
        if v.shape.ndims is not None and v.shape.ndims != rank:
            raise ValueError(f"Shape must be rank {rank} but is rank {v.shape.ndims}: "
                             f"values[{i}] has shape {v.shape}.")
    if rank == 0:
        raise ValueError("Can't concatenate scalars (use flowjit.stack instead).")
    axis = static_int(axis_t)
    if axis is None:
        return [(dtype, unknown_shape(rank))]
    axis = normalize_axis(axis, rank)
    out = [None] * rank
    total = 0
    for v in values:
        if v.shape.ndims is None:
            total = None
            continue
        for d, size in enumerate(v.shape.dims):
            if d == axis:
                total = None if total is None or size is None else total + size
            else:
                out[d] = _merge_dims(out[d], size, d)
    out[axis] = total
    return [(dtype, out)]


def _concat_kernel(ctx, inputs, attrs):
    *values, axis = inputs
    axis = int(axis)
    rank = values[0].ndim
    shapes = [list(v.shape) for v in values]
    if not -rank <= axis < rank or rank == 0:
        raise runtime_error(ctx, f"ConcatOp: expected concat axis in [{-rank}, {rank}), got "
                                 f"{axis}; input shapes {shapes}")
    axis %= rank
    for i, s in enumerate(shapes):
        if len(s) != rank or s[:axis] + s[axis + 1:] != shapes[0][:axis] + shapes[0][axis + 1:]:
            raise runtime_error(ctx, f"ConcatOp: dimensions of inputs should match except "
                                     f"along axis {axis}: shape[0] = {shapes[0]} vs. "
                                     f"shape[{i}] = {s}")
    return [np.concatenate(values, axis=axis)]


# --- gradients --------------------------------------------------------------------------------


def _concat_grad(op, g):
    *xs, axis = op.inputs
    a, r = static_value(axis), xs[0].shape.ndims
    if a is not None and r is not None and all(x.shape[int(a) % r].value is not None
                                               for x in xs):
        sizes = [x.shape[int(a) % r].value for x in xs]
    else:
        axis_n = math_division.floormod(math_cast.cast(axis, _dtypes.int32), shape_ops.rank(xs[0]))
        sizes = stack([gather_ops.gather(shape_ops.shape(x), axis_n) for x in xs])
    return [*split_ops.split(g, sizes, axis=axis, num=len(xs)), None]


def _pack_grad(op, g):
    return unstack(g, num=len(op.inputs), axis=op.get_attr("axis"))


def _unpack_grad(op, *grads):
    return [stack(list(grads), axis=op.get_attr("axis"))]


# --- lowerings ---------------------------------------------------------------------------------
# Joins select, per output element, which input to load (a chain of SELECTs on the loop index
# along the joined axis, loads clamped in bounds); Unpack is one index remap per output.
_MAX_JOINED = 64  # inputs: every output element evaluates one load per input


def _same_dims(ctx, nodes, skip, what):
    """The common dims of `nodes` (all but dimension `skip`), checked equal at run time."""
    dims = list(nodes[0].shape)
    for i, n in enumerate(nodes[1:], 1):
        for k, d in enumerate(n.shape):
            if k != skip:
                lx.require_equal(ctx, dims[k], d, f"{what}: dimension {k} of input {i} does "
                                                  "not match input 0")
    return dims


def _lower_concat(ctx, op, inputs):
    require_real(op, complex_ok=True)
    values = inputs[:-1]
    if len(values) > _MAX_JOINED:
        raise NotLowerable(f"ConcatV2 of {len(values)} inputs is not compiled")
    rank = len(values[0].shape)
    axis = lx.static_axis(ctx, op.inputs[-1], rank)
    if any(len(v.shape) != rank for v in values):
        raise NotLowerable("ConcatV2 inputs of different ranks")
    dims = _same_dims(ctx, values, axis, "ConcatOp")
    parts = [v for v in values if not ir.is_const(v.shape[axis], 0)] or values[:1]
    offsets = [ir.index(0)]
    for v in parts:
        offsets.append(lx.add(offsets[-1], v.shape[axis]))
    dims[axis] = offsets[-1]
    shape = lx.out_shape(op.outputs[0], dims)
    axes = ir.axis_vars(rank)
    i = axes[axis]
    last = len(parts) - 1
    body = None
    for k in range(last, -1, -1):
        at = lx.sub(i, offsets[k])
        at = lx.maximum(at, 0) if k == last else lx.clamp(at, parts[k].shape[axis])
        value = ir.load(parts[k], axes[:axis] + (at,) + axes[axis + 1:])
        body = value if body is None else lx.select(lx.lt(i, offsets[k + 1]), value, body)
    return [ir.compute(op.outputs[0].dtype, shape, axes, body)]


CONCAT_V2 = OpDef("ConcatV2", _concat_infer, _concat_kernel, default_name="concat",
                  gradient=_concat_grad, lower=_lower_concat)


def concat(values, axis, name="concat"):
    """Join the tensors in `values` (same dtype and rank) along dimension `axis`."""
    tensors = convert_list(values, "ConcatV2")
    if not tensors:
        raise ValueError("concat needs at least one value.")
    if len(tensors) == 1:
        axis_value = static_ints(index_tensor(axis, "axis", graph=tensors[0].graph))
        rank = tensors[0].shape.ndims
        if axis_value is not None and rank is not None:
            normalize_axis(axis_value[0], rank)
        return basic_ops.identity(tensors[0], name=name)
    a = index_tensor(axis, "axis", graph=tensors[0].graph)
    return make_op(CONCAT_V2, [*tensors, a], {"N": len(tensors)}, name or "concat").outputs[0]


# --- Pack / Unpack ---------------------------------------------------------------------------


def _pack_infer(op):
    values = op.inputs
    shape = values[0].shape
    for i, v in enumerate(values[1:], 1):
        try:
            shape = shape.merge_with(v.shape)
        except ValueError:
            raise ValueError(f"Shapes of all inputs must match: values[0].shape = "
                             f"{values[0].shape} != values[{i}].shape = {v.shape}.") from None
    axis = op.get_attr("axis")
    if shape.ndims is None:
        return [(values[0].dtype, unknown_shape())]
    axis = normalize_axis(axis, shape.ndims + 1)
    dims = list(shape.dims)
    return [(values[0].dtype, dims[:axis] + [len(values)] + dims[axis:])]


def _pack_kernel(ctx, inputs, attrs):
    shapes = [list(v.shape) for v in inputs]
    for i, s in enumerate(shapes):
        if s != shapes[0]:
            raise runtime_error(ctx, f"Shapes of all inputs must match: values[0].shape = "
                                     f"{shapes[0]} != values[{i}].shape = {s}")
    return [np.stack(inputs, axis=attrs["axis"])]


def _lower_pack(ctx, op, inputs):
    require_real(op)
    if len(inputs) > _MAX_JOINED:
        raise NotLowerable(f"Pack of {len(inputs)} inputs is not compiled")
    rank = len(inputs[0].shape)
    axis = op.get_attr("axis") % (rank + 1)
    dims = _same_dims(ctx, inputs, -1, "Pack")
    shape = lx.out_shape(op.outputs[0], dims[:axis] + [ir.index(len(inputs))] + dims[axis:])
    axes = ir.axis_vars(rank + 1)
    inner = lx.drop(axes, axis)
    body = lx.choose(axes[axis], [ir.load(x, inner) for x in inputs])
    return [ir.compute(op.outputs[0].dtype, shape, axes, body)]


PACK = OpDef("Pack", _pack_infer, _pack_kernel, default_name="stack",
             gradient=_pack_grad, lower=_lower_pack)


def _holds_tensor(values) -> bool:
    if isinstance(values, Tensor) or hasattr(values, "_as_graph_tensor"):
        return True
    return isinstance(values, (list, tuple)) and any(_holds_tensor(v) for v in values)


def stack(values, axis=0, name="stack"):
    """Stack rank-R tensors (same shape and dtype) into one rank-(R+1) tensor along `axis`."""
    axis = int(axis)
    if axis == 0 and not _holds_tensor(values):
        return convert_to_tensor(values, name=name)  # TensorFlow makes constants a Const
    tensors = convert_list(values, "Pack")
    rank = next((t.shape.ndims for t in tensors if t.shape.ndims is not None), None)
    if rank is not None and not -rank - 1 <= axis <= rank:
        raise ValueError(f"Argument `axis` = {axis} not in range [{-rank - 1}, {rank + 1}).")
    return make_op(PACK, tensors, {"axis": axis, "N": len(tensors)},
                   name or "stack").outputs[0]


def _unpack_infer(op):
    x = op.inputs[0]
    num, axis = op.get_attr("num"), op.get_attr("axis")
    if x.shape.ndims is None:
        return [(x.dtype, unknown_shape())] * num
    axis = normalize_axis(axis, x.shape.ndims)
    dims = list(x.shape.dims)
    if dims[axis] is not None and dims[axis] != num:
        raise ValueError(f"Dimension must be {num} but is {dims[axis]}: cannot unstack shape "
                         f"{x.shape} into {num} tensors along axis {axis}.")
    return [(x.dtype, dims[:axis] + dims[axis + 1:])] * num


def _unpack_kernel(ctx, inputs, attrs):
    x = inputs[0]
    num, axis = attrs["num"], attrs["axis"]
    if not -x.ndim <= axis < x.ndim or x.shape[axis] != num:
        raise runtime_error(ctx, f"Input shape axis {axis} must equal {num}, got shape "
                                 f"{list(x.shape)}")
    moved = np.moveaxis(x, axis, 0)
    return [moved[i, ...] for i in range(num)]


def _lower_unpack(ctx, op, inputs):
    require_real(op)
    x = inputs[0]
    num = op.get_attr("num")
    axis = op.get_attr("axis") % len(x.shape)
    lx.require_equal(ctx, x.shape[axis], num, f"Input shape axis {axis} must equal {num}")
    shape = lx.out_shape(op.outputs[0], lx.drop(x.shape, axis))
    return [remap(x, shape, lambda a, k=k: list(a[:axis]) + [ir.index(k)] + list(a[axis:]))
            for k in range(num)]


UNPACK = OpDef("Unpack", _unpack_infer, _unpack_kernel, default_name="unstack",
               gradient=_unpack_grad, lower=_lower_unpack)


def unstack(value, num=None, axis=0, name="unstack") -> list:
    """The list of tensors `value` holds along dimension `axis` (`num` if its size is unknown)."""
    x = to_tensor(value)
    axis = int(axis)
    rank = x.shape.ndims
    if rank is not None:
        if not -rank <= axis < rank:
            raise ValueError(f"Argument `axis` = {axis} not in range [{-rank}, {rank}).")
        if num is None:
            num = x.shape.dims[axis]
    if num is None:
        raise ValueError(f"Cannot infer argument `num` from shape {x.shape}; pass num= to "
                         "unstack a dimension of unknown size.")
    num = int(num)
    if num == 0:
        return []
    return list(make_op(UNPACK, [x], {"num": num, "axis": axis}, name or "unstack").outputs)


OP_DEFS = (CONCAT_V2, PACK, UNPACK)
__all__ = ["concat", "stack", "unstack"]
