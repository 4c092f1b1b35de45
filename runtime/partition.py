"""Partitioning a plan's ops into clusters: which ops may be compiled together.

`clusterable(op, fed)` says whether one op may join a cluster; `partition(ops, fed)` grows
maximal connected groups of such ops along data and control edges in graph order, merging
two groups only if the contracted graph stays acyclic (the XLA-style cycle check), so each
group can run as ONE node of the executor's dependency graph.  runtime/clustering.py turns
the groups into compiled steps and documents the policy; runtime/cluster_updates.py owns the
rules for variable updates inside a group.
"""

from __future__ import annotations

from ..ops.basic_ops import NO_OP
from ..ops.registry import Trait
from ..ops.variables import VARIABLE_V2
from . import cluster_updates
from .targets import get_target

_EXCLUDED_TRAITS = frozenset({Trait.STATEFUL, Trait.RUNTIME_VALUE, Trait.BLOCKING,
                              Trait.COMMUNICATION})
DEFAULT_DTYPES = get_target().capabilities.dtypes   # the CPU's: no float16 (numba has none)


def clusterable(op, fed, updates: bool = True, renders: frozenset | None = None) -> bool:
    """Whether `op` may join a cluster (with `updates`, variable updates may too).
    `renders`: the dtype names the target renders (its capabilities: targets/target.py);
    None: the default target's."""
    renders = DEFAULT_DTYPES if renders is None else renders
    op_def = op.op_def
    if op_def is NO_OP:
        return True  # ordering only: inside a kernel every member already runs in order
    if updates and op_def is VARIABLE_V2:  # the cluster reads the variable itself
        return op.outputs[0] not in fed and op.outputs[0].dtype.name in renders
    if updates and cluster_updates.is_update(op):
        if any(t in fed for t in (*op.inputs, *op.outputs)):
            return False
    elif op_def.lower is None or op_def.traits & _EXCLUDED_TRAITS or op_def.ref_inputs:
        return False
    if any(t in fed for t in op.outputs):
        return False
    # strings and complex are never lowered; float16 only where the target renders it
    return all(t.dtype.name in renders for t in (*op.inputs, *op.outputs))


def partition(ops, fed, max_ops: int = 0, updates: bool = True,
              renders: frozenset | None = None, exclude=None, colour=None) -> list:
    """Maximal connected, cycle-free groups of clusterable `ops` (graph order), each sorted;
    with `max_ops`, no group grows past that many ops.  Groups grow along data and control
    edges; with `updates`, variable updates join them (runtime/cluster_updates.py); `renders`
    as for `clusterable`; `exclude(op)` true keeps an op out (a plan with control flow keeps
    its branches and loops out: runtime/control_flow_executor.py); `colour(op)`, when
    given, keeps ops of different colours (devices: runtime/device_plan.py) in
    different groups, with ONE cycle check over all of them, so clusters of two devices
    never wait on each other both ways."""
    index = {op: i for i, op in enumerate(ops)}
    ok = [clusterable(op, fed, updates, renders) and not (exclude and exclude(op))
          for op in ops]
    n = len(ops)
    data_deps = [[index[t.op] for t in op.inputs if t not in fed]
                 + [index[c] for c in op.control_inputs] for op in ops]
    succ = [set() for _ in range(n)]   # contracted graph, keyed by cluster representative
    pred = [set() for _ in range(n)]
    for i, op in enumerate(ops):
        for j in data_deps[i]:
            succ[j].add(i)
            pred[i].add(j)
    rep = list(range(n))
    members = {i: [i] for i in range(n)}

    def find(i):
        while rep[i] != i:
            rep[i] = rep[rep[i]]
            i = rep[i]
        return i

    def other_path(a, b, limit):
        """A path a -> ... -> b of two or more edges?  Nodes past `limit` (not yet visited
        by the sweep, so singletons whose descendants are too) cannot reach b."""
        stack = [s for s in succ[a] if s != b]
        seen = set(stack)
        while stack:
            x = stack.pop()
            if x == b:
                return True
            if x > limit:
                continue
            for y in succ[x]:
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
        return False

    def merge(a, b):
        # the group with fewer edges moves into the other (union by size): moving a group
        # that feeds every later op (a shared constant's) into each next op was quadratic
        if len(succ[a]) + len(pred[a]) > len(succ[b]) + len(pred[b]):
            a, b = b, a
        rep[a] = b
        moved, kept = members.pop(a), members[b]
        if len(moved) > len(kept):
            moved, kept = kept, moved
        kept.extend(moved)
        members[b] = kept
        for s in succ[a]:
            pred[s].discard(a)
            if s != b:
                pred[s].add(b)
                succ[b].add(s)
        for p in pred[a]:
            succ[p].discard(a)
            if p != b:
                succ[p].add(b)
                pred[b].add(p)
        pred[b].discard(a)
        succ[a] = set()
        pred[a] = set()

    for v in range(n):
        if not ok[v]:
            continue
        for u in data_deps[v]:
            if not ok[u]:
                continue
            a, b = find(u), find(v)
            if a == b or (max_ops and len(members[a]) + len(members[b]) > max_ops):
                continue
            if colour is not None and colour(ops[u]) is not colour(ops[v]):
                continue
            if not other_path(a, b, v):
                merge(a, b)
    # in the order of each group's last op (the sweep's order: one group per swept op)
    groups = sorted((sorted(group) for r, group in members.items() if ok[r]),
                    key=lambda g: g[-1])
    return [[ops[i] for i in group] for group in groups]
