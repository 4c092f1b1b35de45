"""Reductions over axes: Sum, Mean, Max, Min, Prod, Any, All (ArgMax/ArgMin: arg_ops.py).

Public functions (TensorFlow 1.x signatures): `reduce_sum`, `reduce_mean`, `reduce_max`,
`reduce_min`, `reduce_prod`, `reduce_any`, `reduce_all`, `reduce_logsumexp`,
`count_nonzero`.

Each reduction op takes the tensor and a `reduction_indices` tensor (int32 or int64, scalar
or vector; negative and repeated axes allowed) and has the attr `keep_dims`.  When the axes
are known while building, out-of-range axes are a ValueError and the output shape is exact;
otherwise the kernel checks them (InvalidArgumentError).  `axis=None` reduces every axis.

Semantics follow TensorFlow's kernels: sums and products keep the input dtype (integers
wrap); the mean of integers is their 64-bit sum divided by the count, truncated toward
zero (and 0 for an empty reduction); a float16 mean rounds its sum to float16 first;
max/min of an empty reduction give the identity (-inf/+inf for floats, the dtype's min/max
for integers).  `reduce_logsumexp` and `count_nonzero` are compositions of other ops, as
in TensorFlow.

Gradients: a reduction's gradient reshapes the output gradient to the input's rank with the
reduced axes kept as size 1 ("kept shape") and broadcasts it back; the kept shape is a
constant when the input shape and axes are known while building, else it is computed from
runtime shapes (so unknown dims, keep_dims and negative or repeated reduction_indices all
work).  Max/Min share the gradient evenly among tied extremes; Prod's gradient is exact with
zeros in the input (no division by zero: the product of the other elements is formed from
counts of zeros and the product of the non-zero elements).  Any and All have none.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor
from ..compiler.core.ir import Combiner
from ..compiler.core.shapes import TensorShape, unknown_shape
from ..errors import InvalidArgumentError
from . import (fill_ops, join_ops, math_binary, math_cast, math_compare, math_division, math_unary,
               pad_ops, reshape_ops, select_ops, shape_ops)
from .builder import (INDEX_TYPES, NUMERIC, REALS, check_dtype, graph_for, make_op,
                      to_tensor)
from .conversion import static_value
from .lower_reduce import lower_mean, reduction_lowering
from .registry import OpDef, Trait

__all__ = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
           "reduce_any", "reduce_all", "reduce_logsumexp", "count_nonzero"]


# --- axes -----------------------------------------------------------------------------------


def _normalize_axis(axis: int, rank: int, what: str = "reduction dimension") -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"Invalid {what} {axis} for input with {rank} dimensions "
                         f"(valid range is [{-rank}, {rank})).")
    return axis % rank


def _static_reduced_shape(x_shape: TensorShape, axes_t: Tensor, keep: bool) -> TensorShape:
    """The output shape of reducing `x_shape` over the axes held in `axes_t`."""
    if axes_t.shape.ndims is not None and axes_t.shape.ndims > 1:
        raise ValueError(f"reduction_indices must be a scalar or a vector, but has shape "
                         f"{axes_t.shape}.")
    rank = x_shape.ndims
    axes = static_value(axes_t)
    if axes is None:
        if axes_t.shape.dims == (0,):
            return x_shape  # reducing over no axes
        return unknown_shape(rank) if keep and rank is not None else unknown_shape()
    if rank is None:
        return unknown_shape()
    reduced = {_normalize_axis(int(a), rank) for a in axes.reshape(-1)}
    dims = []
    for i, d in enumerate(x_shape.dims):
        if i not in reduced:
            dims.append(d)
        elif keep:
            dims.append(1)
    return TensorShape(dims)


def _runtime_axes(ctx, axes: np.ndarray, rank: int) -> tuple:
    """The sorted, distinct, non-negative axes; InvalidArgumentError for a bad axis."""
    out = set()
    for a in np.asarray(axes).reshape(-1):
        a = int(a)
        if not -rank <= a < rank:
            raise InvalidArgumentError(None, ctx.op if ctx else None,
                                       f"Invalid reduction dimension {a} for input with "
                                       f"{rank} dimensions (valid range is [{-rank}, {rank})).")
        out.add(a % rank)
    return tuple(sorted(out))


def _axes_tensor(x: Tensor, axis) -> Tensor:
    """`axis` as an int tensor; None means every axis of `x` (its rank may be unknown)."""
    if axis is None:
        rank = x.shape.ndims
        if rank is not None:
            return to_tensor(np.arange(rank, dtype=np.int32), name="reduction_indices")
        # the rank is known only at run time
        return fill_ops.range(0, shape_ops.rank(x), 1, name="reduction_indices")
    if isinstance(axis, Tensor) or hasattr(axis, "_as_graph_tensor"):
        return to_tensor(axis)
    if isinstance(axis, (list, tuple)) and any(isinstance(a, Tensor) for a in axis):
        return to_tensor(axis, name="reduction_indices")
    arr = np.asarray(axis)
    if arr.dtype.kind not in "iu" and arr.size:
        raise TypeError(f"axis must be an int, a list of ints or an integer tensor, got "
                        f"{axis!r}.")
    dtype = np.int64 if arr.dtype == np.int64 and arr.size and (
        arr.min() < -2**31 or arr.max() >= 2**31) else np.int32
    return to_tensor(arr.astype(dtype), name="reduction_indices")


def _deprecated_alias(new_name, new_value, old_name, old_value):
    if new_value is not None and old_value is not None:
        raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'.")
    return old_value if new_value is None else new_value


# --- reduction ops (generated from one table) ------------------------------------------------


def _reduction_infer(allowed):
    def infer(op):
        x, axes_t = op.inputs
        check_dtype(x, allowed, "input")
        check_dtype(axes_t, INDEX_TYPES, "reduction_indices")
        return [(x.dtype, _static_reduced_shape(x.shape, axes_t, op.get_attr("keep_dims")))]

    return infer


def _accumulator(dtype: np.dtype):
    """The NumPy dtype to accumulate in: float16 sums in float32 (as TF's kernels do)."""
    return np.float32 if dtype == np.float16 else dtype


def _sum(x, axes, keep):
    return np.sum(x, axis=axes, keepdims=keep, dtype=_accumulator(x.dtype))


def _prod(x, axes, keep):
    return np.prod(x, axis=axes, keepdims=keep, dtype=_accumulator(x.dtype))


def _mean(x, axes, keep):
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    if x.dtype.kind in "iu":
        # TensorFlow sums integers in 64 bits (so int8..int32 do not wrap), then divides.
        wide = np.uint64 if x.dtype.kind == "u" else np.int64
        total = np.sum(x, axis=axes, keepdims=keep, dtype=wide)
        if count == 0:
            return np.zeros_like(total)
        count = wide(count)
        quotient = total // count
        # C++ integer division truncates toward zero; floor division rounds down.
        return quotient + ((total % count != 0) & (total < 0))
    # The sum is rounded to the dtype before dividing (a float16 sum may overflow, as in TF).
    total = _sum(x, axes, keep).astype(x.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total.astype(_accumulator(x.dtype)) / count


def _identity_extreme(dtype: np.dtype, low: bool):
    if dtype.kind == "f":
        return -np.inf if low else np.inf
    if dtype.kind == "b":
        return not low
    info = np.iinfo(dtype)
    return info.min if low else info.max


def _max(x, axes, keep):
    return np.max(x, axis=axes, keepdims=keep, initial=_identity_extreme(x.dtype, True))


def _min(x, axes, keep):
    return np.min(x, axis=axes, keepdims=keep, initial=_identity_extreme(x.dtype, False))


def _any(x, axes, keep):
    return np.any(x, axis=axes, keepdims=keep)


def _all(x, axes, keep):
    return np.all(x, axis=axes, keepdims=keep)


def _reduction_kernel(fn):
    def kernel(ctx, inputs, attrs):
        x, axes = inputs
        axes = _runtime_axes(ctx, axes, x.ndim)
        return [np.asarray(fn(x, axes, attrs["keep_dims"])).astype(x.dtype, copy=False)]

    return kernel


# --- gradients -------------------------------------------------------------------------------


def _kept_shape(x, axes_t):
    """x's shape with the reduced axes set to 1: a list of ints when known, else a tensor."""
    axes = static_value(axes_t)
    if axes is not None and x.shape.is_fully_defined():
        dims = x.shape.as_tuple()
        reduced = {int(a) % len(dims) for a in axes.reshape(-1)} if dims else set()
        return [1 if i in reduced else d for i, d in enumerate(dims)]
    if axes is not None and x.shape.ndims is not None:
        n = x.shape.ndims
        reduced = {int(a) % n for a in axes.reshape(-1)} if n else set()
        x_shape = shape_ops.shape(x)
        return join_ops.stack([1 if i in reduced else (d if d is not None else x_shape[i])
                               for i, d in enumerate(x.shape.dims)]) if n else []
    x_shape = shape_ops.shape(x)
    r = shape_ops.rank(x)
    axes_norm = math_division.floormod(
        math_cast.cast(reshape_ops.reshape(axes_t, [-1]), _dtypes.int32), r)
    hit = reduce_any(math_compare.equal(reshape_ops.reshape(fill_ops.range(0, r), [-1, 1]),
                                    reshape_ops.reshape(axes_norm, [1, -1])), axis=1)
    return select_ops.where_v2(hit, fill_ops.ones_like(x_shape), x_shape)


def _kept(op, t):
    """Output-shaped `t` reshaped to the kept shape (a no-op when keep_dims was set)."""
    if op.get_attr("keep_dims"):
        return t
    return reshape_ops.reshape(t, _kept_shape(op.inputs[0], op.inputs[1]))


def _sum_grad(op, g):
    x = op.inputs[0]
    return [pad_ops.broadcast_to(_kept(op, g), shape_ops.shape(x)), None]


def _mean_grad(op, g):
    x, z = op.inputs[0], op.outputs[0]
    count = math_division.floordiv(shape_ops.size(x), math_binary.maximum(shape_ops.size(z), 1))
    return [math_division.truediv(_sum_grad(op, g)[0], math_cast.cast(count, x.dtype)), None]


def _prod_grad(op, g):
    x, axes = op.inputs
    where, ones_like = select_ops.where_v2, fill_ops.ones_like
    is_zero = math_compare.equal(x, fill_ops.zeros_like(x))
    zeros = reduce_sum(math_cast.cast(is_zero, x.dtype), axes, keepdims=True)
    nonzero_prod = reduce_prod(where(is_zero, ones_like(x), x), axes, keepdims=True)
    none = fill_ops.zeros_like(nonzero_prod)
    # d prod / d x_i = product of the other elements: nonzero_prod / x_i if no zero, the
    # nonzero product at the single zero, and 0 wherever there are other zeros.
    at_zero = where(math_compare.equal(zeros, 1.0), nonzero_prod, none)
    elsewhere = where(math_compare.equal(zeros, 0.0), nonzero_prod, none) / where(
        is_zero, ones_like(x), x)
    return [_kept(op, g) * where(is_zero, at_zero, elsewhere), None]


def _extreme_grad(op, g):
    x, axes = op.inputs
    hits = math_cast.cast(math_compare.equal(x, _kept(op, op.outputs[0])), x.dtype)
    ties = reduce_sum(hits, axes, keepdims=True)
    return [_kept(op, g) * hits / ties, None]


_BOOL = (_dtypes.bool_,)

# (op type, allowed dtypes, reduction, gradient, lowering)
_REDUCTIONS = (
    ("Sum", NUMERIC, _sum, _sum_grad, reduction_lowering(Combiner.ADD)),
    ("Mean", NUMERIC, _mean, _mean_grad, lower_mean),
    ("Prod", NUMERIC, _prod, _prod_grad, reduction_lowering(Combiner.MUL)),
    ("Max", REALS, _max, _extreme_grad, reduction_lowering(Combiner.MAX)),
    ("Min", REALS, _min, _extreme_grad, reduction_lowering(Combiner.MIN)),
    ("Any", _BOOL, _any, None, reduction_lowering(Combiner.OR)),
    ("All", _BOOL, _all, None, reduction_lowering(Combiner.AND)),
)

SUM, MEAN, PROD, MAX, MIN, ANY, ALL = (
    OpDef(name, _reduction_infer(allowed), _reduction_kernel(fn), traits={Trait.REDUCTION},
          gradient=gradient, lower=lower, doc=f"{name} of `input` over `reduction_indices`.")
    for name, allowed, fn, gradient, lower in _REDUCTIONS)


def _reduce(op_def, input_tensor, axis, keepdims, name, reduction_indices, keep_dims):
    axis = _deprecated_alias("axis", axis, "reduction_indices", reduction_indices)
    keepdims = bool(_deprecated_alias("keepdims", keepdims, "keep_dims", keep_dims))
    graph = graph_for((input_tensor, axis))
    with graph.as_default(), graph.name_scope(name or op_def.default_name) as scope:
        x = to_tensor(input_tensor, name="input")
        axes_t = _axes_tensor(x, axis)
        return make_op(op_def, [x, axes_t], {"keep_dims": keepdims}, name=scope).outputs[0]


def reduce_sum(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None) -> Tensor:
    """Sum of elements over `axis` (all axes when None); the dtype is kept."""
    return _reduce(SUM, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_mean(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None) -> Tensor:
    """Mean over `axis`; integer inputs give the truncated integer mean."""
    return _reduce(MEAN, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_prod(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None) -> Tensor:
    """Product of elements over `axis` (1 for an empty reduction)."""
    return _reduce(PROD, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_max(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None) -> Tensor:
    """Maximum over `axis`; an empty reduction gives -inf (floats) or the dtype's minimum."""
    return _reduce(MAX, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_min(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None) -> Tensor:
    """Minimum over `axis`; an empty reduction gives +inf (floats) or the dtype's maximum."""
    return _reduce(MIN, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_any(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None) -> Tensor:
    """Logical or of a bool tensor over `axis`."""
    return _reduce(ANY, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_all(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None) -> Tensor:
    """Logical and of a bool tensor over `axis`."""
    return _reduce(ALL, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None,
                     reduction_indices=None, keep_dims=None) -> Tensor:
    """log(sum(exp(x))) over `axis`, computed stably by shifting by the maximum.

    A composition (as in TensorFlow): the max is taken with keepdims, replaced by 0 where
    it is not finite (so rows of -inf give -inf rather than NaN), subtracted, and added back.
    """
    axis = _deprecated_alias("axis", axis, "reduction_indices", reduction_indices)
    keepdims = bool(_deprecated_alias("keepdims", keepdims, "keep_dims", keep_dims))
    graph = graph_for((input_tensor, axis))
    with graph.as_default(), graph.name_scope(name or "ReduceLogSumExp"):
        x = to_tensor(input_tensor, name="input_tensor")
        raw_max = reduce_max(x, axis, keepdims=True)
        shift = select_ops.where(math_unary.is_finite(raw_max), raw_max,
                               fill_ops.zeros_like(raw_max))
        summed = reduce_sum(math_unary.exp(math_binary.subtract(x, shift)), axis, keepdims=keepdims)
        if not keepdims:
            shift = reduce_max(shift, axis, keepdims=False)  # drop the kept axes
        return math_binary.add(math_unary.log(summed), shift)


def count_nonzero(input_tensor=None, axis=None, keepdims=None, dtype=_dtypes.int64, name=None,
                  reduction_indices=None, keep_dims=None, input=None) -> Tensor:
    """The number of non-zero (or True) elements over `axis`, as `dtype` (int64 default)."""
    input_tensor = _deprecated_alias("input_tensor", input_tensor, "input", input)
    axis = _deprecated_alias("axis", axis, "reduction_indices", reduction_indices)
    keepdims = bool(_deprecated_alias("keepdims", keepdims, "keep_dims", keep_dims))
    graph = graph_for((input_tensor, axis))
    with graph.as_default(), graph.name_scope(name or "count_nonzero"):
        x = to_tensor(input_tensor, name="input_tensor")
        zero = to_tensor(np.zeros((), x.dtype.np_dtype), name="zero")
        nonzero = math_cast.cast(math_compare.not_equal(x, zero), _dtypes.int64)
        counts = reduce_sum(nonzero, axis, keepdims=keepdims)
        return math_cast.cast(counts, dtype)


OP_DEFS = (SUM, MEAN, PROD, MAX, MIN, ANY, ALL)
