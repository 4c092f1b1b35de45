"""Clusters of tasks inside this process: `flowjit.distributed.LocalCluster` and
`tf.train.Server`, with the in-process backend (docs/architecture.md, "Clusters").

A cluster (a `ClusterSpec`) is registered under a target string, `local://<id>`; a
Session created with such a target (`tf.Session(cluster.target)`, `tf.Session(server.target)`)
has one CPU device per task, named as the task (`/job:ps/replica:0/task:0/device:CPU:0`),
each with its share of the cores, and runs a step across them as a multi-device Session
does: ops are placed by their `tf.device` requests (`/job:ps/task:1`, a
`replica_device_setter`), every edge between tasks becomes a Send/Recv pair met in the
step's rendezvous, and the first error ends the step on every task.  A server's target
names its own task (`local://<id>/job:worker/task:1`); that task's device comes first, so
ops no request places go to it, as the ops of a TensorFlow client go to its own task.

Nothing leaves the process: the tasks' addresses are kept for `ClusterSpec` queries only.
Variables and queues live in the cluster's state, shared by name by every Session connected
to it (a worker's Session sees what the chief initialized and what other workers trained,
as clients of a TensorFlow cluster do); shutting the cluster down closes its queues.  A target
that is not registered here (`grpc://...`) is an InvalidArgumentError, not ignored.
"""

from __future__ import annotations

import itertools
import threading

from .. import errors
from ..compiler.core.device_spec import DeviceSpec
from .cluster_spec import ClusterSpec
from .state import SessionState

SCHEME = "local://"
_LOCK = threading.Lock()
_CLUSTERS: dict = {}        # cluster id -> ClusterSpec
_STATES: dict = {}          # cluster id -> SessionState shared by its Sessions
_IDS = itertools.count(1)


def register(spec: ClusterSpec) -> str:
    """Register `spec`; returns its target, `local://<id>`."""
    with _LOCK:
        cluster_id = str(next(_IDS))
        _CLUSTERS[cluster_id] = spec
        _STATES[cluster_id] = SessionState()
    return SCHEME + cluster_id


def shared_state(target: str) -> SessionState:
    """The variables and queues of `target`'s cluster, shared by every Session connected
    to it (in TensorFlow they live on their tasks, found by name by every client)."""
    cluster_id, _ = _split(target)
    with _LOCK:
        return _STATES[cluster_id]


def unregister(target: str) -> None:
    """Forget the cluster of `target` (Sessions already made keep their devices)."""
    cluster_id, _ = _split(target)
    with _LOCK:
        _CLUSTERS.pop(cluster_id, None)
        state = _STATES.pop(cluster_id, None)
    if state is not None:
        state.close_resources()


def task_prefixes(target: str) -> list:
    """The device-name prefixes of the tasks of `target`'s cluster, the target's own task
    first; [] for the empty target (this process's devices)."""
    if not target:
        return []
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
        spec = _CLUSTERS.get(cluster_id)
    if spec is None:
        raise errors.InvalidArgumentError(
            None, None, f"Session target {target!r}: its cluster was shut down (or never "
            "started in this process).")
    prefixes = [f"/job:{job}/replica:0/task:{i}" for job in spec.jobs
                for i in spec.task_indices(job)]
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
    """Every task of a ClusterSpec (or its dict), run in this process.

    `with LocalCluster({"ps": [...], "worker": [...]}) as cluster:` then
    `tf.Session(cluster.target)` (ops no request places go to the first task) or
    `tf.Session(cluster.task_target("worker", 1))`.  Leaving the block shuts it down."""

    def __init__(self, cluster_spec):
        self.cluster_spec = ClusterSpec(cluster_spec)
        if not self.cluster_spec.device_names():
            raise ValueError("LocalCluster needs a ClusterSpec with at least one task, got "
                             f"{self.cluster_spec}.")
        self.target = register(self.cluster_spec)

    def task_target(self, job_name: str, task_index: int) -> str:
        """The target of a Session whose own task is /job:<job_name>/task:<task_index>."""
        self.cluster_spec.task_address(job_name, task_index)   # ValueError if missing
        return f"{self.target}/job:{job_name}/task:{task_index}"

    def shutdown(self) -> None:
        """Forget the cluster: new Sessions can no longer connect to it."""
        unregister(self.target)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()


class Server:
    """`tf.train.Server(cluster, job_name, task_index)`: this process's task of a cluster.

    Servers of the same ClusterSpec share one in-process cluster; `target` is the target of
    a Session whose own task is this server's.  `join()` returns at once (no other process
    can send this task work); `create_local_server()` is a one-task cluster."""

    _shared: dict = {}   # ClusterSpec -> LocalCluster, shared by its servers

    def __init__(self, server_or_cluster_def, job_name=None, task_index=None,
                 protocol=None, config=None, start=True):
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
        with _LOCK:
            cluster = Server._shared.get(spec)
        if cluster is None or cluster.target.partition("://")[2] not in _CLUSTERS:
            cluster = LocalCluster(spec)
            with _LOCK:
                Server._shared[spec] = cluster
        self.server_def = spec
        self.job_name, self.task_index = job_name, int(task_index)
        self.target = cluster.task_target(job_name, self.task_index)

    @staticmethod
    def create_local_server(config=None, start=True) -> "Server":
        """A server of a one-task cluster ('localhost' job)."""
        del config, start
        return Server({"localhost": ["localhost:0"]}, "localhost", 0)

    def start(self) -> None:
        """Nothing to start: the task runs inside the Sessions that connect to it."""

    def join(self) -> None:
        """Returns at once (no other process can send this in-process task work)."""
