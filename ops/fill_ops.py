"""Tensors made from a shape and a value: Fill, ZerosLike, OnesLike and Range (OneHot:
one_hot_ops.py).

Public functions (re-exported by `array_ops`): `fill`, `zeros`, `ones`, `zeros_like`,
`ones_like`, `range` (TensorFlow's name: inside this module `range` is flowjit's, so the
module does not use Python's).  Fill's gradient goes to its value (a sum); ZerosLike and
OnesLike have none (their values do not depend on the input's).  As in TensorFlow 1.x,
`zeros`/`ones` of a small static shape and `zeros_like`/`ones_like` of a fully known shape
produce a Const; other shapes produce a Fill (or ZerosLike/OnesLike when the dtype is
unchanged).  `range` infers int32 when every argument is an int and float32 otherwise,
widening along int32 < int64 < float32 < float64.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Tensor, name_scope
from ..compiler.core.ir_build import NotLowerable
from . import basic_ops, math_cast, reduction_ops, reshape_ops, shape_ops
from . import lower_index as lx
from .array_common import (plain_shape_value, check_rank, index_tensor, runtime_error,
                           static_ints)
from .builder import INDEX_TYPES, check_dtype, check_same_dtype, make_op, to_tensor
from .conversion import constant_array, static_shape_from_tensor, static_value
from .lower_util import require_real
from .registry import OpDef, not_differentiable

_SMALL_CONSTANT = 1000  # elements: zeros/ones below this size become a Const, as in TF

# --- Fill ----------------------------------------------------------------------------------


def _check_dims(values, fail):
    if any(v < 0 for v in values):
        raise fail(f"Fill dims must be non-negative, got {values}")


def _fill_infer(op):
    dims, value = op.inputs
    check_dtype(dims, INDEX_TYPES, "dims")
    check_rank(dims, 1, "dims")
    check_rank(value, 0, "value")
    known = static_ints(dims)
    if known is not None:
        _check_dims(known, ValueError)
        return [(value.dtype, known)]
    return [(value.dtype, static_shape_from_tensor(dims))]


def _fill_kernel(ctx, inputs, attrs):
    dims, value = inputs
    shape = [int(d) for d in dims.reshape(-1)]
    _check_dims(shape, lambda m: runtime_error(ctx, m))
    if value.ndim != 0:
        raise runtime_error(ctx, f"Fill value must be a scalar, got shape {list(value.shape)}")
    return [np.broadcast_to(value, shape).copy()]


def _fill_grad(op, g):
    return [None, reduction_ops.reduce_sum(g)]


def _lower_fill(ctx, op, inputs):
    require_real(op)
    dims = ctx.symbolic_ints(op.inputs[0])
    for d in dims:
        lx.require(ctx, lx.ge(d, 0), f"Fill dims must be non-negative ({op.name})")
    shape = lx.out_shape(op.outputs[0], dims)
    return [ir.compute(op.outputs[0].dtype, shape, ir.axis_vars(len(shape)),
                       ir.load(inputs[1], ()))]


FILL = OpDef("Fill", _fill_infer, _fill_kernel, gradient=_fill_grad, lower=_lower_fill)


def fill(dims, value, name=None):
    """A tensor of shape `dims` (1-D int tensor or list) with every element equal to `value`."""
    v = to_tensor(value)
    d = index_tensor(dims, "dims", graph=v.graph)
    return make_op(FILL, [d, v], {}, name or "Fill").outputs[0]


def _scalar_of(dtype, one: bool) -> np.ndarray:
    """0 or 1 (False/True, b'') as a 0-d array of `dtype`; TypeError where none exists."""
    if dtype is _dtypes.string:
        if one:
            raise TypeError("Expected string, but got 1 of type 'int': flowjit.ones has no "
                            "string value.")
        return np.array(b"", dtype=object)
    return constant_array(bool(one) if dtype.is_bool else int(one), dtype)


def _static_shape_list(shape):
    """`shape` as a list of ints when it is a Python/NumPy shape, else None."""
    try:
        plain = plain_shape_value(shape)
    except ValueError:
        return None
    if isinstance(plain, Tensor) or hasattr(plain, "_as_graph_tensor"):
        return None
    if isinstance(plain, (list, tuple)) and any(
            isinstance(v, Tensor) or hasattr(v, "_as_graph_tensor") for v in plain):
        return None   # [tf.shape(x)[0], 2]: a shape built at run time
    arr = np.asarray(plain, dtype=object)
    if arr.ndim > 1 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                               for v in arr.reshape(-1)):
        return None
    return [int(v) for v in arr.reshape(-1)]


def _filled(shape, dtype, one: bool, name, default_name):
    dtype = _dtypes.as_dtype(dtype)
    value = _scalar_of(dtype, one)
    dims = _static_shape_list(shape)
    if dims is not None and all(d >= 0 for d in dims) and math.prod(dims) < _SMALL_CONSTANT:
        with name_scope(name, default_name) as scope:
            return basic_ops.constant_from_array(np.broadcast_to(value, dims), name=scope)
    with name_scope(name, default_name, [shape]) as scope:
        shape_t = index_tensor(shape, "shape")
        if shape_t.shape.ndims == 0:
            shape_t = reshape_ops.reshape(shape_t, [-1])
        return make_op(FILL, [shape_t, basic_ops.constant_from_array(value)], {}, scope).outputs[0]


def zeros(shape, dtype=_dtypes.float32, name=None):
    """A tensor of `shape` and `dtype` with every element zero (False, b'')."""
    return _filled(shape, dtype, False, name, "zeros")


def ones(shape, dtype=_dtypes.float32, name=None):
    """A tensor of `shape` and `dtype` with every element one (True)."""
    return _filled(shape, dtype, True, name, "ones")


# --- ZerosLike / OnesLike --------------------------------------------------------------------


def _zeros_like_infer(op):
    x = op.inputs[0]
    return [(x.dtype, x.shape)]


def _ones_like_infer(op):
    x = op.inputs[0]
    if x.dtype is _dtypes.string:
        raise TypeError("OnesLike is not defined for string tensors.")
    return [(x.dtype, x.shape)]


def _zeros_like_kernel(ctx, inputs, attrs):
    x = inputs[0]
    if x.dtype == object:
        return [np.full(x.shape, b"", dtype=object)]
    return [np.zeros(x.shape, dtype=x.dtype)]


def _ones_like_kernel(ctx, inputs, attrs):
    x = inputs[0]
    return [np.ones(x.shape, dtype=x.dtype)]


def _constant_like(value):
    def lower(ctx, op, inputs):
        require_real(op)
        x = inputs[0]
        return [ir.compute(x.dtype, x.shape, ir.axis_vars(len(x.shape)),
                           ir.const(value, x.dtype))]

    return lower


# the values do not depend on the input's values: not differentiable, as in TensorFlow
ZEROS_LIKE = OpDef("ZerosLike", _zeros_like_infer, _zeros_like_kernel,
                   gradient=not_differentiable,
                   lower=_constant_like(0))
ONES_LIKE = OpDef("OnesLike", _ones_like_infer, _ones_like_kernel, gradient=not_differentiable,
                  lower=_constant_like(1))


def _filled_like(tensor, dtype, optimize, one: bool, name, default_name, op_def):
    with name_scope(name, default_name, [tensor]) as scope:
        x = to_tensor(tensor, name="tensor")
        dtype = _dtypes.as_dtype(dtype) if dtype is not None else x.dtype
        if optimize and x.shape.is_fully_defined():
            return _filled(x.shape.as_list(), dtype, one, scope, default_name)
        if dtype is not x.dtype:
            out = _filled(shape_ops.shape(x), dtype, one, scope, default_name)
            out.set_shape(x.shape)
            return out
        return make_op(op_def, [x], {}, scope).outputs[0]


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    """Zeros with the shape of `tensor` (and its dtype unless `dtype` is given)."""
    return _filled_like(tensor, dtype, optimize, False, name, "zeros_like", ZEROS_LIKE)


def ones_like(tensor, dtype=None, name=None, optimize=True):
    """Ones with the shape of `tensor` (and its dtype unless `dtype` is given)."""
    return _filled_like(tensor, dtype, optimize, True, name, "ones_like", ONES_LIKE)


# --- Range ---------------------------------------------------------------------------------

_RANGE_TYPES = (_dtypes.int32, _dtypes.int64, _dtypes.float32, _dtypes.float64)


def range_size(start, limit, delta, fail):
    """The number of elements of range(start, limit, delta) (NumPy scalars of one dtype);
    raises `fail(message)` for a zero delta or a delta pointing away from limit."""
    if delta == 0:
        raise fail(f"Requires delta != 0 (start {start}, limit {limit})")
    if delta > 0 and start > limit:
        raise fail(f"Requires start <= limit when delta > 0: {start}/{limit}")
    if delta < 0 and start < limit:
        raise fail(f"Requires start >= limit when delta < 0: {start}/{limit}")
    if np.asarray(start).dtype.kind in "iu":
        span, step = abs(int(limit) - int(start)), abs(int(delta))
        return (span + step - 1) // step
    return int(np.ceil(np.abs((limit - start) / delta)))


def _range_infer(op):
    start, limit, delta = op.inputs
    check_same_dtype(op.inputs, ("start", "limit", "delta"))
    check_dtype(start, _RANGE_TYPES, "Tidx")
    for t, param in zip(op.inputs, ("start", "limit", "delta")):
        check_rank(t, 0, param)
    values = [static_value(t) for t in op.inputs]
    if any(v is None for v in values):
        return [(start.dtype, [None])]
    size = range_size(*(v.reshape(())[()] for v in values), ValueError)
    return [(start.dtype, [size])]


def _range_kernel(ctx, inputs, attrs):
    start, limit, delta = (v.reshape(())[()] for v in inputs)
    size = range_size(start, limit, delta, lambda m: runtime_error(ctx, m))
    dtype = inputs[0].dtype
    return [(start + np.arange(size, dtype=dtype) * delta).astype(dtype, copy=False)]


def _lower_range(ctx, op, inputs):
    dtype = op.outputs[0].dtype
    if static_value(op.inputs[1]) is None and dtype.is_integer:
        return _lower_runtime_range(ctx, op)
    start, limit, delta = (ctx.static(t, "Range argument").reshape(())[()] for t in op.inputs)
    size = range_size(start, limit, delta, NotLowerable)
    i = ir.make(ir.Scalar.CAST, dtype, (ir.axis_var(0),))
    step = ir.make(ir.Scalar.MUL, dtype, (i, ir.const(delta.item(), dtype)))
    return [ir.compute(dtype, [ir.index(size)], ir.axis_vars(1),
                       ir.make(ir.Scalar.ADD, dtype, (ir.const(start.item(), dtype), step)))]


def _lower_runtime_range(ctx, op):
    """An integer range whose limit is known at run time only (`tf.range(tf.size(x))` of a
    gradient): static start and delta, the size computed and the direction checked in the
    kernel, as range_size does for static arguments."""
    start, delta = (int(ctx.static(t, "Range argument").reshape(())[()])
                    for t in (op.inputs[0], op.inputs[2]))
    if delta == 0:
        raise NotLowerable(f"Requires delta != 0 ({op.name})")
    (limit,) = ctx.symbolic_ints(op.inputs[1])
    span = lx.sub(limit, start) if delta > 0 else lx.sub(start, limit)
    lx.require(ctx, lx.ge(span, 0),
               f"Requires start {'<=' if delta > 0 else '>='} limit when delta "
               f"{'>' if delta > 0 else '<'} 0 ({op.name}, start {start})")
    step = abs(delta)
    size = lx.maximum(lx.floordiv(lx.add(span, step - 1), step), 0)
    dtype = op.outputs[0].dtype
    i = ir.make(ir.Scalar.CAST, dtype, (ir.axis_var(0),))
    value = ir.make(ir.Scalar.ADD, dtype, (ir.const(start, dtype),
                                           ir.make(ir.Scalar.MUL, dtype,
                                                   (i, ir.const(delta, dtype)))))
    return [ir.compute(dtype, lx.out_shape(op.outputs[0], [size]), ir.axis_vars(1), value)]


RANGE = OpDef("Range", _range_infer, _range_kernel, default_name="range", lower=_lower_range,
              gradient=not_differentiable)


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    """The sequence start, start + delta, ... up to (not including) `limit` (TF's tf.range).

    With one argument it is the limit and start is 0.  Without `dtype`, the widest argument
    type along int32 < int64 < float32 < float64 wins (Python ints are int32, floats float32).
    """
    if limit is None:
        start, limit = 0, start
    args = {"start": start, "limit": limit, "delta": delta}
    with name_scope(name, "Range", list(args.values())) as scope:
        def default_type(v):
            if hasattr(v, "_as_graph_tensor") or isinstance(v, Tensor):
                return to_tensor(v).dtype
            return _dtypes.as_dtype(constant_array(v).dtype)

        if dtype is None:
            kinds = [default_type(v) for v in args.values()]
            for k in kinds:
                if k not in _RANGE_TYPES:
                    raise TypeError(f"range arguments must be int32, int64, float32 or "
                                    f"float64; got {k.name}.")
            dtype = max(kinds, key=_RANGE_TYPES.index)
        dtype = _dtypes.as_dtype(dtype)
        tensors = []
        for param, v in args.items():
            if hasattr(v, "_as_graph_tensor") or isinstance(v, Tensor):
                t = to_tensor(v)
                if t.dtype is not dtype:
                    t = math_cast.cast(t, dtype)
            else:
                t = to_tensor(v, dtype=dtype, name=param)
            tensors.append(t)
        return make_op(RANGE, tensors, {}, scope).outputs[0]


OP_DEFS = (FILL, ZEROS_LIKE, ONES_LIKE, RANGE)
__all__ = ["fill", "zeros", "ones", "zeros_like", "ones_like", "range"]
