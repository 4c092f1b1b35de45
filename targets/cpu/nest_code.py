"""The loop nest of an ordinary loop group (codegen.py): outer loops over the group's rows,
each member's inner loops and stores inside, as loop-IR statements.

Members that are kept in registers (`schedule.local`) become scalar lets, per-row scratch
rows are allocated inside the row loop, a reduction of the row member just computed (the
sum of softmax's exp) accumulates inside that member's own loop (`with_fused_reduction`),
and statements hoist to the outermost loop they depend on (emitter.py).  The innermost
outer loop of the parallel version of a nest of one-axis reductions is tagged
ROWS_OF_REDUCTIONS, which row_jam.jam_rows may unroll-and-jam.
"""

from __future__ import annotations

from ...compiler.core import ir
from ...compiler.core.ir import Combiner, NodeKind, Scalar
from ...compiler.core.ir_build import identity_value
from ...compiler.loop_ir import (Accumulate, AccResult, Alloc, Call, If, IndexOpKind, Int,
                                 Let, Loop, LoopKind, LoopTag, Source, Store, Var, index_op)
from . import row_jam


def nest_code(gen, group) -> list:
    """Statements of an ordinary loop group: its buffers, then its parallel and serial
    nests under a run-time test of the work (one of them when the sizes decide)."""
    stmts = []
    gen.locals = {}
    p = len(group.outer)
    gen.row_allocs = []
    for m in group.members:
        if id(m) in gen.schedule.local:
            gen.locals[id(m)] = gen.names.fresh("s")
        elif id(m) in gen.schedule.scratch:
            name = gen.names.fresh("row")
            gen.buffers[id(m)] = name
            gen.scratch_p[id(m)] = p
            dims = "".join(gen.size_text(d) + ", " for d in m.shape[p:])
            # empty_buffer, not np.empty: numba compiles np.empty's overload afresh in
            # every process (~0.15 s of a cold softmax), the intrinsic costs nothing
            gen.row_allocs.append(Alloc(name, Call("empty_buffer", (
                Source(f"({dims})"), Source(f"np.{m.dtype.np_dtype.name}")))))
        else:
            stmts += gen.allocate(m)
    guard = gen.schedule.box_guards.get(id(group.members[0])) \
        if len(group.members) == 1 else None
    if guard is None:
        return stmts + _nests(gen, group)
    # a box update known at run time: in place where the guard says no read of the old
    # array sees a write, else reading a copy of it (compiler/dynamic_boxes.py)
    em = gen.emitter(())
    test = em.value(guard)
    pre = em.take(0)
    in_place = _nests(gen, group)
    old = gen.schedule.reuse[id(group.members[0])]
    snapshot = gen.names.fresh("snap")
    saved = gen.buffers[id(old)], gen.squeezed.pop(id(old), None)
    gen.buffers[id(old)] = snapshot
    try:
        copied = [Alloc(snapshot, Source(f"{saved[0]}.copy()"))] + _nests(gen, group)
    finally:
        gen.buffers[id(old)] = saved[0]
        if saved[1] is not None:
            gen.squeezed[id(old)] = saved[1]
    return stmts + pre + [If(test, tuple(in_place), tuple(copied))]


def _nests(gen, group) -> list:
    """The group's parallel and serial nests under the run-time test of the work."""
    p = len(group.outer)
    outer = [gen.size(d) for d in group.outer]
    widest = max(group.members, key=lambda m: len(m.shape) + len(m.rshape))
    inner = list(widest.shape[p:]) + list(widest.rshape)
    sizes = outer + [gen.size(d) for d in inner]
    pre = []
    box = gen.schedule.boxes.get(id(widest)) if len(group.members) == 1 else None
    if box:   # an in-place update loops over its box only: that is its work
        for k in box:
            start, stop = _bounds(gen, box[k], sizes[k], pre)
            sizes[k] = index_op(IndexOpKind.MAX, index_op(IndexOpKind.SUB, stop, start), Int(0))
    work = index_op(IndexOpKind.MUL, *sizes) if len(sizes) > 1 else (sizes or [Int(1)])[0]
    if not outer:
        return nest(gen, group, outer, parallel=False)
    # rows of a reduction over a run-time extent (a matrix-vector product): their
    # work grows with the product of two run-time sizes
    rows_of_sums = widest.kind is NodeKind.REDUCE and \
        any(not ir.is_const(d) for d in widest.rshape) and \
        any(not ir.is_const(d) for d in group.outer)
    return pre + gen.branch(list(group.outer) + inner, work,
                            lambda: nest(gen, group, outer, parallel=True),
                            lambda: nest(gen, group, outer, parallel=False),
                            rows_of_sums, dims_decide=not box)


def nest(gen, group, outer, parallel: bool) -> list:
    """The loops of one group: outer loops, then each member in order inside them."""
    p = len(outer)
    names: dict = {}
    hoisted: dict = {lvl: [] for lvl in range(p)}
    member_stmts: list = []
    members = list(group.members)
    k = 0
    while k < len(members):
        m = members[k]
        code = member_code(gen, m, p, names, hoisted)
        if k + 1 < len(members) and reduces_row_of(gen, members[k + 1], m, p):
            code = with_fused_reduction(gen, members[k + 1], m, p, code)
            k += 1
        member_stmts += code
        k += 1
    box = gen.schedule.boxes.get(id(members[0]), {}) if len(members) == 1 else {}
    jam = parallel and p and row_jam.jammable(gen, group, p)
    body = list(gen.row_allocs) + member_stmts
    for k in reversed(range(p)):
        kind = LoopKind.PARALLEL if (parallel and k == 0) else LoopKind.SERIAL
        start, stop = _bounds(gen, box.get(k), outer[k], hoisted.setdefault(0, []))
        tags = frozenset({LoopTag.ROWS_OF_REDUCTIONS}) if jam and k == p - 1 else frozenset()
        body = [Loop(kind, f"i{k}", start, stop, tuple(hoisted.get(k + 1, []) + body), tags)]
    return (list(hoisted.get(0, [])) if p else []) + body


def reduces_row_of(gen, n, m, p: int) -> bool:
    """Whether member `n` reduces exactly the row member `m` just computed (softmax's sum
    of exp): a one-axis REDUCE of a one-inner-axis COMPUTE whose body loads m at
    [outer index..., reduction index], so it can accumulate inside m's own loop."""
    if (n.kind is not NodeKind.REDUCE or m.kind is not NodeKind.COMPUTE
            or len(n.rshape) != 1 or len(m.shape) != p + 1 or len(n.shape) < p
            or n.rshape[0] is not m.shape[p] or id(m) in gen.locals
            or any(not ir.is_const(d, 1) for d in n.shape[p:])):  # keepdims: size 1
        return False
    body = gen.schedule.resolved[id(n)]
    if body.op is not Scalar.LOAD or body.attr is not m or len(body.args) != p + 1:
        return False
    want = list(ir.axis_vars(p)) + [n.raxes[0]]
    return all(a is b for a, b in zip(body.args, want))


def with_fused_reduction(gen, n, m, p: int, code: list) -> list:
    """`code` of row member m with member n's reduction accumulated in m's loop (one
    pass over the row instead of two): init before the loop, a step after m's store,
    the result after the loop."""
    loop_at = max(i for i, s in enumerate(code) if isinstance(s, Loop))
    loop = code[loop_at]
    value = loop.body[-1].value    # m's store (or let) is the last statement of its loop
    acc = gen.names.fresh("acc")
    step = Accumulate(n.attr, acc, value, Var(f"i{p}"), m.dtype)
    loop = Loop(loop.loop_kind, loop.var, loop.start, loop.stop, loop.body + (step,),
                loop.tags)
    return (code[:loop_at] + acc_init(gen, n.attr, acc, m.dtype) + [loop]
            + code[loop_at + 1:] + [store(gen, n, p, AccResult(n.attr, acc, n.dtype))])


def acc_init(gen, comb: Combiner, acc: str, dtype) -> list:
    """Statements binding accumulator `acc` (and, for ARGMAX/ARGMIN, its index and first
    flag: scalar_code.reduce_step) to the combiner's identity."""
    if comb in (Combiner.ARGMAX, Combiner.ARGMIN):
        return [Let(acc, Var(gen.constant(0, dtype))), Let(f"{acc}_i", Int(0)),
                Let(f"{acc}_first", Source("True"))]
    return [Let(acc, Var(gen.constant(identity_value(comb, dtype), dtype)))]


def member_code(gen, m, p: int, names: dict, hoisted: dict) -> list:
    """Statements (inside the outer loops) computing member m.

    Statements that depend only on outer loops above the innermost are hoisted there;
    the rest stay in member order, so a member may use an earlier member's value."""
    body = gen.schedule.resolved[id(m)]
    if m.kind is NodeKind.COMPUTE:
        inner_vars = [ir.axis_var(p + k) for k in range(len(m.shape) - p)]
        extents = list(m.shape[p:])
    else:
        inner_vars, extents = list(m.raxes), list(m.rshape)
    em = gen.emitter(list(ir.axis_vars(p)) + inner_vars)
    em.names = names
    value = em.value(body)
    for lvl in range(p):
        hoisted.setdefault(lvl, []).extend(em.take(lvl))
    out = em.take(p)
    acc = None
    if m.kind is NodeKind.REDUCE:
        acc = gen.names.fresh("acc")
        out += acc_init(gen, m.attr, acc, body.dtype)
    box = gen.schedule.boxes.get(id(m), {}) if m.kind is NodeKind.COMPUTE else {}
    loops = []
    for k, d in enumerate(extents):
        var = f"i{p + k}" if m.kind is NodeKind.COMPUTE else f"r{k}"
        start, stop = _bounds(gen, box.get(p + k), gen.size(d), out)
        loops.append((var, start, stop, em.take(p + k + 1)))
    for key in [k for k, v in names.items() if v[1] > p]:
        del names[key]  # inner-loop temporaries go out of scope
    if m.kind is NodeKind.REDUCE:
        last = Var(f"r{len(extents) - 1}") if extents else Int(0)
        innermost = [Accumulate(m.attr, acc, value, last, body.dtype)]
        after = [store(gen, m, p, AccResult(m.attr, acc, m.dtype))]
    else:
        idx = [Var(f"i{k}") for k in range(len(m.shape))]
        innermost, after = [_store_at(gen, m, p, idx, value)], []
    inside = innermost
    for var, start, stop, level_stmts in reversed(loops):
        inside = [Loop(LoopKind.SERIAL, var, start, stop, tuple(level_stmts + inside))]
    return out + inside + after


def _store_at(gen, m, p: int, idx: list, value):
    """The statement storing member m's `value` at outer-and-inner indices `idx`."""
    if id(m) in gen.locals:
        return Let(gen.locals[id(m)], value)
    if id(m) in gen.scratch_p:
        return Store(gen.buffers[id(m)], tuple(idx[p:]), value)
    if not m.shape:
        return Store(gen.buffers[id(m)], (), value)
    load = gen.indexed(m, idx)
    return Store(load.buffer, load.indices, value)


def store(gen, m, p: int, value):
    """The statement storing member m's value at the current outer index (a reduction's
    result: zeros on the kept size-1 axes)."""
    idx = [Var(f"i{k}") for k in range(p)] + [Int(0)] * (len(m.shape) - p)
    return _store_at(gen, m, p, idx, value)


def _bounds(gen, box_range, extent, before: list) -> tuple:
    """(start, stop) of a loop over `extent`, restricted to an in-place update's box; the
    statements computing bounds known at run time only (expressions) go to `before`."""
    if box_range is None:
        return Int(0), extent
    lo, hi = (_bound(gen, b, before) for b in box_range)
    stop = extent if hi is None else index_op(IndexOpKind.MIN, hi, extent)
    return lo, stop


def _bound(gen, b, before: list):
    if b is None or isinstance(b, int):
        return b if b is None else Int(b)
    em = gen.emitter(())
    value = em.value(b)
    before.extend(em.take(0))
    return value
