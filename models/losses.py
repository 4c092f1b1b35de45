"""`tf.losses`: TensorFlow 1.x's loss functions, their weighting and the loss collections.

Each loss computes per-element losses in float32, weighs them (`weights` a scalar or a
tensor broadcastable to the losses: rank 0, or the losses' rank with each dimension 1 or
equal) and reduces them by `reduction`; the result is added to the `LOSSES` collection
(`loss_collection`) so `get_total_loss()` finds it together with the layers' regularization
losses.  TensorFlow 1.x's default reduction is SUM_BY_NONZERO_WEIGHTS: the weighted sum
divided by the number of losses whose weight is not zero (0 when there are none).
"""

from __future__ import annotations

import enum

from .. import dtypes as _dtypes
from ..compiler.core.graph import GraphKeys, Tensor, get_default_graph
from ..ops import api as ops
from ..ops import loss_ops, nn_ops
from ..ops.composite_ops import div_no_nan

__all__ = ["Reduction", "compute_weighted_loss", "add_loss", "get_losses",
           "get_regularization_losses", "get_regularization_loss", "get_total_loss",
           "absolute_difference", "mean_squared_error", "huber_loss", "log_loss", "hinge_loss",
           "cosine_distance", "softmax_cross_entropy", "sparse_softmax_cross_entropy",
           "sigmoid_cross_entropy"]


class Reduction(str, enum.Enum):
    """How `compute_weighted_loss` reduces the weighted losses (TensorFlow's names and
    string values; the strings themselves are accepted too)."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"

    @classmethod
    def all(cls) -> tuple:
        """Every reduction (TensorFlow's `Reduction.all()`)."""
        return tuple(cls)

    @classmethod
    def validate(cls, key) -> "Reduction":
        """`key` as a Reduction; ValueError naming the valid ones otherwise."""
        try:
            return cls(key)
        except ValueError:
            raise ValueError(f"Invalid Reduction Key {key!r}; valid: "
                             f"{[r.value for r in cls]}.") from None


def _check_broadcastable(weights: Tensor, losses: Tensor) -> None:
    """TensorFlow's rule: weights of rank 0, or of the losses' rank with dims 1 or equal."""
    w, v = weights.shape, losses.shape
    if w.ndims is None or v.ndims is None or w.ndims == 0:
        return
    if w.ndims != v.ndims:
        raise ValueError(f"weights can not be broadcast to values: weights shape {w} (rank "
                         f"{w.ndims}), values shape {v} (rank {v.ndims}); the ranks must "
                         "match or weights must be a scalar.")
    for wd, vd in zip(w.as_list(), v.as_list()):
        if wd is not None and vd is not None and wd not in (1, vd):
            raise ValueError(f"weights can not be broadcast to values: weights shape {w}, "
                             f"values shape {v}.")


def _num_present(losses: Tensor, weights, scalar_weight) -> Tensor:
    """The number of losses whose (broadcast) weight is not zero, as float32."""
    if scalar_weight is not None and scalar_weight != 0.0:
        return ops.cast(ops.size(losses), _dtypes.float32)
    with get_default_graph().name_scope("num_present"):
        present = ops.where_v2(ops.equal(weights, 0.0), ops.zeros_like(weights),
                               ops.ones_like(weights))
        return ops.reduce_sum(present * ops.ones_like(losses))


def _safe_mean(total: Tensor, count: Tensor) -> Tensor:
    """total / count, 0 where count is 0; the tensor is named "value" as TensorFlow's."""
    return ops.identity(div_no_nan(total, count), name="value")


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """`losses * weights` reduced by `reduction`, cast back to the losses' dtype and added
    to `loss_collection`."""
    reduction = Reduction.validate(reduction)
    graph = get_default_graph()
    with graph.name_scope(scope if scope else "weighted_loss"):
        losses = ops.convert_to_tensor(losses)
        input_dtype = losses.dtype
        losses = ops.cast(losses, _dtypes.float32)
        scalar_weight = float(weights) if isinstance(weights, (int, float)) else None
        weights = ops.cast(ops.convert_to_tensor(weights), _dtypes.float32)
        _check_broadcastable(weights, losses)
        weighted = ops.multiply(losses, weights)
        if reduction is Reduction.NONE:
            loss = weighted
        else:
            loss = ops.reduce_sum(weighted)
            if reduction is Reduction.MEAN:
                loss = _safe_mean(loss, ops.reduce_sum(ops.ones_like(losses) * weights))
            elif reduction is Reduction.SUM_BY_NONZERO_WEIGHTS:
                loss = _safe_mean(loss, _num_present(losses, weights, scalar_weight))
            elif reduction is Reduction.SUM_OVER_BATCH_SIZE:
                loss = _safe_mean(loss, ops.cast(ops.size(losses), _dtypes.float32))
        if loss.dtype is not input_dtype:
            loss = ops.cast(loss, input_dtype)
        add_loss(loss, loss_collection)
        return loss


def _float_pair(labels, predictions, what: str):
    """(labels, predictions) as float32 with compatible static shapes."""
    predictions = ops.cast(ops.convert_to_tensor(predictions), _dtypes.float32)
    labels = ops.cast(ops.convert_to_tensor(labels), _dtypes.float32)
    if not predictions.shape.is_compatible_with(labels.shape):
        raise ValueError(f"{what}: labels shape {labels.shape} and predictions shape "
                         f"{predictions.shape} are incompatible.")
    return labels, predictions


def _elementwise_loss(default_name, compute):
    """The body shared by the losses over (labels, predictions) pairs."""

    def loss(labels, predictions, weights=1.0, scope=None,
             loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
             **options):
        if labels is None or predictions is None:
            raise ValueError(f"{default_name}: labels and predictions must not be None.")
        with get_default_graph().name_scope(scope or default_name) as opened:
            labels, predictions = _float_pair(labels, predictions, default_name)
            losses = compute(labels, predictions, **options)
            return compute_weighted_loss(losses, weights, opened, loss_collection, reduction)

    loss.__name__ = default_name
    return loss


def _absolute(labels, predictions):
    return ops.abs(ops.subtract(predictions, labels))


def _squared(labels, predictions):
    return ops.squared_difference(predictions, labels)


def _huber(labels, predictions, delta=1.0):
    error = ops.abs(ops.subtract(predictions, labels))
    quadratic = ops.minimum(error, delta)
    linear = ops.subtract(error, quadratic)
    return ops.add(ops.multiply(0.5, ops.multiply(quadratic, quadratic)),
                   ops.multiply(delta, linear))


def _log(labels, predictions, epsilon=1e-7):
    return ops.subtract(-ops.multiply(labels, ops.log(predictions + epsilon)),
                        ops.multiply(1.0 - labels, ops.log(1.0 - predictions + epsilon)))


def _hinge(labels, logits):
    ones = ops.ones_like(labels)
    signs = ops.subtract(2.0 * labels, ones)
    return nn_ops.relu(ops.subtract(ones, ops.multiply(signs, logits)))


_absolute_difference = _elementwise_loss("absolute_difference", _absolute)
_mean_squared_error = _elementwise_loss("mean_squared_error", _squared)
_huber_loss = _elementwise_loss("huber_loss", _huber)
_log_loss = _elementwise_loss("log_loss", _log)
_hinge_loss = _elementwise_loss("hinge_loss", _hinge)


def absolute_difference(labels, predictions, weights=1.0, scope=None,
                        loss_collection=GraphKeys.LOSSES,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """|predictions - labels|, weighted and reduced."""
    return _absolute_difference(labels, predictions, weights, scope, loss_collection, reduction)


def mean_squared_error(labels, predictions, weights=1.0, scope=None,
                       loss_collection=GraphKeys.LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """(predictions - labels)^2, weighted and reduced."""
    return _mean_squared_error(labels, predictions, weights, scope, loss_collection, reduction)


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None,
               loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """0.5 e^2 for |e| <= delta, else 0.5 delta^2 + delta (|e| - delta); e = pred - label."""
    return _huber_loss(labels, predictions, weights, scope, loss_collection, reduction,
                       delta=delta)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """-y log(p + eps) - (1 - y) log(1 - p + eps) for probabilities p, weighted and reduced."""
    return _log_loss(labels, predictions, weights, scope, loss_collection, reduction,
                     epsilon=epsilon)


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """max(0, 1 - (2y - 1) * logits) for 0/1 labels y, weighted and reduced."""
    return _hinge_loss(labels, logits, weights, scope, loss_collection, reduction)


def cosine_distance(labels, predictions, axis=None, weights=1.0, scope=None,
                    loss_collection=GraphKeys.LOSSES,
                    reduction=Reduction.SUM_BY_NONZERO_WEIGHTS, dim=None):
    """1 - sum(labels * predictions, axis) for unit-normalized inputs, weighted and reduced."""
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("cosine_distance: you must specify 'axis'.")
    with get_default_graph().name_scope(scope or "cosine_distance_loss") as opened:
        labels, predictions = _float_pair(labels, predictions, "cosine_distance")
        products = ops.multiply(predictions, labels)
        losses = 1.0 - ops.reduce_sum(products, axis=[axis], keepdims=True)
        return compute_weighted_loss(losses, weights, opened, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Softmax cross entropy of one-hot (or probability) labels; `label_smoothing` s mixes
    them with the uniform distribution: labels (1 - s) + s / num_classes."""
    if onehot_labels is None or logits is None:
        raise ValueError("softmax_cross_entropy: onehot_labels and logits must not be None.")
    with get_default_graph().name_scope(scope or "softmax_cross_entropy_loss") as opened:
        logits = ops.convert_to_tensor(logits)
        labels = ops.cast(onehot_labels, logits.dtype)
        if not logits.shape.is_compatible_with(labels.shape):
            raise ValueError(f"softmax_cross_entropy: onehot_labels shape {labels.shape} and "
                             f"logits shape {logits.shape} are incompatible.")
        if _positive(label_smoothing):
            classes = ops.cast(ops.shape(labels)[-1], logits.dtype)
            labels = labels * (1.0 - label_smoothing) + label_smoothing / classes
        labels = ops.stop_gradient(labels, name="labels_stop_gradient")
        losses = loss_ops.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits,
                                                               name="xentropy")
        return compute_weighted_loss(losses, weights, opened, loss_collection, reduction)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=GraphKeys.LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Softmax cross entropy of integer class labels ([batch] or [batch, 1])."""
    if labels is None or logits is None:
        raise ValueError("sparse_softmax_cross_entropy: labels and logits must not be None.")
    with get_default_graph().name_scope(scope or "sparse_softmax_cross_entropy_loss") as opened:
        labels, logits = ops.convert_to_tensor(labels), ops.convert_to_tensor(logits)
        lr, pr = labels.shape.ndims, logits.shape.ndims
        if lr is not None and pr is not None and lr == pr and labels.shape[-1].value == 1:
            labels = ops.squeeze(labels, [-1])
        weights = ops.convert_to_tensor(weights)
        lr = labels.shape.ndims
        if lr is not None and weights.shape.ndims == lr + 1:
            weights = ops.squeeze(weights, [-1])
        losses = loss_ops.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                   logits=logits,
                                                                   name="xentropy")
        return compute_weighted_loss(losses, weights, opened, loss_collection, reduction)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Sigmoid cross entropy of 0/1 labels; `label_smoothing` s moves them towards 1/2:
    labels (1 - s) + s / 2."""
    if multi_class_labels is None or logits is None:
        raise ValueError("sigmoid_cross_entropy: multi_class_labels and logits must not be "
                         "None.")
    with get_default_graph().name_scope(scope or "sigmoid_cross_entropy_loss") as opened:
        logits = ops.convert_to_tensor(logits)
        labels = ops.cast(multi_class_labels, logits.dtype)
        if not logits.shape.is_compatible_with(labels.shape):
            raise ValueError(f"sigmoid_cross_entropy: labels shape {labels.shape} and logits "
                             f"shape {logits.shape} are incompatible.")
        if _positive(label_smoothing):
            labels = labels * (1.0 - label_smoothing) + 0.5 * label_smoothing
        losses = loss_ops.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits,
                                                            name="xentropy")
        return compute_weighted_loss(losses, weights, opened, loss_collection, reduction)


def _positive(smoothing) -> bool:
    return isinstance(smoothing, Tensor) or float(smoothing) > 0


# --- the loss collections -------------------------------------------------------------------

def add_loss(loss, loss_collection=GraphKeys.LOSSES) -> None:
    """Add `loss` to the collection `loss_collection` (nothing when it is None or empty)."""
    if loss_collection:
        get_default_graph().add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=GraphKeys.LOSSES) -> list:
    """The losses in `loss_collection` (those whose names match `scope`, if given)."""
    return get_default_graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope=None) -> list:
    """The tensors in REGULARIZATION_LOSSES (those whose names match `scope`, if given)."""
    return get_default_graph().get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss") -> Tensor:
    """The sum of the regularization losses, or a float32 0 when there are none."""
    losses = get_regularization_losses(scope)
    if losses:
        return ops.add_n(losses, name=name)
    return ops.constant(0.0)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None) -> Tensor:
    """The sum of the LOSSES collection, plus the regularization losses by default."""
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope=scope)
    if not losses:
        raise ValueError("get_total_loss: no losses found (the LOSSES collection is empty"
                         + (" and so is REGULARIZATION_LOSSES" if add_regularization_losses
                            else "") + ").")
    return ops.add_n(losses, name=name)
