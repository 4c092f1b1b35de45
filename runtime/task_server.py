"""One task of a cluster: the service a `/job:<j>/task:<i>` runs for the masters of its
cluster (OSDI 2016 §3.3; docs/architecture.md, "Clusters").

A `TaskServer` holds its task's state (variables and queues, shared by name by every
client, as TensorFlow's tasks do) and what masters registered with it:
- `register_graph(key, graph_def_bytes)`: a client's graph, imported once into a Graph of
  its own (names unchanged);
- `register_step(handle, key, signature)`: a step of that graph, with the master's
  placement ({op name: device name}), fetches, targets and feeds.  The task rebuilds the
  step's partitions from the placement (the same function the master used, so every task
  agrees on every Send/Recv pair) and keeps the plan of its own device: its compiled
  clusters, its Sends and its Recvs.  Recvs are scheduled ALAP without a cost model, so
  every task computes the same anchors;
- `run_step(handle, step_id, feeds, timeout)`: one step of a registered plan, the master's
  only call per task per step.  Sends to another task go through `transport(task, items)`
  ([(RendezvousKey, value)], batched per task); values from other tasks arrive with
  `deliver(items)`, possibly before the step starts here; `abort_step(step_id, error)`
  ends the step when another task failed.

Nothing a TaskServer returns is an exception: `run_step` answers ("ok", values, trace) or
("error", ErrorInfo), so an error crosses a process boundary as plain data and the master
raises it again against the client's own op (runtime/master.py).  A TaskServer is the same
object in this process (runtime/cluster_backend.py, ThreadBackend) and in a Ray actor
(runtime/ray_backend.py).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import os
import threading
import time
import traceback

from .. import errors
from ..compiler.core.graph import Graph
from ..compiler.core.graph_def import GraphDef
from ..compiler.graph_import import import_graph_def
from . import clustering, device_executor, device_partition, device_plan, devices
from .executor import needed_ops
from .rendezvous import Rendezvous
from .state import SessionState, VariableRef

_FINISHED_KEPT = 4096    # ids of ended steps remembered, so late deliveries are dropped


@dataclasses.dataclass(frozen=True)
class ErrorInfo:
    """An error of a task's step, as plain data: the exception's class name, the name of
    the op at fault (or ''), its message, and where in the task it was raised."""

    kind: str
    op_name: str
    message: str
    task: str
    where: str = ""


@dataclasses.dataclass(frozen=True)
class StepSignature:
    """What a master registers for one step: where each op runs and what the step feeds
    and fetches (tensor and op names of the registered graph)."""

    placement: tuple      # ((op name, device name), ...)
    fetches: tuple        # tensor names
    targets: tuple        # op names
    feeds: tuple          # tensor names
    jit: object           # runtime.config.JitOptions, or None: reference kernels only


def task_of(device_name: str) -> str:
    """'/job:ps/replica:0/task:0' of '/job:ps/replica:0/task:0/device:CPU:0'."""
    return device_name.rpartition("/device:")[0]


def error_info(exc: BaseException, task: str) -> ErrorInfo:
    """`exc` as an ErrorInfo (module docstring)."""
    op = getattr(exc, "op", None)
    message = exc.message if isinstance(exc, errors.OpError) else str(exc)
    where = "" if isinstance(exc, errors.OpError) else \
        "".join(traceback.format_exception(exc)[-3:])
    return ErrorInfo(type(exc).__name__, getattr(op, "name", "") or "", message, task, where)


class _StepRendezvous(Rendezvous):
    """A step's rendezvous on one task: Sends to this task's devices stay here; Sends to
    another task wait in an outbox until the executor has nothing left to start
    (`flush`), then leave in one call per task, so the values a cluster produces for a
    task travel together."""

    def __init__(self, own_task: str, transport):
        super().__init__()
        self._own = own_task
        self._transport = transport
        self._outbox: dict = {}
        self._out_lock = threading.Lock()

    def send(self, key, value) -> None:
        dst = task_of(key.dst_device)
        if dst == self._own:
            super().send(key, value)
            return
        if self.error is not None:
            raise self.error
        with self._out_lock:
            self._outbox.setdefault(dst, []).append((key, value))

    def flush(self) -> None:
        with self._out_lock:
            outbox, self._outbox = self._outbox, {}
        for task, items in outbox.items():
            self._transport(task, items)

    def accept(self, key, value) -> None:
        """A value another task sent here."""
        super().send(key, value)


class _TaskPlan:
    """A registered step: this task's device plan, and the tensors it reads and fetches."""

    def __init__(self, graph, signature: StepSignature, own_device, all_devices):
        by_name = {d.name: d for d in all_devices}
        placement = {graph.get_operation_by_name(name): by_name[device]
                     for name, device in signature.placement}
        self.fetches = [graph.get_tensor_by_name(n) for n in signature.fetches]
        targets = [graph.get_operation_by_name(n) for n in signature.targets]
        self.feeds = {n: graph.get_tensor_by_name(n) for n in signature.feeds}
        fed = set(self.feeds.values())
        ops = needed_ops(self.fetches, targets, fed)
        missing = [op.name for op in ops if op not in placement]
        if missing:
            raise errors.InternalError(None, None, f"The master placed no device for "
                                                   f"{missing[:5]}.")
        parts = device_partition.partition(ops, placement, fed)
        group = None if signature.jit is None else functools.partial(
            clustering.form_clusters, options=signature.jit)
        plans = device_plan.build_device_plans(parts, placement, self.fetches, fed, group,
                                               None, alap=True)
        self.plans = [p for p in plans if p.device is own_device]


class TaskServer:
    """The service of one task (module docstring).  `transport(task, items)` hands values
    to another task's `deliver`."""

    def __init__(self, task: str, task_names: list, transport=None):
        self.task = task
        self.state = SessionState()
        self._devices = devices.task_devices(list(task_names))
        self._own = next(d for d in self._devices if task_of(d.name) == task)
        self._transport = transport
        self._lock = threading.Lock()
        self._graphs: dict = {}
        self._plans: dict = {}
        self._steps: dict = {}
        self._finished = collections.OrderedDict()
        self._stats = collections.Counter()   # steps and bytes moved (`stats`)

    # --- what masters call ----------------------------------------------------------------
    def pid(self) -> int:
        """The id of the process this task runs in."""
        return os.getpid()

    def register_graph(self, key: str, graph_def_bytes: bytes) -> None:
        """Import a client's graph under `key` (replacing an older version of it: steps
        registered before keep the graph they were built from)."""
        graph_def = GraphDef()
        graph_def.ParseFromString(graph_def_bytes)
        graph = Graph()
        with graph.as_default():
            import_graph_def(graph_def, name="")
        with self._lock:
            self._graphs[key] = graph

    def register_step(self, handle: str, key: str, signature: StepSignature):
        """Build this task's plan of a step of graph `key`; None, or an ErrorInfo."""
        try:
            graph = self._graphs[key]
            plan = _TaskPlan(graph, signature, self._own, self._devices)
        except Exception as e:  # noqa: BLE001 - answered as data
            return error_info(e, self.task)
        with self._lock:
            self._plans[handle] = plan
        return None

    def run_step(self, handle: str, step_id: int, feeds: dict, timeout=None,
                 trace: bool = False):
        """Run this task's part of step `step_id` (module docstring); ("unregistered",)
        when no master registered `handle` here (this task was restarted since)."""
        plan = self._plans.get(handle)
        if plan is None:
            return ("unregistered",)
        rendezvous = self._rendezvous(step_id)
        try:
            fed = {plan.feeds[name]: value for name, value in feeds.items()}
            self._count("fed", feeds.values())
            deadline = None if timeout is None else time.monotonic() + timeout
            events = [] if trace else None
            with self.state.running_step():
                out = device_executor.execute_devices(plan.plans, fed, self.state, deadline,
                                                      events, None, rendezvous, step_id)
            values = {t.name: v.read() if type(v) is VariableRef else v
                      for t, v in out.items()}
            self._count("fetched", values.values())
            with self._lock:
                self._stats["steps"] += 1
            timeline = [(n.name, n.type, s, e, th, d.name) for n, s, e, th, d in events] \
                if trace else None
            return ("ok", values, timeline)
        except Exception as e:  # noqa: BLE001 - answered as data
            rendezvous.abort(e)
            return ("error", error_info(e, self.task))
        finally:
            self._end(step_id)

    def stats(self) -> dict:
        """What this task did since it started: steps run, and the bytes it sent to other
        tasks, received from them, was fed by masters and returned to them."""
        with self._lock:
            return {k: int(self._stats[k]) for k in ("steps", "sent", "received", "fed",
                                                     "fetched")}

    def deliver(self, items) -> None:
        """Values another task sent to this one, [(RendezvousKey, value)], for steps that
        may not have started here yet."""
        self._count("received", [v for _, v in items])
        for key, value in items:
            with self._lock:
                if key.step_id in self._finished:
                    continue   # the step ended here already (it was aborted)
            try:
                self._rendezvous(key.step_id).accept(key, value)
            except errors.OpError:
                pass   # the step was aborted here: the sender learns it from the master

    def abort_step(self, step_id: int, info: ErrorInfo) -> None:
        """End step `step_id` here: another task failed with `info`."""
        with self._lock:
            if step_id in self._finished:
                return
        if info.kind == "CancelledError":   # the client closed its Session
            error = errors.CancelledError(None, None, info.message)
        else:
            error = errors.AbortedError(None, None, f"Step aborted: task {info.task} failed "
                                                    f"with {info.kind}: {info.message}")
        self._rendezvous(step_id).abort(error)

    def uninitialized(self, names: list) -> list:
        """The names among `names` that are not variables of this task (yet)."""
        return [n for n in names if n not in self.state.variables]

    def forget(self, key: str) -> None:
        """Drop the graph registered under `key` and the steps whose handles start with it
        (a client closed its Session)."""
        with self._lock:
            self._graphs.pop(key, None)
            for handle in [h for h in self._plans if h.startswith(key + "/")]:
                del self._plans[handle]

    def close(self) -> None:
        """End this task: its running steps are cancelled, its queues closed (blocked steps
        wake up) and its device's threads stopped."""
        with self._lock:
            running = list(self._steps.values())
            self._plans.clear()
        for rendezvous in running:
            rendezvous.abort(errors.CancelledError(None, None, f"Task {self.task} ended."))
        self.state.close_resources()
        for device in self._devices:
            device.close()

    # --- internals ------------------------------------------------------------------------
    def _rendezvous(self, step_id: int) -> _StepRendezvous:
        with self._lock:
            found = self._steps.get(step_id)
            if found is None:
                found = self._steps[step_id] = _StepRendezvous(self.task, self._send)
            return found

    def _end(self, step_id: int) -> None:
        with self._lock:
            self._steps.pop(step_id, None)
            self._finished[step_id] = True
            while len(self._finished) > _FINISHED_KEPT:
                self._finished.popitem(last=False)

    def _count(self, what: str, values) -> None:
        total = sum(getattr(v, "nbytes", 0) for v in values)
        with self._lock:
            self._stats[what] += total

    def _send(self, task: str, items) -> None:
        self._count("sent", [v for _, v in items])
        if self._transport is None:
            raise errors.InternalError(None, None, f"Task {self.task} cannot reach {task}.")
        self._transport(task, items)
