"""TensorStridedSliceUpdate (`tensor_strided_slice_update`): a copy of a tensor with one
strided slice replaced, `output = input; output[begin:end:strides] = value`.

`begin`, `end`, `strides` and the five masks mean what they mean for StridedSlice
(ops/slicing_ops.py, ops/slice_spec.py); `value` has the slice's shape (shrunk axes
dropped, new axes as size 1).  The NumPy front end writes `a[k+1:, k] /= a[k, k]` with a
traced `k` through this op (compiler/np_dynamic_index.py).

Lowered to one COMPUTE over the input's shape, `select(index inside the slice,
value[(index - begin) / stride], input[index])`: begin and end may be run-time values
(traced indices in a compiled loop; strides are static).  When the input is a dead
temporary or a loop variable's donated array, the CPU target writes the slice's box in
place (compiler/box_updates.py), so the update costs the slice, not the array.

Gradient: the input's is the output gradient with the slice zeroed, the value's is the
output gradient's slice.
"""

from __future__ import annotations

import numpy as np

from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir_build import NotLowerable
from ..compiler.core.shapes import unknown_shape
from . import fill_ops, reshape_ops, shape_ops, slicing_ops
from . import lower_index as lx
from .builder import graph_for, make_op, to_tensor
from .lower_util import require_real
from .registry import OpDef
from .slice_spec import NEW_AXIS, dense_spec, dim_bounds_expr

_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def _infer(op):
    x, value = op.inputs[0], op.inputs[4]
    if value.dtype is not x.dtype:
        raise TypeError(f"value ({value.dtype.name}) must have the dtype of input "
                        f"({x.dtype.name}) in {op.name}.")
    return [(x.dtype, x.shape if x.shape.ndims is not None else unknown_shape())]


def _kernel(ctx, inputs, attrs):
    x, value = inputs[0], inputs[4]
    key, shape = slicing_ops.slice_key(ctx, *inputs[:4], attrs)
    if tuple(value.shape) != tuple(shape):
        raise slicing_ops._runtime_error(ctx, f"value has shape {value.shape}, but the slice "
                                              f"has shape {tuple(shape)}")
    out = np.array(x, copy=True)
    out[key] = value.reshape(x[key].shape)
    return [out]


def _gradient(op, grad):
    x, begin, end, strides, value = op.inputs
    attrs = {k: op.get_attr(k) for k in _MASKS}
    # the slice is read before it is zeroed: the zeroing, the last reader of `grad`, may
    # then write into grad's buffer in place (a box update) instead of copying all of it
    d_value = slicing_ops.strided_slice(grad, begin, end, strides, **attrs)
    zeros = fill_ops.zeros_like(value)
    d_input = make_op(TENSOR_STRIDED_SLICE_UPDATE, [grad, begin, end, strides, zeros],
                      attrs).outputs[0]
    return [d_input, None, None, None,
            reshape_ops.reshape(d_value, shape_ops.shape(value))]


def _lower(ctx, op, inputs):
    require_real(op, complex_ok=True)
    x, value = inputs[0], inputs[4]
    strides = [int(v) for v in ctx.static(op.inputs[3], "strides").reshape(-1)]
    begin, end = (slicing_ops._bounds(ctx, t) for t in op.inputs[1:3])
    try:
        dims, layout = dense_spec(len(x.shape), begin, end, strides,
                                  **{k: op.get_attr(k) for k in _MASKS})
        bounds = [dim_bounds_expr(n, spec, k) for k, (n, spec) in enumerate(zip(x.shape, dims))]
    except ValueError as e:
        raise NotLowerable(str(e)) from None
    if any(s < 0 for s in strides):
        raise NotLowerable("a slice update with a negative stride")
    for k, (_, _, _, ok) in enumerate(bounds):
        lx.require(ctx, ok, f"slice index of dimension {k} out of bounds in {op.name}")
    kept = [e for e in layout if e is not NEW_AXIS]
    slice_shape = [ir.index(1) if e is NEW_AXIS else bounds[e][1] for e in layout]
    if len(value.shape) != len(slice_shape):
        raise NotLowerable(f"{op.name}: value of rank {len(value.shape)} for a slice of rank "
                           f"{len(slice_shape)}")
    for k, (v, s) in enumerate(zip(value.shape, slice_shape)):
        lx.require_equal(ctx, v, s, f"value dimension {k} differs from the slice's in "
                                    f"{op.name}")
    axes = ir.axis_vars(len(x.shape))
    inside, rel = [], {}
    for k, (start, size, stride, _) in enumerate(bounds):
        offset = lx.sub(axes[k], start)
        inside += [lx.ge(offset, 0), lx.lt(offset, lx.mul(size, stride))]
        if stride != 1:
            inside.append(lx.eq(lx.mod(offset, stride), 0))
        rel[k] = lx.floordiv(offset, stride) if stride != 1 else offset
    value_index = []
    for j, e in enumerate(layout):
        value_index.append(ir.index(0) if e is NEW_AXIS else lx.clamp(rel[e], value.shape[j]))
    del kept
    new = ir.load(value, value_index)
    body = ir.make(ir.Scalar.SELECT, x.dtype, (lx.all_of(inside), new, ir.load(x, axes)))
    return [ir.compute(x.dtype, x.shape, axes, body)]


TENSOR_STRIDED_SLICE_UPDATE = OpDef(
    "TensorStridedSliceUpdate", _infer, _kernel, gradient=_gradient, lower=_lower,
    doc="input with input[begin:end:strides] = value (StridedSlice's masks).")


def tensor_strided_slice_update(input_, begin, end, strides, value, begin_mask=0, end_mask=0,
                                ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0,
                                name=None) -> Tensor:
    """A copy of `input_` with its strided slice `begin:end:strides` (StridedSlice's
    masks) replaced by `value`, which has the slice's shape."""
    graph = graph_for((input_, begin, end, strides, value))
    x = to_tensor(input_, graph=graph, name="input")
    ins = [x] + [to_tensor(t, graph=graph, name=n)
                 for t, n in zip((begin, end, strides), ("begin", "end", "strides"))]
    ins.append(to_tensor(value, dtype=x.dtype, graph=graph, name="value"))
    attrs = {"begin_mask": begin_mask, "end_mask": end_mask, "ellipsis_mask": ellipsis_mask,
             "new_axis_mask": new_axis_mask, "shrink_axis_mask": shrink_axis_mask}
    return make_op(TENSOR_STRIDED_SLICE_UPDATE, ins, attrs, name, graph=graph).outputs[0]


OP_DEFS = (TENSOR_STRIDED_SLICE_UPDATE,)
