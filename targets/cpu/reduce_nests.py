"""The loop nests of reductions that the CPU code generator (codegen.py) emits specially.

- a *column reduction* (`compiler.schedule.is_column_reduction`, e.g. `x.sum(axis=0)`), which
  the schedule always puts in a loop nest of its own: its loops are interchanged so the
  reduction axes run outside and the contiguous last output axis inside (it vectorizes),
  in tasks over blocks of columns and, for narrow inputs, chunks of rows with rows of
  partial results combined at the end; the tasks run in parallel when the work is large.
  Its consumers run in the next loop nest over the reduced result;
- a *full reduction* to one value: chunks of the first reduction axis reduced in parallel,
  then combined.

Float sums accumulate with `radd` (reduce_steps.py), as every reduction loop does.  Both
functions take the `codegen.Generator` (`gen`) whose kernel they are part of and return
loop-IR statements (compiler/loop_ir.py).
"""

from __future__ import annotations

from ...compiler.core import ir
from ...compiler.core.ir import Combiner, NodeKind, Scalar
from ...compiler.core.ir_build import identity_value
from ...compiler.loop_ir import (Accumulate, AccResult, Alloc, Call, Do, If, IndexOpKind, Int,
                                 Let, Load, Loop, LoopKind, Source, Store, Var,
                                 While, index_op)
from ...compiler.schedule import is_column_reduction
from .emitter import unsigned
from .nest_code import store

PARTIALS = 8     # partial results of a column reduction (one per chunk of rows)
CHUNK_ROWS = 8   # ... each of at least this many rows (fewer partials for short inputs:
                 # filling and combining them would outweigh reading the rows)
COL_BLOCK = 2048  # elements of the contiguous axis one task of a column reduction covers
ROW_UNROLL = 4   # rows a column reduction adds per pass over its accumulators (a 4000x4000
                 # float32 `x @ a` as a reduction: 1.9-2.4 ms one row a pass, 1.1-1.3 ms four)

ADD, SUB, MUL, DIV = IndexOpKind.ADD, IndexOpKind.SUB, IndexOpKind.MUL, IndexOpKind.FLOORDIV


def _nested(levels: list, innermost: list) -> list:
    """Statements of nested loops: `levels` outermost first, each (var, start, stop,
    statements first in its body) or (None, None, None, statements at the enclosing level)
    for a level without a loop; `innermost` inside the last."""
    inside = list(innermost)
    for var, start, stop, stmts in reversed(levels):
        if var is None:
            inside = list(stmts) + inside
        else:
            inside = [Loop(LoopKind.SERIAL, var, start, stop, tuple(list(stmts) + inside))]
    return inside


def column_reduce_code(gen, group) -> list:
    """A reduction whose innermost output axis is the contiguous memory axis (e.g. a sum
    over rows, `x.sum(axis=0)`).  Loops are interchanged so that axis is innermost (it
    vectorizes), and the work is split into tasks, run in parallel when it is large: the
    contiguous axis into blocks of COL_BLOCK (a block of accumulators stays in L1 cache
    while the rows stream past) and, when there are fewer than PARTIALS blocks, the first
    reduction axis into up to PARTIALS chunks of at least CHUNK_ROWS rows, each with its
    own row of partial results, combined at the end (with one chunk, the result buffer is
    the accumulator).  The schedule gives every column
    reduction a loop nest of its own (its consumers follow in the next one), so this path
    is taken with exact and with generic shapes alike."""
    m = group.members[0]
    p = len(group.outer)
    body = gen.schedule.resolved[id(m)]
    stmts = gen.allocate(m)
    buf = gen.buffers[id(m)]
    init = Var(gen.constant(identity_value(m.attr, m.dtype), m.dtype))
    part, nparts, nblocks, chunk = (gen.names.fresh(x) for x in
                                    ("part", "nparts", "nblocks", "chunk"))
    out_dims = [gen.size(d) for d in m.shape]
    shape = "".join(gen.text(d) + ", " for d in out_dims)
    r0_extent = gen.size(m.rshape[0])
    cols = gen.size(group.outer[-1])
    dtype = f"np.{m.dtype.np_dtype.name}"
    few_rows = index_op(IndexOpKind.MIN, Int(PARTIALS), index_op(IndexOpKind.MAX, Int(1), index_op(
        DIV, index_op(ADD, r0_extent, Int(CHUNK_ROWS - 1)), Int(CHUNK_ROWS))))
    stmts += [
        Let(nblocks, index_op(IndexOpKind.MAX, Int(1), index_op(
            DIV, index_op(ADD, cols, Int(COL_BLOCK - 1)), Int(COL_BLOCK)))),
        If(index_op(IndexOpKind.GE, Var(nblocks), Int(PARTIALS)), (Let(nparts, Int(1)),),
           (Let(nparts, few_rows),)),
        If(index_op(IndexOpKind.EQ, Var(nparts), Int(1)),   # accumulate straight into the result
           (Alloc(part, Call(f"{buf}.reshape", (Source(f"(1, {shape})"),))),),
           (Alloc(part, Call("empty_buffer", (Source(f"({nparts}, {shape})"), Source(dtype)))),)),
        Do(Call(f"{part}.fill", (init,))),
        Let(chunk, index_op(DIV, index_op(SUB, index_op(ADD, r0_extent, Var(nparts)), Int(1)),
                            Var(nparts)))]
    order = list(ir.axis_vars(p - 1)) + list(m.raxes) + [ir.axis_var(p - 1)]
    work = index_op(MUL, *([gen.size(d) for d in group.outer] +
                           [gen.size(d) for d in m.rshape]))
    idx = [Var(f"i{k}") for k in range(p)] + [Int(0)] * (len(m.shape) - p)
    b0 = Var("b0")

    def nest(parallel):
        task = [Let("b0", index_op(DIV, Var("t0"), Var(nblocks))),
                Let("c0", index_op(MUL, index_op(SUB, Var("t0"), index_op(MUL, b0, Var(nblocks))),
                                   Int(COL_BLOCK)))]
        # One loop over a block of columns from c0, with unsigned indices: it vectorizes
        # (emitter.unsigned; signed ones from c0 did not: a 4096x1024 float32 column
        # sum took 1.2-1.5 ms so, 0.15 ms from 0).  A static width of one block loops
        # from 0.
        width = group.outer[-1]
        if ir.is_const(width) and width.attr <= COL_BLOCK:
            head, loops = rows_and_columns((Int(0), cols), False)
        else:
            stop = index_op(IndexOpKind.MIN, cols, index_op(ADD, Var("c0"), Int(COL_BLOCK)))
            head, loops = rows_and_columns((Var("c0"), stop), True)
        kind = LoopKind.PARALLEL if parallel else LoopKind.SERIAL
        return head + [Loop(kind, "t0", Int(0), index_op(MUL, Var(nparts), Var(nblocks)),
                            tuple(task + loops))]

    def rows_and_columns(column_range, unsigned_index: bool):
        """(hoisted statements, loop statements): inside the outer loops, ROW_UNROLL rows
        at a time while that many are left (each pass over the block of accumulators adds
        that many rows: fewer loads and stores of accumulators per element), then the
        remaining rows one by one."""
        r0_hi = index_op(IndexOpKind.MIN, r0_extent,
                         index_op(MUL, index_op(ADD, b0, Int(1)), Var(chunk)))
        main, tail = (emit_rows(copies, unsigned_index) for copies in (ROW_UNROLL, 1))
        head = main[0].take(0) + tail[0].take(0)
        levels = [(f"i{k}", Int(0), gen.size(group.outer[k]),
                   main[0].take(k + 2) + tail[0].take(k + 2)) for k in range(p - 1)]
        r0 = Var("r0")
        unrolled = [Let(f"u{j}", index_op(ADD, r0, Int(j))) for j in range(1, ROW_UNROLL)]
        unrolled += inner_loops(*main, column_range, unsigned_index)
        unrolled.append(Let("r0", index_op(ADD, r0, Int(ROW_UNROLL))))
        rows = [Let("r0", index_op(MUL, b0, Var(chunk))),
                While(index_op(IndexOpKind.LT, index_op(ADD, r0, Int(ROW_UNROLL - 1)), r0_hi),
                      tuple(unrolled)),
                Loop(LoopKind.SERIAL, "r0", r0, r0_hi,
                     tuple(inner_loops(*tail, column_range, unsigned_index)))]
        return head, _nested(levels, rows)

    def emit_rows(copies: int, unsigned_index: bool):
        """An emitter with the body's value for rows r0 (and u1.. for more copies)."""
        em = gen.emitter([ir.make(Scalar.VAR, ir.INDEX, (), ("b", 0))] + order, unsigned_index)
        values = [em.value(body)]
        for j in range(1, copies):
            u = ir.make(Scalar.VAR, ir.INDEX, (), ("u", j))
            em.levels[id(u)] = p + 1    # r0's level: b0 is 1, the outer axes 2..p
            values.append(em.value(ir.substitute(body, {id(ir.reduce_var(0)): u})))
        return em, values

    def inner_loops(em, values, column_range, unsigned_index):
        """r0's statements, then the loops inside it and the accumulator updates."""
        levels = [(f"r{k}", Int(0), gen.size(d), em.take(level))
                  for level, (k, d) in enumerate(
                      [(k, d) for k, d in enumerate(m.rshape) if k > 0], start=p + 2)]
        levels.append((f"i{p - 1}", *column_range, em.take(p + 1 + len(m.rshape))))
        index = [unsigned(x) for x in idx] if unsigned_index else idx
        at = (b0,) + tuple(index)
        steps = [Accumulate(m.attr, "cur", v, Int(0), body.dtype) for v in values]
        innermost = [Let("cur", Load(part, at))] + steps + [Store(part, at, Var("cur"))]
        return em.take(p + 1) + _nested(levels, innermost)

    js = tuple(Var(f"j{k}") for k in range(len(out_dims)))
    combine_levels = [(f"j{k}", Int(0), d, []) for k, d in enumerate(out_dims)]
    # part 0 copied into the result by a loop (an array assignment would make numba compile
    # its shape-mismatch error message, seconds per process), then the others added
    combine = [If(index_op(IndexOpKind.GT, Var(nparts), Int(1)), tuple(_nested(
                  combine_levels, [Store(buf, js, Load(part, (Int(0),) + js))]))),
               Loop(LoopKind.SERIAL, "b0", Int(1), Var(nparts), tuple(_nested(combine_levels, [
                   Let("cur", Load(buf, js)),
                   Accumulate(m.attr, "cur", Load(part, (b0,) + js), Int(0), m.dtype),
                   Store(buf, js, Var("cur"))])))]
    return (stmts + gen.branch(list(group.outer) + list(m.rshape), work,
                               lambda: nest(True), lambda: nest(False)) + combine)


def full_reduce_code(gen, group) -> list:
    """A reduction to a single value (no outer loops): the first reduction axis is split
    into PARTIALS chunks reduced in parallel when the work is large, then combined."""
    m = group.members[0]
    body = gen.schedule.resolved[id(m)]
    stmts = gen.allocate(m)
    init = Var(gen.constant(identity_value(m.attr, body.dtype), body.dtype))
    part = gen.names.fresh("part")
    stmts.append(Alloc(part, Call("empty_buffer", (Source(f"({PARTIALS}, )"),
                                                   Source(f"np.{body.dtype.np_dtype.name}")))))
    r0_extent = gen.size(m.rshape[0])
    chunk = gen.names.fresh("chunk")
    stmts.append(Let(chunk, index_op(DIV, index_op(ADD, r0_extent, Int(PARTIALS - 1)),
                                     Int(PARTIALS))))
    work = index_op(MUL, *[gen.size(d) for d in m.rshape]) if len(m.rshape) > 1 else \
        gen.size(m.rshape[0])
    acc, total = gen.names.fresh("pacc"), gen.names.fresh("acc")
    skipped = _repeat_axes(m, body)
    b0 = Var("b0")

    def nest(parallel):
        em = gen.emitter([ir.make(Scalar.VAR, ir.INDEX, (), ("b", 0))] + list(m.raxes))
        value = em.value(body)
        out = em.take(0)
        hi = index_op(IndexOpKind.MIN, r0_extent, index_op(MUL, index_op(ADD, b0, Int(1)),
                                                            Var(chunk)))
        loops = [("r0", index_op(MUL, b0, Var(chunk)), hi)]
        loops += [(f"r{k}", Int(0), gen.size(d)) for k, d in enumerate(m.rshape) if k > 0]
        levels = []
        for level, (name, start, stop) in enumerate(loops, start=2):
            if level - 2 in skipped:
                levels.append((None, None, None, em.take(level)))
            else:
                levels.append((name, start, stop, em.take(level)))
        inner = _nested(levels, [Accumulate(m.attr, acc, value, Int(0), body.dtype)])
        kind = LoopKind.PARALLEL if parallel else LoopKind.SERIAL
        return out + [Loop(kind, "b0", Int(0), Int(PARTIALS), tuple(
            em.take(1) + [Let(acc, init)] + inner + [Store(part, (b0,), Var(acc))]))]

    combine = [Let(total, Load(part, (Int(0),))),
               Loop(LoopKind.SERIAL, "b0", Int(1), Int(PARTIALS), (
                   Accumulate(m.attr, total, Load(part, (b0,)), Int(0), body.dtype),)),
               store(gen, m, 0, AccResult(m.attr, total, m.dtype))]
    return stmts + gen.branch(list(m.rshape), work, lambda: nest(True),
                              lambda: nest(False)) + combine


def _repeat_axes(m, body) -> set:
    """Reduction axes (after the first) that an AND/OR/MAX/MIN need not loop over: the body
    does not depend on them and their extent is a constant above zero, so every step would
    combine the same value again (an index check broadcast along a row: `all(ids valid)`
    over ids[:, None] and 64 columns)."""
    if m.attr not in (ir.Combiner.AND, ir.Combiner.OR, ir.Combiner.MAX, ir.Combiner.MIN):
        return set()
    used = {e.attr for e in ir.walk(body) if e.op is Scalar.VAR}
    return {k for k, d in enumerate(m.rshape) if k > 0 and ("r", k) not in used
            and ir.is_const(d) and d.attr > 0}


def is_column_group(schedule, group) -> bool:
    """A group of one column reduction (`schedule.is_column_reduction`: its loads walk memory
    along its innermost output axis, strided in the reduction), so interchanging the loops
    makes the inner loop contiguous.  The schedule gives such a reduction a group of its
    own, whatever consumers it has."""
    if group.kind != "loop" or len(group.members) != 1 or not group.outer:
        return False
    m = group.members[0]
    if id(m) in schedule.local or id(m) in schedule.scratch:
        return False
    return is_column_reduction(m, schedule.resolved.get(id(m)))


def is_full_group(schedule, group) -> bool:
    """One REDUCE to a single value (no outer loops) that chunks combine exactly."""
    if group.kind != "loop" or len(group.members) != 1 or group.outer:
        return False
    m = group.members[0]
    return (m.kind is NodeKind.REDUCE and bool(m.rshape) and id(m) not in schedule.local
            and id(m) not in schedule.scratch
            and m.attr not in (Combiner.ARGMAX, Combiner.ARGMIN))
