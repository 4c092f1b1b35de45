"""`tf.losses` (models/losses.py): each loss against a NumPy reference written from
TensorFlow 1.x's definition, every reduction and weight shape, the LOSSES and
REGULARIZATION_LOSSES collections and get_total_loss, and a TensorFlow-recorded table of
losses (fixtures/layers_cases.py, `losses_table`)."""

import numpy as np
import pytest

import flowjit as tf
from layers_recorded import check_program

RNG = np.random.default_rng(1)
R = tf.losses.Reduction
LABELS = RNG.random((5, 3)).astype(np.float32)
PREDICTIONS = RNG.random((5, 3)).astype(np.float32)
LOGITS = (RNG.normal(size=(5, 3)) * 2).astype(np.float32)
BINARY = (RNG.random((5, 3)) > 0.5).astype(np.float32)
CLASSES = np.array([2, 0, 1, 1, 2])


def _reduce(losses, weights, reduction):
    """TensorFlow 1.x's compute_weighted_loss, in NumPy."""
    weights = np.broadcast_to(np.asarray(weights, np.float64), losses.shape)
    weighted = losses * weights
    if reduction == R.NONE:
        return weighted
    total = weighted.sum()
    count = {R.SUM: 1.0, R.MEAN: weights.sum(), R.SUM_OVER_BATCH_SIZE: losses.size,
             R.SUM_BY_NONZERO_WEIGHTS: np.count_nonzero(weights)}[reduction]
    return total / count if count else 0.0


def _run(tensors):
    with tf.Session() as sess:
        return sess.run(tensors)


def test_losses_table_matches_tensorflow(compiled_calls):
    check_program("losses_table", compiled_calls)


@pytest.mark.parametrize("reduction", list(R.all()))
@pytest.mark.parametrize("weights", [1.0, 0.0, np.array([[1.0], [0.0], [2.0], [0.5], [0.0]]),
                                     np.array([[1.0, 0.0, 3.0]]),
                                     RNG.random((5, 3)) * (RNG.random((5, 3)) > 0.4)])
def test_elementwise_losses_reduce_as_compute_weighted_loss(reduction, weights):
    weights = np.asarray(weights, np.float32) if not isinstance(weights, float) else weights
    error = PREDICTIONS - LABELS
    quadratic = np.minimum(np.abs(error), 0.4)
    cases = {
        tf.losses.mean_squared_error: (error ** 2, {}),
        tf.losses.absolute_difference: (np.abs(error), {}),
        tf.losses.huber_loss: (0.5 * quadratic ** 2 + 0.4 * (np.abs(error) - quadratic),
                               {"delta": 0.4}),
        tf.losses.log_loss: (-BINARY * np.log(PREDICTIONS + 1e-7)
                             - (1 - BINARY) * np.log(1 - PREDICTIONS + 1e-7), {}),
    }
    got, want = [], []
    for fn, (per_element, options) in cases.items():
        labels = BINARY if fn is tf.losses.log_loss else LABELS
        got.append(fn(labels, PREDICTIONS, weights, reduction=reduction, **options))
        want.append(_reduce(per_element.astype(np.float64), weights, reduction))
    for g, w in zip(_run(got), want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)
    assert len(tf.get_collection(tf.GraphKeys.LOSSES)) == len(cases)


def _softmax_xent(labels, logits):
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -(labels * log_probs).sum(axis=1)


def test_cross_entropies_with_label_smoothing_and_weights():
    onehot = np.eye(3, dtype=np.float32)[CLASSES]
    row_weights = np.array([1.0, 2.0, 0.0, 1.0, 0.5], np.float32)
    smoothed = onehot * 0.8 + 0.2 / 3
    sigmoid_labels = BINARY * 0.7 + 0.15
    sigmoid = (np.maximum(LOGITS, 0) - LOGITS * sigmoid_labels
               + np.log1p(np.exp(-np.abs(LOGITS))))
    got = _run([
        tf.losses.softmax_cross_entropy(onehot, LOGITS),
        tf.losses.softmax_cross_entropy(onehot, LOGITS, row_weights, label_smoothing=0.2),
        tf.losses.sparse_softmax_cross_entropy(CLASSES, LOGITS, reduction=R.NONE),
        tf.losses.sparse_softmax_cross_entropy(CLASSES[:, None], LOGITS, row_weights[:, None]),
        tf.losses.sigmoid_cross_entropy(BINARY, LOGITS, label_smoothing=0.3,
                                        reduction=R.SUM),
        tf.losses.hinge_loss(BINARY, LOGITS, reduction=R.MEAN)])
    per_row = _softmax_xent(onehot, LOGITS)
    np.testing.assert_allclose(got[0], per_row.mean(), rtol=2e-5)
    np.testing.assert_allclose(got[1], _reduce(_softmax_xent(smoothed, LOGITS), row_weights,
                                               R.SUM_BY_NONZERO_WEIGHTS), rtol=2e-5)
    np.testing.assert_allclose(got[2], per_row, rtol=2e-5)
    np.testing.assert_allclose(got[3], _reduce(per_row, row_weights,
                                               R.SUM_BY_NONZERO_WEIGHTS), rtol=2e-5)
    np.testing.assert_allclose(got[4], sigmoid.sum(), rtol=2e-5)
    np.testing.assert_allclose(got[5], np.maximum(0, 1 - (2 * BINARY - 1) * LOGITS).mean(),
                               rtol=2e-5)


def test_losses_are_float32_named_value_and_collected():
    loss = tf.losses.mean_squared_error(tf.constant(LABELS, tf.float64),
                                        tf.constant(PREDICTIONS, tf.float64))
    assert loss.dtype is tf.float32 and loss.name == "mean_squared_error/value:0"
    summed = tf.losses.absolute_difference(LABELS, PREDICTIONS, reduction=R.SUM,
                                           loss_collection="mine")
    assert tf.losses.get_losses() == [loss]
    assert tf.losses.get_losses(loss_collection="mine") == [summed]
    assert tf.losses.get_losses(scope="absolute") == []
    uncollected = tf.losses.huber_loss(LABELS, PREDICTIONS, loss_collection=None)
    assert uncollected not in tf.losses.get_losses()


def test_labels_get_no_gradient_through_softmax_cross_entropy():
    labels = tf.constant(np.eye(3, dtype=np.float32)[CLASSES])
    logits = tf.constant(LOGITS)
    loss = tf.losses.softmax_cross_entropy(labels, logits, label_smoothing=0.1)
    grad_labels, grad_logits = tf.gradients(loss, [labels, logits])
    assert grad_labels is None
    smoothed = np.eye(3)[CLASSES] * 0.9 + 0.1 / 3
    probs = np.exp(LOGITS - LOGITS.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    np.testing.assert_allclose(_run(grad_logits), (probs - smoothed) / 5, rtol=1e-4,
                               atol=1e-6)


def test_total_loss_adds_regularization_losses():
    a = tf.losses.mean_squared_error(LABELS, PREDICTIONS)
    b = tf.losses.absolute_difference(LABELS, PREDICTIONS)
    tf.add_to_collection(tf.GraphKeys.REGULARIZATION_LOSSES, tf.constant(0.25))
    tf.add_to_collection(tf.GraphKeys.REGULARIZATION_LOSSES, tf.constant(0.5))
    got = _run([a, b, tf.losses.get_total_loss(), tf.losses.get_total_loss(False),
                tf.losses.get_regularization_loss()])
    np.testing.assert_allclose(got[2], got[0] + got[1] + 0.75, rtol=1e-6)
    np.testing.assert_allclose(got[3], got[0] + got[1], rtol=1e-6)
    assert got[4] == 0.75
    assert tf.losses.get_total_loss().name.startswith("total_loss")


def test_empty_collections():
    assert _run(tf.losses.get_regularization_loss()) == 0.0
    with pytest.raises(ValueError, match="no losses found"):
        tf.losses.get_total_loss()


def test_reduction_names_and_bad_arguments():
    assert R.SUM_BY_NONZERO_WEIGHTS == "weighted_sum_by_nonzero_weights"
    assert R.SUM_OVER_NONZERO_WEIGHTS is R.SUM_BY_NONZERO_WEIGHTS
    assert R.validate("weighted_mean") is R.MEAN and len(R.all()) == 5
    with pytest.raises(ValueError, match="Invalid Reduction Key"):
        tf.losses.mean_squared_error(LABELS, PREDICTIONS, reduction="average")
    with pytest.raises(ValueError, match="incompatible"):
        tf.losses.mean_squared_error(LABELS, PREDICTIONS[:, :2])
    with pytest.raises(ValueError, match="can not be broadcast"):
        tf.losses.mean_squared_error(LABELS, PREDICTIONS, weights=np.ones((5, 2)))
    with pytest.raises(ValueError, match="can not be broadcast"):
        tf.losses.mean_squared_error(LABELS, PREDICTIONS, weights=np.ones(3))
    with pytest.raises(ValueError, match="must not be None"):
        tf.losses.softmax_cross_entropy(None, LOGITS)
    with pytest.raises(ValueError, match="specify 'axis'"):
        tf.losses.cosine_distance(LABELS, PREDICTIONS)
