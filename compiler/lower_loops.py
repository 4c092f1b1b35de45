"""Lowering `while_loop`s into the kernel IR: a whole loop becomes one WHILE node.

`lower_ops(ctx, ops)` is how `lower_cluster` (lowering.py) walks a cluster's ops: an op of
a while loop (its `_cf_context`, ops/control_flow.py's WhileContext) lowers together with
the rest of its loop, at the loop's first op, through `lower_while`; every other op through
its own lowering.  A loop lowers as

- its loop variables (the Merges, the hidden iteration counter first) become inputs
  0..n-1 of two sub-programs, the condition (the LoopCond's input) and the body (the
  NextIterations' inputs), lowered in a child `LowerContext` by the same op lowerings;
- every value entering the loop as a constant (a captured tensor, `Enter(is_constant)`)
  becomes the next input of both, as does every array constant a lowering inside asks for
  (the parent context's constant, passed in);
- nested loops lower the same way, inside the sub-context;
- the Exits become WHILE_OUT nodes (compiler/core/ir.py `while_loop`).

A loop variable must keep its shape across iterations: the body's result has to have the
variable's shape, provably (the same size expressions, or sizes the body's checks make
equal), else the loop is NotLowerable and runs on the runtime's loop path.  A branch
(`cond`) inside a loop, stack ops of a gradient and stateful ops have no lowering here
(NotLowerable).  docs/architecture.md, "Control flow".
"""

from __future__ import annotations

from .core import ir
from .core.ir_build import NotLowerable
from .equal_dims import SizeClasses

_ROUTING = frozenset({"Enter", "Merge", "Switch", "Exit", "NextIteration", "LoopCond"})


def lower_ops(ctx, ops, level=None) -> None:
    """Lower `ops` (graph order) into `ctx`; `level` is the loop they are the body of.  At
    the top (`lower_cluster`), ops of one context without any routing op of a loop (the
    condition or body cluster of runtime/loop_steps.py) lower as plain ops."""
    if level is None and ops and not any(op.type in _ROUTING for op in ops):
        level = ops[0]._cf_context
        if any(op._cf_context is not level for op in ops):
            raise NotLowerable("the cluster's ops belong to different loops or branches")
    done: set = set()
    for op in ops:
        if op in done:
            continue
        unit = _unit_below(op, level)
        if unit is None:
            _lower_op(ctx, op)
            continue
        if not hasattr(unit, "frame_name"):
            raise NotLowerable(f"{op.name} is inside a cond branch ({op.type}); branches are "
                               "not compiled")
        if unit.outer is not level:   # a loop whose parent context is a branch
            raise NotLowerable(f"{op.name} belongs to a loop nested in a branch")
        members = list(unit.all_ops)
        missing = [m for m in members if m not in set(ops) and m.type != "Exit"]
        if missing:   # (an Exit nobody reads is pruned from the plan)
            raise NotLowerable(f"the cluster holds part of while loop {unit.frame_name} only "
                               f"(not {missing[0].name})")
        lower_while(ctx, unit)
        done.update(members)


def _unit_below(op, level):
    """The context directly below `level` that holds `op` (None: op is at `level`)."""
    c = op._cf_context
    if c is level:
        return None
    while c is not None and c.outer is not level:
        c = c.outer
    if c is None:
        raise NotLowerable(f"{op.name} is outside the loop being lowered")
    return c


def _lower_op(ctx, op) -> None:
    lower = op.op_def.lower
    if lower is None:
        raise NotLowerable(f"{op.type} has no lowering")
    ins = [ctx.nodes.get(t) for t in op.inputs]  # None: a variable only assigned to
    outs = lower(ctx, op, ins)
    if len(outs) != len(op.outputs):
        raise NotLowerable(f"lowering of {op.type} returned {len(outs)} outputs")
    for t, n in zip(op.outputs, outs):
        if n.dtype is not t.dtype:
            raise AssertionError(f"lowering of {op.type} gave {n.dtype.name} for "
                                 f"{t.name} ({t.dtype.name})")
        ctx.nodes[t] = n


def _static_shape(node) -> tuple:
    return tuple(int(d.attr) if ir.is_const(d) else None for d in node.shape)


def lower_while(ctx, loop) -> None:
    """Lower every op of while loop `loop` into ONE WHILE node of `ctx` (module docstring)."""
    from .lowering import LowerContext   # lowering.py imports this module

    n = len(loop.merges)
    inits = [ctx.node_of(e.op.inputs[0]) for e in loop.enters]
    specs = [(m.dtype, _static_shape(x)) for m, x in zip(loop.merges, inits)]
    sub = LowerContext(loop.merges, specs, parent=ctx)
    switches = {}
    own = [op for op in sorted(loop.all_ops, key=lambda op: op._id)]
    for op in own:
        if op._cf_context is loop and op.type == "Switch":
            switches[op.inputs[0]] = op
    for m in loop.merges:
        switch = switches.get(m)
        if switch is None:
            raise NotLowerable(f"loop {loop.frame_name}: no Switch for {m.name}")
        sub.nodes[switch.outputs[1]] = sub.nodes[m]
    body_ops = []
    for op in own:
        if op._cf_context is loop and op.type in _ROUTING:
            if op.type == "Enter" and op.get_attr("is_constant"):
                sub.capture(op.outputs[0], ctx.node_of(op.inputs[0]))
            continue
        body_ops.append(op)
    lower_ops(sub, body_ops, level=loop)
    loop_cond = next(op for op in own if op._cf_context is loop and op.type == "LoopCond")
    go = sub.node_of(loop_cond.inputs[0])
    nexts = [sub.node_of(t.op.inputs[0]) for t in loop.nexts]
    cond_nodes = {id(x) for x in ir.Program(sub.inputs, [go]).nodes()}
    cond_checks, body_checks = [], []
    for check in sub.checks:
        loaded = [e.attr for e in ir.walk(check[0]) if e.op is ir.Scalar.LOAD]
        if not loaded:
            cond_checks.append(check)
            body_checks.append(check)
        elif all(id(x) in cond_nodes for x in loaded):
            cond_checks.append(check)
        else:
            body_checks.append(check)
    body = ir.Program(sub.inputs, nexts, body_checks)
    sizes = SizeClasses(body)
    for k, (var, new) in enumerate(zip(sub.inputs[:n], nexts)):
        if len(new.shape) != len(var.shape) or not sizes.same_shape(tuple(new.shape),
                                                                     tuple(var.shape)):
            raise NotLowerable(f"loop {loop.frame_name}: loop variable {loop.merges[k].name} "
                               "may change its shape from one iteration to the next")
    spec = ir.WhileSpec(ir.Program(sub.inputs, [go], cond_checks), body, n)
    outs = ir.while_loop(inits, sub.outer_values, spec)
    for e, out in zip(loop.exits, outs):
        ctx.nodes[e] = out
