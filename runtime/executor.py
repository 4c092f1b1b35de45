"""The dataflow executor: plans the subgraph a run needs and runs it (2015 paper §3.1, §4.2).

`build_plan` prunes the graph to the ops that fetched tensors and target ops depend on,
stopping at fed tensors (partial execution), and precomputes per-op pending-input counts
and consumer lists.  `execute` runs a plan: a node whose pending count reaches zero enters
the ready queue; with a thread pool, independent ready nodes run concurrently.  Kernels
come from each op's definition (the NumPy reference kernels); the executor does not know
how they were made.

A plan node is an `Operation` or a *step*: an object standing for several ops (a compiled
cluster, runtime/clustering.py) with `ops`, `inputs` (tensors it reads), `name`, `type`
and `run(values, state, deadline)`.  `build_plan(..., group=)` lets a caller replace ops by
steps; dependencies between nodes are derived from the member ops' edges.
`build_plan(..., optimize=)` then rewrites the nodes (runtime/graph_optimizer.py: merged
duplicates, folded constants); the plan keeps what a run needs of that: `preset` values a
run starts with (`start_values`) and `aliases` its values resolve (`AliasedValues`).

Error contract: any failure inside a kernel surfaces as an `OpError` subclass naming the
op, its type, its inputs' shapes and dtypes and the user's line that created it.  After an
error no new nodes start; the run waits for running ones and raises the first error.
"""

from __future__ import annotations

import collections
import heapq
import queue
import threading
import time

import numpy as np

from ..compiler.core.node import Operation
from ..errors import (DeadlineExceededError, InvalidArgumentError, OpError,
                      ResourceExhaustedError)
from ..ops.registry import Trait
from .state import VariableRef

CHECK_OUTPUTS = False  # tests turn this on: kernel outputs must match inferred dtype/shape

# A ready op goes to the thread pool only when it touches at least this many input
# elements (or may block): handing a tiny NumPy call to another thread costs more (~50 us
# of queueing and GIL hand-off) than running it inline, as benchmarks/session_overhead.py
# measured on wide graphs of small ops.
POOL_MIN_ELEMENTS = 1 << 15


class Plan:
    """The pruned subgraph for one (fetches, targets, feeds) signature."""

    __slots__ = ("ops", "pending", "consumers", "roots", "parallel", "preset", "aliases",
                 "rewrites")

    def __init__(self, ops, pending, consumers, roots, parallel):
        self.ops = ops              # nodes (Operations or steps) in a topological order
        self.pending = pending      # per node index: number of unfinished nodes it waits on
        self.consumers = consumers  # per node index: indices of the nodes waiting on it
        self.roots = roots          # node indices with nothing pending
        self.parallel = parallel    # True when some nodes could run side by side
        self.preset = {}            # tensor -> read-only array every run starts with
        self.aliases = {}           # tensor -> the tensor whose value it has (merged ops)
        self.rewrites = None        # the graph optimizer's Report, when it ran


class AliasedValues(dict):
    """A run's values when the plan merged ops: a merged op's tensor reads its survivor's."""

    __slots__ = ("aliases",)

    def __missing__(self, tensor):
        source = self.aliases.get(tensor)
        if source is None:
            raise KeyError(tensor)
        return self[source]


def start_values(plan: Plan, feeds: dict) -> dict:
    """The values a run of `plan` starts from: its preset constants, then the feeds."""
    if plan.aliases:
        values = AliasedValues(plan.preset)
        values.aliases = plan.aliases
    elif plan.preset:
        values = dict(plan.preset)
    else:
        return dict(feeds)
    values.update(feeds)
    return values


def build_plan(fetch_tensors, target_ops, fed, group=None, optimize=None) -> Plan:
    """The ops needed to compute `fetch_tensors` and run `target_ops`, given `fed` tensors.

    `group(ops, fetch_tensors, fed)`, when given, returns the plan's nodes: some of `ops`
    replaced by steps that run them together (runtime/clustering.py).
    `optimize(nodes, fetch_tensors, target_ops, fed)`, when given, rewrites those nodes and
    returns a runtime/graph_optimizer.py PlanGraph.
    """
    ops = needed_ops(fetch_tensors, target_ops, fed)
    from .control_flow_executor import ControlFlowPlan, needs_control_flow, nested_ops
    if needs_control_flow(ops):   # frames and dead values: clusters at the top level only
        nested = nested_ops(ops) if group is not None else ()
        nodes = ops if group is None else group(ops, fetch_tensors, fed,
                                                exclude=nested.__contains__, loops=True)
        return ControlFlowPlan(nodes, list(fetch_tensors), set(fed))
    nodes = group(ops, fetch_tensors, fed) if group is not None else ops
    if optimize is None:
        return _link(nodes, fed)
    view = optimize(nodes, fetch_tensors, target_ops, fed)
    plan = _link(list(view.nodes), set(fed).union(view.preset), view.merged, view.folded)
    plan.preset, plan.aliases, plan.rewrites = view.preset, view.aliases, view.report
    return plan


def needed_ops(fetch_tensors, target_ops, fed) -> list:
    """The ops a run must execute to compute `fetch_tensors` and run `target_ops` when
    `fed` tensors are given (partial execution), in graph order."""
    needed = set()
    stack = [t.op for t in fetch_tensors if t not in fed] + list(target_ops)
    while stack:
        op = stack.pop()
        if op in needed:
            continue
        needed.add(op)
        for t in op.inputs:
            if t not in fed and t.op not in needed:
                stack.append(t.op)
        for c in op.control_inputs:
            if c not in needed:
                stack.append(c)
    return sorted(needed, key=lambda o: (o.graph is not None, o._id))


def _members(node) -> tuple:
    return (node,) if type(node) is Operation else node.ops


def _link(nodes, fed, merged=None, folded=()) -> Plan:
    """Dependency counts and consumer lists between nodes, in a topological order.
    `merged`: op -> the op whose node runs in its place; `folded`: ops nothing waits on."""
    owner = {op: i for i, node in enumerate(nodes) for op in _members(node)}
    if merged or folded:
        owner.update(dict.fromkeys(folded))
        owner.update((dup, owner.get(survivor)) for dup, survivor in merged.items())
    deps = []
    for i, node in enumerate(nodes):
        d = set()
        for op in _members(node):
            d.update(owner[t.op] for t in op.inputs if t not in fed)
            d.update(owner[c] for c in op.control_inputs)
        d.discard(i)
        d.discard(None)
        deps.append(d)
    order = topological_order(deps)
    position = {old: new for new, old in enumerate(order)}
    nodes = [nodes[i] for i in order]
    deps = [sorted(position[d] for d in deps[i]) for i in order]
    pending = [len(d) for d in deps]
    consumers = [[] for _ in nodes]
    for i, d in enumerate(deps):
        for j in d:
            consumers[j].append(i)
    roots = [i for i, p in enumerate(pending) if p == 0]
    return Plan(nodes, pending, consumers, roots, _has_width(nodes, deps))


def topological_order(deps) -> list:
    """Node indices so that each comes after its dependencies (stable: Kahn's algorithm
    taking the lowest ready index first keeps graph order when there are no steps)."""
    waiting = [len(d) for d in deps]
    users = [[] for _ in deps]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(deps):
        raise AssertionError("grouping ops into steps made the plan cyclic")
    return order


def _has_width(nodes, deps) -> bool:
    """True when two nodes share a topological level (so a thread pool could help)."""
    level = [0] * len(nodes)
    seen = collections.Counter()
    for i, node in enumerate(nodes):
        level[i] = 1 + max((level[d] for d in deps[i]), default=-1)
        if not _is_source(node):  # sources are cheap; width among real work counts
            seen[level[i]] += 1
            if seen[level[i]] > 1:
                return True
    return False


def _is_source(node) -> bool:
    if type(node) is Operation:
        return not (node.inputs or node.control_inputs)
    return not node.inputs


class KernelContext:
    """What a kernel may see: its op, the session state, and the run's deadline."""

    __slots__ = ("op", "state", "deadline")

    def __init__(self, op, state, deadline):
        self.op = op
        self.state = state
        self.deadline = deadline


def _describe_inputs(op, inputs) -> str:
    parts = []
    for t, v in zip(op.inputs, inputs):
        shape = getattr(v, "shape", "?")
        dtype = getattr(v, "dtype", type(v).__name__)
        parts.append(f"{t.name}: shape {tuple(shape) if shape != '?' else '?'} dtype {dtype}")
    return "; ".join(parts) if parts else "no inputs"


def run_node(node, values, state, deadline):
    """Run one plan node: an op's kernel, or a step."""
    if type(node) is Operation:
        run_op(node, values, state, deadline)
    else:
        node.run(values, state, deadline)


def run_op(op, values, state, deadline):
    """Run `op`'s kernel on its inputs from `values` and store its outputs there."""
    outs = run_kernel(op, [values[t] for t in op.inputs], state, deadline)
    for t, v in zip(op.outputs, outs):
        if CHECK_OUTPUTS and type(v) is not VariableRef:
            check_output(op, t, v)
        values[t] = v


def run_kernel(op, inputs, state, deadline) -> list:
    """`op`'s kernel on `inputs` (variable references read unless the op takes them as
    references): its outputs, or an OpError naming the op (module docstring)."""
    op_def = op.op_def
    refs = op_def.ref_inputs
    inputs = [v.read(op) if type(v) is VariableRef and i not in refs else v
              for i, v in enumerate(inputs)]
    try:
        outs = op_def.kernel(KernelContext(op, state, deadline), inputs, op._attrs)
    except OpError as e:
        if e.op is None:
            raise type(e)(e.node_def, op, e.message) from e
        raise
    except MemoryError as e:
        raise ResourceExhaustedError(None, op, f"Out of memory while computing "
                                               f"{op.type}: {e}") from e
    except Exception as e:  # a kernel's NumPy error: report it as bad input to this op
        raise InvalidArgumentError(
            None, op, f"{op.type} failed: {e} (inputs: {_describe_inputs(op, inputs)})") from e
    if len(outs) != len(op.outputs):
        raise InvalidArgumentError(None, op, f"Kernel of {op.type} returned {len(outs)} outputs; "
                                             f"the op declares {len(op.outputs)}.")
    return outs


def check_output(op, t, v):
    """Assert that kernel output `v` of tensor `t` has its inferred dtype and shape."""
    if not isinstance(v, np.ndarray):
        raise AssertionError(f"{op.type} kernel returned {type(v).__name__} for {t.name}")
    if v.dtype != t.dtype.np_dtype:
        raise AssertionError(f"{op.type} kernel returned dtype {v.dtype} for {t.name}, "
                             f"inferred {t.dtype.name}")
    if not t.shape.is_compatible_with(v.shape):
        raise AssertionError(f"{op.type} kernel returned shape {v.shape} for {t.name}, "
                             f"inferred {t.shape}")


def execute(plan: Plan, values: dict, state, pool=None, timeout_s=None, trace=None):
    """Run `plan`; `values` holds the fed tensors and receives every computed one."""
    if type(plan) is not Plan:   # a plan with control flow (control_flow_executor.py)
        from .control_flow_executor import execute_control_flow  # lazy: it imports us
        deadline = time.monotonic() + timeout_s if timeout_s else None
        return execute_control_flow(plan, values, state, deadline, trace)
    if not timeout_s and trace is None and len(plan.ops) == 1:
        run_node(plan.ops[0], values, state, None)  # one compiled cluster: no scheduling
        return values
    deadline = time.monotonic() + timeout_s if timeout_s else None
    if pool is None or not plan.parallel:
        _execute_serial(plan, values, state, deadline, trace)
    else:
        _execute_parallel(plan, values, state, pool, deadline, trace)
    if deadline is not None and time.monotonic() > deadline:
        raise _deadline_error(deadline)  # the last op itself outlived the deadline
    return values


def _deadline_error(deadline, op=None):
    return DeadlineExceededError(None, op, "Timed out waiting for the run to finish "
                                           "(RunOptions.timeout_in_ms).")


def _execute_serial(plan, values, state, deadline, trace):
    pending = list(plan.pending)
    ready = collections.deque(plan.roots)
    ops, consumers = plan.ops, plan.consumers
    t0 = time.perf_counter()
    while ready:
        i = ready.popleft()
        if deadline is not None and time.monotonic() > deadline:
            raise _deadline_error(deadline, _members(ops[i])[0])
        start = time.perf_counter() if trace is not None else 0.0
        run_node(ops[i], values, state, deadline)
        if trace is not None:
            trace.append((ops[i], start - t0, time.perf_counter() - t0, threading.get_ident()))
        for c in consumers[i]:
            pending[c] -= 1
            if pending[c] == 0:
                ready.append(c)


def _execute_parallel(plan, values, state, pool, deadline, trace):
    pending = list(plan.pending)
    ready = collections.deque(plan.roots)
    ops, consumers = plan.ops, plan.consumers
    done = queue.SimpleQueue()
    in_flight = 0
    error = None
    t0 = time.perf_counter()

    def task(i):
        start = time.perf_counter()
        try:
            run_node(ops[i], values, state, deadline)
            done.put((i, None, (start, time.perf_counter(), threading.get_ident())))
        except BaseException as e:  # noqa: BLE001 - handed to the scheduling thread
            done.put((i, e, None))

    def finish(i, timing):
        if trace is not None:
            start, end, thread = timing
            trace.append((ops[i], start - t0, end - t0, thread))
        for c in consumers[i]:
            pending[c] -= 1
            if pending[c] == 0:
                ready.append(c)

    def worth_a_thread(i):
        node = ops[i]
        if type(node) is Operation and Trait.BLOCKING in node.op_def.traits:
            return True
        work = 0
        for t in node.inputs:
            work += getattr(values.get(t), "size", 0)
        return work >= POOL_MIN_ELEMENTS

    while (ready and error is None) or in_flight:
        while ready and error is None:
            i = ready.popleft()
            if (not ready and in_flight == 0) or not worth_a_thread(i):  # run inline
                start = time.perf_counter()
                try:
                    run_node(ops[i], values, state, deadline)
                except BaseException as e:  # noqa: BLE001
                    error = e
                    break
                finish(i, (start, time.perf_counter(), threading.get_ident()))
            else:
                pool.submit(task, i)
                in_flight += 1
        if in_flight:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                i, exc, timing = done.get(timeout=timeout)
            except queue.Empty:
                error = error or _deadline_error(deadline)
                break
            in_flight -= 1
            if exc is not None:
                error = error or exc
            elif error is None:
                finish(i, timing)
    if error is not None:
        raise error
