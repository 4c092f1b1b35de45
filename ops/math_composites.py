"""TensorFlow 1.x math functions that are compositions of existing ops (no op types of their
own): `log_sigmoid`, `xlogy`, `xdivy`, `multiply_no_nan`, `reciprocal_no_nan`,
`reduce_variance`, `reduce_std`, `polyval`, `scalar_mul`, `accumulate_n`, `sequence_mask`,
`confusion_matrix`, `bincount`, `segment_sum`, `segment_mean`, `unsorted_segment_mean`,
`unsorted_segment_sqrt_n`, `linspace` (`lin_space`); `NAMESPACES` lists the `tf.math` names
the package root adds.

Each builds what TensorFlow's function computes (the formula in its docstring), so values,
dtypes and gradients follow from the ops used.  The "no NaN" functions select their safe
value before the arithmetic as well as after it (`where(x == 0, 0, x * log(where(x == 0, 1,
y)))`), so the branch they discard has no NaN to leak into the gradient either.
"""

from __future__ import annotations

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor
from . import math_ops as mo
from .activation_ops import softplus
from .array_ops import concat, expand_dims, ones_like, reshape, stack, zeros_like
from .builder import graph_for, to_tensor
from .fill_ops import range as range_
from .reduction_ops import reduce_max, reduce_mean
from .segment_ops import unsorted_segment_sum

# the names TF 1.x has at its top level (the others are `tf.math` names: tf1_helpers.py)
__all__ = ["log_sigmoid", "scalar_mul", "accumulate_n", "sequence_mask", "confusion_matrix",
           "bincount", "segment_sum", "segment_mean", "unsorted_segment_mean",
           "unsorted_segment_sqrt_n", "linspace", "lin_space", "floor_div", "realdiv", "rint"]


def log_sigmoid(x, name=None) -> Tensor:
    """log(1 / (1 + exp(-x))) = -softplus(-x), without overflow for large |x|."""
    x = to_tensor(x, name="x")
    with x.graph.name_scope(name or "LogSigmoid"):
        return mo.negative(softplus(mo.negative(x)))


def _pair(x, y):
    graph = graph_for((x, y))
    x = to_tensor(x, graph=graph, name="x")
    return x, to_tensor(y, dtype=x.dtype, graph=graph, name="y")


def xlogy(x, y, name=None) -> Tensor:
    """x * log(y), and 0 wherever x == 0 (even where y is 0)."""
    x, y = _pair(x, y)
    with x.graph.name_scope(name or "xlogy"):
        zero = mo.equal(x, zeros_like(x))
        safe_y = mo.where_v2(zero, ones_like(y), y)
        return mo.where_v2(zero, zeros_like(x), mo.multiply(x, mo.log(safe_y)))


def xdivy(x, y, name=None) -> Tensor:
    """x / y, and 0 wherever x == 0 (even where y is 0)."""
    x, y = _pair(x, y)
    with x.graph.name_scope(name or "xdivy"):
        zero = mo.equal(x, zeros_like(x))
        safe_y = mo.where_v2(zero, ones_like(y), y)
        return mo.where_v2(zero, zeros_like(x), mo.truediv(x, safe_y))


def multiply_no_nan(x, y, name=None) -> Tensor:
    """x * y, and 0 wherever y == 0 (even where x is infinite or NaN)."""
    x, y = _pair(x, y)
    with x.graph.name_scope(name or "multiply_no_nan"):
        zero = mo.equal(y, zeros_like(y))
        safe_x = mo.where_v2(zero, zeros_like(x), x)
        return mo.where_v2(zero, zeros_like(x), mo.multiply(safe_x, y))


def reciprocal_no_nan(x, name=None) -> Tensor:
    """1 / x, and 0 wherever x == 0."""
    x = to_tensor(x, name="x")
    with x.graph.name_scope(name or "reciprocal_no_nan"):
        zero = mo.equal(x, zeros_like(x))
        safe = mo.where_v2(zero, ones_like(x), x)
        return mo.where_v2(zero, zeros_like(x), mo.reciprocal(safe))


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """mean((x - mean(x, axis))**2, axis): the population variance over `axis`."""
    x = to_tensor(input_tensor, name="input_tensor")
    with x.graph.name_scope(name or "reduce_variance"):
        mean = reduce_mean(x, axis=axis, keepdims=True)
        return reduce_mean(mo.square(mo.subtract(x, mean)), axis=axis, keepdims=keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """sqrt(reduce_variance(x, axis)): the population standard deviation over `axis`."""
    x = to_tensor(input_tensor, name="input_tensor")
    with x.graph.name_scope(name or "reduce_std"):
        return mo.sqrt(reduce_variance(x, axis=axis, keepdims=keepdims))


def polyval(coeffs, x, name=None) -> Tensor:
    """coeffs[0] * x**(n-1) + ... + coeffs[n-1], by Horner's rule (0 for no coefficients)."""
    x = to_tensor(x, name="x")
    with x.graph.name_scope(name or "polyval"):
        coeffs = [to_tensor(c, dtype=x.dtype) for c in coeffs]
        if not coeffs:
            return zeros_like(x)
        out = coeffs[0]
        for c in coeffs[1:]:
            out = mo.add(c, mo.multiply(out, x))
        return out


def scalar_mul(scalar, x, name=None) -> Tensor:
    """scalar * x for a scalar (a 0-d tensor or a number)."""
    x = to_tensor(x, name="x")
    scalar = to_tensor(scalar, dtype=x.dtype, name="scalar")
    if scalar.shape.ndims not in (None, 0):
        raise ValueError(f"scalar_mul: the scalar must be 0-d, got shape {scalar.shape}.")
    with x.graph.name_scope(name or "scalar_mul"):
        return mo.multiply(scalar, x)


def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None) -> Tensor:
    """The elementwise sum of `inputs` (as add_n; `shape` and `tensor_dtype` are checked)."""
    inputs = [to_tensor(t) for t in inputs]
    if not inputs:
        raise ValueError("accumulate_n: inputs must be a non-empty list of tensors.")
    for t in inputs:
        if tensor_dtype is not None and t.dtype is not _dtypes.as_dtype(tensor_dtype):
            raise TypeError(f"accumulate_n: {t.name} has dtype {t.dtype.name}, expected "
                            f"{_dtypes.as_dtype(tensor_dtype).name}.")
        if shape is not None and not t.shape.is_compatible_with(shape):
            raise ValueError(f"accumulate_n: {t.name} has shape {t.shape}, expected {shape}.")
    return mo.add_n(inputs, name=name or "AccumulateN")


def sequence_mask(lengths, maxlen=None, dtype=_dtypes.bool_, name=None) -> Tensor:
    """mask[..., j] = j < lengths[...], for j < maxlen (default: max(lengths))."""
    lengths = to_tensor(lengths, name="lengths")
    with lengths.graph.name_scope(name or "SequenceMask"):
        if maxlen is None:
            maxlen = reduce_max(lengths)
        maxlen = to_tensor(maxlen, name="maxlen")
        positions = mo.cast(range_(0, mo.cast(maxlen, _dtypes.int32)), lengths.dtype)
        mask = mo.less(positions, expand_dims(lengths, -1))
        dtype = _dtypes.as_dtype(dtype)
        return mask if dtype is _dtypes.bool_ else mo.cast(mask, dtype)


def _counts_into(ids, weights, size, dtype, name):
    weights = ones_like(ids, dtype=dtype) if weights is None else \
        mo.cast(to_tensor(weights, name="weights"), dtype)
    return unsorted_segment_sum(weights, ids, size, name=name)


def confusion_matrix(labels, predictions, num_classes=None, weights=None,
                     dtype=_dtypes.int32, name=None) -> Tensor:
    """[n, n] counts (or summed weights) of (label, prediction) pairs; n defaults to
    max(labels, predictions) + 1."""
    graph = graph_for((labels, predictions))
    with graph.as_default(), graph.name_scope(name or "confusion_matrix"):
        labels = mo.cast(to_tensor(labels, name="labels"), _dtypes.int64)
        predictions = mo.cast(to_tensor(predictions, name="predictions"), _dtypes.int64)
        if num_classes is None:
            num_classes = mo.add(mo.maximum(reduce_max(labels), reduce_max(predictions)), 1)
        n = mo.cast(to_tensor(num_classes, name="num_classes"), _dtypes.int64)
        flat = mo.add(mo.multiply(labels, n), predictions)
        counts = _counts_into(flat, weights, mo.multiply(n, n), _dtypes.as_dtype(dtype), None)
        side = mo.cast(n, _dtypes.int32)
        return reshape(counts, stack([side, side]))


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=_dtypes.int32,
             name=None) -> Tensor:
    """counts[v] = how often v occurs in the non-negative int `arr` (or the sum of its
    weights); length max(arr) + 1, at least `minlength`, values >= `maxlength` dropped."""
    arr = to_tensor(arr, name="arr")
    with arr.graph.name_scope(name or "bincount"):
        flat = reshape(mo.cast(arr, _dtypes.int32), [-1])
        size = mo.add(reduce_max(concat([flat, [-1]], 0)), 1)   # empty: 0
        if minlength is not None:
            size = mo.maximum(size, mo.cast(minlength, _dtypes.int32))
        if maxlength is not None:
            limit = mo.cast(maxlength, _dtypes.int32)
            size = mo.minimum(size, limit)
            flat = mo.where_v2(mo.less(flat, limit), flat, -ones_like(flat))   # dropped
        out_dtype = _dtypes.as_dtype(dtype) if weights is None else \
            to_tensor(weights).dtype
        if weights is not None:
            weights = reshape(to_tensor(weights, name="weights"), [-1])
        return _counts_into(flat, weights, size, out_dtype, None)


def _segment_count(data, ids, num):
    """How many rows each segment gets, at least 1, shaped to divide the segment sums."""
    rows = reshape(ones_like(ids, dtype=data.dtype), [-1])
    count = mo.maximum(unsorted_segment_sum(rows, reshape(ids, [-1]), num),
                       mo.cast(1, data.dtype))
    extra = (data.shape.ndims or 0) - (ids.shape.ndims or 0)
    for _ in range(max(extra, 0)):
        count = expand_dims(count, -1)
    return count


def segment_sum(data, segment_ids, name=None) -> Tensor:
    """Sums of data's rows by sorted `segment_ids`; max(ids) + 1 rows (empty ones 0)."""
    ids = to_tensor(segment_ids, name="segment_ids")
    with ids.graph.name_scope(name or "SegmentSum"):
        return unsorted_segment_sum(data, ids, mo.add(reduce_max(ids), 1))


def segment_mean(data, segment_ids, name=None) -> Tensor:
    """Means of data's rows by sorted `segment_ids`; max(ids) + 1 rows (empty ones 0)."""
    data, ids = to_tensor(data, name="data"), to_tensor(segment_ids, name="segment_ids")
    with ids.graph.name_scope(name or "SegmentMean"):
        return unsorted_segment_mean(data, ids, mo.add(reduce_max(ids), 1))


def unsorted_segment_mean(data, segment_ids, num_segments, name=None) -> Tensor:
    """The segment sums divided by each segment's row count (empty segments: 0)."""
    data, ids = to_tensor(data, name="data"), to_tensor(segment_ids, name="segment_ids")
    with ids.graph.name_scope(name or "UnsortedSegmentMean"):
        return mo.truediv(unsorted_segment_sum(data, ids, num_segments),
                          _segment_count(data, ids, num_segments))


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None) -> Tensor:
    """The segment sums divided by the square root of each segment's row count."""
    data, ids = to_tensor(data, name="data"), to_tensor(segment_ids, name="segment_ids")
    with ids.graph.name_scope(name or "UnsortedSegmentSqrtN"):
        return mo.truediv(unsorted_segment_sum(data, ids, num_segments),
                          mo.sqrt(_segment_count(data, ids, num_segments)))


def linspace(start, stop, num, name=None) -> Tensor:
    """`num` evenly spaced values from start to stop (both included): start + i * step,
    step = (stop - start) / (num - 1); [start] for num == 1."""
    graph = graph_for((start, stop, num))
    with graph.as_default(), graph.name_scope(name or "LinSpace"):
        start = to_tensor(start, name="start")
        stop = to_tensor(stop, dtype=start.dtype, name="stop")
        count = mo.cast(to_tensor(num, name="num"), _dtypes.int32)
        steps = mo.cast(mo.maximum(mo.subtract(count, 1), 1), start.dtype)
        step = mo.truediv(mo.subtract(stop, start), steps)
        return mo.add(start, mo.multiply(mo.cast(range_(0, count), start.dtype), step))


lin_space = linspace


def floor_div(x, y, name=None) -> Tensor:
    """x // y elementwise (TensorFlow's floor_div: floordiv)."""
    return mo.floordiv(x, y, name=name)


def realdiv(x, y, name=None) -> Tensor:
    """x / y for real numbers (TensorFlow's RealDiv: truediv of same-dtype floats)."""
    return mo.truediv(x, y, name=name)


def rint(x, name=None) -> Tensor:
    """The nearest integer, halves to even (the same as `round`)."""
    return mo.round(x, name=name)


# what the package root adds to its `tf.math` namespace
NAMESPACES = {"math": {f.__name__: f for f in (
    log_sigmoid, xlogy, xdivy, multiply_no_nan, reciprocal_no_nan, reduce_variance, reduce_std,
    polyval, scalar_mul, accumulate_n, confusion_matrix, bincount, segment_sum, segment_mean,
    unsorted_segment_mean, unsorted_segment_sqrt_n, rint)}}
