"""`tf.keras.losses`: Keras' losses as functions (one value per example) and classes.

A loss function `fn(y_true, y_pred)` returns one value per example (the last axis reduced);
a model's loss is their mean over the batch (Keras' "sum over batch size").  The cross
entropies take probabilities unless `from_logits=True`; given probabilities that a Softmax
(or, for binary cross entropy, a Sigmoid) op made, they use that op's input as logits, as
Keras does: the same value, without the clipping of log(0).
`get(identifier)` turns a name ("mse", "categorical_crossentropy", ...), a class instance or
a callable into a `Loss`; an unknown name is a ValueError listing the known ones.
"""

from __future__ import annotations

from .. import nn
from ..ops import api as ops
from . import backend

__all__ = ["mean_squared_error", "mean_absolute_error", "categorical_crossentropy",
           "sparse_categorical_crossentropy", "binary_crossentropy", "Loss",
           "MeanSquaredError", "MeanAbsoluteError", "CategoricalCrossentropy",
           "SparseCategoricalCrossentropy", "BinaryCrossentropy", "get"]


def mean_squared_error(y_true, y_pred):
    """mean((y_pred - y_true)^2) over the last axis."""
    return ops.reduce_mean(ops.square(y_pred - ops.cast(y_true, y_pred.dtype)), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """mean(|y_pred - y_true|) over the last axis."""
    return ops.reduce_mean(ops.abs(y_pred - ops.cast(y_true, y_pred.dtype)), axis=-1)


def _logits_of(y_pred):
    """The input of the Softmax or Sigmoid op that made `y_pred`, or None."""
    op = getattr(y_pred, "op", None)
    return op.inputs[0] if op is not None and op.type in ("Softmax", "Sigmoid") else None


def _clipped(y_pred):
    eps = backend.epsilon()
    return ops.clip_by_value(y_pred, eps, 1.0 - eps)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0):
    """-sum(y_true * log(y_pred)) over the last axis; y_true is one-hot (or a distribution)."""
    y_true = ops.cast(y_true, y_pred.dtype)
    if label_smoothing:
        classes = ops.cast(ops.shape(y_pred)[-1], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / classes
    logits = y_pred if from_logits else _logits_of(y_pred)
    if logits is not None:
        return nn.softmax_cross_entropy_with_logits_v2(labels=ops.stop_gradient(y_true),
                                                       logits=logits)
    probs = y_pred / ops.reduce_sum(y_pred, axis=-1, keepdims=True)
    return -ops.reduce_sum(y_true * ops.log(_clipped(probs)), axis=-1)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False):
    """-log(y_pred[y_true]) per example; y_true holds class indices ([batch] or [batch, 1])."""
    labels = y_true
    if labels.shape.rank is not None and labels.shape.rank == y_pred.shape.rank:
        labels = ops.squeeze(labels, axis=[-1])
    if not labels.dtype.is_integer:
        labels = ops.cast(labels, "int32")
    logits = y_pred if from_logits else _logits_of(y_pred)
    if logits is None:
        logits = ops.log(_clipped(y_pred))
    return nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


def binary_crossentropy(y_true, y_pred, from_logits=False):
    """The mean over the last axis of -(y log p + (1 - y) log(1 - p))."""
    y_true = ops.cast(y_true, y_pred.dtype)
    logits = y_pred if from_logits else _logits_of(y_pred)
    if logits is not None:
        per_element = nn.sigmoid_cross_entropy_with_logits(labels=y_true, logits=logits)
    else:
        p, eps = _clipped(y_pred), backend.epsilon()
        per_element = -(y_true * ops.log(p + eps) + (1.0 - y_true) * ops.log(1.0 - p + eps))
    return ops.reduce_mean(per_element, axis=-1)


class Loss:
    """A loss: `per_example(y_true, y_pred)` gives one value per example, and calling it
    gives their mean (a scalar)."""

    def __init__(self, fn=None, name=None, **kwargs):
        self.fn, self.kwargs = fn, kwargs
        self.name = name or getattr(fn, "__name__", type(self).__name__)

    def per_example(self, y_true, y_pred):
        """The loss of each example of the batch."""
        return self.fn(y_true, y_pred, **self.kwargs)

    def __call__(self, y_true, y_pred, sample_weight=None):
        values = self.per_example(y_true, y_pred)
        if sample_weight is not None:
            values = values * ops.cast(sample_weight, values.dtype)
        return ops.reduce_mean(values)

    def __repr__(self):
        return f"<keras loss {self.name} {self.kwargs or ''}>"


class MeanSquaredError(Loss):
    """The mean squared error."""

    def __init__(self, name="mean_squared_error"):
        super().__init__(mean_squared_error, name)


class MeanAbsoluteError(Loss):
    """The mean absolute error."""

    def __init__(self, name="mean_absolute_error"):
        super().__init__(mean_absolute_error, name)


class CategoricalCrossentropy(Loss):
    """Cross entropy with one-hot labels."""

    def __init__(self, from_logits=False, label_smoothing=0.0,
                 name="categorical_crossentropy"):
        super().__init__(categorical_crossentropy, name, from_logits=from_logits,
                         label_smoothing=label_smoothing)


class SparseCategoricalCrossentropy(Loss):
    """Cross entropy with integer class labels."""

    def __init__(self, from_logits=False, name="sparse_categorical_crossentropy"):
        super().__init__(sparse_categorical_crossentropy, name, from_logits=from_logits)


class BinaryCrossentropy(Loss):
    """Cross entropy of independent 0/1 labels."""

    def __init__(self, from_logits=False, name="binary_crossentropy"):
        super().__init__(binary_crossentropy, name, from_logits=from_logits)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error

_BY_NAME = {
    "mean_squared_error": mean_squared_error, "mse": mean_squared_error,
    "MSE": mean_squared_error, "mean_absolute_error": mean_absolute_error,
    "mae": mean_absolute_error, "MAE": mean_absolute_error,
    "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "binary_crossentropy": binary_crossentropy,
}


def get(identifier) -> Loss:
    """A `Loss` from a name, a Loss instance or a function `(y_true, y_pred) -> values`."""
    if isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"Unknown loss function: {identifier!r}. Known losses: "
                             f"{', '.join(sorted(_BY_NAME))}, or a keras.losses object or a "
                             "function (y_true, y_pred) -> per-example loss.")
        fn = _BY_NAME[identifier]
        return Loss(fn, name=fn.__name__)
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if callable(identifier):
        return Loss(identifier)
    raise TypeError(f"Could not interpret loss identifier: {identifier!r}.")


def kind(loss: Loss):
    """"sparse", "categorical" or "binary" for the cross entropies, else None (a sparse
    loss takes labels without the class axis)."""
    return {sparse_categorical_crossentropy: "sparse", categorical_crossentropy: "categorical",
            binary_crossentropy: "binary"}.get(loss.fn)
