"""The Ray backend of a cluster: every task a Ray actor, a process of its own
(docs/architecture.md, "Clusters"; the interface is runtime/cluster_backend.py).

Each task is a named, threaded actor running a TaskServer (runtime/task_server.py), named
`<cluster name>/job:<j>/replica:0/task:<i>` in the "flowjit" namespace, so any process of
the Ray cluster finds it.  A task's Send to another task is a direct actor-to-actor call of
that task's `deliver` (fire and forget; Ray moves large arrays through its shared-memory
object store, zero-copy on one node); the master waits only for each task's `run_step`.
Actors restart after a crash (`max_restarts`) with empty state; calls in flight when it
died raise, which the master turns into an UnavailableError (runtime/master.py).

This is the only module that imports Ray (the optional `distributed` extra).  If this
process is not connected to Ray, the backend starts a local instance (or connects to
`address`) and ends it on `shutdown`, after killing its actors, so no process is left
behind.  The tasks talk through this machine's own address; note that Ray maps loopback
to the machine's reachable address on purpose and its servers listen on every interface,
so a machine open to a network should be firewalled as Ray's documentation advises.
"""

from __future__ import annotations

import logging
import os
import time

try:
    import ray
except ImportError as e:   # pragma: no cover - exercised without the extra installed
    raise ImportError("LocalCluster(backend='ray') and tf.train.Server need Ray: "
                      "pip install 'flowjit[distributed]' (or pass backend='threads' to "
                      "run every task in this process).") from e

from .task_server import TaskServer

NAMESPACE = "flowjit"
_LOOKUP_SECONDS = 60.0     # how long a master waits for another process's task to appear
_TaskActor = ray.remote(TaskServer)


def actor_name(cluster: str, task: str) -> str:
    """The Ray name of `task`'s actor in cluster `cluster`."""
    return f"{cluster}{task}"


class RayTransport:
    """A task's way to the other tasks: `deliver` calls on their actors (module
    docstring).  Built in the client, used inside the actors."""

    def __init__(self, cluster: str):
        self.cluster = cluster
        self._handles: dict = {}

    def __call__(self, task: str, items) -> None:
        handle = self._handles.get(task)
        if handle is None:
            handle = self._handles[task] = ray.get_actor(actor_name(self.cluster, task),
                                                         namespace=NAMESPACE)
        handle.deliver.remote(items)

    def __reduce__(self):
        return (RayTransport, (self.cluster,))


class RayBackend:
    """Every task of a cluster a Ray actor (module docstring).  `start`: the tasks this
    process starts (default: all); the others are found by name, as started by other
    processes' servers."""

    def __init__(self, cluster: str, task_names: list, address=None, start=None):
        self.cluster = cluster
        self._names = list(task_names)
        self._started_ray = False
        if not ray.is_initialized():
            options = dict(namespace=NAMESPACE, include_dashboard=False,
                           logging_level=logging.ERROR, log_to_driver=False)
            if address is not None:
                options["address"] = address
            ray.init(**options)
            self._started_ray = True
        self._handles: dict = {}
        self._mine = []
        self.start(self._names if start is None else start)

    def start(self, tasks) -> None:
        """Start `tasks` as actors owned by this process (one that exists already, started
        by another process of the Ray cluster, is used as it is)."""
        started = []
        for task in tasks:
            if task in self._handles:
                continue
            handle = _TaskActor.options(
                name=actor_name(self.cluster, task), namespace=NAMESPACE,
                get_if_exists=True, max_restarts=-1, max_task_retries=0,
                max_concurrency=64, num_cpus=0,
            ).remote(task, self._names, RayTransport(self.cluster))
            self._handles[task] = handle
            started.append(handle)
        ray.get([h.pid.remote() for h in started])    # every task is up
        self._mine.extend(started)

    def _handle(self, task: str):
        handle = self._handles.get(task)
        if handle is not None:
            return handle
        deadline = time.monotonic() + _LOOKUP_SECONDS
        while True:
            try:
                handle = ray.get_actor(actor_name(self.cluster, task), namespace=NAMESPACE)
                break
            except ValueError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self._handles[task] = handle
        return handle

    def call(self, task: str, method: str, *args):
        return getattr(self._handle(task), method).remote(*args).future()

    def pid(self, task: str) -> int:
        return ray.get(self._handle(task).pid.remote())

    def kill(self, task: str) -> None:
        os.kill(self.pid(task), 9)    # as a crash: Ray restarts the actor

    def shutdown(self) -> None:
        for handle in self._mine:
            try:
                ray.kill(handle, no_restart=True)
            except Exception:  # noqa: BLE001 - gone already
                pass
        self._mine.clear()
        self._handles.clear()
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False
