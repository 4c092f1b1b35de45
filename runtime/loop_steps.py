"""While loops run compiled: a top-level `while_loop` whose condition and body are made of
compilable ops becomes one plan node (`LoopStep`) instead of the control-flow executor's
op-by-op tokens.  It runs in one of two ways:

- the whole loop as ONE compiled cluster (`whole`: a ClusterStep of all the loop's ops,
  which compiler/lower_loops.py lowers into a kernel-IR WHILE node, so the loop runs inside
  one kernel with no round trip per iteration), by the same tiered policy and caches as
  every cluster (runtime/clustering.py);
- iteration by iteration, `while cond(vars): vars = body(vars)` with the condition and the
  body each a cluster of their own: what the whole loop's ClusterStep runs while its kernel
  is not (yet) compiled, when it cannot be compiled (NotLowerable: a loop variable that
  changes shape, say), and whenever the run has a deadline (`RunOptions.timeout_in_ms`):
  this way checks the deadline before every iteration, a compiled loop cannot.

A loop qualifies when it was built by `while_loop` at the top level (ops/control_flow.py's
WhileContext, so imported graphs keep the executor), holds no branch, nested loop or
stateful op (a gradient's stack pushes included), and every op of its condition and body
may join a cluster.  Others run on the control-flow executor as before.  The step reads the
loop's entering values (initial values and captured tensors), carries the loop variables
from iteration to iteration in a scratch dict, and gives the Exit tensors the final values.
"""

from __future__ import annotations

import collections
import time

from ..errors import DeadlineExceededError
from .partition import clusterable

_ROUTING = frozenset({"Enter", "Merge", "Switch", "Exit", "NextIteration", "LoopCond"})


class LoopStep:
    """A plan node running one while loop with compiled condition and body clusters."""

    type = "WhileLoop"

    def __init__(self, loop, plan_ops: set, options):
        from .clustering import ClusterStep   # lazy: clustering imports this module

        self.loop = loop
        self.name = loop.frame_name
        mine = [op for op in loop.all_ops if op in plan_ops]
        self.ops = tuple(sorted(mine, key=lambda op: op._id))
        in_plan = [i for i, m in enumerate(loop.merges) if m.op in plan_ops]
        self.merges = [loop.merges[i] for i in in_plan]
        self.exits = [loop.exits[i] for i in in_plan if loop.exits[i].op in plan_ops]
        self.enters = [op for op in self.ops if op.type == "Enter"]
        self.inputs = tuple(op.inputs[0] for op in self.enters)
        self.entry_of = {m: m.op.inputs[0] for m in self.merges}           # merge <- its Enter
        self.switch_true = {m: _switch_of(m, loop)[1] for m in self.merges}
        self.next_value = {m: m.op.inputs[1].op.inputs[0] for m in self.merges}
        cond_out = _loop_cond(loop).inputs[0]
        self.cond_out = cond_out
        compute = [op for op in self.ops if op.type not in _ROUTING]
        readers = collections.defaultdict(list)
        for op in compute:
            for t in op.inputs:
                readers[t].append(op)
        cond_ops = _upstream([cond_out], compute)
        body_ops = _upstream(list(self.next_value.values()), compute)
        self.cond = ClusterStep(cond_ops, readers, {cond_out}, options) if cond_ops else None
        self.body = ClusterStep(body_ops, readers, set(self.next_value.values()), options) \
            if body_ops else None
        # the whole loop, compiled into one kernel; until then (or if it cannot be) it runs
        # iteration by iteration through the two clusters above
        self.whole = ClusterStep(self.ops, collections.defaultdict(list), set(self.exits),
                                 options)
        self.whole.interpret = self._run_iterations

    def __repr__(self):
        return f"<LoopStep {self.name}: {len(self.ops)} ops>"

    def plan_outputs(self) -> list:
        """The tensors this node gives the rest of the plan: the loop's Exit values."""
        return list(self.exits)

    def run(self, values, state, deadline):
        """Run the loop from the entering values in `values`; store its Exit values there."""
        if deadline is not None:
            self._run_iterations(values, state, deadline)
        else:
            self.whole.run(values, state, deadline)

    def _run_iterations(self, values, state, deadline):
        """The loop iteration by iteration, with the condition's and body's clusters."""
        scratch = {op.outputs[0]: values[op.inputs[0]] for op in self.enters}
        carried = {m: scratch[self.entry_of[m]] for m in self.merges}
        while True:
            if deadline is not None and time.monotonic() > deadline:
                raise DeadlineExceededError(None, self.ops[0], "Timed out waiting for the run "
                                                               "to finish (RunOptions."
                                                               "timeout_in_ms).")
            scratch.update(carried)
            if self.cond is not None:
                self.cond.run(scratch, state, deadline)
            if not bool(scratch[self.cond_out]):
                break
            for m, v in carried.items():
                scratch[self.switch_true[m]] = v
            if self.body is not None:
                self.body.run(scratch, state, deadline)
            carried = {m: scratch[t] for m, t in self.next_value.items()}
        by_merge = {_switch_of(m, self.loop)[0]: v for m, v in carried.items()}
        for e in self.exits:
            values[e] = by_merge[e.op.inputs[0]]

    def explain(self) -> str:
        parts = [f"{self.name}: a while loop compiled whole, or run as compiled condition "
                 "and body clusters"]
        for step in (self.whole, self.cond, self.body):
            if step is not None:
                parts.append(step.explain())
        return "\n".join(parts)


def _switch_of(merge, loop):
    for op in loop.all_ops:
        if op.type == "Switch" and op.inputs[0] is merge:
            return op.outputs
    raise AssertionError(f"no Switch for {merge.name}")


def _loop_cond(loop):
    for op in loop.all_ops:
        if op.type == "LoopCond":
            return op
    raise AssertionError(f"no LoopCond in {loop.frame_name}")


def _upstream(tensors, candidates) -> list:
    """The ops of `candidates` that `tensors` depend on (through candidates only)."""
    pool = set(candidates)
    seen, stack = set(), [t.op for t in tensors if t.op in pool]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        stack.extend(t.op for t in op.inputs if t.op in pool and t.op not in seen)
        stack.extend(c for c in op.control_inputs if c in pool and c not in seen)
    return sorted(seen, key=lambda op: op._id)


def qualifies(loop, renders) -> bool:
    """Whether `loop` may run as a LoopStep (module docstring)."""
    if loop.outer is not None or not loop.merges:
        return False
    for op in loop.all_ops:
        if op._cf_context is not loop:
            return False                      # a nested branch or loop
        if op.type in _ROUTING:
            if op.type == "Enter" and op.inputs[0].dtype.name not in renders:
                return False
            continue
        if not clusterable(op, set(), updates=False, renders=renders):
            return False
    return True


def replace_loops(nodes, ops, options, renders) -> list:
    """`nodes` with each qualifying top-level while loop's ops replaced by a LoopStep."""
    plan_ops = set(ops)
    loops = {}
    for op in ops:
        c = op._cf_context
        if c is not None and hasattr(c, "frame_name") and c.outer is None and c not in loops:
            loops[c] = qualifies(c, renders)
    steps = {}
    for loop, ok in loops.items():
        if ok:
            step = LoopStep(loop, plan_ops, options)
            for op in step.ops:
                steps[op] = step
    return substitute_steps(nodes, steps) if steps else nodes


def substitute_steps(nodes, step_of: dict) -> list:
    """`nodes` in order, each op that `step_of` maps to a step replaced by that step (once,
    where its first member was)."""
    out, placed = [], set()
    for node in nodes:
        step = step_of.get(node) if not hasattr(node, "ops") else None
        if step is None:
            out.append(node)
        elif id(step) not in placed:
            placed.add(id(step))
            out.append(step)
    return out
