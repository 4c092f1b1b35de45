"""`tf.metrics` (models/metrics*.py): local accumulators named as TensorFlow names them,
values against NumPy references written from TensorFlow 1.x's definitions, accumulation
across update_op runs, reset by the local-variables initializer, weights, and
TensorFlow-recorded programs (fixtures/layers_cases.py)."""

import numpy as np
import pytest

import flowjit as tf
from layers_recorded import check_program

RNG = np.random.default_rng(2)
BATCHES = [((RNG.random(n) > 0.4).astype(np.float32), RNG.random(n).astype(np.float32),
            (RNG.random(n) * (RNG.random(n) > 0.2)).astype(np.float32)) for n in (6, 9, 4)]


@pytest.mark.parametrize("name", ["metrics_streaming", "metrics_shapes"])
def test_program_matches_tensorflow(name, compiled_calls):
    check_program(name, compiled_calls)


def _auc_reference(labels, scores, weights, n, curve="ROC", summation="trapezoidal"):
    """TensorFlow 1.x's auc from its definition: n thresholds, counts of predictions
    strictly above each, rates with epsilon 1e-6, then the summation rule."""
    thresholds = np.array([-1e-7] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1 + 1e-7],
                          np.float32)
    above = scores[None, :] > thresholds[:, None]
    pos = labels[None, :] > 0
    w = weights[None, :]
    tp, fn = (w * (pos & above)).sum(1), (w * (pos & ~above)).sum(1)
    tn, fp = (w * (~pos & ~above)).sum(1), (w * (~pos & above)).sum(1)
    eps = 1e-6
    recall = (tp + eps) / (tp + fn + eps)
    if curve == "ROC":
        x, y = fp / (fp + tn + eps), recall
    else:
        x, y = recall, (tp + eps) / (tp + fp + eps)
    height = {"trapezoidal": (y[:-1] + y[1:]) / 2, "minoring": np.minimum(y[:-1], y[1:]),
              "majoring": np.maximum(y[:-1], y[1:])}[summation]
    return np.sum((x[:-1] - x[1:]) * height)


def test_metrics_accumulate_across_updates_and_reset():
    labels = tf.placeholder(tf.float32, [None])
    scores = tf.placeholder(tf.float32, [None])
    weights = tf.placeholder(tf.float32, [None])
    hard = tf.cast(scores > 0.5, tf.float32)
    metrics = {"accuracy": tf.metrics.accuracy(labels, hard, weights),
               "mean": tf.metrics.mean(scores),
               "precision": tf.metrics.precision(labels, hard),
               "recall": tf.metrics.recall(labels, hard, weights),
               "mse": tf.metrics.mean_squared_error(labels, scores, weights),
               "mae": tf.metrics.mean_absolute_error(labels, scores),
               "auc": tf.metrics.auc(labels, scores, weights, num_thresholds=30),
               "auc_pr": tf.metrics.auc(labels, scores, curve="PR",
                                        summation_method="minoring"),
               "fn": tf.metrics.false_negatives(labels, hard, weights)}
    seen = [np.zeros(0, np.float32)] * 3
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        for batch in BATCHES:
            feed = dict(zip((labels, scores, weights), batch))
            updated = sess.run({k: u for k, (_, u) in metrics.items()}, feed)
            read = sess.run({k: v for k, (v, _) in metrics.items()})
            seen = [np.concatenate([s, b]) for s, b in zip(seen, batch)]
            y, p, w = seen
            h = (p > 0.5).astype(np.float32)
            want = {"accuracy": np.sum(w * (h == y)) / np.sum(w), "mean": p.mean(),
                    "precision": np.sum(h * y) / np.sum(h),
                    "recall": np.sum(w * h * y) / np.sum(w * y),
                    "mse": np.sum(w * (y - p) ** 2) / np.sum(w),
                    "mae": np.abs(y - p).mean(),
                    "auc": _auc_reference(y, p, w, 30),
                    "auc_pr": _auc_reference(y, p, np.ones_like(w), 200, "PR", "minoring"),
                    "fn": np.sum(w * y * (1 - h))}
            for key, value in want.items():
                np.testing.assert_allclose(updated[key], value, rtol=1e-5, err_msg=key)
                np.testing.assert_allclose(read[key], value, rtol=1e-5, err_msg=key)
        sess.run(tf.local_variables_initializer())
        reset = sess.run({k: v for k, (v, _) in metrics.items()})
    assert all(v == 0 for v in reset.values())


def test_accumulators_are_local_metric_variables_named_as_tensorflow():
    labels = tf.placeholder(tf.int64, [None])
    predictions = tf.placeholder(tf.int64, [None])
    value, update = tf.metrics.accuracy(labels, predictions,
                                        metrics_collections=["values"],
                                        updates_collections=["updates"])
    tf.metrics.accuracy(labels, predictions)
    with tf.variable_scope("eval"):
        tf.metrics.precision(labels, predictions, name="prec")
    tf.metrics.auc(labels, tf.cast(predictions, tf.float32), num_thresholds=5)
    names = [v.name for v in tf.local_variables()]
    assert names == ["accuracy/total:0", "accuracy/count:0", "accuracy_1/total:0",
                     "accuracy_1/count:0", "eval/prec/true_positives/count:0",
                     "eval/prec/false_positives/count:0", "auc/true_positives:0",
                     "auc/false_negatives:0", "auc/true_negatives:0",
                     "auc/false_positives:0"]
    assert [v.name for v in tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)] == names
    assert tf.global_variables() == [] and tf.trainable_variables() == []
    assert tf.local_variables()[-1].shape.as_list() == [5]
    assert value.name == "accuracy/value:0" and update.name == "accuracy/update_op:0"
    assert tf.get_collection("values") == [value] and tf.get_collection("updates") == [update]


def test_empty_denominators_give_zero():
    labels = tf.constant([0.0, 0.0])
    predictions = tf.constant([0.0, 0.0])
    metrics = [tf.metrics.precision(labels, predictions), tf.metrics.recall(labels, predictions),
               tf.metrics.mean(predictions, weights=[0.0, 0.0]),
               tf.metrics.accuracy(labels, predictions)]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run([v for v, _ in metrics]) == [0.0, 0.0, 0.0, 0.0]
        assert sess.run([u for _, u in metrics]) == [0.0, 0.0, 0.0, 1.0]


def test_weights_squeeze_and_broadcast_as_tensorflow():
    values = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    labels = tf.constant([[1], [0], [1]], tf.int64)
    predictions = tf.constant([1, 1, 1], tf.int64)
    column = tf.metrics.mean(values, weights=[[1.0], [0.0], [2.0]])
    vector = tf.metrics.mean(tf.constant([1.0, 3.0, 5.0]), weights=[[1.0], [0.0], [2.0]])
    squeezed = tf.metrics.accuracy(labels, predictions, weights=[[1.0], [1.0], [2.0]])
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        got = sess.run([u for _, u in (column, vector, squeezed)])
    np.testing.assert_allclose(got, [(1 + 2 + 10 + 12) / 6, 11 / 3, 3 / 4], rtol=1e-6)
    with pytest.raises(ValueError, match="can not be broadcast"):
        tf.metrics.mean(values, weights=tf.ones([3, 3]))
    with pytest.raises(ValueError, match="incompatible"):
        tf.metrics.accuracy(tf.constant([1, 2]), tf.constant([1, 2, 3]))


def test_auc_arguments_are_checked():
    labels, scores = tf.constant([1.0, 0.0]), tf.constant([0.3, 0.6])
    with pytest.raises(ValueError, match="curve must be"):
        tf.metrics.auc(labels, scores, curve="DET")
    with pytest.raises(ValueError, match="summation_method"):
        tf.metrics.auc(labels, scores, summation_method="simpson")
    with pytest.raises(ValueError, match="num_thresholds"):
        tf.metrics.auc(labels, scores, num_thresholds=1)
    wrong = tf.metrics.auc(labels, scores, thresholds=[0.5])[1]
    right = tf.metrics.auc(labels, 1.0 - scores, thresholds=[0.5])[1]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        got_wrong, got_right = sess.run([wrong, right])
    assert 0 <= got_wrong < 1e-5 and abs(got_right - 1) < 1e-5
