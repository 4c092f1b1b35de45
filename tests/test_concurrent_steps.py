"""Several threads calling `Session.run` on one session at once: stateless fetches give
each thread its own answer, locked variable updates are never lost, and asynchronous
(Hogwild-style) training with one thread per replica converges — with compiled clusters
(compile-always) and with the reference kernels.  Every thread join is bounded."""

import threading

import numpy as np
import pytest

import flowjit as tf

THREADS, STEPS = 4, 150


def _start_and_join(threads):
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a step never finished"


@pytest.mark.parametrize("policy", ["always", "never", "auto"])
def test_threads_training_one_model_converge_and_lose_no_locked_update(policy, monkeypatch):
    monkeypatch.setenv("FLOWJIT_JIT", policy)
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(256, 4)).astype(np.float32)
    ys = xs @ np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 4])
        y = tf.placeholder(tf.float32, [None])
        w = tf.Variable(tf.zeros([4]))
        loss = tf.reduce_mean(tf.square(tf.reduce_sum(x * w, axis=1) - y))
        train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
        steps = tf.Variable(0)
        count = tf.assign_add(steps, 1, use_locking=True)
        probe = tf.placeholder(tf.float32, [None])
        doubled = probe * 2.0 + 1.0          # a stateless subgraph the threads share
        errors = []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())

            def replica(k):
                r = np.random.default_rng(k)
                try:
                    for i in range(STEPS):
                        batch = r.integers(0, 256, 32)
                        sess.run([train, count], {x: xs[batch], y: ys[batch]})
                        mine = np.full(3, k * 1000 + i, np.float32)
                        got = sess.run(doubled, {probe: mine})
                        if not np.array_equal(got, mine * 2 + 1):
                            errors.append(f"thread {k} got {got} for {mine}")
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(repr(e))

            _start_and_join([threading.Thread(target=replica, args=(k,))
                             for k in range(THREADS)])
            assert not errors, errors[:3]
            assert sess.run(steps) == THREADS * STEPS
            assert sess.run(loss, {x: xs, y: ys}) < 1e-6
            np.testing.assert_allclose(sess.run(w), [1.0, -2.0, 0.5, 3.0], atol=1e-3)
