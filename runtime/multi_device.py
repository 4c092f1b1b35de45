"""A Session's steps on several devices: place, partition, plan per device, run.

`MultiDevicePlan.build(...)` does, once per (fetches, feeds) signature:
1. prune the graph to the ops the step needs (runtime/executor.py `needed_ops`);
2. place every op on a device (runtime/placement.py: requests, colocation, soft
   placement, the cost model); control-flow routing that is not compiled into a loop
   step is kept on one device with its frame;
3. partition the ops per device with a Send/Recv pair on every cross-device edge
   (runtime/device_partition.py);
4. build each device's plan: its own clusters, Sends and Recvs, Recvs scheduled ALAP
   (runtime/device_plan.py, runtime/recv_schedule.py).
`run(feeds, state, ...)` executes a step (runtime/device_executor.py) and returns the
fetched values.  `log_device_placement` prints TensorFlow's "op: (Type): device" lines
when a plan is built; `partition_graphs()` describes every device's partition for
`RunMetadata.partition_graphs`.

A one-device Session never comes here: runtime/session.py keeps its single-device
executor (no Send/Recv, no per-step rendezvous), after checking the placement requests.
"""

from __future__ import annotations

import sys

from . import device_executor, device_partition, device_plan, placement
from .config import PlacementOptions, RecvScheduling
from .control_flow_executor import bridges, needs_control_flow, nested_ops
from .executor import needed_ops


def control_flow_frames(ops, in_regions=False) -> list:
    """The control-flow regions of `ops` (connected nested ops: a loop's frame, a cond's
    branches), each to be kept on one device.  Control flow that carries no build context
    (an imported graph), or all of it with `in_regions` (a cluster's tasks import the
    graph), runs in a region node instead of a compiled loop step, so the ops between
    its parts join it too (control_flow_executor.bridges)."""
    nested = nested_ops(ops)
    nested |= bridges(ops, {op for op in nested if in_regions or op._cf_context is None})
    parent = {op: op for op in nested}

    def find(op):
        while parent[op] is not op:
            parent[op] = parent[parent[op]]
            op = parent[op]
        return op

    for op in nested:
        for t in op.inputs:
            if t.op in parent:
                a, b = find(op), find(t.op)
                if a is not b:
                    parent[a] = b
    regions: dict = {}
    for op in sorted(nested, key=lambda o: o._id):
        regions.setdefault(find(op), []).append(op)
    return list(regions.values())


class MultiDevicePlan:
    """One signature's placement, partitions and device plans (module docstring)."""

    def __init__(self, ops, placed, partitions, plans, fetches):
        self.ops = ops
        self.placement = placed
        self.partitions = partitions
        self.plans = plans
        self.fetches = fetches
        self._graph_defs = None

    @classmethod
    def build(cls, fetches, targets, fed, devices, config, group, cost_model,
              home_task=False):
        options: PlacementOptions = config.placement
        ops = needed_ops(fetches, targets, fed)
        colocate = control_flow_frames(ops) if needs_control_flow(ops) else []
        placed = placement.place(ops, devices, allow_soft_placement=config.allow_soft_placement,
                                 cost_model=cost_model, fed=frozenset(fed), colocate=colocate,
                                 home_task=home_task)
        if config.log_device_placement:
            print(placement.placement_log(placed), file=sys.stderr, flush=True)
        parts = device_partition.partition(ops, placed, fed, options.compress_transfers)
        plans = device_plan.build_device_plans(
            parts, placed, fetches, fed, group, cost_model,
            alap=options.recv_scheduling is RecvScheduling.ALAP)
        return cls(ops, placed, parts, plans, fetches)

    def run(self, feeds, state, deadline=None, trace=None, cost_model=None) -> dict:
        """One step: {tensor: value} of the fetched tensors computed by some device."""
        return device_executor.execute_devices(self.plans, feeds, state, deadline, trace,
                                               cost_model)

    def partition_graphs(self) -> list:
        """One GraphDef per device, with its _Send/_Recv nodes."""
        if self._graph_defs is None:
            self._graph_defs = device_partition.partition_graph_defs(self.partitions,
                                                                      self.placement)
        return self._graph_defs

    def nodes(self):
        """Every node of every device plan (Session.explain walks the clusters)."""
        for plan in self.plans:
            yield from plan.nodes
