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
- a `cond` (at any level) lowers as a select: both branches are computed, a Merge takes
  the predicate's side element by element (`_lower_plain`); its branches must give values
  of one shape;
- the Exits become WHILE_OUT nodes (compiler/core/ir.py `while_loop`).

A loop variable must keep its shape across iterations: the body's result has to have the
variable's shape, provably (the same size expressions, or sizes the body's checks make
equal), else the loop is NotLowerable and runs on the runtime's loop path.  Stack ops of
a gradient and stateful ops have no lowering (NotLowerable).  docs/architecture.md, "Control flow".
"""

from __future__ import annotations

from .core import ir
from .core.ir_text import expr_text
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
    present = set(ops)
    done: set = set()
    for op in ops:
        if op in done:
            continue
        loop = _loop_below(op, level)
        if loop is None:
            _lower_plain(ctx, op)
            continue
        members = list(loop.all_ops)
        missing = [m for m in _needed(loop, present) if m not in present]
        if missing:   # (ops nothing in the loop reads may be pruned: an unread Exit)
            raise NotLowerable(f"the cluster holds part of while loop {loop.frame_name} only "
                               f"(not {missing[0].name})")
        lower_while(ctx, loop, present)
        done.update(members)


def _upstream(ops, pool: set) -> list:
    """The ops of `pool` that `ops` depend on (through `pool` only), themselves included."""
    seen: dict = {}
    stack = [op for op in ops if op in pool]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen[op] = None
        stack.extend(t.op for t in op.inputs if t.op in pool)
        stack.extend(c for c in op.control_inputs if c in pool)
    return list(seen)


def _needed(loop, present) -> list:
    """The loop's ops its condition and the next values of the loop variables the cluster
    keeps depend on (their routing included)."""
    members = loop.all_ops
    kept = [k for k, m in enumerate(loop.merges) if m.op in present]
    stack = [loop.nexts[k].op for k in kept] + [loop.merges[k].op for k in kept]
    stack += [op for op in members if op.type == "LoopCond" and op._cf_context is loop]
    seen: dict = {}
    while stack:
        op = stack.pop()
        if op in seen or op not in members:
            continue
        seen[op] = None
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return list(seen)


def _loop_below(op, level):
    """The outermost while loop between `level` and `op` (None: op is at `level` or only
    in branches below it)."""
    found, c = None, op._cf_context
    while c is not level:
        if c is None:
            raise NotLowerable(f"{op.name} is outside the loop being lowered")
        if hasattr(c, "frame_name"):
            found = c
        c = c.outer
    return found


def _lower_plain(ctx, op) -> None:
    """One op that is no loop's routing: a branch's Switch passes its value on to both
    sides and a branch's Merge selects by the predicate (both branches are computed: a
    `cond` compiles as a select), every other op through its own lowering."""
    if op.type == "Switch":
        ctx.nodes[op.outputs[0]] = ctx.nodes[op.outputs[1]] = ctx.node_of(op.inputs[0])
        return
    if op.type == "Merge":
        branch = getattr(op, "_cf_merge_of", None)
        if branch is None:
            raise NotLowerable(f"{op.name}: a Merge of no cond")
        _lower_select(ctx, op, ctx.node_of(branch.pred))
        return
    _lower_op(ctx, op)


def _lower_select(ctx, op, pred) -> None:
    """A cond's Merge(false value, true value) as `pred ? true : false`, element by element
    (the two values have one shape, provably), and its value index as `pred ? 1 : 0`."""
    f, t = (ctx.node_of(x) for x in op.inputs)
    if len(f.shape) != len(t.shape) or not all(
            a is b or (ir.is_const(a) and ir.is_const(b) and a.attr == b.attr)
            for a, b in zip(f.shape, t.shape)):
        raise NotLowerable(f"{op.name}: the branches of a cond give values of different "
                           "shapes")
    axes = ir.axis_vars(len(t.shape))
    p = ir.load(pred, ())
    value = ir.make(ir.Scalar.SELECT, t.dtype, (p, ir.load(t, axes), ir.load(f, axes)))
    ctx.nodes[op.outputs[0]] = ir.compute(t.dtype, t.shape, axes, value)
    index = ir.make(ir.Scalar.SELECT, op.outputs[1].dtype,
                    (p, ir.const(1, op.outputs[1].dtype), ir.const(0, op.outputs[1].dtype)))
    ctx.nodes[op.outputs[1]] = ir.compute(op.outputs[1].dtype, (), (), index)


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


def _shape_text(node) -> str:
    return "(" + ", ".join(expr_text(d) for d in node.shape) + ")"


def _check_static_dims(sub, merges, nexts) -> set:
    """{(loop variable, dimension)} whose size the graph knows statically (the shape
    invariant, which the initial value and every next value have: shape inference's
    contract), checked at run time for the variable and its next value in the body
    program, so sizes spelled differently (a split's `n / 4`, a size read from a shape
    tensor) are known equal."""
    known = set()
    for j, (merge, new) in enumerate(zip(merges, nexts)):
        var = sub.nodes[merge]
        static = merge.shape.dims
        if static is None or len(static) != len(new.shape) or len(var.shape) != len(static):
            continue
        for k, d in enumerate(static):
            if d is None:
                continue
            for node in (var, new):
                sub.check_equal(node.shape[k], ir.index(d),
                                f"loop variable {merge.name} has a size other than {d} in "
                                f"dimension {k}")
            known.add((j, k))
    return known


def lower_while(ctx, loop, present=None) -> None:
    """Lower every op of while loop `loop` into ONE WHILE node of `ctx` (module docstring)."""
    from .lowering import LowerContext   # lowering.py imports this module

    # the loop variables the cluster keeps (one nothing reads, cond and body included, may
    # have been pruned with its ops)
    keep = [k for k, m in enumerate(loop.merges) if present is None or m.op in present]
    merges_kept = [loop.merges[k] for k in keep]
    exits = [loop.exits[k] for k in keep]
    next_values = [loop.nexts[k] for k in keep]
    n = len(keep)
    inits = [ctx.node_of(loop.enters[k].op.inputs[0]) for k in keep]
    specs = [(m.dtype, _static_shape(x)) for m, x in zip(merges_kept, inits)]
    sub = LowerContext(merges_kept, specs, parent=ctx)
    own = sorted(loop.all_ops, key=lambda op: op._id)
    merges = set(loop.merges)
    loop_cond = next(op for op in own if op._cf_context is loop and op.type == "LoopCond")
    routing = {t.op for t in list(loop.merges) + list(loop.exits) + list(loop.nexts)}
    routing.add(loop_cond)
    for op in own:
        if op.type == "Switch" and op.inputs[0] in merges:
            routing.add(op)
            if op.inputs[0] in sub.nodes:
                sub.nodes[op.outputs[1]] = sub.nodes[op.inputs[0]]
        elif op.type == "Enter" and op.get_attr("frame_name") == loop.frame_name:
            routing.add(op)
            if op.get_attr("is_constant") and (present is None or op in present):
                sub.capture(op.outputs[0], ctx.node_of(op.inputs[0]))
    inside = [op for op in own if op not in routing and (present is None or op in present)]
    # the condition's ops first: the checks they add hold for the condition's program, the
    # rest for the body's (a body's index check must not run when the condition fails)
    cond_ops = set(_upstream([loop_cond.inputs[0].op], set(inside)))
    lower_ops(sub, [op for op in inside if op in cond_ops], level=loop)
    cond_checks = list(sub.checks)
    lower_ops(sub, [op for op in inside if op not in cond_ops], level=loop)
    go = sub.node_of(loop_cond.inputs[0])
    nexts = [sub.node_of(t.op.inputs[0]) for t in next_values]
    static_dims = _check_static_dims(sub, merges_kept, nexts)
    body_checks = sub.checks[len(cond_checks):]
    # the loop variables' arrays belong to the loop (the kernel copies the initial values),
    # so the body may write each one's next value into its array: in place
    body = ir.Program(sub.inputs, nexts, body_checks, donated=[(k, k) for k in range(n)])
    sizes = SizeClasses(body)
    for k, (var, new) in enumerate(zip(sub.inputs[:n], nexts)):
        if len(new.shape) != len(var.shape) or not all(
                (k, i) in static_dims or sizes.same(a, b)
                for i, (a, b) in enumerate(zip(new.shape, var.shape))):
            raise NotLowerable(f"loop {loop.frame_name}: loop variable {merges_kept[k].name} "
                               "may change its shape from one iteration to the next "
                               f"({_shape_text(var)} -> {_shape_text(new)})")
    spec = ir.WhileSpec(ir.Program(sub.inputs, [go], cond_checks), body, n)
    outs = ir.while_loop(inits, sub.outer_values, spec)
    for e, out in zip(exits, outs):
        ctx.nodes[e] = out
