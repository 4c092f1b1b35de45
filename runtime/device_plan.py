"""One device's part of a multi-device step, as a plan: its nodes and their links.

`build_device_plans(partitions, placement, ...)` turns each device's partition (runtime/
device_partition.py) into a `DevicePlan`: its ops, grouped into compiled clusters of that
device alone (so clusters never span devices and Send/Recv sit between them), plus a
`SendStep` per transfer out and a `RecvStep` per transfer in, linked by dependency counts.
Clusters of every device are formed in ONE pass, coloured by device, so the cycle check
sees the paths through other devices.  Recvs start as late as the critical path allows
(ALAP, runtime/recv_schedule.py) unless the config asks for ASAP.  A partition that still
holds control-flow routing (Switch, Merge, ... not compiled into a loop step) runs those
ops as one `ControlFlowRegion` node with the control-flow executor.  The plans are run by
runtime/device_executor.py.
"""

from __future__ import annotations

import collections

import numpy as np

from ..compiler.core.node import Operation
from . import gpu_values, recv_schedule
from .control_flow_executor import (ControlFlowPlan, bridges, execute_control_flow,
                                    nested_ops)
from .devices import CPU
from .rendezvous import RendezvousKey
from .state import VariableRef

_ROUTING = frozenset({"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond"})
_CONTROL_TOKEN = np.zeros((), np.bool_)


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
                value = np.asarray(gpu_values.to_host(value)).astype(np.float16)
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
        """The value in the receiving device's memory (a host<->GPU copy where the memories
        differ: runtime/gpu_values.py)."""
        if self.transfer.compressed:
            value = np.asarray(value).astype(np.float32)
        return gpu_values.arrived_on(self.transfer.dst, value)


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
                      colour=placement.get, target_of=lambda op: _target_of(placement[op]))
    # a top-level op between two control-flow ops left for the region (a cond's predicate
    # computed from a loop's Exit) would wait for the region while the region waits for
    # it: it joins the region, and the clusters are formed again without it
    extra = bridges(all_ops, {n for n in nodes if type(n) is Operation and n in nested})
    if extra:
        nested = nested | extra
        if group is not None:
            nodes = group(all_ops, wanted, fed, exclude=nested.__contains__, loops=needs_cf,
                          colour=placement.get,
                          target_of=lambda op: _target_of(placement[op]))
    by_device: dict = {}
    for n in nodes:
        device = placement[n if type(n) is Operation else n.ops[0]]
        by_device.setdefault(device, []).append(n)
    if nested:
        for device, mine in by_device.items():
            by_device[device] = _with_region(mine, nested, wanted)
    return by_device


def _target_of(device):
    """The target a device's clusters compile with: a CPU's is the session's choice (None),
    another type's its own first (a GPU's: CUDA)."""
    return None if device.device_type is CPU else device.targets[0]


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
