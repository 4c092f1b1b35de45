"""When a device's Recv nodes start: as late as the critical path allows (ALAP, 2015
TensorFlow paper §5.2), so received tensors do not sit in the device's memory long before
their readers need them.

`schedule_alap(plans, cost_model)` estimates every node's cost (the cost model's op times,
runtime/placement.py; Send and Recv cost nothing), computes each node's earliest finish
(ASAP) and latest start (ALAP, from the device plan's critical path), and gives each Recv
a control edge from an *anchor*: the node of the same device with the latest earliest
finish that is still no later than the Recv's latest start, and that does not depend on
the Recv through any device (the step's Send->Recv pairs and the anchors already added
included: two devices each anchoring a Recv behind the other's would deadlock).  A Recv whose
readers are needed at once keeps no anchor and starts first, as before.  Only the device
plan's dependency lists change; the user's graph is not touched.
"""

from __future__ import annotations

from ..compiler.core.node import Operation
from .executor import topological_order

_DEFAULT_OP_SECONDS = 1e-6
_MAX_WORK = 2_000_000     # recvs x nodes beyond which the anchors are not searched
_MAX_CANDIDATES = 8       # anchors tried per Recv, latest finishing first


def schedule_alap(plans, cost_model=None) -> int:
    """Add ALAP control edges to the Recvs of a step's DevicePlans (module docstring);
    returns how many.  The plans are taken together: an anchor must not be reachable from
    its Recv through any device, the Send->Recv pairs and the edges added before it
    included, or two devices could each wait for the other."""
    work = sum(len(p.nodes) for p in plans)
    recvs = [(k, i) for k, p in enumerate(plans) for i, n in enumerate(p.nodes)
             if n.type == "_Recv"]
    if not recvs or len(recvs) * work > _MAX_WORK:
        return 0
    users = _step_users(plans)
    timing = [_times(p, cost_model) for p in plans]
    added = 0
    for k, r in recvs:
        plan = plans[k]
        finish, latest = timing[k]
        candidates = sorted((u for u, node in enumerate(plan.nodes)
                             if node.type not in ("_Recv", "_Send")
                             and finish[u] <= latest[r] and u not in plan.deps[r]),
                            key=lambda u: -finish[u])[:_MAX_CANDIDATES]
        if not candidates:
            continue
        below = _reachable_nodes((k, r), users)
        for u in candidates:
            if (k, u) not in below:
                plan.deps[r].add(u)
                users[(k, u)].append((k, r))
                added += 1
                break
    for plan in plans:
        plan.relink()
    return added


def _times(plan, cost_model):
    """(earliest finish, latest start) per node of one device plan, from cost estimates."""
    nodes = plan.nodes
    cost = [_cost(n, cost_model) for n in nodes]
    order = topological_order(plan.deps)
    finish = [0.0] * len(nodes)
    for i in order:
        finish[i] = max((finish[d] for d in plan.deps[i]), default=0.0) + cost[i]
    span = max(finish, default=0.0)
    users = [[] for _ in nodes]
    for i, d in enumerate(plan.deps):
        for j in d:
            users[j].append(i)
    latest = [0.0] * len(nodes)
    for i in reversed(order):
        latest[i] = min((latest[u] for u in users[i]), default=span) - cost[i]
    return finish, latest


def _step_users(plans) -> dict:
    """(plan, node) -> the (plan, node)s waiting on it: each plan's edges, and every Send's
    matching Recv on the other device."""
    users = {(k, i): [] for k, p in enumerate(plans) for i in range(len(p.nodes))}
    recv_of = {}
    for k, p in enumerate(plans):
        for i, d in enumerate(p.deps):
            for j in d:
                users[(k, j)].append((k, i))
            if p.nodes[i].type == "_Recv":
                recv_of[p.nodes[i].transfer] = (k, i)
    for k, p in enumerate(plans):
        for i, node in enumerate(p.nodes):
            if node.type == "_Send" and node.transfer in recv_of:
                users[(k, i)].append(recv_of[node.transfer])
    return users


def _reachable_nodes(start, users) -> set:
    seen, stack = {start}, [start]
    while stack:
        for u in users[stack.pop()]:
            if u not in seen:
                seen.add(u)
                stack.append(u)
    return seen


def _cost(node, cost_model) -> float:
    if node.type in ("_Recv", "_Send"):
        return 0.0
    ops = _ops(node)
    if cost_model is None:
        return _DEFAULT_OP_SECONDS * max(1, len(ops))
    return sum(cost_model.op_seconds(op) for op in ops)


def _ops(node) -> tuple:
    return (node,) if type(node) is Operation else tuple(node.ops)
