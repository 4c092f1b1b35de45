"""The master of a cluster Session: place, partition by task, register, run (OSDI 2016
§3.3; docs/architecture.md, "Clusters").

A Session whose target names a cluster (runtime/local_cluster.py) runs its steps here.
For each (fetches, feeds) signature, once:
1. prune the graph to the step's ops and place them on the cluster's task devices
   (runtime/placement.py: `tf.device("/job:ps/task:0")` requests, `replica_device_setter`,
   ops nobody places go to the Session's own task);
2. partition them per task with a Send/Recv pair on every edge between tasks
   (runtime/device_partition.py; `RunMetadata.partition_graphs` shows every task's part);
3. register with every task that has a part: the client's graph (a serialized GraphDef,
   sent again only when the graph grew) and the step's placement, from which the task
   builds its own plan (runtime/task_server.py).
Each step is then ONE call per task (`run_step` with that task's feeds), made through the
cluster's backend (runtime/cluster_backend.py), all at once.  The first error ends the step
on every task (the others are told to abort, so none waits for a Send that will not come)
and is raised against the client's own op.  A task that died (the backend's call raised)
or was restarted since it was registered is an UnavailableError: its state is gone, and
`MonitoredTrainingSession` recovers by restoring the last checkpoint on every task.
"""

from __future__ import annotations

import builtins
import concurrent.futures
import itertools
import secrets
import sys
import threading
import time

from .. import errors
from ..compiler.core.graph import Tensor
from . import device_partition, devices, placement
from .config import jit_options
from .control_flow_executor import needs_control_flow
from .executor import needed_ops
from .multi_device import control_flow_frames
from .task_server import ErrorInfo, StepSignature, task_of

_ANSWER_GRACE = 30.0    # seconds a step waits for tasks' answers after it was aborted
_RESTART_WAIT = 60.0    # seconds registration waits for a task the engine restarts


class _Registered:
    """One signature's placement and partitions, and what each task gets per step."""

    def __init__(self, handle, placed, parts, feeds_of):
        self.handle = handle
        self.placement = placed
        self.partitions = parts
        self.feeds_of = feeds_of     # task -> [fed Tensors its part reads]
        self.signature = None
        self._graph_defs = None

    def partition_graphs(self) -> list:
        if self._graph_defs is None:
            self._graph_defs = device_partition.partition_graph_defs(self.partitions,
                                                                      self.placement)
        return self._graph_defs


class Master:
    """Runs a Session's steps on a cluster's tasks (module docstring)."""

    def __init__(self, backend, task_names: list, graph, config):
        self._backend = backend
        self.devices = devices.task_devices(task_names)   # names for placement only
        self._graph = graph
        self._config = config
        jit = jit_options(config)
        self._jit = jit if jit.enabled else None
        self._key = f"master-{secrets.token_hex(6)}"
        self._sent: dict = {}          # task -> op count of the graph it has
        self._registered: set = set()  # (task, handle) registered
        self._plans: dict = {}
        self._handles = itertools.count(1)
        self._step_ids = itertools.count(secrets.randbits(40) << 20)
        self._lock = threading.Lock()
        self._cost_model = placement.CostModel()
        self._in_flight: dict = {}     # step id -> its tasks, while it runs
        self._closed = False

    # --- a step ---------------------------------------------------------------------------
    def run(self, key, tensors, targets, feeds, timeout=None, trace=False):
        """One step; returns ({tensor: value} computed by the tasks, the _Registered plan,
        the tasks' timelines)."""
        reg = self._plan(key, tensors, targets, feeds)
        tasks = list(reg.feeds_of)
        self._ensure_registered(reg, tasks)
        step_id = next(self._step_ids)
        with self._lock:
            if self._closed:
                raise errors.CancelledError(None, None, "The Session was closed.")
            self._in_flight[step_id] = tasks
        try:
            return self._step(reg, tasks, step_id, tensors, feeds, timeout, trace)
        finally:
            with self._lock:
                self._in_flight.pop(step_id, None)

    def _step(self, reg, tasks, step_id, tensors, feeds, timeout, trace):
        calls = {}
        for task in tasks:
            fed = {t.name: feeds[t] for t in reg.feeds_of[task]}
            calls[self._backend.call(task, "run_step", reg.handle, step_id, fed, timeout,
                                     trace)] = task
        values, timeline = self._gather(calls, step_id, reg, timeout)
        by_name = {t.name: t for t in tensors}
        return {by_name[n]: v for n, v in values.items() if n in by_name}, reg, timeline

    def _gather(self, calls: dict, step_id, reg, timeout):
        values, timeline = {}, []
        first = None          # the step's first error
        pending = set(calls)
        limit = None if timeout is None else time.monotonic() + timeout + _ANSWER_GRACE
        while pending:
            wait = None if limit is None else max(0.0, limit - time.monotonic())
            if first is not None:
                wait = _ANSWER_GRACE if wait is None else min(wait, _ANSWER_GRACE)
            done, pending = concurrent.futures.wait(
                pending, timeout=wait, return_when=concurrent.futures.FIRST_COMPLETED)
            if not done:
                first = first or errors.DeadlineExceededError(
                    None, None, f"Tasks {sorted(calls[f] for f in pending)} did not answer "
                                "the step in time.")
                self._abort(step_id, [calls[f] for f in pending], first)
                break
            for future in done:
                task = calls[future]
                error = self._answer(future, task, values, timeline, reg)
                if error is not None and (first is None or (
                        isinstance(first, errors.AbortedError)
                        and not isinstance(error, errors.AbortedError))):
                    if first is None:
                        self._abort(step_id, [calls[f] for f in pending], error)
                    first = error
        if first is not None:
            raise first
        return values, timeline

    def _answer(self, future, task, values, timeline, reg):
        """Take one task's answer; returns the error it reports (or None)."""
        try:
            answer = future.result()
        except Exception as e:  # noqa: BLE001 - the engine says the task died
            self._lost(task)
            return errors.UnavailableError(
                None, None, f"Task {task} died during the step ({type(e).__name__}: "
                            f"{_first_line(e)}); its variables and queues are lost.  "
                            "MonitoredTrainingSession restores the last checkpoint.")
        if answer[0] == "ok":
            values.update(answer[1])
            if answer[2]:
                timeline.extend(answer[2])
            return None
        if answer[0] == "unregistered":
            self._lost(task)
            return errors.UnavailableError(
                None, None, f"Task {task} was restarted since this Session registered its "
                            "step there; its variables and queues are lost.  "
                            "MonitoredTrainingSession restores the last checkpoint.")
        return self._rebuild(answer[1])

    def _abort(self, step_id, tasks, error) -> None:
        info = ErrorInfo(type(error).__name__, "", getattr(error, "message", str(error)),
                         "master")
        for task in tasks:
            try:
                self._backend.call(task, "abort_step", step_id, info)
            except Exception:  # noqa: BLE001 - a dead task has nothing to abort
                pass

    def _lost(self, task) -> None:
        with self._lock:
            self._sent.pop(task, None)
            self._registered = {r for r in self._registered if r[0] != task}

    def _rebuild(self, info: ErrorInfo) -> BaseException:
        """A task's error, raised again against the client's op (its creation site)."""
        op = None
        if info.op_name:
            try:
                op = self._graph.get_operation_by_name(info.op_name)
            except (KeyError, ValueError):
                op = None
        kind = getattr(errors, info.kind, None)
        if isinstance(kind, type) and issubclass(kind, errors.OpError):
            return kind(None, op, info.message)
        kind = getattr(builtins, info.kind, None)
        if isinstance(kind, type) and issubclass(kind, Exception):
            try:
                return kind(f"{info.message} (raised on task {info.task})")
            except TypeError:
                pass
        return errors.UnknownError(None, op, f"{info.kind} on task {info.task}: "
                                             f"{info.message}\n{info.where}")

    # --- registration ---------------------------------------------------------------------
    def _plan(self, key, tensors, targets, feeds) -> _Registered:
        reg = self._plans.get(key)
        if reg is not None:
            return reg
        with self._lock:
            reg = self._plans.get(key)
            if reg is not None:
                return reg
            fed = frozenset(feeds)
            ops = needed_ops(tensors, targets, fed)
            # a loop's frame or a cond's branches stay on one task, as on one machine; the
            # tasks import the graph without build contexts, so their control flow runs
            # in region nodes, which take in the ops between their parts
            colocate = control_flow_frames(ops, in_regions=True) \
                if needs_control_flow(ops) else []
            placed = placement.place(ops, self.devices,
                                     allow_soft_placement=self._config.allow_soft_placement,
                                     cost_model=self._cost_model, fed=fed, colocate=colocate,
                                     home_task=True)
            if self._config.log_device_placement:
                print(placement.placement_log(placed), file=sys.stderr, flush=True)
            parts = device_partition.partition(ops, placed, fed)
            feeds_of = {}
            for part in parts:
                reads = {t for op in part.ops for t in op.inputs if t in fed}
                feeds_of[task_of(part.device.name)] = [t for t in feeds if t in reads]
            reg = _Registered(f"{self._key}/{next(self._handles)}", placed, parts, feeds_of)
            reg.signature = StepSignature(
                placement=tuple((op.name, d.name) for op, d in placed.items()),
                fetches=tuple(t.name for t in tensors if type(t) is Tensor),
                targets=tuple(op.name for op in targets),
                feeds=tuple(t.name for t in feeds), jit=self._jit)
            self._plans[key] = reg
            return reg

    def _ensure_registered(self, reg: _Registered, tasks) -> None:
        todo = [t for t in tasks if (t, reg.handle) not in self._registered]
        if not todo:
            return
        deadline = time.monotonic() + _RESTART_WAIT
        while True:   # a task the engine is restarting answers once it is back
            try:
                return self._register(reg, todo)
            except errors.UnavailableError:
                for task in todo:
                    self._lost(task)
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _register(self, reg: _Registered, todo) -> None:
        with self._lock:
            count = len(self._graph.get_operations())
            stale = [t for t in todo if self._sent.get(t) != count]
            if stale:
                graph_def = self._graph.as_graph_def().SerializeToString()
                _wait_all({self._backend.call(t, "register_graph", self._key, graph_def): t
                           for t in stale}, "register the graph with")
                for t in stale:
                    self._sent[t] = count
            answers = _wait_all({self._backend.call(t, "register_step", reg.handle,
                                                    self._key, reg.signature): t
                                 for t in todo}, "register a step with")
            for task, info in answers.items():
                if info is not None:
                    raise self._rebuild(info)
            self._registered.update((t, reg.handle) for t in todo)

    def close(self) -> None:
        """Cancel this master's steps still running (a queue runner's step blocked on its
        queue), then tell the tasks to forget its graph and steps."""
        with self._lock:
            self._closed = True
            running = list(self._in_flight.items())
        cancelled = errors.CancelledError(None, None, "The Session was closed.")
        for step_id, tasks in running:
            self._abort(step_id, tasks, cancelled)
        for task in {t for t, _ in self._registered}:
            try:
                self._backend.call(task, "forget", self._key)
            except Exception:  # noqa: BLE001 - a dead task forgot already
                pass
        self._registered.clear()
        self._plans.clear()

    def missing_variables(self, names: list) -> list:
        """The names among `names` that no task holds a variable of yet."""
        tasks = [task_of(d.name) for d in self.devices]
        answers = _wait_all({self._backend.call(t, "uninitialized", list(names)): t
                             for t in tasks}, "ask about variables")
        held = set(names)
        for missing in answers.values():
            held -= set(names) - set(missing)
        return [n for n in names if n in held]


def _wait_all(calls: dict, what: str) -> dict:
    """{task: answer} of calls that must all succeed (UnavailableError otherwise)."""
    out = {}
    for future, task in calls.items():
        try:
            out[task] = future.result()
        except Exception as e:  # noqa: BLE001 - the engine says the task is gone
            raise errors.UnavailableError(
                None, None, f"Could not {what} task {task} ({type(e).__name__}: "
                            f"{_first_line(e)}).") from e
    return out


def _first_line(e) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
