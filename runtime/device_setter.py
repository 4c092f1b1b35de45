"""`tf.train.replica_device_setter`: variables on parameter-server tasks, the rest on the
worker, for between-graph replication (OSDI 2016 paper §4.4).

The setter is a device function for `tf.device(...)`: for each op created in its scope it
returns the op's device.  Ops of the parameter-server kinds (`STANDARD_PS_OPS`: variables
and mutable tables) go to `ps_device` with a task chosen by `ps_strategy` (round-robin
over the `ps_tasks` tasks by default, so successive variables spread over the tasks);
every other op goes to `worker_device`.  With `merge_devices` (the default) what inner
scopes already set wins over the setter's choice field by field (a variable created under
`tf.device("/cpu:0")` inside the setter's scope goes to `/job:ps/task:k/device:CPU:0`); the
task is only chosen when the op does not name a different job.  With a `cluster` (a
ClusterSpec or its dict) the number of ps tasks is that of the ps job, and no setter is
returned (None) when the cluster has no such job, or when there are no ps tasks, as in
TensorFlow.
"""

from __future__ import annotations

import dataclasses

from ..compiler.core.device_spec import DeviceSpec
from .cluster_spec import ClusterSpec

STANDARD_PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable",
                   "MutableHashTableV2", "MutableHashTableOfTensors",
                   "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
                   "MutableDenseHashTableV2", "VarHandleOp",
                   "BoostedTreesEnsembleResourceHandleOp",
                   "BoostedTreesQuantileStreamResourceHandleOp",
                   "ResourceConditionalAccumulator", "DecisionTree",
                   "DecisionTreeResource", "TensorForestTreeResourceHandleOp",
                   "TensorForestDecisionTreeResourceHandleOp")


class RoundRobinStrategy:
    """Ps tasks in turn: 0, 1, ..., ps_tasks - 1, 0, ... (one per placed op)."""

    def __init__(self, num_tasks: int):
        self._num_tasks = num_tasks
        self._next_task = 0

    def __call__(self, unused_op) -> int:
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


def replica_device_setter(ps_tasks: int = 0, ps_device: str = "/job:ps",
                          worker_device: str = "/job:worker", merge_devices: bool = True,
                          cluster=None, ps_ops=None, ps_strategy=None):
    """A device function placing parameter-server ops on `ps_device` tasks and other ops
    on `worker_device` (module docstring); None when there are no ps tasks."""
    if cluster is not None:
        spec = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec(cluster)
        ps_job = DeviceSpec.parse(ps_device).job
        if ps_job not in spec.jobs:
            return None
        ps_tasks = spec.num_tasks(ps_job)
    if not isinstance(ps_tasks, int) or ps_tasks < 0:
        raise ValueError(f"replica_device_setter: ps_tasks must be a count of tasks (an "
                         f"int >= 0), got {ps_tasks!r}.")
    if ps_tasks == 0:
        return None
    if ps_strategy is None:
        ps_strategy = RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError(f"replica_device_setter: ps_strategy must be callable (op -> task "
                        f"index), got {ps_strategy!r}.")
    ps_ops = tuple(STANDARD_PS_OPS if ps_ops is None else ps_ops)
    ps_spec = DeviceSpec.parse(ps_device) if ps_device else None
    worker_spec = DeviceSpec.parse(worker_device or "")

    def device_function(op) -> str:
        current = op.device if op is not None else ""
        if not merge_devices and current:
            return current
        current_spec = DeviceSpec.parse(current or "")
        if ps_spec is not None and op is not None and op.type in ps_ops:
            chosen = ps_spec
            if ps_spec.job and current_spec.job in (None, ps_spec.job):
                chosen = dataclasses.replace(ps_spec, task=ps_strategy(op))
            return chosen.merged_with(current_spec).to_string()
        return worker_spec.merged_with(current_spec).to_string()

    return device_function
