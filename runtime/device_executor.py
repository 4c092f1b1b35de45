"""Running a step placed on several devices: one plan per device, joined only by the
rendezvous (2015 TensorFlow paper §3.2.2, §5.2, §5.3).

`build_device_plans(partitions, ...)` turns each device's partition (runtime/
device_partition.py) into a `DevicePlan`: its ops, grouped into compiled clusters of that
device alone (so clusters never span devices and Send/Recv sit between them), plus a
`SendStep` per transfer out and a `RecvStep` per transfer in, linked by dependency counts.
Recvs start as late as the critical path allows (ALAP, runtime/recv_schedule.py) unless
the config asks for ASAP.  A partition that still holds control-flow routing (Switch,
Merge, ... not compiled into a loop step) runs those ops as one `ControlFlowRegion` node
with the control-flow executor.

`execute_devices(plans, feeds, state, ...)` runs one step: every device's plan is its own
executor state (values, pending counts, its allocator's account), multiplexed by one
scheduling loop in the calling thread.  Work runs on the device's own thread pool under the
device's kernel slot (runtime/devices.py), so two devices' compiled kernels run at once.
Non-blocking kernels (§5.3): a Recv registers a callback with the rendezvous, and a queue's
dequeue with the queue (`OpDef.start`), and neither holds a thread; when the value arrives
their consumers become ready (a failing step withdraws its waiting dequeues).  A graph with
more pending Recvs than threads cannot deadlock.  Each device frees a value when its last
reader on that device has run, and `device.allocator` tracks the bytes it holds (in use and
peak).

Errors: the first failure aborts the rendezvous, which hands the error to every waiting
Recv on every device; no new node starts anywhere, running ones finish, and the step
raises the first error (a deadline is such an error too).  The next step has a fresh
rendezvous, so the session keeps working.
"""

from __future__ import annotations

import collections
import itertools
import queue
import threading
import time

import numpy as np

from ..compiler.core.node import Operation
from ..errors import DeadlineExceededError
from ..ops.registry import Trait
from . import devices, executor, recv_schedule
from .control_flow_executor import ControlFlowPlan, execute_control_flow, nested_ops
from .rendezvous import Rendezvous, RendezvousKey
from .state import VariableRef

_ROUTING = frozenset({"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond"})
_CONTROL_TOKEN = np.zeros((), np.bool_)
_STEP_IDS = itertools.count(1)


class SendStep:
    """Hands one tensor (or a control token) to the rendezvous for another device."""

    type = "_Send"
    ops = ()

    def __init__(self, transfer):
        self.transfer = transfer
        self.name = transfer.edge_name
        self.inputs = (transfer.tensor,) if transfer.tensor is not None else ()
        self.controls = (transfer.control,) if transfer.control is not None else ()

    def send(self, values, rendezvous, step_id):
        tr = self.transfer
        value = _CONTROL_TOKEN
        if tr.tensor is not None:
            value = values[tr.tensor]
            if type(value) is VariableRef:
                value = value.read(tr.tensor.op)
            if tr.compressed:
                value = np.asarray(value).astype(np.float16)
        rendezvous.send(key_of(tr, step_id), value)


class RecvStep:
    """Waits (without a thread) for one tensor or control token from another device."""

    type = "_Recv"
    ops = ()
    inputs = ()
    controls = ()

    def __init__(self, transfer):
        self.transfer = transfer
        self.name = transfer.edge_name.replace("_send_to_", "_recv_at_")

    def received(self, value):
        if self.transfer.compressed:
            return np.asarray(value).astype(np.float32)
        return value


class ControlFlowRegion:
    """A device's control-flow ops (branches and loops not compiled whole), run together
    by the control-flow executor; its inputs come from the rest of the plan."""

    type = "ControlFlow"

    def __init__(self, ops, readers_outside, fetched):
        self.ops = tuple(ops)
        members = set(ops)
        self.name = f"control_flow_{ops[0].name}"
        self.inputs = tuple(dict.fromkeys(t for op in ops for t in op.inputs
                                          if t.op not in members))
        self.controls = tuple(dict.fromkeys(c for op in ops for c in op.control_inputs
                                            if c not in members))
        self.outputs = [t for op in ops for t in op.outputs
                        if t in fetched or readers_outside.get(t)]

    def run(self, values, state, deadline):
        plan = ControlFlowPlan(list(self.ops), self.outputs, set(self.inputs))
        scratch = {t: values[t] for t in self.inputs}
        execute_control_flow(plan, scratch, state, deadline, None)
        for t in self.outputs:
            values[t] = scratch[t]


def key_of(transfer, step_id, frame="", iteration=0) -> RendezvousKey:
    return RendezvousKey(transfer.src.name, transfer.dst.name, transfer.name, step_id, frame,
                         iteration)


class DevicePlan:
    """One device's nodes in a step, linked (module docstring)."""

    def __init__(self, device, nodes, fed, fetched):
        self.device = device
        self.nodes = nodes
        produced_by, op_node = {}, {}
        for i, node in enumerate(nodes):
            if type(node) is RecvStep:
                tr = node.transfer
                produced_by[tr.tensor if tr.tensor is not None else ("ctrl", tr.control)] = i
                continue
            for op in _members(node):
                op_node[op] = i
                for t in op.outputs:
                    produced_by[t] = i
        self.reads, deps = [], []
        for i, node in enumerate(nodes):
            reads, d = _reads(node), set()
            for t in reads:
                if t not in fed:
                    d.add(produced_by[t])
            for c in _controls(node):
                j = op_node.get(c)
                d.add(j if j is not None else produced_by[("ctrl", c)])
            d.discard(i)
            self.reads.append([t for t in reads if t not in fed and t not in fetched])
            deps.append(d)
        self.deps = deps
        self.produces = [_produced(node) for node in nodes]
        self.fetched = fetched
        self.received = {n.transfer.tensor for n in nodes if type(n) is RecvStep}
        self.runs = 0   # steps run (the cost model measures the first ones)
        self.relink()

    def relink(self):
        """Pending counts, consumer lists and roots from `deps` (after ALAP edges too)."""
        self.pending = [len(d) for d in self.deps]
        self.consumers = [[] for _ in self.nodes]
        for i, d in enumerate(self.deps):
            for j in d:
                self.consumers[j].append(i)
        self.readers = collections.Counter(t for r in self.reads for t in r)
        self.roots = [i for i, p in enumerate(self.pending) if p == 0]


def _members(node) -> tuple:
    return (node,) if type(node) is Operation else node.ops


def _reads(node) -> list:
    if type(node) is Operation:
        return list(node.inputs)
    if type(node) in (SendStep, RecvStep, ControlFlowRegion):
        return list(node.inputs)
    members = set(node.ops)
    return list(dict.fromkeys(t for op in node.ops for t in op.inputs if t.op not in members))


def _controls(node) -> list:
    if type(node) is Operation:
        return list(node.control_inputs)
    if type(node) in (SendStep, RecvStep, ControlFlowRegion):
        return list(node.controls)
    members = set(node.ops)
    return [c for op in node.ops for c in op.control_inputs if c not in members]


def _produced(node) -> list:
    if type(node) is RecvStep:
        return [node.transfer.tensor] if node.transfer.tensor is not None else []
    return [t for op in _members(node) for t in op.outputs]


def build_device_plans(partitions, placement, fetches, fed, group=None, cost_model=None,
                       alap=True) -> list:
    """DevicePlans for `partitions` of ops placed by `placement` (module docstring);
    `group(ops, fetches, fed, ...)` is the session's clustering (None: every op runs with
    its reference kernel)."""
    fed = set(fed)
    fetched = set(fetches)
    nodes = _group(partitions, placement, fetches, fed, group)
    plans = []
    for part in partitions:
        mine = [RecvStep(tr) for tr in part.recvs] + nodes.get(part.device, []) + \
            [SendStep(tr) for tr in part.sends]
        plans.append(DevicePlan(part.device, mine, fed, fetched))
    if alap:
        recv_schedule.schedule_alap(plans, cost_model)
    return plans


def _group(partitions, placement, fetches, fed, group) -> dict:
    """{device: its nodes}: clusters of each device's ops, and one ControlFlowRegion per
    device for routing ops that did not become loop steps.  Clusters of every device are
    formed in ONE pass, coloured by device, so the cycle check sees the paths through
    other devices: two clusters that each wait for the other's Send would hang the step."""
    all_ops = sorted((op for part in partitions for op in part.ops), key=lambda op: op._id)
    needs_cf = any(op.type in _ROUTING or op._cf_context is not None for op in all_ops)
    nested = nested_ops(all_ops) if needs_cf else set()
    sent = [tr.tensor for part in partitions for tr in part.sends if tr.tensor is not None]
    wanted = list(dict.fromkeys(list(fetches) + sent))
    if group is None:
        nodes = all_ops
    else:
        nodes = group(all_ops, wanted, fed, exclude=nested.__contains__, loops=needs_cf,
                      colour=placement.get)
    by_device: dict = {}
    for n in nodes:
        device = placement[n if type(n) is Operation else n.ops[0]]
        by_device.setdefault(device, []).append(n)
    if nested:
        for device, mine in by_device.items():
            by_device[device] = _with_region(mine, nested, wanted)
    return by_device


def _with_region(nodes, nested, fetches) -> list:
    left = [n for n in nodes if type(n) is Operation and n in nested]
    if not left:
        return nodes
    readers = collections.defaultdict(list)
    for n in nodes:
        for t in _reads(n):
            readers[t].append(n)
    members = set(left)
    outside = {t: [r for r in rs if r not in members] for t, rs in readers.items()}
    region = ControlFlowRegion(left, outside, set(fetches))
    rest = [n for n in nodes if not (type(n) is Operation and n in members)]
    return rest + [region]


def execute_devices(plans, feeds: dict, state, deadline=None, trace=None,
                    cost_model=None) -> dict:
    """Run one step over every device's plan; returns {tensor: value} of what each device
    computed and kept (fetched tensors).  Raises the step's first error (module docstring)."""
    return _Step(plans, feeds, state, deadline, trace, cost_model).run()


class _Step:
    def __init__(self, plans, feeds, state, deadline, trace, cost_model):
        self.plans = plans
        self.state = state
        self.deadline = deadline
        self.trace = trace
        self.cost_model = cost_model
        self.rendezvous = Rendezvous()
        self.step_id = next(_STEP_IDS)
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

    def run(self) -> dict:
        ready = collections.deque((k, i) for k, p in enumerate(self.plans) for i in p.roots)
        for p in self.plans:
            p.device.allocator.reset_peak()
        while (ready and self.error is None) or self.in_flight:
            while ready and self.error is None:
                k, i = ready.popleft()
                self.start(k, i, ready)
            if self.in_flight:
                timeout = None if self.deadline is None else \
                    max(0.0, self.deadline - time.monotonic())
                try:
                    k, i, exc, value, timing = self.done.get(timeout=timeout)
                except queue.Empty:
                    self.fail(DeadlineExceededError(None, None, "Timed out waiting for the "
                                                    "run to finish (RunOptions.timeout_in_ms)."))
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
                    out[t] = held[t]
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
    return value.nbytes if isinstance(value, np.ndarray) else 0
