"""The seam between flowjit's distributed runtime and the engine that runs its tasks
(docs/architecture.md, "Clusters").

The master (runtime/master.py) sees a cluster only through a `ClusterBackend`: it starts a
TaskServer (runtime/task_server.py) for every task, calls their methods and gets
`concurrent.futures.Future`s back, and learns of a task that died from a call that raised
(every TaskServer method answers errors as data, so anything raised is the engine's).
Two backends implement it:
- `ThreadBackend` (here): every task is a TaskServer object in this process, its calls run
  on a thread pool and its Sends are direct calls of the other task's `deliver`.  Quick to
  start, used by most tests, and what `LocalCluster(..., backend="threads")` runs;
- `RayBackend` (runtime/ray_backend.py): every task is a Ray actor in its own process.

`kill(task)` ends a task as a crash would (its calls in flight fail, later ones reach a
restarted task with empty state); tests use it to check recovery.
"""

from __future__ import annotations

import enum
import threading
import typing
from concurrent.futures import Future, ThreadPoolExecutor

from .. import errors
from .task_server import TaskServer


class BackendKind(enum.Enum):
    """Which engine runs a cluster's tasks."""

    THREADS = "threads"
    RAY = "ray"

    @classmethod
    def parse(cls, value) -> "BackendKind":
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            raise ValueError(f"Unknown cluster backend {value!r}: use 'ray' (a process per "
                             "task) or 'threads' (every task in this process).") from None


class ClusterBackend(typing.Protocol):
    """What the master needs of an engine (module docstring)."""

    def call(self, task: str, method: str, *args) -> Future:
        """Call TaskServer `method` of `task`; the future raises if the task died."""

    def pid(self, task: str) -> int:
        """The id of the process running `task`."""

    def kill(self, task: str) -> None:
        """End `task` as a crash would; the engine restarts it with empty state."""

    def shutdown(self) -> None:
        """Stop every task (their processes end)."""


class TaskDied(Exception):
    """A call reached a task that died (ThreadBackend's stand-in for the engine's error)."""


class ThreadBackend:
    """Every task a TaskServer in this process (module docstring)."""

    def __init__(self, task_names: list):
        self._names = list(task_names)
        self._lock = threading.Lock()
        self._servers = {t: self._start(t) for t in self._names}
        # a step blocked on a queue holds a thread: room for many (threads start lazily)
        self._pool = ThreadPoolExecutor(64, thread_name_prefix="flowjit-task")
        self._closed = False

    def _start(self, task: str) -> TaskServer:
        return TaskServer(task, self._names, transport=self._deliver)

    def _deliver(self, task, items) -> None:
        with self._lock:
            server = self._servers.get(task)
        if server is not None:
            server.deliver(items)

    def call(self, task: str, method: str, *args) -> Future:
        with self._lock:
            if self._closed:
                raise errors.CancelledError(None, None, "The cluster was shut down.")
            server = self._servers[task]
        return self._pool.submit(self._run, task, server, method, args)

    def _run(self, task, server, method, args):
        result = getattr(server, method)(*args)
        with self._lock:
            if self._servers.get(task) is not server:
                raise TaskDied(f"Task {task} died during the call.")
        return result

    def server(self, task: str) -> TaskServer:
        """The TaskServer of `task` (this process's object)."""
        with self._lock:
            return self._servers[task]

    def pid(self, task: str) -> int:
        return self.server(task).pid()

    def kill(self, task: str) -> None:
        with self._lock:
            old = self._servers[task]
            self._servers[task] = self._start(task)
        old.close()   # steps blocked on its queues wake up; its calls in flight fail

    def shutdown(self) -> None:
        with self._lock:
            self._closed = True
            servers = list(self._servers.values())
        for server in servers:
            server.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
