"""Queues (FIFOQueue, RandomShuffleQueue, PaddingFIFOQueue), queue runners, coordinators and
batching: semantics, errors, and threaded stress tests.

The threaded tests assert only what is deterministic (every element comes out exactly
once, every blocked thread is released with the documented error) and bound every wait
(thread joins with timeouts, run deadlines), so a bug fails instead of hanging.
"""

import collections
import threading

import numpy as np
import pytest

import flowjit as tf
from flowjit.errors import (CancelledError, DeadlineExceededError, InvalidArgumentError,
                            OutOfRangeError)

JOIN_S = 20.0


def _join(threads):
    for t in threads:
        t.join(JOIN_S)
    assert not any(t.is_alive() for t in threads), "a thread is still blocked"


def test_fifo_order_batches_size_and_close():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(10, [tf.int32, tf.float32], shapes=[[], [2]])
        n = tf.placeholder(tf.int32, [None])
        v = tf.placeholder(tf.float32, [None, 2])
        enq = q.enqueue_many([n, v])
        one = q.dequeue()
        two = q.dequeue_many(2)
        rest = q.dequeue_up_to(10)
        with tf.Session() as sess:
            sess.run(enq, {n: [1, 2, 3, 4, 5], v: np.arange(10.0).reshape(5, 2)})
            assert sess.run(q.size()) == 5
            a, b = sess.run(one)
            assert a == 1 and b.tolist() == [0.0, 1.0]
            ids, vals = sess.run(two)
            assert ids.tolist() == [2, 3] and vals.shape == (2, 2)
            sess.run(q.close())
            ids, _ = sess.run(rest)         # a closed queue gives what it has left
            assert ids.tolist() == [4, 5]
            with pytest.raises(OutOfRangeError, match="closed"):
                sess.run(one)
            with pytest.raises(CancelledError, match="closed"):
                sess.run(enq, {n: [9], v: [[0.0, 0.0]]})


def test_one_component_queues_take_and_give_bare_tensors_and_dicts_by_name():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(3, tf.float64, shapes=[[]])
        d = tf.FIFOQueue(3, [tf.int32, tf.int32], names=["a", "b"], shapes=[[], []])
        enq = q.enqueue(tf.constant(2.5, tf.float64))
        denq = d.enqueue({"a": 1, "b": 2})
        out = d.dequeue()
        with tf.Session() as sess:
            sess.run([enq, denq])
            assert sess.run(q.dequeue()) == 2.5
            assert sess.run(out) == {"a": 1, "b": 2}


def test_wrong_shapes_and_dtypes_are_clear_errors():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(3, [tf.float32], shapes=[[2]])
        with pytest.raises(ValueError, match="shape"):
            q.enqueue([tf.constant([1.0, 2.0, 3.0])])
        with pytest.raises(TypeError, match="float32"):
            q.enqueue([tf.constant([1, 2])])
        p = tf.placeholder(tf.float32, [None])
        enq = q.enqueue([p])
        with tf.Session() as sess, pytest.raises(InvalidArgumentError, match=r"\(2,\)"):
            sess.run(enq, {p: [1.0, 2.0, 3.0]})


def test_blocking_waits_obey_the_run_deadline():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(1, tf.int32, shapes=[[]])
        enq = q.enqueue(tf.constant(1))
        options = tf.RunOptions(timeout_in_ms=100)
        with tf.Session() as sess:
            with pytest.raises(DeadlineExceededError):
                sess.run(q.dequeue(), options=options)      # empty
            sess.run(enq)
            with pytest.raises(DeadlineExceededError):
                sess.run(enq, options=options)              # full
            assert sess.run(q.dequeue()) == 1


def test_closing_releases_blocked_threads_with_the_documented_errors():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(1, tf.int32, shapes=[[]])
        full = tf.FIFOQueue(1, tf.int32, shapes=[[]])
        deq = q.dequeue()
        fill = full.enqueue(tf.constant(0))
        errors = collections.Counter()
        sess = tf.Session()
        sess.run(fill)

        def consume():
            try:
                sess.run(deq)
            except OutOfRangeError:
                errors["out_of_range"] += 1

        def produce():
            try:
                sess.run(fill)
            except CancelledError:
                errors["cancelled"] += 1

        threads = [threading.Thread(target=consume) for _ in range(3)]
        threads += [threading.Thread(target=produce) for _ in range(2)]
        for t in threads:
            t.start()
        sess.run(q.close())
        sess.run(full.close(cancel_pending_enqueues=True))
        _join(threads)
        assert errors == {"out_of_range": 3, "cancelled": 2}
        sess.close()


def test_session_close_releases_a_blocked_step():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(1, tf.int32, shapes=[[]])
        deq = q.dequeue()
        sess = tf.Session()
        sess.run(q.size())       # the queue exists before the thread blocks on it
        caught = []

        def wait():
            try:
                sess.run(deq)
            except (CancelledError, OutOfRangeError) as e:
                caught.append(type(e))

        t = threading.Thread(target=wait)
        t.start()
        t.join(0.2)
        sess.close()
        _join([t])
        assert caught == [OutOfRangeError]


def test_producers_and_consumers_lose_and_duplicate_nothing():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(7, tf.int64, shapes=[[]])
        item = tf.placeholder(tf.int64, [])
        enq = q.enqueue(item)
        deq = q.dequeue_up_to(3)
        sess = tf.Session()
        consumed, lock = [], threading.Lock()

        def produce(k):
            for i in range(150):
                sess.run(enq, {item: k * 1000 + i})

        def consume():
            while True:
                try:
                    got = sess.run(deq)
                except OutOfRangeError:
                    return
                with lock:
                    consumed.extend(got.tolist())

        producers = [threading.Thread(target=produce, args=(k,)) for k in range(3)]
        consumers = [threading.Thread(target=consume) for _ in range(2)]
        for t in producers + consumers:
            t.start()
        _join(producers)
        sess.run(q.close())
        _join(consumers)
        assert sorted(consumed) == sorted(k * 1000 + i for k in range(3) for i in range(150))
        sess.close()


def test_random_shuffle_queue_keeps_min_after_dequeue_and_is_seeded():
    def drain(seed):
        with tf.Graph().as_default():
            q = tf.RandomShuffleQueue(20, 5, tf.int32, shapes=[[]], seed=seed)
            enq = q.enqueue_many(tf.range(12))
            deq = q.dequeue()
            with tf.Session() as sess:
                sess.run(enq)
                out = [sess.run(deq) for _ in range(7)]   # 12 - 7 = 5 stay behind
                with pytest.raises(DeadlineExceededError):
                    sess.run(deq, options=tf.RunOptions(timeout_in_ms=100))
                sess.run(q.close())
                out += sess.run(q.dequeue_up_to(12)).tolist()
        return [int(v) for v in out]

    first = drain(7)
    assert sorted(first) == list(range(12)) and first != list(range(12))
    assert drain(7) == first


def test_padding_queue_pads_batches():
    with tf.Graph().as_default():
        q = tf.PaddingFIFOQueue(4, [tf.int32], shapes=[[None]])
        v = tf.placeholder(tf.int32, [None])
        enq = q.enqueue([v])
        batch = q.dequeue_many(3)
        with tf.Session() as sess:
            for row in ([1], [2, 3, 4], []):
                sess.run(enq, {v: np.array(row, np.int32)})
            assert sess.run(batch).tolist() == [[1, 0, 0], [2, 3, 4], [0, 0, 0]]


def test_queue_runners_feed_a_training_loop_until_the_input_ends():
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(64, 3)).astype(np.float32)
    ys = xs @ np.array([1.0, -2.0, 0.5], np.float32)
    with tf.Graph().as_default():
        source = tf.FIFOQueue(640, [tf.float32, tf.float32], shapes=[[3], []])
        load = source.enqueue_many([xs, ys])
        x, y = tf.train.batch(source.dequeue(), batch_size=8, num_threads=2, capacity=16,
                              allow_smaller_final_batch=True)
        w = tf.Variable(tf.zeros([3]))
        loss = tf.reduce_mean(tf.square(tf.reduce_sum(x * w, axis=1) - y))
        train = tf.train.GradientDescentOptimizer(0.3).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(10):        # ten epochs through the source queue
                sess.run(load)
            sess.run(source.close())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            steps, seen = 0, 0
            try:
                while not coord.should_stop():
                    _, xb = sess.run([train, x])
                    steps += 1
                    seen += len(xb)
            except OutOfRangeError:
                pass
            finally:
                coord.request_stop()
            coord.join(threads, stop_grace_period_secs=JOIN_S)
            assert seen == 640 and steps >= 80
            np.testing.assert_allclose(sess.run(w), [1.0, -2.0, 0.5], atol=1e-3)


def test_shuffle_batch_and_a_coordinator_reporting_a_thread_error():
    with tf.Graph().as_default():
        values = tf.placeholder(tf.int32, [])
        src = tf.FIFOQueue(100, tf.int32, shapes=[[]])
        load = src.enqueue_many(tf.range(40))
        [batch] = tf.train.shuffle_batch([src.dequeue()], batch_size=10, capacity=40,
                                       min_after_dequeue=5, seed=1,
                                       allow_smaller_final_batch=True)
        with tf.Session() as sess:
            sess.run(load)
            sess.run(src.close())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            got = []
            try:
                while True:
                    got.extend(sess.run(batch).tolist())
            except OutOfRangeError:
                pass
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=JOIN_S)
            assert sorted(got) == list(range(40))
        coord = tf.train.Coordinator()
        with coord.stop_on_exception():
            raise ValueError("a reader failed")
        assert coord.should_stop()
        with pytest.raises(ValueError, match="a reader failed"):
            coord.join([])
        del values


# --- dequeues without a thread (Queue.dequeue_async) ------------------------------------------


def _state_queue(capacity=4):
    from flowjit.ops.queue_state import Queue, QueueKind
    return Queue("q", QueueKind.FIFO, [np.float64], None, capacity)


def test_async_dequeue_is_served_by_a_later_enqueue_in_order():
    q = _state_queue()
    got = []
    q.dequeue_async(None, False, None, lambda e, v: got.append(("first", e, v)))
    q.dequeue_async(2, False, None, lambda e, v: got.append(("second", e, v)))
    assert got == []
    q.enqueue([(np.float64(1),), (np.float64(2),)], None, None)
    assert [g[0] for g in got] == ["first"] and got[0][2] == [(1.0,)]
    q.enqueue([(np.float64(3),)], None, None)
    assert got[1][0] == "second" and got[1][2] == [(2.0,), (3.0,)]
    assert q.size() == 0


def test_async_dequeue_on_a_closed_queue():
    q = _state_queue()
    got = []
    q.dequeue_async(3, True, None, lambda e, v: got.append((e, v)))
    q.dequeue_async(None, False, None, lambda e, v: got.append((e, v)))
    q.enqueue([(np.float64(1),)], None, None)
    assert got == []
    q.close()
    assert got[0] == (None, [(1.0,)])                     # dequeue_up_to takes what is left
    assert isinstance(got[1][0], tf.errors.OutOfRangeError) and got[1][1] is None


def test_cancelled_async_dequeue_takes_nothing():
    q = _state_queue()
    got = []
    cancel = q.dequeue_async(None, False, None, lambda e, v: got.append(v))
    assert cancel() is True
    q.enqueue([(np.float64(4),)], None, None)
    assert got == [] and q.size() == 1
    assert cancel() is False


def test_async_dequeues_from_many_threads_lose_nothing():
    import threading
    q = _state_queue(capacity=8)
    got, lock = [], threading.Lock()

    def take(e, v):
        with lock:
            got.append(float(v[0][0]))

    for _ in range(100):
        q.dequeue_async(None, False, None, take)
    producers = [threading.Thread(target=lambda k=k: q.enqueue(
        [(np.float64(k * 25 + j),) for j in range(25)], 10.0 + __import__("time").monotonic(),
        None)) for k in range(4)]
    for p in producers:
        p.start()
    for p in producers:
        p.join(20)
    assert sorted(got) == list(range(100))
