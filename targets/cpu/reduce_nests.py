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
functions take the `codegen.Generator` (`gen`) whose kernel they are part of.
"""

from __future__ import annotations

from ...compiler.core import ir
from ...compiler.core.ir import Combiner, NodeKind, Scalar
from ...compiler.core.ir_build import identity_value
from ...compiler.schedule import is_column_reduction
from . import scalar_code

PARTIALS = 8     # partial results of a column reduction (one per chunk of rows)
CHUNK_ROWS = 8   # ... each of at least this many rows (fewer partials for short inputs:
                 # filling and combining them would outweigh reading the rows)
COL_BLOCK = 2048  # elements of the contiguous axis one task of a column reduction covers
ROW_UNROLL = 4   # rows a column reduction adds per pass over its accumulators (a 4000x4000
                 # float32 `x @ a` as a reduction: 1.9-2.4 ms one row a pass, 1.1-1.3 ms four)


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
    lines = gen.allocate(m)
    buf = gen.buffers[id(m)]
    init = gen.constant(identity_value(m.attr, m.dtype), m.dtype)
    part, nparts, nblocks, chunk = (gen.names.fresh(x) for x in
                                    ("part", "nparts", "nblocks", "chunk"))
    out_dims = [gen.size_text(d) for d in m.shape]
    shape = "".join(d + ", " for d in out_dims)
    r0_extent = gen.size_text(m.rshape[0])
    cols = gen.size_text(group.outer[-1])
    lines += [f"{nblocks} = max(1, ({cols} + {COL_BLOCK - 1}) // {COL_BLOCK})",
              f"{nparts} = 1 if {nblocks} >= {PARTIALS} else "
              f"min({PARTIALS}, max(1, ({r0_extent} + {CHUNK_ROWS - 1}) // {CHUNK_ROWS}))",
              f"if {nparts} == 1:",  # accumulate straight into the result
              f"    {part} = {buf}.reshape((1, {shape}))",
              "else:",
              f"    {part} = empty_buffer(({nparts}, {shape}), np.{m.dtype.np_dtype.name})",
              f"{part}.fill({init})",
              f"{chunk} = ({r0_extent} + {nparts} - 1) // {nparts}"]
    order = list(ir.axis_vars(p - 1)) + list(m.raxes) + [ir.axis_var(p - 1)]
    work = " * ".join([gen.size_text(d) for d in group.outer] +
                      [gen.size_text(d) for d in m.rshape])
    idx = ", ".join([f"i{k}" for k in range(p)] + ["0"] * (len(m.shape) - p))

    def nest(parallel):
        out = [f"for t0 in {'prange' if parallel else 'range'}({nparts} * {nblocks}):",
               f"    b0 = t0 // {nblocks}",
               f"    c0 = (t0 - b0 * {nblocks}) * {COL_BLOCK}"]
        # One loop over a block of columns from c0, with unsigned indices: it vectorizes
        # (scalar_code.unsigned; signed ones from c0 did not: a 4096x1024 float32 column
        # sum took 1.2-1.5 ms so, 0.15 ms from 0).  A static width of one block loops
        # from 0.
        width = group.outer[-1]
        if ir.is_const(width) and width.attr <= COL_BLOCK:
            head, loops = rows_and_columns(f"range({cols})", "    ", False)
        else:
            head, loops = rows_and_columns(f"range(c0, min({cols}, c0 + {COL_BLOCK}))",
                                           "    ", True)
        return head + out + loops

    def rows_and_columns(column_range: str, indent: str, unsigned: bool):
        """(hoisted lines, loop lines): inside the outer loops, ROW_UNROLL rows at a time
        while that many are left (each pass over the block of accumulators adds that many
        rows: fewer loads and stores of accumulators per element), then the remaining
        rows one by one."""
        r0_hi = f"min({r0_extent}, (b0 + 1) * {chunk})"
        main, tail = (emit_rows(copies, unsigned) for copies in (ROW_UNROLL, 1))
        head = main[0].take(0) + tail[0].take(0)
        out = []
        for k in range(p - 1):
            out.append(f"{indent}for i{k} in range({gen.size_text(group.outer[k])}):")
            indent += "    "
            out += [indent + s for s in main[0].take(k + 2) + tail[0].take(k + 2)]
        out.append(f"{indent}r0 = b0 * {chunk}")
        for (em, values), copies in zip((main, tail), (ROW_UNROLL, 1)):
            if copies == 1:
                rows_loop = [f"for r0 in range(r0, {r0_hi}):"]
            else:
                rows_loop = ([f"while r0 + {copies - 1} < {r0_hi}:"]
                             + [f"    u{j} = r0 + {j}" for j in range(1, copies)])
            out += [indent + s for s in rows_loop]
            out += inner_loops(em, values, column_range, indent + "    ", unsigned)
            if copies > 1:
                out.append(f"{indent}    r0 += {copies}")
        return head, out

    def emit_rows(copies: int, unsigned: bool):
        """An emitter with the body's value for rows r0 (and u1.. for more copies)."""
        em = gen.emitter([ir.make(Scalar.VAR, ir.INDEX, (), ("b", 0))] + order, unsigned)
        values = [em.value(body)]
        for j in range(1, copies):
            u = ir.make(Scalar.VAR, ir.INDEX, (), ("u", j))
            em.levels[id(u)] = p + 1    # r0's level: b0 is 1, the outer axes 2..p
            values.append(em.value(ir.substitute(body, {id(ir.reduce_var(0)): u})))
        return em, values

    def inner_loops(em, values, column_range, indent, unsigned):
        """r0's statements, then the loops inside it and the accumulator updates."""
        out = [indent + s for s in em.take(p + 1)]
        loops = [(f"r{k}", f"range({gen.size_text(d)})")
                 for k, d in enumerate(m.rshape) if k > 0]
        loops.append((f"i{p - 1}", column_range))
        for level, (name, rng) in enumerate(loops, start=p + 2):
            out.append(f"{indent}for {name} in {rng}:")
            indent += "    "
            out += [indent + s for s in em.take(level)]
        index = idx.split(", ")
        if unsigned:
            index = [scalar_code.unsigned(x) for x in index]
        acc = f"{part}[b0, {', '.join(index)}]"
        out.append(indent + f"cur = {acc}")
        for value in values:
            out += [indent + s for s in
                    scalar_code.reduce_step(m.attr, "cur", value, "0", body.dtype)]
        return out + [indent + f"{acc} = cur"]

    combine = [f"if {nparts} > 1:", f"    {buf}[...] = {part}[0]",
               f"for b0 in range(1, {nparts}):"]
    indent = "    "
    for k, d in enumerate(out_dims):
        combine.append(f"{indent}for j{k} in range({d}):")
        indent += "    "
    jdx = ", ".join(f"j{k}" for k in range(len(out_dims)))
    combine += [indent + "cur = " + f"{buf}[{jdx}]"]
    combine += [indent + s for s in scalar_code.reduce_step(m.attr, "cur", f"{part}[b0, {jdx}]",
                                                            "0", m.dtype)]
    combine.append(indent + f"{buf}[{jdx}] = cur")
    return (lines + gen.branch(list(group.outer) + list(m.rshape), work,
                               lambda: nest(True), lambda: nest(False)) + combine)


def full_reduce_code(gen, group) -> list:
    """A reduction to a single value (no outer loops): the first reduction axis is split
    into PARTIALS chunks reduced in parallel when the work is large, then combined."""
    m = group.members[0]
    body = gen.schedule.resolved[id(m)]
    lines = gen.allocate(m)
    init = gen.constant(identity_value(m.attr, body.dtype), body.dtype)
    part = gen.names.fresh("part")
    lines.append(f"{part} = empty_buffer(({PARTIALS}, ), np.{body.dtype.np_dtype.name})")
    r0_extent = gen.size_text(m.rshape[0])
    chunk = gen.names.fresh("chunk")
    lines.append(f"{chunk} = ({r0_extent} + {PARTIALS - 1}) // {PARTIALS}")
    work = " * ".join(gen.size_text(d) for d in m.rshape)
    acc, total = gen.names.fresh("pacc"), gen.names.fresh("acc")
    skipped = _repeat_axes(m, body)

    def nest(parallel):
        em = gen.emitter([ir.make(Scalar.VAR, ir.INDEX, (), ("b", 0))] + list(m.raxes))
        value = em.value(body)
        out = em.take(0)
        out.append(f"for b0 in {'prange' if parallel else 'range'}({PARTIALS}):")
        out += ["    " + s for s in em.take(1)]
        out.append(f"    {acc} = {init}")
        indent = "    "
        loops = [("r0", f"range(b0 * {chunk}, min({r0_extent}, (b0 + 1) * {chunk}))")]
        loops += [(f"r{k}", f"range({gen.size_text(d)})")
                  for k, d in enumerate(m.rshape) if k > 0]
        for level, (name, rng) in enumerate(loops, start=2):
            if level - 2 in skipped:
                out += [indent + s for s in em.take(level)]
                continue
            out.append(f"{indent}for {name} in {rng}:")
            indent += "    "
            out += [indent + s for s in em.take(level)]
        out += [indent + s for s in scalar_code.reduce_step(m.attr, acc, value, "0",
                                                            body.dtype)]
        out.append(f"    {part}[b0] = {acc}")
        return out

    combine = [f"{total} = {part}[0]", f"for b0 in range(1, {PARTIALS}):"]
    combine += ["    " + s for s in scalar_code.reduce_step(m.attr, total, f"{part}[b0]",
                                                             "0", body.dtype)]
    combine.append(gen.store(m, 0, scalar_code.reduce_result(m.attr, total, m.dtype)))
    return lines + gen.branch(list(m.rshape), work, lambda: nest(True),
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
