"""Slicing: Slice, StridedSlice and `Tensor.__getitem__`; gathers live in gather_ops.py.

Public functions: `slice`, `strided_slice`, `tensor_getitem` (what `tensor[key]` calls),
and, re-exported from gather_ops, `gather`, `gather_nd` and `boolean_mask`.  begin/end/
strides/size are tensor inputs, as in TensorFlow; shape inference reads their values when
known while building (`static_value`, or element by element through a Pack of scalars) and
leaves dimensions unknown otherwise.  The strided-slice rules themselves (masks, ellipsis,
clamping) are in slice_spec.py, shared by inference and kernel, so the two cannot disagree.

Index keys for `tensor[key]` are lowered, as TensorFlow does, to ONE StridedSlice whose
begin/end/strides are constants (or a Pack when some index is a scalar Tensor).  Keys NumPy
reads as advanced indexing (lists, arrays, boolean masks) are a TypeError: TF 1.x graphs do
not support them; use gather / gather_nd / boolean_mask.
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir_build import remap
from ..compiler.core.ir_build import NotLowerable
from ..compiler.core.shapes import Dimension, TensorShape, unknown_shape
from ..errors import InvalidArgumentError
from . import gather_ops
from . import lower_index as lx
from .builder import INDEX_TYPES, check_dtype, graph_for, make_op, to_tensor
from .conversion import first_tensor_dtype, static_value
from .gather_ops import boolean_mask, gather, gather_nd
from .lower_util import require_real
from .registry import OpDef
from .slice_spec import NEW_AXIS, dense_spec, dim_bounds, dim_bounds_expr, output_dims

__all__ = ["slice", "strided_slice", "gather", "gather_nd", "boolean_mask", "tensor_getitem"]

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


SLICE = OpDef("Slice", _slice_infer, _slice_kernel,
              doc="input[begin[i] : begin[i] + size[i]] in every dimension; size -1 = to end.")


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


def _strided_slice_kernel(ctx, inputs, attrs):
    x, begin, end, strides = inputs
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
    return [np.array(x[tuple(index)].reshape(shape), copy=True)]


STRIDED_SLICE = OpDef("StridedSlice", _strided_slice_infer, _strided_slice_kernel,
                      doc="TensorFlow's strided slice with begin/end/ellipsis/new-axis/shrink "
                          "masks; equals NumPy basic indexing with the equivalent key.")


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


# --- tensor[key] ----------------------------------------------------------------------------


def _bad_key(key, why: str) -> TypeError:
    return TypeError(f"Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and "
                     f"scalar tf.int32/tf.int64 tensors are valid indices, got {key!r} "
                     f"({why}). For a list or array of indices use tf.gather or "
                     "tf.gather_nd; for a boolean mask use tf.boolean_mask.")


def _as_index(value, key):
    """An int, or a scalar integer Tensor, from one index value; TypeError otherwise."""
    value = value._as_graph_tensor() if hasattr(value, "_as_graph_tensor") else value
    if isinstance(value, Tensor):
        if value.dtype not in INDEX_TYPES:
            raise _bad_key(key, f"a {value.dtype.name} tensor; boolean masks need "
                                "tf.boolean_mask" if value.dtype is _dtypes.bool_
                           else f"a {value.dtype.name} tensor")
        if value.shape.ndims not in (None, 0):
            raise _bad_key(key, f"a tensor of shape {value.shape}, not a scalar")
        return value
    if isinstance(value, (bool, np.bool_)):
        raise _bad_key(key, "a boolean; NumPy would read it as a mask")
    if isinstance(value, (list, tuple, np.ndarray)) and np.ndim(value) > 0:
        raise _bad_key(key, "advanced indexing with a sequence is not supported in TF 1.x")
    if isinstance(value, Dimension):
        if value.value is None:
            raise _bad_key(key, "an unknown Dimension; use a tensor from tf.shape instead")
        value = value.value
    try:
        return operator.index(value)
    except TypeError:
        raise _bad_key(key, f"of type {type(value).__name__}") from None


def _key_spec(key):
    """(begin, end, strides, masks) lists for a getitem key, as TensorFlow lowers it."""
    entries = key if isinstance(key, tuple) else (key,)
    begin, end, strides = [], [], []
    masks = dict.fromkeys(_MASKS, 0)
    for i, s in enumerate(entries):
        bit = 1 << i
        if isinstance(s, _py_slice):
            for bound, values, mask in ((s.start, begin, "begin_mask"),
                                        (s.stop, end, "end_mask")):
                if bound is None:
                    values.append(0)
                    masks[mask] |= bit
                else:
                    values.append(_as_index(bound, key))
            strides.append(1 if s.step is None else _as_index(s.step, key))
        elif s is Ellipsis or s is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            masks["ellipsis_mask" if s is Ellipsis else "new_axis_mask"] |= bit
        else:
            index = _as_index(s, key)
            # A shrunk axis ignores `end` (it is always begin + 1), so a tensor index needs
            # no arithmetic op here.
            begin.append(index)
            end.append(index + 1 if isinstance(index, int) else index)
            strides.append(1)
            masks["shrink_axis_mask"] |= bit
    return begin, end, strides, masks


def _index_dtype(values):
    """int64 if any index tensor is int64 or any bound needs 64 bits, else int32 (TF's)."""
    for v in values:
        if isinstance(v, Tensor):
            if v.dtype is _dtypes.int64:
                return _dtypes.int64
        elif not -2**31 <= v < 2**31:
            return _dtypes.int64
    return _dtypes.int32


def _pack_indices(values, dtype, graph, name):
    """A 1-D index tensor from ints and scalar integer tensors (a Const, or a Pack)."""
    if not any(isinstance(v, Tensor) for v in values):
        return to_tensor(np.array(values, dtype=dtype.np_dtype), graph=graph, name=name)
    from . import array_ops

    parts = []
    for v in values:
        if not isinstance(v, Tensor):
            v = to_tensor(v, dtype=dtype, graph=graph)
        elif v.dtype is not dtype:
            from . import math_ops

            v = math_ops.cast(v, dtype)
        parts.append(v)
    return array_ops.stack(parts, name=name)


def tensor_getitem(tensor, key) -> Tensor:
    """`tensor[key]` for ints, slices (any step, None bounds), None/tf.newaxis, Ellipsis and
    scalar integer tensors: one StridedSlice, exactly like NumPy basic indexing.

    Lists, arrays and boolean masks are a TypeError (TF 1.x has no advanced indexing): use
    gather, gather_nd or boolean_mask.
    """
    graph = graph_for((tensor,))
    x = to_tensor(tensor, graph=graph)
    begin, end, strides, masks = _key_spec(key)
    dtype = _index_dtype(begin + end + strides)
    with graph.as_default(), graph.name_scope("strided_slice") as scope:
        packed = [_pack_indices(v, dtype, graph, n)
                  for v, n in ((begin, "stack"), (end, "stack_1"), (strides, "stack_2"))]
        return make_op(STRIDED_SLICE, [x, *packed], masks, scope, graph=graph).outputs[0]


OP_DEFS = (SLICE, STRIDED_SLICE, *gather_ops.OP_DEFS)


# --- lowerings to kernel IR ---------------------------------------------------------------------
# Index remaps: out[i] = x[begin + i * stride], fused into consumers.  Slice takes begin/size
# as symbolic ints (sizes may be runtime values); StridedSlice needs static begin/end/strides
# and resolves them against runtime sizes with slice_spec.dim_bounds_expr.


def _lower_slice(ctx, op, inputs):
    require_real(op)
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


def _lower_strided_slice(ctx, op, inputs):
    require_real(op)
    x = inputs[0]
    begin, end, strides = ([int(v) for v in ctx.static(t, name).reshape(-1)]
                           for t, name in zip(op.inputs[1:], ("begin", "end", "strides")))
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


def _attach_lowerings():
    SLICE.lower = _lower_slice
    STRIDED_SLICE.lower = _lower_strided_slice


_attach_lowerings()
