"""Clusters of tasks: `flowjit.distributed.LocalCluster` and `tf.train.Server`, and the
targets Sessions connect to (docs/architecture.md, "Clusters").

A cluster (a `ClusterSpec`) is registered under a target string, `local://<id>`; a Session
made with it (`tf.Session(cluster.target)`, `tf.Session(server.target)`) has one CPU device
per task, named as the task (`/job:ps/replica:0/task:0/device:CPU:0`), and runs its steps
through a master (runtime/master.py): ops are placed by their `tf.device` requests
(`/job:ps/task:1`, a `replica_device_setter`), each task gets its partition once, every
edge between tasks becomes a Send/Recv pair, and a step is one call per task.  A server's
target names its own task (`local://<id>/job:worker/task:1`); that task's device comes
first, so ops no request places go to it, as the ops of a TensorFlow client go to its own
task.

The tasks run on a backend (runtime/cluster_backend.py): `backend="ray"` (the default)
starts each task as a Ray actor, a process of its own, in the Ray cluster this process is
connected to (a new local one on loopback when none is; Ray is the optional
`distributed` extra); `backend="threads"` runs every task in this process.  Variables and
queues live on their tasks, shared by name by every Session connected to the cluster (a
worker's Session sees what the chief initialized and what other workers trained, as
clients of a TensorFlow cluster do).  Shutting a cluster down ends its tasks (and the Ray
instance it started).  A target that is not registered here (`grpc://...`) is an
InvalidArgumentError, not ignored.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
import time

from .. import errors
from ..compiler.core.device_spec import DeviceSpec
from .cluster_backend import BackendKind, ThreadBackend
from .cluster_spec import ClusterSpec
from .master import Master

SCHEME = "local://"
_LOCK = threading.Lock()
_CLUSTERS: dict = {}        # cluster id -> LocalCluster
_IDS = itertools.count(1)


def task_names(spec: ClusterSpec) -> list:
    """The device-name prefixes of the tasks of `spec`, in job and task order."""
    return [f"/job:{job}/replica:0/task:{i}" for job in spec.jobs
            for i in spec.task_indices(job)]


def connect(target: str, graph, config) -> Master:
    """A master running `graph`'s steps on the cluster of `target` (module docstring)."""
    prefixes = task_prefixes(target)
    cluster_id, _ = _split(target)
    with _LOCK:
        cluster = _CLUSTERS[cluster_id]
    return Master(cluster.backend, prefixes, graph, config)


def task_prefixes(target: str) -> list:
    """The device-name prefixes of the tasks of `target`'s cluster, the target's own task
    first."""
    if not isinstance(target, str):
        raise TypeError(f"A Session target must be a string, got {target!r}.")
    if not target.startswith(SCHEME):
        raise errors.InvalidArgumentError(
            None, None, f"Session target {target!r} is not a cluster this process knows. "
            "flowjit runs a cluster's tasks in this process: make one with "
            "flowjit.distributed.LocalCluster(cluster_spec) or tf.train.Server(...) and "
            "pass its .target; '' runs on this process's devices.")
    cluster_id, own = _split(target)
    with _LOCK:
        cluster = _CLUSTERS.get(cluster_id)
    if cluster is None:
        raise errors.InvalidArgumentError(
            None, None, f"Session target {target!r}: its cluster was shut down (or never "
            "started in this process).")
    spec = cluster.cluster_spec
    prefixes = task_names(spec)
    if own is not None:
        mine = f"/job:{own.job}/replica:0/task:{own.task}"
        if mine not in prefixes:
            raise errors.InvalidArgumentError(
                None, None, f"Session target {target!r} names a task its cluster does not "
                f"have; the tasks are {', '.join(spec.device_names())}.")
        prefixes.remove(mine)
        prefixes.insert(0, mine)
    return prefixes


def _split(target: str) -> tuple:
    """(cluster id, DeviceSpec of the target's own task or None)."""
    rest = target[len(SCHEME):]
    cluster_id, slash, task = rest.partition("/")
    return cluster_id, (DeviceSpec.parse("/" + task) if slash else None)


class LocalCluster:
    """Every task of a ClusterSpec (or its dict), started on this machine.

    `with LocalCluster({"ps": [...], "worker": [...]}) as cluster:` then
    `tf.Session(cluster.target)` (ops no request places go to the first task) or
    `tf.Session(cluster.task_target("worker", 1))`.  Leaving the block shuts it down.
    `backend`: "ray" (a Ray actor per task; `address` is passed to `ray.init` when this
    process is not connected to Ray yet, None starting a local instance on loopback) or
    "threads" (every task in this process).  The tasks' addresses in the spec are only
    names: Ray chooses the ports.  With Ray, `name` names the actors (so other processes
    find them) and `start_tasks` limits the tasks this process starts (the others are
    found by name when a step needs them: `tf.train.Server`)."""

    def __init__(self, cluster_spec, backend="ray", address=None, name=None,
                 start_tasks=None):
        self.cluster_spec = ClusterSpec(cluster_spec)
        names = task_names(self.cluster_spec)
        if not names:
            raise ValueError("LocalCluster needs a ClusterSpec with at least one task, got "
                             f"{self.cluster_spec}.")
        self.backend_kind = BackendKind.parse(backend)
        with _LOCK:
            cluster_id = str(next(_IDS))
        if self.backend_kind is BackendKind.RAY:
            from .ray_backend import RayBackend   # Ray is optional: imported only here
            # actors are named after `name` (Servers: the spec), so every process of
            # the cluster finds the same ones; a LocalCluster's own are unique
            self.backend = RayBackend(name or f"c{os.getpid()}-{cluster_id}", names,
                                      address=address, start=start_tasks)
        else:
            self.backend = ThreadBackend(names)
        with _LOCK:
            _CLUSTERS[cluster_id] = self
        self.target = SCHEME + cluster_id

    def task_pid(self, job_name: str, task_index: int) -> int:
        """The id of the process running /job:<job_name>/task:<task_index>."""
        self.cluster_spec.task_address(job_name, task_index)
        return self.backend.pid(f"/job:{job_name}/replica:0/task:{task_index}")

    def task_stats(self) -> dict:
        """{task name: what it did since it started}: steps run and bytes sent to other
        tasks, received from them, fed by clients and returned to them."""
        names = task_names(self.cluster_spec)
        calls = {t: self.backend.call(t, "stats") for t in names}
        return {t: future.result() for t, future in calls.items()}

    def kill_task(self, job_name: str, task_index: int) -> None:
        """End a task as a crash would (for fault-tolerance tests); the backend restarts
        it with empty state, and the next step of every Session learns it."""
        self.cluster_spec.task_address(job_name, task_index)
        self.backend.kill(f"/job:{job_name}/replica:0/task:{task_index}")

    def task_target(self, job_name: str, task_index: int) -> str:
        """The target of a Session whose own task is /job:<job_name>/task:<task_index>."""
        self.cluster_spec.task_address(job_name, task_index)   # ValueError if missing
        return f"{self.target}/job:{job_name}/task:{task_index}"

    def shutdown(self) -> None:
        """End every task (and the Ray instance this cluster started); new Sessions can no
        longer connect to it."""
        cluster_id, _ = _split(self.target)
        with _LOCK:
            mine = _CLUSTERS.pop(cluster_id, None)
        if mine is not None:
            self.backend.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()


class Server:
    """`tf.train.Server(cluster, job_name, task_index)`: this process's task of a cluster.

    Servers of the same ClusterSpec in this process share one LocalCluster.  With Ray (the
    default `backend`) a server starts its own task as an actor named after the spec and
    owned by this process (it ends with the process, as a TensorFlow task does); servers
    of the same spec in other processes connected to the same Ray cluster (`ray start`,
    then RAY_ADDRESS, or `ray.init(address=...)` before the server) start theirs, and a
    Session finds every task by name.  `target` is the
    target of a Session whose own task is this server's.  `join()` returns at once (the
    task runs in its actor, or in this process's Sessions with backend="threads");
    `create_local_server()` is a one-task cluster in this process."""

    _shared: dict = {}   # ClusterSpec -> LocalCluster, shared by its servers

    def __init__(self, server_or_cluster_def, job_name=None, task_index=None,
                 protocol=None, config=None, start=True, backend="ray"):
        del protocol, config, start
        spec = ClusterSpec(server_or_cluster_def)
        if job_name is None:
            if len(spec.jobs) != 1:
                raise ValueError("tf.train.Server: job_name must be given when the cluster "
                                 f"has several jobs ({', '.join(spec.jobs)}).")
            job_name = spec.jobs[0]
        if task_index is None:
            indices = spec.task_indices(job_name)
            if len(indices) != 1:
                raise ValueError(f"tf.train.Server: task_index must be given when job "
                                 f"{job_name!r} has several tasks ({indices}).")
            task_index = indices[0]
        own = f"/job:{job_name}/replica:0/task:{int(task_index)}"
        with _LOCK:
            cluster = Server._shared.get((spec, BackendKind.parse(backend)))
        if cluster is None or cluster.target.partition("://")[2] not in _CLUSTERS:
            digest = hashlib.sha1(repr(spec.as_dict()).encode()).hexdigest()[:12]
            # with Ray, this process starts its own task only: the other processes of the
            # cluster start theirs, found by name (the spec's digest) when a step needs them
            cluster = LocalCluster(spec, backend=backend, name=f"spec-{digest}",
                                   start_tasks=[own])
            with _LOCK:
                Server._shared[(spec, cluster.backend_kind)] = cluster
        elif cluster.backend_kind is BackendKind.RAY:
            cluster.backend.start([own])
        self.server_def = spec
        self.job_name, self.task_index = job_name, int(task_index)
        self.target = cluster.task_target(job_name, self.task_index)
        self._cluster = cluster

    @staticmethod
    def create_local_server(config=None, start=True) -> "Server":
        """A server of a one-task cluster ('localhost' job), run in this process."""
        del config, start
        return Server({"localhost": ["localhost:0"]}, "localhost", 0, backend="threads")

    def start(self) -> None:
        """Nothing to start: the tasks started with the server."""

    def join(self) -> None:
        """Wait while this server's cluster runs, as a TensorFlow ps process does: with Ray,
        until the cluster is shut down (its actors live as long as this process); with
        threads, return at once (no other process can send an in-process task work)."""
        if self._cluster.backend_kind is not BackendKind.RAY:
            return
        while self._cluster.target.partition("://")[2] in _CLUSTERS:
            time.sleep(0.5)
