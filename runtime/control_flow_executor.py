"""The control-flow executor: runs a plan that holds Switch, Merge, Enter, Exit or
NextIteration ops, with frames, iteration tags and dead values (2015 paper §4.4).

Every value is a token for a (tensor, tag) pair.  A tag names the loop iteration a value
belongs to: `()` at the top level, and one (frame name, iteration) pair per enclosing loop
frame, outermost first, so the same op runs once per iteration of every loop around it and
the iterations of a loop can be in flight together (`parallel_iterations` is not a limit
here: the ready queue runs whatever is ready).  An op instance is (op, tag); it runs when
every input and control input has a token at its tag, with these rules:
- an op with a *dead* input (or control input) does not run; its outputs are dead;
- Switch forwards its data to the output its predicate selects; the other output is dead;
- Merge forwards the first live input to arrive (with its index); it is dead once every
  input it can receive at that tag is dead.  A loop's Merge takes its Enter input at
  iteration 0 and its NextIteration input after;
- Enter moves a value into iteration 0 of its frame; a constant Enter's value is given to
  every iteration of the frame instance (a loop invariant);
- NextIteration moves a live value to the next iteration (dead ones stop there);
- Exit moves a live value to the parent frame.  Dead exits are the non-final iterations;
  they reach the parent only when the whole frame is dead (a loop inside a branch not
  taken), so the parent's Merge can still decide.
Other ops run their kernels exactly as the plain executor's `run_op` does.  Fetching a
dead tensor (one in a branch not taken) is an InvalidArgumentError naming it.

The executor is serial (ready queue, first in first out).  The top level of such a plan
is clustered as any plan is (runtime/clustering.py, with the `nested_ops` kept
out): a cluster step is a node that runs once per run, at the top-level tag, dead when an
input is.  Ops inside branches and loops run with their reference kernels, one at a time;
the graph optimizer does not rewrite these plans.
"""

from __future__ import annotations

import collections
import time

from ..compiler.core.node import Operation
from ..errors import DeadlineExceededError, InvalidArgumentError
from . import executor as _executor
from .executor import check_output, run_kernel
from .state import VariableRef

DEAD = type("Dead", (), {"__repr__": lambda self: "<dead>", "__slots__": ()})()

_SWITCH, _MERGE, _ENTER, _EXIT, _NEXT = "Switch", "Merge", "Enter", "Exit", "NextIteration"


class ControlFlowPlan:
    """The pruned subgraph of a run that holds control-flow ops (see the module docstring)."""

    __slots__ = ("ops", "fetches", "fed", "consumers", "control_consumers", "expected",
                 "merge_kinds", "sources", "parallel", "preset", "aliases", "rewrites")

    def __init__(self, nodes, fetches, fed):
        self.ops = nodes          # Operations, and ClusterSteps of top-level ops
        self.fetches = fetches
        self.fed = fed
        owner = {op: node for node in nodes for op in _members(node)}
        # (producer op, output index) -> [(node, input index)]: keyed by op, whose hash is
        # the builtin one (a Tensor's is Python code, and this is the executor's hot path)
        self.consumers = collections.defaultdict(list)
        self.control_consumers = collections.defaultdict(list)  # node -> [node]
        self.expected = {}        # node -> number of tokens it waits for (non-Merge)
        self.merge_kinds = {}     # Merge op -> per input: True when from a NextIteration
        self.sources = []
        for node in nodes:
            n = 0
            for i, t in enumerate(node.inputs):
                if t in fed or owner.get(t.op) is node:   # a step reads its own variables
                    continue
                self.consumers[t.op, t.value_index].append((node, i))
                n += 1
            for c in _external_controls(node):
                producer = owner.get(c)
                if producer is not None:
                    self.control_consumers[producer].append(node)
                    n += 1
            self.expected[node] = n
            if type(node) is Operation and node.type == _MERGE:
                self.merge_kinds[node] = [t.op.type == _NEXT for t in node.inputs]
            if n == 0:
                self.sources.append(node)
        self.parallel = False
        self.preset, self.aliases, self.rewrites = {}, {}, None


class _Instance:
    __slots__ = ("missing", "dead", "inputs", "done", "dead_seen")

    def __init__(self, missing):
        self.missing = missing
        self.dead = False
        self.inputs = {}
        self.done = False
        self.dead_seen = 0


def execute_control_flow(plan: ControlFlowPlan, values: dict, state, deadline=None,
                         trace=None) -> dict:
    """Run `plan`; `values` holds the fed tensors and receives the top-level results."""
    run = _Run(plan, values, state, deadline, trace)
    run.go()
    for t in plan.fetches:
        if t in plan.fed:
            continue
        v = values.get(t, None)
        if v is None or v is DEAD:
            why = ("it lies in a cond branch that was not taken" if v is DEAD else
                   "it is inside a while loop or cond and is not available outside it")
            raise InvalidArgumentError(None, t.op, f"Fetched tensor {t.name} has no value in "
                                                   f"this run: {why}.")
    return values


class _Run:
    def __init__(self, plan, values, state, deadline, trace):
        self.plan, self.values, self.state = plan, values, state
        self.deadline, self.trace = deadline, trace
        self.instances = {}            # (op, tag) -> _Instance
        self.ready = collections.deque()
        self.frames = {}               # (parent tag, frame name) -> _Frame
        self.t0 = time.perf_counter()

    # --- tokens -------------------------------------------------------------------------------
    def go(self):
        for op in self.plan.sources:
            self.ready.append((op, ()))
        while self.ready:
            op, tag = self.ready.popleft()
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise DeadlineExceededError(None, op, "Timed out waiting for the run to finish "
                                                      "(RunOptions.timeout_in_ms).")
            self.fire(op, tag)

    def instance(self, op, tag):
        key = (op, tag)
        inst = self.instances.get(key)
        if inst is None:
            inst = self.instances[key] = _Instance(self.plan.expected[op])
        return inst

    def deliver(self, tensor, tag, value):
        if not tag:
            self.values[tensor] = value
        for op, index in self.plan.consumers.get((tensor._op, tensor._value_index), ()):
            self.arrive(op, tag, index, value)

    def arrive(self, op, tag, index, value):
        inst = self.instance(op, tag)
        if inst.done:
            return
        if op.type == _MERGE:
            self.arrive_merge(op, tag, inst, index, value)
            return
        if index is not None:
            inst.inputs[index] = value
        if value is DEAD:
            inst.dead = True
        inst.missing -= 1
        if inst.missing == 0:
            self.ready.append((op, tag))

    def arrive_merge(self, op, tag, inst, index, value):
        if index is None:        # a control input: Merge waits on none
            return
        if value is not DEAD:
            inst.done = True
            frame = self.frames.get((tag[:-1], tag[-1][0])) if tag else None
            if frame is not None and tag[-1][1] == 0:
                frame.live = True
            self.finish(op, tag, [value, _index_value(index)])
            return
        inst.dead_seen += 1
        kinds = self.plan.merge_kinds[op]
        if any(kinds):   # a loop's Merge: Enter inputs at iteration 0, NextIteration after
            first = not tag or tag[-1][1] == 0
            can_arrive = sum(1 for k in kinds if k != first)
        else:
            can_arrive = len(kinds)
        if inst.dead_seen >= can_arrive:
            inst.done = True
            self.finish(op, tag, [DEAD, DEAD])

    def control_done(self, op, tag, dead):
        for c in self.plan.control_consumers.get(op, ()):
            self.arrive(c, tag, None, DEAD if dead else True)

    # --- running an op instance ----------------------------------------------------------------
    def fire(self, op, tag):
        inst = self.instances.pop((op, tag), None)
        if inst is None:
            inst = _Instance(0)
        if type(op) is not Operation:   # a cluster of top-level ops (runtime/clustering.py)
            self.fire_step(op, inst)
            return
        kind = op.type
        inputs = [inst.inputs[i] if i in inst.inputs else self.values[t]
                  for i, t in enumerate(op.inputs)]
        if kind == _ENTER:
            self.enter(op, tag, inputs[0])
        elif kind == _EXIT:
            self.exit(op, tag, inputs[0])
        elif kind == _NEXT:
            if inputs[0] is not DEAD:
                self.next_iteration(op, tag, inputs[0])
            self.control_done(op, tag, inputs[0] is DEAD)
        elif inst.dead:
            self.finish(op, tag, [DEAD] * len(op.outputs))
        elif kind == _SWITCH:
            data, pred = inputs
            self.finish(op, tag, [DEAD, data] if bool(pred) else [data, DEAD])
        else:
            start = time.perf_counter() if self.trace is not None else 0.0
            outs = run_kernel(op, inputs, self.state, self.deadline)
            if _executor.CHECK_OUTPUTS:
                for t, v in zip(op.outputs, outs):
                    if type(v) is not VariableRef:
                        check_output(op, t, v)
            if self.trace is not None:
                self.trace.append((op, start - self.t0, time.perf_counter() - self.t0, 0))
            self.finish(op, tag, outs)

    def fire_step(self, step, inst):
        outputs = _step_outputs(step)
        if inst.dead:
            values = [DEAD] * len(outputs)
        else:
            start = time.perf_counter() if self.trace is not None else 0.0
            step.run(self.values, self.state, self.deadline)
            if self.trace is not None:
                self.trace.append((step, start - self.t0, time.perf_counter() - self.t0, 0))
            values = [self.values[t] for t in outputs]
        for t, v in zip(outputs, values):
            self.deliver(t, (), v)
        self.control_done(step, (), inst.dead)

    def finish(self, op, tag, outputs):
        for t, v in zip(op.outputs, outputs):
            self.deliver(t, tag, v)
        self.control_done(op, tag, all(v is DEAD for v in outputs) and bool(outputs))

    # --- frames ----------------------------------------------------------------------------------
    def frame(self, parent, name):
        key = (parent, name)
        f = self.frames.get(key)
        if f is None:
            f = self.frames[key] = _Frame()
        return f

    def enter(self, op, tag, value):
        name = op._attrs["frame_name"]
        frame = self.frame(tag, name)
        if op._attrs.get("is_constant"):
            frame.constants.append((op, value))
            for it in range(frame.started + 1):
                self.give_constant(op, tag + ((name, it),), value)
            return
        self.start_iteration(frame, tag, name, 0)
        child = tag + ((name, 0),)
        self.deliver(op.outputs[0], child, value)
        self.control_done(op, child, value is DEAD)

    def start_iteration(self, frame, parent, name, it):
        while frame.started < it:
            frame.started += 1
            child = parent + ((name, frame.started),)
            for op, v in frame.constants:
                self.give_constant(op, child, v)

    def give_constant(self, op, tag, value):
        """A constant Enter's value (and its control token) in one iteration."""
        self.deliver(op.outputs[0], tag, value)
        self.control_done(op, tag, value is DEAD)

    def next_iteration(self, op, tag, value):
        parent, (name, it) = tag[:-1], tag[-1]
        self.start_iteration(self.frame(parent, name), parent, name, it + 1)
        self.deliver(op.outputs[0], parent + ((name, it + 1),), value)

    def exit(self, op, tag, value):
        parent, (name, _) = tag[:-1], tag[-1]
        if value is DEAD and self.frame(parent, name).live:
            return   # a non-final iteration: the live exit comes later
        self.deliver(op.outputs[0], parent, value)
        self.control_done(op, parent, value is DEAD)


class _Frame:
    __slots__ = ("started", "constants", "live")

    def __init__(self):
        self.started = -1         # the last iteration that has begun
        self.constants = []       # (Enter op, value) of its constant Enters
        self.live = False         # whether iteration 0 ran (some Merge forwarded a value)


def _index_value(index):
    import numpy as np
    return np.array(index, np.int32)


def _members(node) -> tuple:
    return (node,) if type(node) is Operation else node.ops


def _external_controls(node) -> list:
    if type(node) is Operation:
        return list(node.control_inputs)
    members = set(node.ops)
    return [c for op in node.ops for c in op.control_inputs if c not in members]


def _step_outputs(step) -> list:
    """The tensors a step (a cluster, or a loop: runtime/loop_steps.py) gives the rest of
    the plan."""
    if hasattr(step, "plan_outputs"):
        return step.plan_outputs()
    return [t for _, t in step.handed_out] + [op.outputs[0] for op in step.published]


def _edges(ops) -> tuple:
    """({op: its producers and control inputs among `ops`}, {op: its users among `ops`}),
    a loop's back edges (NextIteration into Merge) left out."""
    members = set(ops)
    preds = {op: [t.op for t in op.inputs if t.op in members and not _back_edge(op, t.op)]
             + [c for c in op.control_inputs if c in members] for op in ops}
    users = collections.defaultdict(list)
    for op, ps in preds.items():
        for p in ps:
            users[p].append(op)
    return preds, users


def nested_ops(ops) -> set:
    """The ops of `ops` that run inside a loop frame or a cond branch (or read a value that
    may be dead), found from the graph's structure alone — so imported graphs, which carry
    no build contexts, are analysed the same way.  Along a topological order (a loop's back
    edges, NextIteration into Merge, left out): Enter opens a frame and Exit closes one; a
    cond's Switch opens a branch and its Merge closes it (a loop's own Switch, on a
    LoopCond, and its Merges do neither).  What stays at depth zero is the top level."""
    preds, users = _edges(ops)
    waiting = {op: len(ps) for op, ps in preds.items()}
    ready = collections.deque(op for op in ops if waiting[op] == 0)
    depth = {}
    while ready:
        op = ready.popleft()
        frame = branch = 0
        for p in preds[op]:
            f, b = depth[p]
            kind = p.type
            if kind == _ENTER:
                f += 1
            elif kind == _EXIT:
                f -= 1
            elif kind == _SWITCH and not _loop_switch(p):
                b += 1
            frame, branch = max(frame, f), max(branch, b)
        if op.type == _MERGE and not any(t.op.type == _NEXT for t in op.inputs):
            branch = max(0, branch - 1)   # a cond's Merge: its value is the outer level's
        depth[op] = (frame, branch)
        for u in users[op]:
            waiting[u] -= 1
            if waiting[u] == 0:
                ready.append(u)
    return {op for op in ops if depth.get(op, (1, 1)) != (0, 0) or op.type in _ROUTING}


def _back_edge(op, producer) -> bool:
    return op.type == _MERGE and producer.type == _NEXT


def _loop_switch(op) -> bool:
    return len(op.inputs) > 1 and op.inputs[1].op.type == "LoopCond"


_ROUTING = frozenset({"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond"})


def bridges(ops, region) -> set:
    """The ops of `ops` outside `region` that are reachable from it and reach it (a cond's
    predicate computed from a loop's Exit and read by the cond's Switch).  Ops run as one
    region node must take these in, or the region and the op would wait for each other."""
    if not region:
        return set()
    preds, succs = _edges(ops)

    def reach(edges) -> set:
        seen, stack = set(), list(region)
        while stack:
            for nxt in edges(stack.pop()):
                if nxt not in seen and nxt not in region:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen

    return reach(lambda op: succs.get(op, ())) & reach(lambda op: preds.get(op, ()))


def needs_control_flow(ops) -> bool:
    """Whether a plan over `ops` must run on this executor."""
    return any(type(op) is Operation and op._cf_context is not None or
               op.type in ("Switch", "Merge", "Enter", "Exit", "NextIteration")
               for op in ops)
