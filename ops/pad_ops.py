"""Growing a tensor: Pad, PadV2, MirrorPad, Tile and BroadcastTo.

Public functions (re-exported by `array_ops`): `pad`, `tile`, `broadcast_to`.
`paddings` is an int [rank, 2] tensor of (before, after) counts; `pad` picks Pad for zero
constant padding, PadV2 for any other constant, and MirrorPad for the REFLECT (edge not
repeated; counts <= dim - 1) and SYMMETRIC (edge repeated; counts <= dim) modes, matching
the mode case-insensitively.  Static violations are ValueErrors at construction (TensorFlow
reports mirror-pad sizes only when running); the kernels re-check and raise
InvalidArgumentError.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir_build import NotLowerable
from ..compiler.core.ir_build import remap
from ..compiler.core.shapes import as_shape, unknown_shape
from . import (math_cast, reduction_ops, reshape_ops, segment_ops, shape_ops, slicing_ops,
               sum_to_shape)
from . import lower_index as lx
from .array_common import check_rank, index_tensor, runtime_error, static_ints
from .builder import INDEX_TYPES, check_dtype, make_op, to_tensor
from .conversion import static_shape_from_tensor
from .lower_util import require_real
from .registry import OpDef

# --- Pad, PadV2, MirrorPad --------------------------------------------------------------------


def _pad_problem(shape, pads, mode):
    """A message for paddings that do not fit `shape` (ints/None), else None."""
    if len(pads) != len(shape):
        return (f"paddings must have one (before, after) row per dimension of the input: "
                f"{len(pads)} rows for shape {list(shape)}")
    limit_offset = {"REFLECT": 1, "SYMMETRIC": 0}.get(mode)
    for d, ((before, after), size) in enumerate(zip(pads, shape)):
        if before < 0 or after < 0:
            return f"Paddings must be non-negative: got ({before}, {after}) for dimension {d}"
        if limit_offset is not None and size is not None:
            most = size - limit_offset
            if before > most or after > most:
                return (f"{mode} paddings must be no greater than the dimension size "
                        f"{'minus 1 ' if limit_offset else ''}({most}) but are ({before}, "
                        f"{after}) for dimension {d} of input shape {list(shape)}")
    return None


def _pad_infer(op):
    x, paddings = op.inputs[:2]
    check_dtype(paddings, INDEX_TYPES, "paddings")
    check_rank(paddings, 2, "paddings")
    if len(op.inputs) == 3:
        check_rank(op.inputs[2], 0, "constant_values")
        if op.inputs[2].dtype is not x.dtype:
            raise TypeError(f"constant_values has dtype {op.inputs[2].dtype.name} but the "
                            f"input has dtype {x.dtype.name}.")
    pshape = paddings.shape
    rows = pshape.dims[0] if pshape.ndims == 2 else None
    if pshape.ndims == 2 and pshape.dims[1] not in (None, 2):
        raise ValueError(f"paddings must have shape [rank, 2], got {pshape}.")
    rank = x.shape.ndims
    if rank is not None and rows is not None and rank != rows:
        raise ValueError(f"Shape must be rank {rows} but is rank {rank}: paddings has "
                         f"{rows} rows for an input of shape {x.shape}.")
    rank = rank if rank is not None else rows
    values = static_ints(paddings)
    if values is None or rank is None:
        return [(x.dtype, unknown_shape(rank))]
    pads = [values[2 * i:2 * i + 2] for i in range(rank)]
    dims = x.shape.dims if x.shape.ndims is not None else [None] * rank
    problem = _pad_problem(dims, pads, op.attrs.get("mode", "CONSTANT"))
    if problem is not None:
        raise ValueError(problem)
    return [(x.dtype, [None if d is None else d + b + a for d, (b, a) in zip(dims, pads)])]


def _pad_kernel(ctx, inputs, attrs):
    x, paddings = inputs[:2]
    mode = attrs.get("mode", "CONSTANT")
    if paddings.ndim != 2 or paddings.shape[1] != 2:
        raise runtime_error(ctx, f"paddings must have shape [rank, 2], got "
                                 f"{list(paddings.shape)}")
    pads = [[int(b), int(a)] for b, a in paddings]
    problem = _pad_problem(x.shape, pads, mode)
    if problem is not None:
        raise runtime_error(ctx, problem)
    if x.ndim == 0:
        return [x.copy()]
    if mode != "CONSTANT":
        return [np.pad(x, pads, mode=mode.lower())]
    if len(inputs) == 3:
        value = inputs[2]
    else:
        value = np.array(b"", dtype=object) if x.dtype == object else np.zeros((), x.dtype)
    out = np.full([d + b + a for d, (b, a) in zip(x.shape, pads)], value, x.dtype)
    out[tuple(slice(b, b + d) for d, (b, a) in zip(x.shape, pads))] = x
    return [out]


# --- gradients --------------------------------------------------------------------------------


def _pad_grad(op, g):
    x, paddings = op.inputs[:2]
    before = slicing_ops.slice(math_cast.cast(paddings, _dtypes.int32), [0, 0], [-1, 1])
    begin = reshape_ops.reshape(before, [-1])
    dx = slicing_ops.slice(g, begin, shape_ops.shape(x))
    if op.op_def is PAD_V2:  # every padded element is the constant
        return [dx, None, reduction_ops.reduce_sum(g) - reduction_ops.reduce_sum(dx)]
    return [dx, None]


def _scatter_back(op, g):
    """MirrorPad and Tile only pick elements of their input (see segment_ops.scatter_back)."""
    return segment_ops.scatter_back(op, g)


def _broadcast_to_grad(op, g):
    return [sum_to_shape.sum_to_shape(g, op.inputs[0]), None]


# --- lowerings ---------------------------------------------------------------------------------
# Constant padding selects between a (clamped) load and the pad value; mirror padding and
# tiling fold the output index back into the input; BroadcastTo loads index 0 on size-1 dims.


def _mirror(j, n, before: int, after: int, mode: str):
    """The input index that output offset j (= out index - before) mirrors to."""
    edge = 0 if mode == "REFLECT" else 1
    if before:
        j = lx.select(lx.lt(j, 0), lx.sub(-edge, j), j)
    if after:
        j = lx.select(lx.ge(j, n), lx.sub(lx.sub(lx.mul(n, 2), 2 - edge), j), j)
    return j


def _lower_pad(ctx, op, inputs):
    require_real(op)
    x = inputs[0]
    rank = len(x.shape)
    pads = [[int(v) for v in row] for row in
            ctx.static(op.inputs[1], "paddings").reshape(rank, 2)]
    if rank == 0:
        return [x]
    mode = op.attrs.get("mode", "CONSTANT")
    if mode != "CONSTANT":
        most = {"REFLECT": 1, "SYMMETRIC": 0}[mode]
        for k, (n, (b, a)) in enumerate(zip(x.shape, pads)):
            lx.require(ctx, lx.le(max(b, a), lx.sub(n, most)),
                       f"{mode} paddings must be no greater than the dimension size"
                       f"{' minus 1' if most else ''} (dimension {k}, {op.name})")
    shape = lx.out_shape(op.outputs[0], [lx.add(n, b + a) for n, (b, a) in zip(x.shape, pads)])
    axes = ir.axis_vars(rank)
    offsets = [lx.sub(i, b) for i, (b, _) in zip(axes, pads)]
    if mode != "CONSTANT":
        idx = [_mirror(j, n, b, a, mode) for j, n, (b, a) in zip(offsets, x.shape, pads)]
        return [ir.compute(x.dtype, shape, axes, ir.load(x, idx))]
    value = ir.load(inputs[2], ()) if len(inputs) == 3 else ir.const(0, x.dtype)
    padded = [k for k, (b, a) in enumerate(pads) if b or a]
    inside = lx.all_of(lx.all_of([lx.ge(offsets[k], 0), lx.lt(offsets[k], x.shape[k])])
                       for k in padded)
    idx = [lx.clamp(j, n) if k in padded else j
           for k, (j, n) in enumerate(zip(offsets, x.shape))]
    return [ir.compute(x.dtype, shape, axes, lx.select(inside, ir.load(x, idx), value))]


PAD = OpDef("Pad", _pad_infer, _pad_kernel,
            gradient=_pad_grad, lower=_lower_pad)
PAD_V2 = OpDef("PadV2", _pad_infer, _pad_kernel,
               gradient=_pad_grad, lower=_lower_pad)
MIRROR_PAD = OpDef("MirrorPad", _pad_infer, _pad_kernel,
                   gradient=_scatter_back, lower=_lower_pad)


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    """`tensor` padded by `paddings` ([rank, 2] before/after counts) in mode CONSTANT
    (with `constant_values`), REFLECT or SYMMETRIC (any letter case)."""
    x = to_tensor(tensor)
    p = index_tensor(paddings, "paddings", graph=x.graph)
    mode = str(mode).upper()
    if mode == "CONSTANT":
        is_tensor = isinstance(constant_values, Tensor) or hasattr(constant_values,
                                                                  "_as_graph_tensor")
        if not is_tensor and np.all(np.asarray(constant_values) == 0):
            return make_op(PAD, [x, p], {}, name or "Pad").outputs[0]
        c = to_tensor(constant_values, dtype=x.dtype, graph=x.graph, name="constant_values")
        return make_op(PAD_V2, [x, p, c], {}, name or "PadV2").outputs[0]
    if mode in ("REFLECT", "SYMMETRIC"):
        return make_op(MIRROR_PAD, [x, p], {"mode": mode}, name or "MirrorPad").outputs[0]
    raise ValueError(f'Value of argument `mode` expected to be one of "CONSTANT", "REFLECT", '
                     f'or "SYMMETRIC". Received `mode` = {mode}')


# --- Tile ------------------------------------------------------------------------------------


def _tile_infer(op):
    x, multiples = op.inputs
    check_dtype(multiples, INDEX_TYPES, "multiples")
    check_rank(multiples, 1, "multiples")
    n = multiples.shape.dims[0] if multiples.shape.ndims == 1 else None
    rank = x.shape.ndims
    if rank is not None and n is not None and rank != n:
        raise ValueError(f"multiples has {n} entries but the input has rank {rank} (shape "
                         f"{x.shape}); Tile needs one multiple per dimension.")
    rank = rank if rank is not None else n
    values = static_ints(multiples)
    if values is not None and any(m < 0 for m in values):
        raise ValueError(f"Tile multiples must be non-negative, got {values}.")
    if rank is None:
        return [(x.dtype, unknown_shape())]
    reps = values if values is not None else static_shape_from_tensor(multiples).dims
    reps = reps if reps is not None else [None] * rank
    dims = x.shape.dims if x.shape.ndims is not None else [None] * rank
    return [(x.dtype, [None if d is None or m is None else d * m
                       for d, m in zip(dims, reps)])]


def _tile_kernel(ctx, inputs, attrs):
    x, multiples = inputs
    reps = [int(m) for m in multiples.reshape(-1)]
    if len(reps) != x.ndim or any(m < 0 for m in reps):
        raise runtime_error(ctx, f"Tile expects {x.ndim} non-negative multiples for input of "
                                 f"shape {list(x.shape)}, got {reps}")
    if x.ndim == 0:
        return [x.copy()]
    return [np.tile(x, reps)]


def _lower_tile(ctx, op, inputs):
    require_real(op)
    x = inputs[0]
    reps = ctx.symbolic_ints(op.inputs[1])
    if len(reps) != len(x.shape):
        raise NotLowerable("Tile needs one multiple per dimension")
    for m in reps:
        lx.require(ctx, lx.ge(m, 0), f"Tile multiples must be non-negative ({op.name})")
    shape = lx.out_shape(op.outputs[0], [lx.mul(d, m) for d, m in zip(x.shape, reps)])
    return [remap(x, shape, lambda a: [i if ir.is_const(m, 1) else lx.mod(i, d)
                                       for i, d, m in zip(a, x.shape, reps)])]


TILE = OpDef("Tile", _tile_infer, _tile_kernel,
             gradient=_scatter_back, lower=_lower_tile)


def tile(input, multiples, name=None):
    """`input` repeated `multiples[i]` times along each dimension i."""
    x = to_tensor(input)
    m = index_tensor(multiples, "multiples", graph=x.graph)
    return make_op(TILE, [x, m], {}, name or "Tile").outputs[0]


# --- BroadcastTo --------------------------------------------------------------------------


def _broadcast_to_infer(op):
    x, shape = op.inputs
    check_dtype(shape, INDEX_TYPES, "shape")
    check_rank(shape, 1, "shape")
    target = static_shape_from_tensor(shape)
    if target.ndims is None or x.shape.ndims is None:
        return [(x.dtype, target)]
    if x.shape.ndims > target.ndims:
        raise ValueError(f"Cannot broadcast a tensor of rank {x.shape.ndims} (shape {x.shape}) "
                         f"to the lower rank shape {target}.")
    dims = list(target.dims)
    offset = target.ndims - x.shape.ndims
    for i, d in enumerate(x.shape.dims):
        t = dims[offset + i]
        if d is not None and d != 1 and t is not None and t != d:
            raise ValueError(f"Cannot broadcast shape {x.shape} to {target}: dimensions must "
                             f"be equal or 1, but are {d} and {t}.")
        if t is None and d is not None and d != 1:
            dims[offset + i] = d
    return [(x.dtype, as_shape(dims))]


def _broadcast_to_kernel(ctx, inputs, attrs):
    x, shape = inputs
    target = [int(d) for d in shape.reshape(-1)]
    try:
        return [np.broadcast_to(x, target).copy()]
    except ValueError:
        raise runtime_error(ctx, f"Cannot broadcast a tensor of shape {list(x.shape)} to "
                                 f"shape {target}") from None


def _lower_broadcast_to(ctx, op, inputs):
    require_real(op)
    x = inputs[0]
    target = ctx.symbolic_ints(op.inputs[1])
    offset = len(target) - len(x.shape)
    if offset < 0:
        raise NotLowerable("BroadcastTo to a lower rank")
    dims = list(target)
    for k, d in enumerate(x.shape):
        t = target[offset + k]
        message = (f"Cannot broadcast the input of {op.name}: dimension {k} must be 1 or "
                   "equal the target size")
        if d.op is ir.Scalar.DIM:  # an input size: not 1 (size-1 inputs are constants)
            lx.require_equal(ctx, d, t, message)
            dims[offset + k] = t if ir.is_const(t) else d
        elif not ir.is_const(d):  # a computed size, which may be 1 at run time
            lx.require(ctx, lx.any_of([lx.eq(d, 1), lx.eq(d, t)]), message)
    for t in dims:
        lx.require(ctx, lx.ge(t, 0), f"BroadcastTo sizes must be non-negative ({op.name})")
    shape = lx.out_shape(op.outputs[0], dims)

    def index_fn(a):
        return [lx.select(lx.eq(d, 1), ir.index(0), a[offset + k]) for k, d in enumerate(x.shape)]

    return [remap(x, shape, index_fn)]


BROADCAST_TO = OpDef("BroadcastTo", _broadcast_to_infer, _broadcast_to_kernel,
                     gradient=_broadcast_to_grad,
                     lower=_lower_broadcast_to)


def broadcast_to(input, shape, name=None):
    """`input` broadcast (NumPy rules) to `shape`."""
    x = to_tensor(input)
    s = index_tensor(shape, "shape", graph=x.graph)
    return make_op(BROADCAST_TO, [x, s], {}, name or "BroadcastTo").outputs[0]


OP_DEFS = (PAD, PAD_V2, MIRROR_PAD, TILE, BROADCAST_TO)
__all__ = ["pad", "tile", "broadcast_to"]
