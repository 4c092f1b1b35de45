"""tf.train.MonitoredTrainingSession and its hooks (runtime/monitored_session.py,
runtime/session_hooks.py): a training loop stopped by StopAtStepHook, checkpointed by
CheckpointSaverHook and restarted from its last checkpoint ends where one uninterrupted run
ends; hooks see the session's life in TensorFlow's order and add fetches and feeds to the
caller's step; a worker's session waits for its chief on an in-process cluster."""

import os
import threading

import numpy as np
import pytest

import flowjit as tf
from test_local_cluster import _data as _cluster_data
from test_local_cluster import ps_linear_model


def regression(checkpoint_dir, last_step, save_steps=5, hooks=()):
    """Train a linear model until global step `last_step`; (steps run here, w)."""
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        x = tf.constant(np.arange(12, dtype=np.float32).reshape(6, 2) / 10)
        y = tf.constant(np.linspace(-1, 1, 6, dtype=np.float32).reshape(6, 1))
        w = tf.Variable(np.ones((2, 1), np.float32), name="w")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        ran = 0
        with tf.train.MonitoredTrainingSession(
                checkpoint_dir=checkpoint_dir, save_checkpoint_steps=save_steps,
                hooks=[tf.train.StopAtStepHook(last_step=last_step), *hooks]) as sess:
            while not sess.should_stop():
                sess.run(train)
                ran += 1
            value = sess.run(w)
        return ran, value


def test_restart_goes_on_from_the_last_checkpoint(tmp_path):
    interrupted = str(tmp_path / "a")
    assert regression(interrupted, 12)[0] == 12
    files = set(os.listdir(interrupted))
    assert {f"model.ckpt-{s}.meta" for s in (0, 5, 10, 12)} <= files  # start, every 5, end
    ran, w = regression(interrupted, 20)               # restarted: restores step 12
    assert ran == 8
    assert tf.train.latest_checkpoint(interrupted).endswith("model.ckpt-20")
    ran_once, w_once = regression(str(tmp_path / "b"), 20)
    assert ran_once == 20
    np.testing.assert_array_equal(w, w_once)


class Recorder(tf.train.SessionRunHook):
    """Records the calls it gets; fetches the global step and feeds a placeholder."""

    def __init__(self, placeholder, value):
        self.calls, self.placeholder, self.value, self.results = [], placeholder, value, []

    def begin(self):
        self.calls.append("begin")
        self.doubled = self.placeholder * 2.0     # a hook may add ops in begin()

    def after_create_session(self, session, coord):
        self.calls.append("after_create_session")

    def before_run(self, run_context):
        self.calls.append("before_run")
        return tf.train.SessionRunArgs(self.doubled, feed_dict={self.placeholder: self.value})

    def after_run(self, run_context, run_values):
        self.calls.append("after_run")
        self.results.append(run_values.results)

    def end(self, session):
        self.calls.append("end")


def test_hooks_see_the_session_life_and_join_the_callers_step():
    with tf.Graph().as_default():
        tf.train.get_or_create_global_step()
        p = tf.placeholder(tf.float32, [], name="p")
        q = tf.placeholder(tf.float32, [], name="q")
        hook = Recorder(p, 3.0)
        plus, times = q + 1.0, q * 3.0
        with tf.train.MonitoredTrainingSession(hooks=[hook]) as sess:
            assert sess.run(plus, feed_dict={q: 1.0}) == 2.0
            assert sess.run(times, feed_dict={q: 2.0}) == 6.0
            with pytest.raises(RuntimeError, match="Same tensor is fed"):
                sess.run(q, feed_dict={p: 1.0, q: 1.0})
        assert hook.results == [6.0, 6.0]
        assert hook.calls[:2] == ["begin", "after_create_session"]
        assert hook.calls[2:6] == ["before_run", "after_run"] * 2
        assert hook.calls[-1] == "end"
        with pytest.raises(RuntimeError, match="finalized"):
            tf.constant(1.0)                      # the session finalized the graph


def test_nan_loss_raises_or_stops():
    for fail in (True, False):
        with tf.Graph().as_default():
            v = tf.Variable(1.0)
            loss = tf.sqrt(v - 2.0)               # NaN
            hook = tf.train.NanTensorHook(loss, fail_on_nan_loss=fail)
            with tf.train.MonitoredTrainingSession(hooks=[hook]) as sess:
                if fail:
                    with pytest.raises(tf.train.NanLossDuringTrainingError):
                        sess.run(loss)
                else:
                    sess.run(loss)
                    assert sess.should_stop()


def test_out_of_range_ends_the_block_and_other_errors_pass():
    with tf.Graph().as_default():
        queue = tf.FIFOQueue(2, tf.float32)
        enqueue = queue.enqueue_many([[1.0, 2.0]])
        close = queue.close()
        item = queue.dequeue()
        got = []
        with tf.train.MonitoredTrainingSession() as sess:
            sess.run(enqueue)
            sess.run(close)
            while not sess.should_stop():
                got.append(sess.run(item))        # the third raises OutOfRangeError
        assert got == [1.0, 2.0]
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        hook = Recorder(tf.placeholder(tf.float32, []), 1.0)
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            with tf.train.MonitoredTrainingSession(hooks=[hook]) as sess:
                sess.run(x, feed_dict={x: np.ones(3)})
        assert "end" not in hook.calls           # end() only after a clean finish


def test_hook_arguments_are_checked():
    with pytest.raises(ValueError, match="One of num_steps or last_step"):
        tf.train.StopAtStepHook()
    with pytest.raises(ValueError, match="Only one of"):
        tf.train.StopAtStepHook(num_steps=1, last_step=2)
    with pytest.raises(ValueError, match="exactly one"):
        tf.train.CheckpointSaverHook("/tmp/x", save_secs=1, save_steps=1)
    with tf.Graph().as_default():
        tf.Variable(1.0)
        with pytest.raises(RuntimeError, match="Global step should be created"):
            tf.train.MonitoredTrainingSession(hooks=[tf.train.StopAtStepHook(num_steps=3)])


def test_logging_hook_every_n_iterations():
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        bump = tf.assign_add(step, 1)
        hook = tf.train.LoggingTensorHook({"step": step}, every_n_iter=2)
        with tf.train.MonitoredTrainingSession(hooks=[hook]) as sess:
            for _ in range(5):
                sess.run(bump)
        logged = [int(d["step"]) for d in hook.logged]      # iterations 0, 2 and 4
        assert len(logged) == 3 and logged[1] - logged[0] == logged[2] - logged[1] == 2


def test_worker_waits_for_the_chief_on_a_cluster():
    cluster_def = {"ps": ["ps0:1"], "worker": ["w0:1", "w1:1"]}
    with tf.distributed.LocalCluster(cluster_def, backend="threads") as cluster:
        def build():
            graph = tf.Graph()
            with graph.as_default():
                with tf.device(tf.train.replica_device_setter(cluster=cluster.cluster_spec)):
                    step = tf.train.get_or_create_global_step()
                    v = tf.Variable(5.0, name="v")
                    train = tf.group(tf.assign_add(v, 1.0), tf.assign_add(step, 1))
            return graph, v, train

        seen = {}

        def worker():
            graph, v, train = build()
            with graph.as_default():
                with tf.train.MonitoredTrainingSession(
                        master=cluster.task_target("worker", 1), is_chief=False) as sess:
                    seen["first"] = sess.run(v)   # after the chief initialized it
                    sess.run(train)

        thread = threading.Thread(target=worker)
        thread.start()
        graph, v, train = build()
        with graph.as_default():
            with tf.train.MonitoredTrainingSession(
                    master=cluster.task_target("worker", 0), is_chief=True) as sess:
                thread.join(timeout=60)
                assert seen["first"] == 5.0
                assert sess.run(v) == 6.0         # the worker's update is the cluster's


def test_queue_runners_start_with_the_session():
    with tf.Graph().as_default():
        queue = tf.FIFOQueue(4, tf.float32)
        counter = tf.Variable(0.0)
        runner = tf.train.QueueRunner(queue, [queue.enqueue(tf.assign_add(counter, 1.0))])
        tf.train.add_queue_runner(runner)
        item = queue.dequeue()
        with tf.train.MonitoredTrainingSession() as sess:
            got = [sess.run(item) for _ in range(5)]
        assert got == [1.0, 2.0, 3.0, 4.0, 5.0]


def checkpointed_training(target, checkpoint_dir, last_step, kill=None):
    """Synchronous replicas with a global step, under MonitoredTrainingSession with a
    checkpoint every 5 steps; `kill(step)` may end a task after a step.  Returns the
    global steps each run ended at, the final parameters and the recoveries."""
    xs, ys = _cluster_data()
    with tf.Graph().as_default():
        x, y, step, w, b = ps_linear_model()
        grads = []
        for k in range(2):
            with tf.device(f"/job:worker/task:{k}"):
                rows = slice(16 * k, 16 * (k + 1))
                loss = tf.reduce_mean(tf.square(tf.matmul(x[rows], w) + b - y[rows]))
                grads.append(tf.gradients(loss, [w, b]))
        with tf.device("/job:ps/task:0"):
            averaged = [(grads[0][i] + grads[1][i]) / 2 for i in range(2)]
            train = tf.train.GradientDescentOptimizer(0.1).apply_gradients(
                zip(averaged, [w, b]), global_step=step)
            with tf.control_dependencies([train]):
                step_after = tf.identity(step.read_value())
        ended = []
        with tf.train.MonitoredTrainingSession(
                master=target, is_chief=True, checkpoint_dir=checkpoint_dir,
                save_checkpoint_steps=5, config=tf.ConfigProto(allow_soft_placement=True),
                hooks=[tf.train.StopAtStepHook(last_step=last_step)]) as sess:
            while not sess.should_stop():
                ended.append(int(sess.run(step_after, {x: xs, y: ys})))
                if kill is not None:
                    kill(ended[-1])
            params = sess.run([w, b], {})
            recoveries = list(sess.recoveries)
        return ended, params, recoveries


def test_a_killed_task_is_recovered_from_the_last_checkpoint(tmp_path):
    """The in-process backend's kill (runtime/cluster_backend.py): the task comes back
    empty, the step fails with UnavailableError, and the session restores checkpoint 10 on
    every task; the steps after it run again, and the weights end as without the kill."""
    cluster_def = {"ps": ["ps0:1"], "worker": ["w0:1", "w1:1"]}
    with tf.distributed.LocalCluster(cluster_def, backend="threads") as cluster:
        killed = []

        def kill(step):
            if step == 12 and not killed:   # step 12 comes again after the recovery
                cluster.kill_task("worker", 1)
                killed.append(step)

        ended, params, recoveries = checkpointed_training(
            cluster.task_target("worker", 0), str(tmp_path / "cluster"), 20, kill)
    want_ended, want_params, _ = checkpointed_training("", str(tmp_path / "one"), 20)
    assert want_ended == list(range(1, 21))
    assert [(type(r.error), r.global_step) for r in recoveries] == \
        [(tf.errors.UnavailableError, 10)]
    assert ended == list(range(1, 13)) + list(range(11, 21))
    for got, want in zip(params, want_params):
        np.testing.assert_allclose(got, want, rtol=1e-6)
