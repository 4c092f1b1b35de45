"""Input pipelines with background threads (TF1 `tf.train` queue runners, 2015 paper §4.6):
`Coordinator`, `QueueRunner`, `add_queue_runner`, `start_queue_runners`, `batch`,
`shuffle_batch`, `input_producer` and `string_input_producer`.

A QueueRunner owns enqueue ops of one queue and, per op, a thread that runs it in a
session again and again, so the queue fills while the main loop's steps dequeue.  A thread
stops when the coordinator asks it to, or when its op fails with OutOfRangeError or
CancelledError (the queue, or a queue it reads from, was closed); when the last of its
threads stops, the runner closes its queue, so dequeues drain what is left and then raise
OutOfRangeError: the end of the input.  Any other error is reported to the coordinator
(which stops the other threads and re-raises it from `join`).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time

from ..compiler.core.graph import GraphKeys, get_default_graph
from ..errors import CancelledError, OutOfRangeError
from ..ops.nest import flatten, pack
from ..ops.queues import FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue

_END_OF_INPUT = (OutOfRangeError, CancelledError)


class Coordinator:
    """Stops a group of threads together and carries the first error to `join`."""

    def __init__(self, clean_stop_exception_types=None):
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._exc_info = None
        self._clean = tuple(clean_stop_exception_types or (OutOfRangeError,))

    def should_stop(self) -> bool:
        """True once a stop was requested."""
        return self._stop.is_set()

    def request_stop(self, ex=None) -> None:
        """Ask every coordinated thread to stop; `ex` (an exception, or True for the one
        being handled) is raised again by `join` unless it is a clean stop."""
        if ex is not None:
            if ex is True:
                ex = sys.exc_info()[1]
            with self._lock:
                if self._exc_info is None and not isinstance(ex, self._clean):
                    self._exc_info = ex
        self._stop.set()

    def clear_stop(self) -> None:
        with self._lock:
            self._exc_info = None
        self._stop.clear()

    def wait_for_stop(self, timeout=None) -> bool:
        return self._stop.wait(timeout)

    @contextlib.contextmanager
    def stop_on_exception(self):
        """Run the block; an exception in it requests a stop (reported by `join`)."""
        try:
            yield
        except Exception as e:  # noqa: BLE001 - handed to the coordinator
            self.request_stop(e)

    def raise_requested_exception(self) -> None:
        with self._lock:
            if self._exc_info is not None:
                raise self._exc_info

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        """Wait for `threads` (the registered ones by default) after a stop was requested;
        re-raise the error a thread reported."""
        threads = list(threads if threads is not None else [])
        self.wait_for_stop()
        deadline = time.monotonic() + stop_grace_period_secs
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in threads if t.is_alive()]
        self.raise_requested_exception()
        if alive and not ignore_live_threads:
            raise RuntimeError(f"Coordinator stopped with threads still running: {alive}")


class QueueRunner:
    """Threads that run `enqueue_ops` of `queue` until the input ends (module docstring)."""

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None):
        if queue is None or not enqueue_ops:
            raise ValueError("QueueRunner needs a queue and at least one enqueue op.")
        self.queue = queue
        self.enqueue_ops = list(enqueue_ops)
        self.close_op = close_op if close_op is not None else queue.close()
        self.cancel_op = cancel_op if cancel_op is not None else \
            queue.close(cancel_pending_enqueues=True)
        self._lock = threading.Lock()
        self.exceptions_raised = []

    @property
    def name(self) -> str:
        return self.queue.name

    def create_threads(self, sess, coord=None, daemon=False, start=False) -> list:
        """One thread per enqueue op (plus one that cancels the queue when the coordinator
        stops); started when `start`."""
        running = [len(self.enqueue_ops)]
        threads = [threading.Thread(target=self._run, args=(sess, op, coord, running),
                                    daemon=daemon, name=f"QueueRunner-{self.name}-{i}")
                   for i, op in enumerate(self.enqueue_ops)]
        if coord is not None:
            threads.append(threading.Thread(target=self._cancel_on_stop, args=(sess, coord),
                                            daemon=True, name=f"QueueRunner-{self.name}-stop"))
        if start:
            for t in threads:
                t.start()
        return threads

    def _run(self, sess, op, coord, running):
        try:
            while coord is None or not coord.should_stop():
                sess.run(op)
        except _END_OF_INPUT:
            pass
        except Exception as e:  # noqa: BLE001 - reported to the coordinator
            with self._lock:
                self.exceptions_raised.append(e)
            if coord is not None:
                coord.request_stop(e)
            else:
                raise
        finally:
            with self._lock:
                running[0] -= 1
                last = running[0] == 0
            if last:
                with contextlib.suppress(Exception):
                    sess.run(self.close_op)

    def _cancel_on_stop(self, sess, coord):
        coord.wait_for_stop()
        with contextlib.suppress(Exception):
            sess.run(self.cancel_op)


def add_queue_runner(qr, collection=GraphKeys.QUEUE_RUNNERS) -> None:
    """Register `qr` so `start_queue_runners` starts it."""
    get_default_graph().add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord=None, daemon=True, start=True,
                        collection=GraphKeys.QUEUE_RUNNERS) -> list:
    """Start the threads of every registered QueueRunner of `sess`'s graph; returns them."""
    from .session import get_default_session  # lazy: session imports much of the runtime

    sess = sess or get_default_session()
    if sess is None:
        raise ValueError("start_queue_runners needs a session (none given, no default).")
    threads = []
    for qr in sess.graph.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads


def _batch(queue_factory, tensors, batch_size, num_threads, enqueue_many, shapes,
           allow_smaller_final_batch, name):
    graph = get_default_graph()
    with graph.name_scope(name):
        leaves = flatten(tensors)
        leaves = [graph.as_graph_element(t) if not hasattr(t, "dtype") else t for t in leaves]
        if shapes is None:
            shapes = [t.shape[1:] if enqueue_many else t.shape for t in leaves]
        queue = queue_factory([t.dtype for t in leaves], shapes)
        enqueue = queue.enqueue_many(leaves) if enqueue_many else queue.enqueue(leaves)
        add_queue_runner(QueueRunner(queue, [enqueue] * num_threads))
        out = (queue.dequeue_up_to(batch_size) if allow_smaller_final_batch
               else queue.dequeue_many(batch_size))
        out = out if isinstance(out, list) else [out]
        return pack(tensors, out)


def batch(tensors, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None,
          dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches of `tensors` (a nest) assembled by background threads (TF1 `tf.train.batch`):
    a FIFO queue (padding with `dynamic_pad`) filled by a registered QueueRunner; returns
    the same nest with a leading batch dimension."""
    def make(dtypes, shp):
        cls = PaddingFIFOQueue if dynamic_pad else FIFOQueue
        return cls(capacity, dtypes, shapes=shp, shared_name=shared_name)

    return _batch(make, tensors, batch_size, num_threads, enqueue_many, shapes,
                  allow_smaller_final_batch, name or "batch")


def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads=1, seed=None,
                  enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                  shared_name=None, name=None):
    """Shuffled batches (TF1 `tf.train.shuffle_batch`): as `batch`, through a
    RandomShuffleQueue that keeps `min_after_dequeue` elements to mix."""
    def make(dtypes, shp):
        return RandomShuffleQueue(capacity, min_after_dequeue, dtypes, shapes=shp, seed=seed,
                                  shared_name=shared_name)

    return _batch(make, tensors, batch_size, num_threads, enqueue_many, shapes,
                  allow_smaller_final_batch, name or "shuffle_batch")


def input_producer(input_tensor, element_shape=None, num_epochs=None, shuffle=True, seed=None,
                   capacity=32, shared_name=None, summary_name=None, name=None, cancel_op=None):
    """A queue fed, by a registered QueueRunner, with the rows of `input_tensor`, epoch after
    epoch (shuffled per epoch with `shuffle`); closed after `num_epochs` epochs, so its
    readers then get OutOfRangeError (TF1 `tf.train.input_producer`)."""
    del summary_name, cancel_op
    from ..ops import queue_ops
    from ..ops.builder import make_op, to_tensor

    graph = get_default_graph()
    with graph.name_scope(name or "input_producer"):
        value = to_tensor(input_tensor)
        shape = element_shape if element_shape is not None else value.shape[1:]
        queue = FIFOQueue(capacity, [value.dtype], shapes=[shape], shared_name=shared_name)
        epoch = make_op(queue_ops.INPUT_EPOCH, [value],
                        {"num_epochs": int(num_epochs or 0), "shuffle": bool(shuffle),
                         "seed": int(seed or 0)}, "epoch").outputs[0]
        add_queue_runner(QueueRunner(queue, [queue.enqueue_many([epoch])]))
        return queue


def string_input_producer(string_tensor, num_epochs=None, shuffle=True, seed=None,
                          capacity=32, shared_name=None, name=None, cancel_op=None):
    """A queue of the file names in `string_tensor` for readers (TF1
    `tf.train.string_input_producer`); see `input_producer`."""
    from .. import dtypes as _dtypes
    from ..ops.builder import to_tensor

    names = to_tensor(string_tensor, dtype=_dtypes.string)
    return input_producer(names, [], num_epochs, shuffle, seed, capacity, shared_name,
                          name=name or "input_producer", cancel_op=cancel_op)


__all__ = ["Coordinator", "QueueRunner", "add_queue_runner", "start_queue_runners", "batch",
           "shuffle_batch", "input_producer", "string_input_producer"]
