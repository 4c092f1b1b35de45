"""Reductions over axes: Sum, Mean, Max, Min, Prod, Any, All, and ArgMax/ArgMin.

Public functions (TensorFlow 1.x signatures): `reduce_sum`, `reduce_mean`, `reduce_max`,
`reduce_min`, `reduce_prod`, `reduce_any`, `reduce_all`, `reduce_logsumexp`,
`count_nonzero`, `argmax`, `argmin`.

Each reduction op takes the tensor and a `reduction_indices` tensor (int32 or int64, scalar
or vector; negative and repeated axes allowed) and has the attr `keep_dims`.  When the axes
are known while building, out-of-range axes are a ValueError and the output shape is exact;
otherwise the kernel checks them (InvalidArgumentError).  `axis=None` reduces every axis.

Semantics follow TensorFlow's kernels: sums and products keep the input dtype (integers
wrap); the mean of integers is their 64-bit sum divided by the count, truncated toward
zero (and 0 for an empty reduction); a float16 mean rounds its sum to float16 first;
max/min of an empty reduction give the identity (-inf/+inf for floats, the dtype's min/max
for integers); ArgMax/ArgMin skip NaNs and reject an empty reduced dimension.
`reduce_logsumexp` and `count_nonzero` are compositions of other ops, as in TensorFlow.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor
from ..compiler.core.shapes import TensorShape, unknown_shape
from ..errors import InvalidArgumentError
from .builder import (INDEX_TYPES, NUMERIC, REALS, check_dtype, graph_for, make_op,
                      to_tensor)
from .conversion import static_value
from .registry import OpDef, Trait

__all__ = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
           "reduce_any", "reduce_all", "reduce_logsumexp", "count_nonzero", "argmax",
           "argmin"]


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
        from .array_ops import range as _range  # the rank is known only at run time
        from .shape_ops import rank as _rank

        return _range(0, _rank(x), 1, name="reduction_indices")
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


_BOOL = (_dtypes.bool_,)

# (op type, allowed dtypes, reduction)
_REDUCTIONS = (
    ("Sum", NUMERIC, _sum),
    ("Mean", NUMERIC, _mean),
    ("Prod", NUMERIC, _prod),
    ("Max", REALS, _max),
    ("Min", REALS, _min),
    ("Any", _BOOL, _any),
    ("All", _BOOL, _all),
)

SUM, MEAN, PROD, MAX, MIN, ANY, ALL = (
    OpDef(name, _reduction_infer(allowed), _reduction_kernel(fn), traits={Trait.REDUCTION},
          doc=f"{name} of `input` over `reduction_indices`.")
    for name, allowed, fn in _REDUCTIONS)


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
    from . import math_ops
    from .array_ops import zeros_like

    axis = _deprecated_alias("axis", axis, "reduction_indices", reduction_indices)
    keepdims = bool(_deprecated_alias("keepdims", keepdims, "keep_dims", keep_dims))
    graph = graph_for((input_tensor, axis))
    with graph.as_default(), graph.name_scope(name or "ReduceLogSumExp"):
        x = to_tensor(input_tensor, name="input_tensor")
        raw_max = reduce_max(x, axis, keepdims=True)
        shift = math_ops.where(math_ops.is_finite(raw_max), raw_max, zeros_like(raw_max))
        summed = reduce_sum(math_ops.exp(math_ops.subtract(x, shift)), axis, keepdims=keepdims)
        if not keepdims:
            shift = reduce_max(shift, axis, keepdims=False)  # drop the kept axes
        return math_ops.add(math_ops.log(summed), shift)


def count_nonzero(input_tensor=None, axis=None, keepdims=None, dtype=_dtypes.int64, name=None,
                  reduction_indices=None, keep_dims=None, input=None) -> Tensor:
    """The number of non-zero (or True) elements over `axis`, as `dtype` (int64 default)."""
    from . import math_ops

    input_tensor = _deprecated_alias("input_tensor", input_tensor, "input", input)
    axis = _deprecated_alias("axis", axis, "reduction_indices", reduction_indices)
    keepdims = bool(_deprecated_alias("keepdims", keepdims, "keep_dims", keep_dims))
    graph = graph_for((input_tensor, axis))
    with graph.as_default(), graph.name_scope(name or "count_nonzero"):
        x = to_tensor(input_tensor, name="input_tensor")
        zero = to_tensor(np.zeros((), x.dtype.np_dtype), name="zero")
        nonzero = math_ops.cast(math_ops.not_equal(x, zero), _dtypes.int64)
        counts = reduce_sum(nonzero, axis, keepdims=keepdims)
        return math_ops.cast(counts, dtype)


# --- ArgMax / ArgMin ------------------------------------------------------------------------


def _arg_infer(op):
    x, dim_t = op.inputs
    check_dtype(x, (*REALS, _dtypes.bool_), "input")
    check_dtype(dim_t, INDEX_TYPES, "dimension")
    out_type = op.get_attr("output_type")
    if out_type not in INDEX_TYPES:
        raise TypeError(f"output_type must be int32 or int64, got {out_type.name}.")
    if dim_t.shape.ndims not in (None, 0):
        raise ValueError(f"dimension must be a scalar, but has shape {dim_t.shape}.")
    rank = x.shape.ndims
    if rank is None:
        return [(out_type, unknown_shape())]
    if rank == 0:
        raise ValueError("Cannot take the arg max/min of a scalar: the input needs at least "
                         "one dimension.")
    dim = static_value(dim_t)
    if dim is None:
        return [(out_type, unknown_shape(rank - 1))]
    axis = _normalize_axis(int(dim), rank, "dimension")
    return [(out_type, TensorShape(x.shape.dims[:axis] + x.shape.dims[axis + 1:]))]


def _arg_kernel(find_max: bool):
    def kernel(ctx, inputs, attrs):
        x, dim = inputs
        op = ctx.op if ctx else None
        if x.ndim == 0:
            raise InvalidArgumentError(None, op, "Expected a dimension in the range [0, 0): "
                                                 "the input is a scalar.")
        d = int(dim)
        if not -x.ndim <= d < x.ndim:
            raise InvalidArgumentError(None, op, f"Expected dimension in the range "
                                                 f"[{-x.ndim}, {x.ndim}), but got {d}.")
        d %= x.ndim
        if x.shape[d] == 0:
            raise InvalidArgumentError(None, op, f"Reduction axis {d} is empty in shape "
                                                 f"{list(x.shape)}.")
        if x.dtype.kind == "f":  # TensorFlow's kernels never pick a NaN over a number
            x = np.where(np.isnan(x), -np.inf if find_max else np.inf, x)
        index = np.argmax(x, axis=d) if find_max else np.argmin(x, axis=d)
        return [np.asarray(index, dtype=attrs["output_type"].np_dtype)]

    return kernel


ARG_MAX = OpDef("ArgMax", _arg_infer, _arg_kernel(True), traits={Trait.REDUCTION},
                doc="Index of the largest value along `dimension`.")
ARG_MIN = OpDef("ArgMin", _arg_infer, _arg_kernel(False), traits={Trait.REDUCTION},
                doc="Index of the smallest value along `dimension`.")


def _arg(op_def, input, axis, name, dimension, output_type):
    axis = _deprecated_alias("axis", axis, "dimension", dimension)
    if axis is None:
        axis = 0  # TensorFlow 1.x's default
    if not (isinstance(axis, Tensor) or hasattr(axis, "_as_graph_tensor")):
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
            raise TypeError(f"axis must be an int or a scalar integer tensor, got {axis!r}.")
    graph = graph_for((input, axis))
    with graph.as_default(), graph.name_scope(name or op_def.default_name) as scope:
        x = to_tensor(input, name="input")
        dim = to_tensor(axis, dtype=None if isinstance(axis, Tensor) else _dtypes.int32,
                        name="dimension")
        return make_op(op_def, [x, dim], {"output_type": _dtypes.as_dtype(output_type)},
                       name=scope).outputs[0]


def argmax(input, axis=None, name=None, dimension=None,
           output_type=_dtypes.int64) -> Tensor:
    """Index of the largest value along `axis` (0 when None, as in TensorFlow 1.x)."""
    return _arg(ARG_MAX, input, axis, name, dimension, output_type)


def argmin(input, axis=None, name=None, dimension=None,
           output_type=_dtypes.int64) -> Tensor:
    """Index of the smallest value along `axis` (0 when None, as in TensorFlow 1.x)."""
    return _arg(ARG_MIN, input, axis, name, dimension, output_type)


OP_DEFS = (SUM, MEAN, PROD, MAX, MIN, ANY, ALL, ARG_MAX, ARG_MIN)


# --- lowerings to kernel IR ---------------------------------------------------------------------
def _attach_lowerings():
    from ..compiler.core.ir import Combiner
    from .lower_reduce import arg_lowering, lower_mean, reduction_lowering

    for op_def, combiner in ((SUM, Combiner.ADD), (PROD, Combiner.MUL), (MAX, Combiner.MAX),
                             (MIN, Combiner.MIN), (ANY, Combiner.OR), (ALL, Combiner.AND)):
        op_def.lower = reduction_lowering(combiner)
    MEAN.lower = lower_mean
    ARG_MAX.lower = arg_lowering(Combiner.ARGMAX)
    ARG_MIN.lower = arg_lowering(Combiner.ARGMIN)


_attach_lowerings()
