"""`tf.keras.metrics`' per-example metric functions and how `compile(metrics=...)` names
resolve to them.

A metric function `fn(y_true, y_pred)` returns one value per example; `fit` and `evaluate`
report their mean over the epoch (each batch weighted by its size).  `resolve(name,
output_shape, label_shape)` applies Keras 2's rule for "accuracy"/"acc" (tf_keras'
compile_utils; older Keras looked at the loss instead), which looks at the shapes: binary
accuracy for one output unit, sparse categorical accuracy for labels of lower rank than the
outputs (or a last dimension of 1 against several outputs), else categorical accuracy.
"""

from __future__ import annotations

from ..ops import api as ops
from . import losses as _losses

__all__ = ["binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy",
           "mean_squared_error", "mean_absolute_error", "resolve"]

mean_squared_error = mse = _losses.mean_squared_error
mean_absolute_error = mae = _losses.mean_absolute_error


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """The share of outputs on the label's side of `threshold`, per example."""
    predicted = ops.cast(ops.greater(y_pred, threshold), y_pred.dtype)
    hits = ops.cast(ops.equal(ops.cast(y_true, y_pred.dtype), predicted), y_pred.dtype)
    return ops.reduce_mean(hits, axis=-1)


def categorical_accuracy(y_true, y_pred):
    """1 where the largest output is the one-hot label's class, else 0."""
    hits = ops.equal(ops.argmax(y_true, axis=-1), ops.argmax(y_pred, axis=-1))
    return ops.cast(hits, y_pred.dtype)


def sparse_categorical_accuracy(y_true, y_pred):
    """1 where the largest output is at the integer label, else 0."""
    labels = y_true
    if labels.shape.rank is not None and labels.shape.rank == y_pred.shape.rank:
        labels = ops.squeeze(labels, axis=[-1])
    predicted = ops.argmax(y_pred, axis=-1)
    hits = ops.equal(ops.cast(labels, predicted.dtype), predicted)
    return ops.cast(hits, y_pred.dtype)


_BY_NAME = {
    "binary_accuracy": binary_accuracy, "categorical_accuracy": categorical_accuracy,
    "sparse_categorical_accuracy": sparse_categorical_accuracy,
    "mean_squared_error": mean_squared_error, "mse": mean_squared_error,
    "mean_absolute_error": mean_absolute_error, "mae": mean_absolute_error,
}


def resolve(identifier, output_shape, label_shape):
    """(name, per-example function) of one entry of `compile(metrics=[...])`, for outputs
    and labels of these static shapes (TensorShapes, batch first; unknown shapes pick
    categorical accuracy).  Unknown names are a ValueError."""
    if isinstance(identifier, str):
        if identifier in ("accuracy", "acc"):
            return identifier, _accuracy_for(output_shape, label_shape)
        if identifier not in _BY_NAME:
            raise ValueError(f"Unknown metric function: {identifier!r}. Known metrics: "
                             f"accuracy, acc, {', '.join(sorted(_BY_NAME))}, or a function "
                             "(y_true, y_pred) -> per-example values.")
        return identifier, _BY_NAME[identifier]
    if isinstance(identifier, _losses.Loss):
        return identifier.name, identifier.per_example
    if callable(identifier):
        return getattr(identifier, "__name__", "metric"), identifier
    raise TypeError(f"Could not interpret metric identifier: {identifier!r}.")


def _accuracy_for(output_shape, label_shape):
    if output_shape.rank is None or label_shape.rank is None:
        return categorical_accuracy
    out, labels = output_shape.as_list(), label_shape.as_list()
    if out[-1] == 1:
        return binary_accuracy
    if len(labels) < len(out) or (labels[-1] == 1 and out[-1] != 1):
        return sparse_categorical_accuracy
    return categorical_accuracy
