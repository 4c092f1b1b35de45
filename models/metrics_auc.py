"""`tf.metrics.auc`: the area under the ROC or precision-recall curve, streamed.

As TensorFlow 1.x computes it: `num_thresholds` thresholds spread evenly over [0, 1] (the
first just below 0, the last just above 1), four local accumulators of shape
[num_thresholds] (`true_positives`, `false_negatives`, `true_negatives`, `false_positives`,
created in that order) counting the (weighted) examples whose prediction is above each
threshold, and the curve's area summed over the thresholds by the trapezoidal rule (the
default), by its lower (`minoring`) or upper (`majoring`) steps, or for PR curves by
`careful_interpolation` (precision interpolated between thresholds, Davis & Goadrich).
"""

from __future__ import annotations

import enum

from .. import dtypes as _dtypes
from ..ops import api as ops
from ..ops.composite_ops import div_no_nan
from ..ops.variable_scope import variable_scope
from ..ops.variables import assign_add
from .metrics_common import F32, add_to, broadcast_weights, metric_variable, prepare

__all__ = ["auc", "Curve", "Summation", "confusion_at_thresholds"]

_KEPSILON = 1e-7    # the end thresholds sit this far outside [0, 1]
_EPSILON = 1.0e-6   # keeps the rates finite on empty classes


class Curve(str, enum.Enum):
    """Which curve `auc` integrates."""

    ROC = "ROC"
    PR = "PR"


class Summation(str, enum.Enum):
    """How `auc` sums the area between thresholds."""

    TRAPEZOIDAL = "trapezoidal"
    MINORING = "minoring"
    MAJORING = "majoring"
    CAREFUL_INTERPOLATION = "careful_interpolation"


def _thresholds(num_thresholds, thresholds) -> list:
    if thresholds is not None:
        inner = sorted(float(t) for t in thresholds)
    else:
        if int(num_thresholds) < 2:
            raise ValueError(f"auc: num_thresholds must be at least 2, got {num_thresholds}.")
        n = int(num_thresholds)
        inner = [(i + 1) * 1.0 / (n - 1) for i in range(n - 2)]
    return [0.0 - _KEPSILON] + inner + [1.0 + _KEPSILON]


def confusion_at_thresholds(labels, predictions, thresholds, weights=None):
    """({"tp", "fn", "tn", "fp"}: accumulator variables, same keys: their update ops) for
    predictions compared (strictly greater) with each threshold."""
    predictions, labels, weights = prepare(ops.cast(predictions, F32),
                                           ops.cast(labels, _dtypes.bool_), weights, "auc")
    n = len(thresholds)
    predictions_row = ops.reshape(predictions, [1, -1])
    labels_row = ops.reshape(labels, [1, -1])
    column = ops.constant([[t] for t in thresholds], dtype=F32)
    predicted_positive = ops.greater(predictions_row, column)       # [n, examples]
    predicted_negative = ops.logical_not(predicted_positive)
    label_positive = ops.tile(labels_row, [n, 1])
    label_negative = ops.logical_not(label_positive)
    row_weights = None
    if weights is not None:
        row_weights = ops.reshape(broadcast_weights(weights, predictions, "auc"), [1, -1])
    cases = (("tp", "true_positives", label_positive, predicted_positive),
             ("fn", "false_negatives", label_positive, predicted_negative),
             ("tn", "true_negatives", label_negative, predicted_negative),
             ("fp", "false_positives", label_negative, predicted_positive))
    values, updates = {}, {}
    for key, name, label_side, prediction_side in cases:
        accumulator = metric_variable([n], F32, name=name)
        hits = ops.cast(ops.logical_and(label_side, prediction_side), F32)
        if row_weights is not None:
            hits = ops.multiply(hits, row_weights)
        updates[key] = assign_add(accumulator, ops.reduce_sum(hits, 1))
        values[key] = accumulator
    return values, updates


def _interpolated_pr_auc(tp, fp, fn, n):
    """The PR area with precision interpolated linearly in true positives between
    thresholds (TensorFlow's careful_interpolation; named `interpolate_pr_auc` as there)."""
    dtp = tp[:n - 1] - tp[1:]
    p = tp + fp
    slope = div_no_nan(dtp, ops.maximum(p[:n - 1] - p[1:], 0.0))
    intercept = tp[1:] - ops.multiply(slope, p[1:])
    both_positive = ops.logical_and(ops.greater(p[:n - 1], 0.0), ops.greater(p[1:], 0.0))
    ratio = ops.where(both_positive, div_no_nan(p[:n - 1], ops.maximum(p[1:], 0.0)),
                      ops.ones_like(p[1:]))
    increment = div_no_nan(slope * (dtp + intercept * ops.log(ratio)),
                           ops.maximum(tp[1:] + fn[1:], 0.0))
    return ops.reduce_sum(increment, name="interpolate_pr_auc")


def _area(counts, n, curve, summation, name):
    tp, fn, tn, fp = counts["tp"], counts["fn"], counts["tn"], counts["fp"]
    if curve is Curve.PR and summation is Summation.CAREFUL_INTERPOLATION:
        return _interpolated_pr_auc(tp, fp, fn, n)
    recall = ops.truediv(tp + _EPSILON, tp + fn + _EPSILON)
    if curve is Curve.ROC:
        x, y = ops.truediv(fp, fp + tn + _EPSILON), recall
    else:
        x, y = recall, ops.truediv(tp + _EPSILON, tp + fp + _EPSILON)
    width = x[:n - 1] - x[1:]
    if summation is Summation.MINORING:
        height = ops.minimum(y[:n - 1], y[1:])
    elif summation is Summation.MAJORING:
        height = ops.maximum(y[:n - 1], y[1:])
    else:   # trapezoidal (careful_interpolation means trapezoidal for ROC)
        height = (y[:n - 1] + y[1:]) / 2.0
    return ops.reduce_sum(ops.multiply(width, height), name=name)


def auc(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None,
        updates_collections=None, curve="ROC", name=None, summation_method="trapezoidal",
        thresholds=None):
    """The area under the ROC (default) or PR curve of predictions in [0, 1] for bool
    labels, over every example seen."""
    try:
        curve = Curve(curve)
    except ValueError:
        raise ValueError(f"auc: curve must be 'ROC' or 'PR', got {curve!r}.") from None
    try:
        summation = Summation(summation_method)
    except ValueError:
        raise ValueError(f"auc: invalid summation_method {summation_method!r}; valid: "
                         f"{[s.value for s in Summation]}.") from None
    with variable_scope(name, "auc"):
        points = _thresholds(num_thresholds, thresholds)
        n = len(points)
        values, updates = confusion_at_thresholds(labels, predictions, points, weights)
        value = _area(values, n, curve, summation, "value")
        update_op = _area(updates, n, curve, summation, "update_op")
        add_to(metrics_collections, value)
        add_to(updates_collections, update_op)
        return value, update_op
