"""The rendezvous: where a Send leaves a tensor and the matching Recv picks it up (2015
TensorFlow paper §3.2.2).

A value is keyed by a `RendezvousKey`: source device, destination device, tensor name, step
id, and the frame and iteration of the loop it belongs to (top-level values: frame "" and
iteration 0), so two steps, two destinations or two iterations never mix.  Either side may
come first:
- `send(key, value)` after a waiting `recv_async`: the waiting callback runs at once, in the
  sender's thread;
- `send` first: the value waits in the table until a Recv asks.

`recv_async(key, done)` never blocks: `done(error, value)` is called exactly once, when the
value arrives or the rendezvous is aborted (non-blocking kernels, paper §5.3: a Recv holds
no thread while it waits).  `recv(key, timeout)` is the blocking form for callers that own
a thread anyway.

`abort(error)` ends the step on every device: every waiting Recv gets `error`, later Sends
and Recvs raise or receive it at once.  A rendezvous serves one step; the executor makes a
new one per step (runtime/device_executor.py).  Sending the same key twice is an error.
"""

from __future__ import annotations

import threading
import typing

from ..errors import DeadlineExceededError, InternalError


class RendezvousKey(typing.NamedTuple):
    """Which transfer a value belongs to (module docstring)."""

    src_device: str
    dst_device: str
    tensor: str
    step_id: int = 0
    frame: str = ""
    iteration: int = 0

    def __str__(self):
        where = f";{self.frame}:{self.iteration}" if self.frame else ""
        return (f"{self.src_device};{self.dst_device};{self.tensor};step {self.step_id}"
                f"{where}")


class Rendezvous:
    """One step's table of sent values and waiting receivers (module docstring)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._values: dict = {}     # key -> value sent, not yet received
        self._waiting: dict = {}    # key -> done callback of a Recv that came first
        self._sent: set = set()
        self._error: BaseException | None = None
        self._listeners: list = []  # called with the error when the step is aborted

    @property
    def error(self) -> BaseException | None:
        """The error the step was aborted with, or None."""
        return self._error

    def send(self, key: RendezvousKey, value) -> None:
        """Deliver `value` for `key` (to the waiting Recv, or keep it for the next)."""
        with self._lock:
            if self._error is not None:
                raise self._error
            if key in self._sent:
                raise InternalError(None, None, f"Send of {key} happened twice in one step.")
            self._sent.add(key)
            done = self._waiting.pop(key, None)
            if done is None:
                self._values[key] = value
                return
        done(None, value)

    def recv_async(self, key: RendezvousKey, done) -> None:
        """Call `done(error, value)` once the value for `key` is here (maybe right now)."""
        with self._lock:
            error = self._error
            if error is None:
                if key in self._values:
                    value = self._values.pop(key)
                else:
                    if key in self._waiting:
                        raise InternalError(None, None, f"Two Recvs of {key} in one step.")
                    self._waiting[key] = done
                    return
        if error is not None:
            done(error, None)
        else:
            done(None, value)

    def recv(self, key: RendezvousKey, timeout: float | None = None):
        """The value for `key`, waiting for it (DeadlineExceededError past `timeout`)."""
        arrived = threading.Event()
        box = []

        def done(error, value):
            box.append((error, value))
            arrived.set()

        self.recv_async(key, done)
        if not arrived.wait(timeout):
            self.abort(DeadlineExceededError(None, None, f"Timed out waiting for {key}."))
            arrived.wait()
        error, value = box[0]
        if error is not None:
            raise error
        return value

    def flush(self) -> None:
        """Hand on values held back for other processes (a task's rendezvous batches its
        Sends to another task: runtime/task_server.py); here nothing is held back."""

    def on_abort(self, listener) -> None:
        """Call `listener(error)` once when the step is aborted (now, if it was): an
        executor waiting on something other than a Recv (a dequeue) learns of it too."""
        with self._lock:
            error = self._error
            if error is None:
                self._listeners.append(listener)
                return
        listener(error)

    def abort(self, error: BaseException) -> None:
        """End the step: every waiting Recv and every later call gets `error` (the first
        abort's error wins)."""
        with self._lock:
            first = self._error is None
            if first:
                self._error = error
            error = self._error
            waiting = list(self._waiting.values())
            self._waiting.clear()
            self._values.clear()
            listeners, self._listeners = (self._listeners, []) if first else ([], [])
        for done in waiting:
            done(error, None)
        for listener in listeners:
            listener(error)

    def pending(self) -> tuple:
        """(keys sent but not received, keys waited for but not sent): for diagnostics."""
        with self._lock:
            return tuple(self._values), tuple(self._waiting)
