"""Running a step placed on several devices: every device's plan (runtime/device_plan.py)
is its own executor state, joined to the others only by the rendezvous (2015 TensorFlow
paper §3.2.2, §5.3).

`execute_devices(plans, feeds, state, ...)` runs one step: every device's plan has its own
values, pending counts and allocator account, and one scheduling loop in the calling
thread multiplexes them.  Work runs on the device's own thread pool under the device's
kernel slot (runtime/devices.py), so two devices' compiled kernels run at once.
Non-blocking kernels (§5.3): a Recv registers a callback with the rendezvous, and a queue's
dequeue with the queue (`OpDef.start`), and neither holds a thread; when the value arrives
their consumers become ready (a failing step withdraws its waiting dequeues).  A graph with
more pending Recvs than threads cannot deadlock.  Each device frees a value when its last
reader on that device has run, and `device.allocator` tracks the bytes it holds (in use and
peak).

Errors: the first failure aborts the rendezvous, which hands the error to every waiting Recv
on every device; no new node starts anywhere, running ones finish, and the step raises the
first error.  At the deadline the step raises at once (DeadlineExceededError), as the
one-device executor does, and kernels still running finish unobserved.  The next step has a
fresh rendezvous, so the session keeps working.
"""

from __future__ import annotations

import collections
import itertools
import queue
import threading
import time


from ..compiler.core.node import Operation
from ..errors import DeadlineExceededError
from ..ops.registry import Trait
from . import devices, executor, gpu_values
from .clustering import ClusterStep
from .device_plan import RecvStep, SendStep, _members, key_of
from .rendezvous import Rendezvous
from .state import VariableRef

_STEP_IDS = itertools.count(1)


def execute_devices(plans, feeds: dict, state, deadline=None, trace=None,
                    cost_model=None, rendezvous=None, step_id=None) -> dict:
    """Run one step over every device's plan; returns {tensor: value} of what each device
    computed and kept (fetched tensors).  Raises the step's first error (module docstring).

    A task of a cluster (runtime/task_server.py) runs its own plan only, with the step's
    `rendezvous` and `step_id` given by the master, so its Sends reach other processes
    and their Recvs find this step's values; otherwise each step has a fresh rendezvous."""
    return _Step(plans, feeds, state, deadline, trace, cost_model, rendezvous, step_id).run()


class _Step:
    def __init__(self, plans, feeds, state, deadline, trace, cost_model, rendezvous=None,
                 step_id=None):
        self.plans = plans
        self.state = state
        self.deadline = deadline
        self.trace = trace
        self.cost_model = cost_model
        self.rendezvous = rendezvous if rendezvous is not None else Rendezvous()
        self.step_id = step_id if step_id is not None else next(_STEP_IDS)
        self.values = [dict(feeds) for _ in plans]
        self.pending = [list(p.pending) for p in plans]
        self.readers = [collections.Counter(p.readers) for p in plans]
        self.done = queue.SimpleQueue()
        self.in_flight = 0
        self.error = None
        self.cancels = []   # of the kernels waiting without a thread (OpDef.start)
        self.t0 = time.perf_counter()
        # the cost model learns from a plan's first steps, then from one step in 64
        runs = plans[0].runs if plans else 0
        self.measure = cost_model is not None and (runs < 4 or runs % 64 == 0)
        for p in plans:
            p.runs += 1
        self.on_gpu = [p.device.device_type is devices.GPU for p in plans]
        if rendezvous is not None:   # a task's step, which its master may abort
            rendezvous.on_abort(lambda error: self.done.put((None, None, error, None, None)))

    def run(self) -> dict:
        ready = collections.deque((k, i) for k, p in enumerate(self.plans) for i in p.roots)
        for p in self.plans:
            p.device.allocator.reset_peak()
        while (ready and self.error is None) or self.in_flight:
            while ready and self.error is None:
                k, i = ready.popleft()
                self.start(k, i, ready)
            self.rendezvous.flush()   # Sends to another process leave together, now
            if self.in_flight:
                timeout = None if self.deadline is None else \
                    max(0.0, self.deadline - time.monotonic())
                try:
                    k, i, exc, value, timing = self.done.get(timeout=timeout)
                except queue.Empty:
                    # as the one-device executor: the step ends at its deadline, and kernels
                    # still running finish in their pools with nobody waiting for them
                    self.fail(DeadlineExceededError(None, None, "Timed out waiting for the "
                                                    "run to finish (RunOptions.timeout_in_ms)."))
                    break
                if k is None:       # the step was aborted from outside (another task)
                    self.fail(exc)
                    continue
                self.in_flight -= 1
                if exc is not None:
                    self.fail(exc)
                elif self.error is None:
                    node = self.plans[k].nodes[i]
                    if type(node) is RecvStep:
                        tr = node.transfer
                        if tr.tensor is not None:
                            self.values[k][tr.tensor] = node.received(value)
                    elif type(node) is Operation and node.op_def.start is not None:
                        for t, v in zip(node.outputs, value):   # it waited: OpDef.start
                            self.values[k][t] = v
                    self.finish(k, i, timing, ready)
        if self.error is not None:
            for k, plan in enumerate(self.plans):     # the step's values are dropped
                plan.device.allocator.freed(sum(_nbytes(v) for t, v in self.values[k].items()
                                                if t in self._accounted[k]))
            raise self.error
        out = {}
        for k, plan in enumerate(self.plans):
            held = self.values[k]
            for t in plan.fetched:
                if t in held and t not in plan.received:   # from the device computing it
                    out[t] = gpu_values.to_host(held[t])
            plan.device.allocator.freed(sum(_nbytes(v) for t, v in held.items()
                                            if t in self._accounted[k]))
        return out

    @property
    def _accounted(self):
        acc = getattr(self, "_acc", None)
        if acc is None:
            acc = self._acc = [set() for _ in self.plans]
        return acc

    def fail(self, error):
        if self.error is None:
            self.error = self.rendezvous.error or error
            self.rendezvous.abort(self.error)
            for cancel in self.cancels:     # waiting dequeues leave their queues
                if cancel():
                    self.in_flight -= 1

    def start(self, k, i, ready):
        plan = self.plans[k]
        node = plan.nodes[i]
        kind = type(node)
        if kind is RecvStep:
            self.in_flight += 1
            started = time.perf_counter()

            def arrived(error, value, k=k, i=i, started=started):
                self.done.put((k, i, error, value,
                               (started, time.perf_counter(), threading.get_ident())))

            self.rendezvous.recv_async(key_of(node.transfer, self.step_id), arrived)
            return
        if kind is Operation and node.op_def.start is not None:
            self.start_waiting(k, i, node)
            return
        if kind is SendStep or (kind is Operation and not self.worth_a_thread(k, node)):
            started = time.perf_counter()
            try:
                with devices.running(plan.device):
                    self.run_node(k, node)
            except BaseException as e:  # noqa: BLE001 - ends the step on every device
                self.fail(e)
                return
            self.finish(k, i, (started, time.perf_counter(), threading.get_ident()), ready)
            return
        self.in_flight += 1
        plan.device.pool.submit(self.task, k, i)

    def start_waiting(self, k, i, op):
        """Start a kernel that waits without a thread (a queue's dequeue: OpDef.start)."""
        values = self.values[k]
        refs = op.op_def.ref_inputs
        inputs = [v.read(op) if type(v) is VariableRef and j not in refs else v
                  for j, v in enumerate(values[t] for t in op.inputs)]
        started = time.perf_counter()
        self.in_flight += 1

        def done(error, outputs, k=k, i=i, started=started):
            self.done.put((k, i, error, outputs,
                           (started, time.perf_counter(), threading.get_ident())))

        ctx = executor.KernelContext(op, self.state, self.deadline)
        try:
            self.cancels.append(op.op_def.start(ctx, inputs, op._attrs, done))
        except BaseException as e:  # noqa: BLE001 - bad input: ends the step
            self.in_flight -= 1
            self.fail(e)

    def worth_a_thread(self, k, node) -> bool:
        if Trait.BLOCKING in node.op_def.traits:
            return True
        values = self.values[k]
        return sum(getattr(values.get(t), "size", 0) for t in node.inputs) >= \
            executor.POOL_MIN_ELEMENTS

    def task(self, k, i):
        started = time.perf_counter()
        try:
            self.run_node(k, self.plans[k].nodes[i])
            self.done.put((k, i, None, None,
                           (started, time.perf_counter(), threading.get_ident())))
        except BaseException as e:  # noqa: BLE001 - handed to the scheduling loop
            self.done.put((k, i, e, None, None))

    def run_node(self, k, node):
        if type(node) is SendStep:
            node.send(self.values[k], self.rendezvous, self.step_id)
        else:
            if self.on_gpu[k] and type(node) is not ClusterStep:
                # a NumPy kernel on a GPU device reads host copies (runtime/gpu_values.py)
                gpu_values.host_inputs(self.values[k], _reads_of(node))
            executor.run_node(node, self.values[k], self.state, self.deadline)

    def finish(self, k, i, timing, ready):
        plan = self.plans[k]
        node = plan.nodes[i]
        values = self.values[k]
        start, end, thread = timing
        if self.trace is not None:
            self.trace.append((node, start - self.t0, end - self.t0, thread, plan.device))
        if self.measure and type(node) not in (SendStep, RecvStep):
            members = _members(node)
            for op in members:
                self.cost_model.record(op, (end - start) / len(members))
        allocator = plan.device.allocator
        accounted = self._accounted[k]
        for t in plan.produces[i]:
            v = values.get(t)
            if v is not None and t not in accounted:
                accounted.add(t)
                allocator.allocated(_nbytes(v))
        readers = self.readers[k]
        for t in plan.reads[i]:
            readers[t] -= 1
            if readers[t] == 0 and t in accounted:
                accounted.discard(t)
                allocator.freed(_nbytes(values.pop(t, None)))
        for t in plan.produces[i]:   # computed, read by no one here, not fetched
            if t in accounted and readers[t] <= 0 and t not in plan.fetched:
                accounted.discard(t)
                allocator.freed(_nbytes(values.pop(t, None)))
        pending = self.pending[k]
        for c in plan.consumers[i]:
            pending[c] -= 1
            if pending[c] == 0:
                ready.append((k, c))


def _nbytes(value) -> int:
    return gpu_values.nbytes(value)


def _reads_of(node) -> list:
    """The tensors a plan node reads (an op's inputs; a region's members' inputs)."""
    ops = getattr(node, "ops", None)
    if type(node) is Operation or not ops:
        return list(getattr(node, "inputs", ()))
    return [t for op in ops for t in op.inputs]
