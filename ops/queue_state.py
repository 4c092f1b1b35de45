"""The queue a queue op's handle points to: a bounded buffer of elements (tuples of arrays)
shared by the threads that run a session's steps (2015 paper §4.6).

One `Queue` per queue op per session (made on first use: SessionState.resource), so it
lasts across `Session.run` calls, as TensorFlow's queues do.  Blocking waits on one
condition variable; each wait honours the run's deadline (`RunOptions.timeout_in_ms`:
DeadlineExceededError).  Closing wakes every waiter: dequeues then take what is left and
fail with OutOfRangeError once too little remains; with `cancel_pending_enqueues`, blocked
and later enqueues fail with CancelledError (without it, later enqueues fail the same way:
a closed queue takes nothing new).  Elements are never copied: kernels never mutate arrays.

`dequeue_async` is the non-blocking form (2015 paper §5.3): the dequeue is registered and
finished by the enqueue or close that makes it possible, holding no thread meanwhile.

Kinds: FIFO; RANDOM_SHUFFLE (dequeues pick uniformly among the elements, and leave at least
`min_after_dequeue` behind until the queue is closed); PADDING_FIFO (dequeue_many pads each
component to the batch's largest shape with zeros).
"""

from __future__ import annotations

import collections
import enum
import threading
import time

import numpy as np

from ..errors import CancelledError, DeadlineExceededError, InvalidArgumentError, OutOfRangeError


class QueueKind(enum.Enum):
    FIFO = "fifo"
    RANDOM_SHUFFLE = "random_shuffle"
    PADDING_FIFO = "padding_fifo"


class Queue:
    """A session's queue (module docstring)."""

    def __init__(self, name: str, kind: QueueKind, dtypes, shapes, capacity: int,
                 min_after_dequeue: int = 0, seed=None):
        self.name, self.kind = name, kind
        self.dtypes, self.shapes = list(dtypes), shapes
        self.capacity = capacity if capacity and capacity > 0 else None
        self.min_after_dequeue = min_after_dequeue
        self.items = collections.deque()
        self.cond = threading.Condition()
        self.closed = False
        self.cancelled = False
        self.rng = np.random.default_rng(seed)
        self.waiters = collections.deque()   # dequeues waiting without a thread (_Waiter)

    # --- waiting ----------------------------------------------------------------------------
    def _wait(self, ready, deadline, op, doing: str) -> None:
        while not ready():
            timeout = None
            if deadline is not None:
                timeout = deadline - time.monotonic()
                if timeout <= 0:
                    raise DeadlineExceededError(None, op, f"Timed out {doing} queue '{self.name}' "
                                                          "(RunOptions.timeout_in_ms).")
            self.cond.wait(timeout)

    # --- operations ---------------------------------------------------------------------------
    def enqueue(self, elements: list, deadline, op) -> None:
        """Add `elements` (tuples of arrays) in order, waiting for room."""
        for element in elements:
            self._check(element, op)
        served = []
        try:
            with self.cond:
                for element in elements:
                    if self.closed:
                        raise CancelledError(None, op, f"Queue '{self.name}' is closed: it "
                                                       "takes no more elements.")
                    self._wait(lambda: self.closed or self.capacity is None
                               or len(self.items) < self.capacity, deadline, op,
                               "enqueueing to")
                    if self.closed:
                        raise CancelledError(None, op, f"Queue '{self.name}' was closed while "
                                                       "an enqueue waited.")
                    self.items.append(element)
                    self.cond.notify_all()
                    served.extend(self._serve())
        finally:   # the async dequeues served are told outside the lock
            for waiter, error, taken in served:
                waiter.done(error, taken)

    def dequeue(self, n: int | None, allow_smaller: bool, deadline, op) -> list:
        """Take one element (`n` None) or `n` of them; returns the list of elements."""
        want = 1 if n is None else n
        keep = self.min_after_dequeue if self.kind is QueueKind.RANDOM_SHUFFLE else 0
        with self.cond:
            self._wait(lambda: self.closed or len(self.items) >= want + keep, deadline, op,
                       "dequeueing from")
            available = len(self.items)
            if available < want:
                if not (allow_smaller and available > 0):
                    raise OutOfRangeError(None, op, f"Queue '{self.name}' is closed and has "
                                                    f"insufficient elements (requested {want}, "
                                                    f"current size {available}).")
                want = available
            taken = [self._take() for _ in range(want)]
            self.cond.notify_all()
        return taken

    def dequeue_async(self, n: int | None, allow_smaller: bool, op, done):
        """Take one element (`n` None) or `n` of them without holding a thread:
        `done(error, elements)` is called once, now or from the thread whose enqueue or
        close makes it possible.  Returns a cancel function (True: withdrawn in time)."""
        waiter = _Waiter(1 if n is None else n, allow_smaller, op, done)
        with self.cond:
            self.waiters.append(waiter)
            served = self._serve()
        for w, error, taken in served:
            w.done(error, taken)

        def cancel() -> bool:
            with self.cond:
                if waiter in self.waiters:
                    self.waiters.remove(waiter)
                    return True
                return False
        return cancel

    def _serve(self) -> list:
        """(waiter, error, elements) of the waiting async dequeues that can finish now, in
        arrival order (caller holds the lock; callbacks run after it is released)."""
        out = []
        keep = self.min_after_dequeue if self.kind is QueueKind.RANDOM_SHUFFLE else 0
        while self.waiters:
            w = self.waiters[0]
            available = len(self.items)
            if available >= w.want + keep:
                taken = [self._take() for _ in range(w.want)]
            elif not self.closed:
                break
            elif w.allow_smaller and available > 0:
                taken = [self._take() for _ in range(available)]
            else:
                self.waiters.popleft()
                out.append((w, OutOfRangeError(
                    None, w.op, f"Queue '{self.name}' is closed and has insufficient "
                                f"elements (requested {w.want}, current size {available})."),
                            None))
                continue
            self.waiters.popleft()
            out.append((w, None, taken))
            self.cond.notify_all()
        return out

    def _take(self):
        if self.kind is QueueKind.RANDOM_SHUFFLE:
            i = int(self.rng.integers(len(self.items)))
            self.items.rotate(-i)
            element = self.items.popleft()
            self.items.rotate(i)
            return element
        return self.items.popleft()

    def size(self) -> int:
        with self.cond:
            return len(self.items)

    def close(self, cancel_pending_enqueues: bool = False) -> None:
        with self.cond:
            self.closed = True
            self.cancelled = self.cancelled or cancel_pending_enqueues
            self.cond.notify_all()
            served = self._serve()
        for waiter, error, taken in served:
            waiter.done(error, taken)

    def _check(self, element, op) -> None:
        if len(element) != len(self.dtypes):
            raise InvalidArgumentError(None, op, f"Queue '{self.name}' holds {len(self.dtypes)} "
                                                 f"components; an element had {len(element)}.")
        if self.shapes is None:
            return
        for i, (value, shape) in enumerate(zip(element, self.shapes)):
            if shape is None:
                continue
            ok = len(shape) == value.ndim and all(d is None or d == s
                                                  for d, s in zip(shape, value.shape))
            if not ok:
                raise InvalidArgumentError(
                    None, op, f"Queue '{self.name}': component {i} of an element has shape "
                              f"{tuple(value.shape)}, but the queue's shape is "
                              f"{tuple('?' if d is None else d for d in shape)}.")


class _Waiter:
    """A dequeue waiting without a thread (Queue.dequeue_async)."""

    __slots__ = ("want", "allow_smaller", "op", "done")

    def __init__(self, want, allow_smaller, op, done):
        self.want, self.allow_smaller, self.op, self.done = want, allow_smaller, op, done


def stack_components(queue: Queue, elements: list) -> list:
    """The components of `elements` stacked along a new first axis (padded with zeros to
    the largest shape for a padding queue)."""
    out = []
    for i, dtype in enumerate(queue.dtypes):
        parts = [e[i] for e in elements]
        if queue.kind is QueueKind.PADDING_FIFO and parts:
            rank = parts[0].ndim
            biggest = [max(p.shape[d] for p in parts) for d in range(rank)]
            batch = np.zeros([len(parts)] + biggest, dtype)
            for j, p in enumerate(parts):
                batch[(j,) + tuple(slice(0, s) for s in p.shape)] = p
            out.append(batch)
        elif parts:
            out.append(np.stack(parts).astype(dtype, copy=False))
        else:
            shape = queue.shapes[i] if queue.shapes is not None else None
            tail = [0 if d is None else d for d in shape] if shape is not None else []
            out.append(np.zeros([0] + tail, dtype))
    return out
