"""`tf.metrics`: streaming metrics as TensorFlow 1.x builds them.

Every metric returns `(value, update_op)`.  Its accumulators are *local* variables (in the
`LOCAL_VARIABLES` and `METRIC_VARIABLES` collections, not trainable, initialized to zeros by
`tf.local_variables_initializer()`) named as TensorFlow names them (`accuracy/total:0`,
`accuracy/count:0`, `auc/true_positives:0`, ...).  Running `update_op` adds a batch to the
accumulators and returns the metric over everything seen so far; `value` reads the metric
without changing anything; running the local-variables initializer again resets it.

Weights scale each example's contribution (rank 0, or broadcastable to the values; a
trailing size-1 dimension too many or too few is squeezed or added as TensorFlow does).
"""

from __future__ import annotations

from .. import dtypes as _dtypes
from ..ops import api as ops
from ..ops.variable_scope import variable_scope
from ..ops.variables import assign_add
from .metrics_auc import auc
from .metrics_common import F32 as _F32
from .metrics_common import add_to as _add_to
from .metrics_common import broadcast_weights as _broadcast_weights
from .metrics_common import metric_variable
from .metrics_common import prepare as _prepare
from .metrics_common import safe_div as _safe_div

__all__ = ["mean", "accuracy", "mean_squared_error", "root_mean_squared_error",
           "mean_absolute_error", "true_positives", "false_positives", "true_negatives",
           "false_negatives", "precision", "recall", "auc", "metric_variable"]

def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The (weighted) mean of every value seen: accumulators `total` and `count`."""
    with variable_scope(name, "mean"):
        values = ops.cast(values, _F32)
        total = metric_variable([], _F32, name="total")
        count = metric_variable([], _F32, name="count")
        if weights is None:
            num_values = ops.cast(ops.size(values), _F32)
        else:
            values, _, weights = _prepare(values, None, weights, "mean")
            weights = _broadcast_weights(weights, values, "mean")
            values = ops.multiply(values, weights)
            num_values = ops.reduce_sum(weights)
        update_total = assign_add(total, ops.reduce_sum(values))
        update_count = assign_add(count, num_values)
        value = _safe_div(total, ops.maximum(count, 0.0), "value")
        update_op = _safe_div(update_total, ops.maximum(update_count, 0.0), "update_op")
        _add_to(metrics_collections, value)
        _add_to(updates_collections, update_op)
        return value, update_op


def accuracy(labels, predictions, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """The fraction of predictions equal to the labels (weighted)."""
    predictions, labels, weights = _prepare(predictions, labels, weights, "accuracy")
    if labels.dtype is not predictions.dtype:
        predictions = ops.cast(predictions, labels.dtype)
    is_correct = ops.cast(ops.equal(predictions, labels), _F32)
    return mean(is_correct, weights, metrics_collections, updates_collections,
                name or "accuracy")


def _error_mean(kind: str, error):
    def metric(labels, predictions, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        predictions, labels, weights = _prepare(predictions, labels, weights, kind)
        if labels.dtype is not predictions.dtype:
            labels = ops.cast(labels, predictions.dtype)
        return mean(error(labels, predictions), weights, metrics_collections,
                    updates_collections, name or kind)

    return metric


_mse = _error_mean("mean_squared_error", ops.squared_difference)
_mae = _error_mean("mean_absolute_error", lambda y, p: ops.abs(p - y))


def mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                       updates_collections=None, name=None):
    """The (weighted) mean of (labels - predictions)^2."""
    return _mse(labels, predictions, weights, metrics_collections, updates_collections, name)


def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    """The (weighted) mean of |predictions - labels|."""
    return _mae(labels, predictions, weights, metrics_collections, updates_collections, name)


def root_mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                            updates_collections=None, name=None):
    """The square root of mean_squared_error."""
    value, update = _mse(labels, predictions, weights, None, None,
                         name or "root_mean_squared_error")
    value, update = ops.sqrt(value), ops.sqrt(update)
    _add_to(metrics_collections, value)
    _add_to(updates_collections, update)
    return value, update


def _count(kind: str, label_value: bool, prediction_value: bool):
    """A metric counting the (weighted) examples with the given label and prediction."""

    def metric(labels, predictions, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with variable_scope(name, kind):
            predictions, labels, weights = _prepare(ops.cast(predictions, _dtypes.bool_),
                                                    ops.cast(labels, _dtypes.bool_),
                                                    weights, kind)
            is_label = labels if label_value else ops.logical_not(labels)
            is_prediction = predictions if prediction_value else ops.logical_not(predictions)
            values = ops.cast(ops.logical_and(is_label, is_prediction), _F32)
            count = metric_variable([], _F32, name="count")
            if weights is not None:
                weights = _broadcast_weights(weights, values, kind)
                values = ops.multiply(values, weights)
            value = ops.identity(count)
            update_op = assign_add(count, ops.reduce_sum(values))
            _add_to(metrics_collections, value)
            _add_to(updates_collections, update_op)
            return value, update_op

    metric.__name__ = kind
    return metric


_true_positives = _count("true_positives", True, True)
_false_positives = _count("false_positives", False, True)
_true_negatives = _count("true_negatives", False, False)
_false_negatives = _count("false_negatives", True, False)


def true_positives(labels, predictions, weights=None, metrics_collections=None,
                   updates_collections=None, name=None):
    """The (weighted) number of examples with a true label and a true prediction."""
    return _true_positives(labels, predictions, weights, metrics_collections,
                           updates_collections, name)


def false_positives(labels, predictions, weights=None, metrics_collections=None,
                    updates_collections=None, name=None):
    """The (weighted) number of examples with a false label and a true prediction."""
    return _false_positives(labels, predictions, weights, metrics_collections,
                            updates_collections, name)


def true_negatives(labels, predictions, weights=None, metrics_collections=None,
                   updates_collections=None, name=None):
    """The (weighted) number of examples with a false label and a false prediction."""
    return _true_negatives(labels, predictions, weights, metrics_collections,
                           updates_collections, name)


def false_negatives(labels, predictions, weights=None, metrics_collections=None,
                    updates_collections=None, name=None):
    """The (weighted) number of examples with a true label and a false prediction."""
    return _false_negatives(labels, predictions, weights, metrics_collections,
                            updates_collections, name)


def _ratio_metric(kind: str, other):
    """precision (tp / (tp + fp)) or recall (tp / (tp + fn)); 0 while the sum is 0."""

    def metric(labels, predictions, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with variable_scope(name, kind):
            predictions, labels, weights = _prepare(ops.cast(predictions, _dtypes.bool_),
                                                    ops.cast(labels, _dtypes.bool_),
                                                    weights, kind)
            tp, tp_update = _true_positives(labels, predictions, weights)
            wrong, wrong_update = other(labels, predictions, weights)

            def ratio(hits, misses, name):
                total = hits + misses
                return ops.where(ops.greater(total, 0.0), ops.truediv(hits, total),
                                 ops.zeros_like(total), name=name)

            value = ratio(tp, wrong, "value")
            update_op = ratio(tp_update, wrong_update, "update_op")
            _add_to(metrics_collections, value)
            _add_to(updates_collections, update_op)
            return value, update_op

    return metric


_precision = _ratio_metric("precision", _false_positives)
_recall = _ratio_metric("recall", _false_negatives)


def precision(labels, predictions, weights=None, metrics_collections=None,
              updates_collections=None, name=None):
    """true_positives / (true_positives + false_positives) of bool-cast predictions."""
    return _precision(labels, predictions, weights, metrics_collections, updates_collections,
                      name)


def recall(labels, predictions, weights=None, metrics_collections=None,
           updates_collections=None, name=None):
    """true_positives / (true_positives + false_negatives) of bool-cast predictions."""
    return _recall(labels, predictions, weights, metrics_collections, updates_collections,
                   name)
