"""What the streaming metrics share: their local variables, the squeezing and checking of
labels, predictions and weights as TensorFlow 1.x does it, and weight broadcasting."""

from __future__ import annotations

from .. import dtypes as _dtypes
from ..compiler.core.graph import GraphKeys, Tensor, get_default_graph
from ..ops import api as ops
from ..ops.composite_ops import div_no_nan
from ..ops.variables import Variable

F32 = _dtypes.float32


def metric_variable(shape, dtype, validate_shape=True, name=None) -> Variable:
    """A zero-initialized local variable in LOCAL_VARIABLES and METRIC_VARIABLES."""
    dtype = _dtypes.as_dtype(dtype)
    return Variable(lambda: ops.zeros(shape, dtype), trainable=False,
                    collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES],
                    validate_shape=validate_shape, name=name)


def _squeeze_pair(labels, predictions):
    """Drop a trailing size-1 dimension that makes the ranks of the two differ by one."""
    lr, pr = labels.shape.ndims, predictions.shape.ndims
    if lr is None or pr is None:
        return labels, predictions
    if pr == lr + 1 and predictions.shape[-1].is_compatible_with(1):
        predictions = ops.squeeze(predictions, [-1])
    elif lr == pr + 1 and labels.shape[-1].is_compatible_with(1):
        labels = ops.squeeze(labels, [-1])
    return labels, predictions


def prepare(predictions, labels, weights, what: str):
    """(predictions, labels, weights) with squeezable dimensions removed, shapes checked."""
    predictions = ops.convert_to_tensor(predictions)
    if labels is not None:
        labels, predictions = _squeeze_pair(ops.convert_to_tensor(labels), predictions)
        if not predictions.shape.is_compatible_with(labels.shape):
            raise ValueError(f"{what}: labels shape {labels.shape} and predictions shape "
                             f"{predictions.shape} are incompatible.")
    if weights is None:
        return predictions, labels, None
    weights = ops.convert_to_tensor(weights)
    wr, pr = weights.shape.ndims, predictions.shape.ndims
    if wr not in (None, 0) and pr is not None:
        if wr - pr == 1:
            weights = ops.squeeze(weights, [-1])
        elif pr - wr == 1:
            weights = ops.expand_dims(weights, -1)
    return predictions, labels, weights


def broadcast_weights(weights: Tensor, values: Tensor, what: str) -> Tensor:
    """float32 weights broadcast to the shape of `values` (TensorFlow's rule: rank 0, or the
    same rank with each dimension 1 or equal)."""
    weights = ops.cast(weights, F32)
    w, v = weights.shape, values.shape
    if w.ndims not in (None, 0) and v.ndims is not None:
        fits = w.ndims == v.ndims and all(
            a is None or b is None or a in (1, b) for a, b in zip(w.as_list(), v.as_list()))
        if not fits:
            raise ValueError(f"{what}: weights shape {w} can not be broadcast to values "
                             f"shape {v}.")
    if w.is_fully_defined() and v.is_fully_defined() and w == v:
        return weights
    return ops.multiply(weights, ops.ones_like(values, dtype=F32))


def add_to(collections, value) -> None:
    """Add `value` to each of the named collections (metrics_/updates_collections)."""
    if collections:
        get_default_graph().add_to_collections(list(collections), value)


def safe_div(numerator, denominator, name):
    """numerator / denominator, 0 where the denominator is 0, named `name`."""
    return ops.identity(div_no_nan(numerator, denominator), name=name)
