"""`tf.train.SyncReplicasOptimizer` (optimizers/sync_replicas.py) and the
ConditionalAccumulator it aggregates in (ops/accumulator_ops.py): two workers, each with
its own graph and MonitoredTrainingSession, make ONE update per step from the mean of
their gradients, the same updates as one process averaging both halves of the batch."""

import threading

import numpy as np
import pytest

import flowjit as tf
from test_local_cluster import CLUSTER, _data, ps_linear_model, sync_replicas


def test_accumulator_averages_drops_stale_gradients_and_waits():
    with tf.Graph().as_default():
        acc = tf.ConditionalAccumulator(tf.float32, shape=[2], shared_name="acc")
        g = tf.placeholder(tf.float32, [2])
        step = tf.placeholder(tf.int64, [])
        apply = acc.apply_grad(g, local_step=step)
        take = acc.take_grad(2)
        count = acc.num_accumulated()
        with tf.Session() as sess:
            sess.run(apply, {g: [1.0, 2.0], step: 0})
            sess.run(apply, {g: [3.0, 6.0], step: 0})
            assert sess.run(count) == 2
            np.testing.assert_array_equal(sess.run(take), [2.0, 4.0])
            assert sess.run(count) == 0
            sess.run(apply, {g: [9.0, 9.0], step: 0})      # stale: the step is now 1
            assert sess.run(count) == 0
            got = []
            waiter = threading.Thread(target=lambda: got.append(sess.run(take)))
            waiter.start()
            sess.run(apply, {g: [1.0, 1.0], step: 1})
            waiter.join(0.2)
            assert waiter.is_alive()                         # one of two: still waiting
            sess.run(apply, {g: [3.0, 3.0], step: 1})
            waiter.join(10)
            np.testing.assert_array_equal(got[0], [2.0, 2.0])
            wrong = acc.apply_grad(tf.ones([3]), local_step=5)
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"shape \[2\].*\[3\]"):
                sess.run(wrong)


def between_graph_sync(target_of, steps=8):
    """Two workers, each its own graph and MonitoredTrainingSession (worker 0 the chief),
    training with SyncReplicasOptimizer on their halves of the batch.  Returns every
    worker's final (w, b) and their step counts."""
    xs, ys = _data()
    results, errors, barrier = {}, [], threading.Barrier(2)

    def worker(k):
        try:
            graph = tf.Graph()
            with graph.as_default():
                x, y, step, w, b = ps_linear_model()
                with tf.device(f"/job:worker/task:{k}"):
                    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
                opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                                     replicas_to_aggregate=2)
                train = opt.minimize(loss, global_step=step)
                hooks = [opt.make_session_run_hook(k == 0, num_tokens=0),
                         tf.train.StopAtStepHook(last_step=steps)]
                rows = slice(16 * k, 16 * (k + 1))
                ran = 0
                if k == 1:
                    barrier.wait(30)      # the chief initializes first
                with tf.train.MonitoredTrainingSession(master=target_of(k), is_chief=(k == 0),
                                                       hooks=hooks) as sess:
                    if k == 0:
                        barrier.wait(30)
                    while not sess.should_stop():
                        sess.run(train, {x: xs[rows], y: ys[rows]})
                        ran += 1
                    results[k] = (sess.run([w, b]), ran)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    return results


def check_one_update_per_step(cluster):
    """Both workers ran 8 steps and hold the single-process parameters."""
    results = between_graph_sync(lambda k: cluster.task_target("worker", k))
    _, want, _, _, _ = sync_replicas("", placed=False, steps=8)
    for k in range(2):
        params, ran = results[k]
        assert ran == 8
        for got, expected in zip(params, want):
            np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_sync_replicas_make_one_update_per_step():
    with tf.distributed.LocalCluster(CLUSTER, backend="threads") as cluster:
        check_one_update_per_step(cluster)


def test_sync_replicas_needs_a_global_step_and_one_call():
    with tf.Graph().as_default():
        w = tf.Variable(1.0)
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2)
        with pytest.raises(ValueError, match="global_step"):
            opt.minimize(w * w)
        with pytest.raises(ValueError, match="apply_gradients"):
            opt.make_session_run_hook(True).begin()
        with pytest.raises(ValueError, match="at least 1"):
            tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 0)
