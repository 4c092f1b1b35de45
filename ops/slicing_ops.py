"""Slicing: Slice and StridedSlice; gathers live in gather_ops.py, `tensor[key]` in
getitem_ops.py.

Public functions: `slice`, `strided_slice`.  begin/end/strides/size are tensor inputs, as
in TensorFlow; shape inference reads their values when known while building
(`static_value`, or element by element through a Pack of scalars) and leaves dimensions
unknown otherwise.  The
strided-slice rules themselves (masks, ellipsis, clamping) are in slice_spec.py, shared by
inference and kernel, so the two cannot disagree.
Slice's gradient pads the output gradient back; StridedSlice's writes it into zeros at
the slice (a TensorStridedSliceUpdate).  Both lower to index remaps.
"""

from __future__ import annotations

import builtins

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir_build import NotLowerable
from ..compiler.core.ir_build import remap
from ..compiler.core.shapes import TensorShape, unknown_shape
from ..errors import InvalidArgumentError
from . import fill_ops, join_ops, math_cast, pad_ops, shape_ops, slice_update_ops
from . import lower_index as lx
from .builder import INDEX_TYPES, check_dtype, graph_for, make_op, to_tensor
from .conversion import first_tensor_dtype, static_value
from .lower_util import require_real
from .registry import OpDef
from .slice_spec import NEW_AXIS, dense_spec, dim_bounds, dim_bounds_expr, output_dims

__all__ = ["slice", "strided_slice"]

_py_slice = builtins.slice  # `slice` below is TensorFlow's op, as in `tf.slice`
_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


# --- shared helpers -------------------------------------------------------------------------


def _vector_length(t: Tensor, param: str):
    """The static length of 1-D index tensor `t` (None if unknown); ValueError if not 1-D."""
    if t.shape.ndims is not None and t.shape.ndims != 1:
        raise ValueError(f"'{param}' must be a 1-D tensor, but {t.name} has shape {t.shape}.")
    return t.shape.dims[0] if t.shape.ndims == 1 else None


def _vector_values(t: Tensor, length: int) -> list:
    """Per element: the int value of 1-D tensor `t` if known at build time, else None."""
    value = static_value(t)
    if value is not None:
        return [int(v) for v in value.reshape(-1)]
    op = t.op
    if op.type == "Pack" and op.get_attr("axis") == 0 and len(op.inputs) == length:
        out = []
        for x in op.inputs:
            v = static_value(x)
            out.append(None if v is None or v.size != 1 else int(v.reshape(())))
        return out
    return [None] * length


def _index_inputs(op, params):
    """Check index inputs share one integer dtype and are 1-D of equal length; the length."""
    tensors = op.inputs[1:]
    for t, p in zip(tensors, params):
        check_dtype(t, INDEX_TYPES, p)
    for t, p in zip(tensors[1:], params[1:]):
        if t.dtype is not tensors[0].dtype:
            raise TypeError(f"'{p}' ({t.name}) is {t.dtype.name} but '{params[0]}' "
                            f"({tensors[0].name}) is {tensors[0].dtype.name}; they must "
                            "have one dtype.")
    length = None
    for t, p in zip(tensors, params):
        n = _vector_length(t, p)
        if n is not None and length is not None and n != length:
            sizes = ", ".join(str(x.shape) for x in tensors)
            raise ValueError(f"Expected {', '.join(params)} to be 1-D tensors of equal "
                             f"length, but got shapes {sizes}.")
        length = n if n is not None else length
    return length


def _index_tensors(values, names, graph):
    """Convert begin/end/... arguments: Python values take the dtype of a Tensor argument."""
    dtype = first_tensor_dtype(values)
    if dtype is None:
        return [to_tensor(v, graph=graph, name=n) for v, n in zip(values, names)]
    out = []
    for v, n in zip(values, names):
        v = v._as_graph_tensor() if hasattr(v, "_as_graph_tensor") else v
        out.append(v if isinstance(v, Tensor) else to_tensor(v, dtype=dtype, graph=graph,
                                                             name=n))
    return out


def _runtime_error(ctx, err):
    return InvalidArgumentError(None, ctx.op if ctx is not None else None, str(err))


# --- Slice ----------------------------------------------------------------------------------


def _slice_dims(dims, begin, size):
    """Output dims of Slice (None where unknown); ValueError for out-of-bounds values."""
    out = []
    for i, (d, b, s) in enumerate(zip(dims, begin, size)):
        if b is not None and (b < 0 or (d is not None and b > d)):
            raise ValueError(f"Expected begin[{i}] in [0, {'?' if d is None else d}], but "
                             f"got {b}")
        if s is not None and s < -1:
            raise ValueError(f"Expected size[{i}] >= -1 (-1 meaning 'to the end'), but got "
                             f"{s}")
        if s == -1:
            out.append(d - b if d is not None and b is not None else None)
            continue
        if s is not None and d is not None and b is not None and b + s > d:
            raise ValueError(f"Expected size[{i}] in [0, {d - b}], but got {s} (begin[{i}] "
                             f"= {b}, input dimension {i} has size {d})")
        out.append(s)
    return out


def _slice_infer(op):
    x, begin, size = op.inputs
    length = _index_inputs(op, ("begin", "size"))
    rank = x.shape.ndims
    if rank is None:
        return [(x.dtype, unknown_shape(length))]
    if length is not None and length != rank:
        raise ValueError(f"Length of begin ({length}) and size must equal the rank of the "
                         f"input ({rank}).")
    dims = _slice_dims(x.shape.dims, _vector_values(begin, rank), _vector_values(size, rank))
    return [(x.dtype, TensorShape(dims))]


def _slice_kernel(ctx, inputs, attrs):
    x, begin, size = inputs
    if begin.shape != (x.ndim,) or size.shape != (x.ndim,):
        raise _runtime_error(ctx, f"Expected begin and size to be vectors of length "
                                  f"{x.ndim} (the input's rank), got shapes {begin.shape} "
                                  f"and {size.shape}.")
    begin = [int(v) for v in begin]
    try:
        out = _slice_dims(x.shape, begin, [int(v) for v in size])
    except ValueError as e:
        raise _runtime_error(ctx, e) from None
    index = tuple(_py_slice(b, b + n) for b, n in zip(begin, out))
    return [np.array(x[index], copy=True)]


# --- gradients --------------------------------------------------------------------------------


def _slice_grad(op, g):
    x, begin, _ = op.inputs
    begin = math_cast.cast(begin, _dtypes.int32)
    after = shape_ops.shape(x) - begin - shape_ops.shape(g)
    return [pad_ops.pad(g, join_ops.stack([begin, after], axis=1)), None, None]


def _strided_slice_grad(op, g):
    """A strided slice picks each input element at most once, so its gradient is the
    output gradient written into zeros at the slice: a TensorStridedSliceUpdate with the
    same bounds and masks (it lowers, and writes only the slice's box once compiled)."""
    x, begin, end, strides = op.inputs
    masks = {k: op.get_attr(k) for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                          "new_axis_mask", "shrink_axis_mask")}
    d_x = slice_update_ops.tensor_strided_slice_update(fill_ops.zeros_like(x), begin, end,
                                                       strides, g, **masks)
    return [d_x, None, None, None]


# --- lowerings ---------------------------------------------------------------------------------
# Index remaps: out[i] = x[begin + i * stride], fused into consumers.  Slice takes begin/size
# as symbolic ints (sizes may be runtime values); StridedSlice needs static begin/end/strides
# and resolves them against runtime sizes with slice_spec.dim_bounds_expr.


def _lower_slice(ctx, op, inputs):
    require_real(op, complex_ok=True)
    x = inputs[0]
    rank = len(x.shape)
    begin, size = ctx.symbolic_ints(op.inputs[1]), ctx.symbolic_ints(op.inputs[2])
    if len(begin) != rank or len(size) != rank:
        raise NotLowerable("Slice needs begin and size with one entry per dimension")
    dims = []
    for k, (n, b, s) in enumerate(zip(x.shape, begin, size)):
        lx.require(ctx, lx.all_of([lx.ge(b, 0), lx.le(b, n)]),
                   f"Expected begin[{k}] in [0, size of dimension {k}] in {op.name}")
        if ir.is_const(s, -1):
            dims.append(lx.sub(n, b))
            continue
        lx.require(ctx, lx.ge(s, -1), f"Expected size[{k}] >= -1 in {op.name}")
        out = s if lx.provably_nonneg(s) else lx.select(lx.eq(s, -1), lx.sub(n, b), s)
        lx.require(ctx, lx.le(lx.add(b, out), n),
                   f"Expected begin[{k}] + size[{k}] <= size of dimension {k} in {op.name}")
        dims.append(out)
    shape = lx.out_shape(op.outputs[0], dims)
    return [remap(x, shape, lambda a: [lx.add(i, b) for i, b in zip(a, begin)])]


SLICE = OpDef("Slice", _slice_infer, _slice_kernel,
              doc="input[begin[i] : begin[i] + size[i]] in every dimension; size -1 = to end.",
              gradient=_slice_grad, lower=_lower_slice)


def slice(input_, begin, size, name=None) -> Tensor:  # noqa: A001 - TensorFlow's name
    """Extract a slice of `size` elements starting at `begin` in each dimension.

    `size[i] == -1` takes everything from `begin[i]` to the end of dimension i.  Bounds
    known while building are checked then (ValueError); others when the graph runs
    (InvalidArgumentError).
    """
    graph = graph_for((input_, begin, size))
    x = to_tensor(input_, graph=graph, name="input")
    begin, size = _index_tensors((begin, size), ("begin", "size"), graph)
    return make_op(SLICE, [x, begin, size], {}, name, graph=graph).outputs[0]


# --- StridedSlice ---------------------------------------------------------------------------


def _strided_slice_infer(op):
    x, begin, end, strides = op.inputs
    length = _index_inputs(op, ("begin", "end", "strides"))
    for t in (begin, end, strides):
        value = static_value(t)
        if length is None and value is not None:
            length = value.size
    rank = x.shape.ndims
    if rank is None or length is None:
        return [(x.dtype, unknown_shape())]
    values = [_vector_values(t, length) for t in (begin, end, strides)]
    masks = {k: op.get_attr(k) for k in _MASKS}
    return [(x.dtype, TensorShape(output_dims(x.shape.dims, *values, masks)))]


def slice_key(ctx, x, begin, end, strides, attrs) -> tuple:
    """(NumPy key, output shape) of a strided slice of array `x` with these begin, end and
    strides arrays and attrs' masks (InvalidArgumentError naming the op if invalid); also
    TensorStridedSliceUpdate's (slice_update_ops.py)."""
    if not begin.ndim == end.ndim == strides.ndim == 1 or not (
            begin.size == end.size == strides.size):
        raise _runtime_error(ctx, f"Expected begin, end and strides to be 1-D tensors of equal "
                                  f"length, got shapes {begin.shape}, {end.shape}, "
                                  f"{strides.shape}.")
    masks = {k: attrs[k] for k in _MASKS}
    try:
        dims, layout = dense_spec(x.ndim, [int(v) for v in begin], [int(v) for v in end],
                                  [int(v) for v in strides], **masks)
        bounds = [dim_bounds(d, spec, i) for i, (d, spec) in enumerate(zip(x.shape, dims))]
    except ValueError as e:
        raise _runtime_error(ctx, e) from None
    index = []
    for b, e, s, size in bounds:
        if size == 0:
            index.append(_py_slice(0, 0))
        else:  # end -1 with a negative stride means "through element 0"
            index.append(_py_slice(b, e if e >= 0 else None, s))
    shape = [1 if entry is NEW_AXIS else bounds[entry][3] for entry in layout]
    return tuple(index), shape


def _strided_slice_kernel(ctx, inputs, attrs):
    x = inputs[0]
    key, shape = slice_key(ctx, *inputs, attrs)
    return [np.array(x[key].reshape(shape), copy=True)]


def _lower_strided_slice(ctx, op, inputs):
    require_real(op, complex_ok=True)
    x = inputs[0]
    strides = [int(v) for v in ctx.static(op.inputs[3], "strides").reshape(-1)]
    begin, end = (_bounds(ctx, t) for t in op.inputs[1:3])
    try:
        dims, layout = dense_spec(len(x.shape), begin, end, strides,
                                  **{k: op.get_attr(k) for k in _MASKS})
        bounds = [dim_bounds_expr(n, spec, k) for k, (n, spec) in enumerate(zip(x.shape, dims))]
    except ValueError as e:
        raise NotLowerable(str(e)) from None
    for k, (start, _, _, ok) in enumerate(bounds):
        lx.require(ctx, ok, f"slice index {dims[k].begin} of dimension {k} out of bounds in "
                            f"{op.name}")
    shape = lx.out_shape(op.outputs[0], [ir.index(1) if e is NEW_AXIS else bounds[e][1]
                                         for e in layout])

    def index_fn(a):
        idx = [b[0] for b in bounds]  # shrunk dimensions stay at their begin
        for j, e in enumerate(layout):
            if e is not NEW_AXIS:
                idx[e] = lx.add(bounds[e][0], lx.mul(a[j], bounds[e][2]))
        return idx

    return [remap(x, shape, index_fn)]


def _bounds(ctx, tensor) -> list:
    """Begin or end values: ints when known while compiling, else int64 Exprs read at run
    time (a traced index inside a compiled loop)."""
    try:
        return [int(v) for v in ctx.static(tensor).reshape(-1)]
    except NotLowerable:
        pass
    return [v if not ir.is_const(v) else int(v.attr) for v in ctx.symbolic_ints(tensor)]


STRIDED_SLICE = OpDef("StridedSlice", _strided_slice_infer, _strided_slice_kernel,
                      doc="TensorFlow's strided slice with begin/end/ellipsis/new-axis/shrink "
                          "masks; equals NumPy basic indexing with the equivalent key.",
                      gradient=_strided_slice_grad, lower=_lower_strided_slice)


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None, name=None) -> Tensor:
    """Strided slice of `input_` (TensorFlow's `tf.strided_slice`).

    Entry i of begin/end/strides slices one dimension like `begin[i]:end[i]:strides[i]`
    (negative values count from the end; out-of-range bounds are clamped).  Bit i of
    begin_mask/end_mask ignores begin[i]/end[i] (the widest range); ellipsis_mask marks the
    entry standing for all remaining dimensions; new_axis_mask inserts a size-1 dimension;
    shrink_axis_mask indexes with begin[i] and removes the dimension.  `strides` defaults to
    ones; `var` (for sliced assignment in TF) is accepted and ignored.
    """
    del var
    graph = graph_for((input_, begin, end, strides))
    x = to_tensor(input_, graph=graph, name="input")
    if strides is None:
        begin_t = _index_tensors((begin,), ("begin",), graph)[0]
        n = _vector_length(begin_t, "begin")
        if n is None:
            raise ValueError("strided_slice needs explicit `strides` when the length of "
                             f"`begin` ({begin_t.name}) is not known while building.")
        strides = np.ones([n], dtype=begin_t.dtype.np_dtype)
        begin = begin_t
    begin, end, strides = _index_tensors((begin, end, strides), ("begin", "end", "strides"),
                                         graph)
    attrs = {"begin_mask": int(begin_mask), "end_mask": int(end_mask),
             "ellipsis_mask": int(ellipsis_mask), "new_axis_mask": int(new_axis_mask),
             "shrink_axis_mask": int(shrink_axis_mask)}
    return make_op(STRIDED_SLICE, [x, begin, end, strides], attrs, name,
                   graph=graph).outputs[0]


OP_DEFS = (SLICE, STRIDED_SLICE)
