"""Code for a SCATTER node: `out = base` with rows `rows[r]` replaced by `updates[r]` (or,
with `Combiner.ADD`, with `updates[r]` added to them).

The rows are written in order (the last write of a repeated row wins; added rows add up),
one plain loop over the row's elements each; the rows were checked to be in range before
this loop nest runs (ops/scatter_ops.py).  With enough work, the rows are first checked to
be distinct (a bitmap of the base's rows) and, when they are, written by all threads (an
embedding update `table[ids] -= lr * g` of 8192 rows of 64 floats: the ordered copy was the
longest part of the kernel). When the schedule lets the scatter take `base`'s buffer
(`schedule.reuse`: a dead temporary, or a donated argument), only the rows are written;
otherwise `base` is copied into a new buffer first.
"""

from __future__ import annotations

from ...compiler.core.ir import Combiner, Scalar
from ...compiler.loop_ir import (Dim, If, IndexOpKind, Int, Let, Load, Loop, LoopKind,
                                 ScalarOp, Store, Var, Verbatim, index_op)

BITMAP_ROWS_PER_UPDATE = 32  # the distinct-rows check marks rows in a bitmap of the base's
                             # rows: only when that is at most this many bytes per update row


def scatter_lines(gen, node) -> list:
    """Loop-IR statements computing SCATTER `node` into its buffer."""
    base, rows, updates = node.inputs
    src = gen.buffers[id(base)]
    stmts = gen.allocate(node)
    out = gen.buffers[id(node)]
    if out != src:   # the base copied by loops (an array assignment would make numba
        # compile its shape-mismatch error message: seconds per process)
        ks = tuple(Var(f"k{k}") for k in range(len(node.shape)))
        copy_base = [Store(out, ks, Load(src, ks))]
        for k in reversed(range(len(node.shape))):
            copy_base = [Loop(LoopKind.SERIAL, f"k{k}", Int(0), gen.size(node.shape[k]),
                              tuple(copy_base))]
        stmts += copy_base
    row_buf, upd = gen.buffers[id(rows)], gen.buffers[id(updates)]
    rest = [gen.size(d) for d in node.shape[1:]]
    count = Dim(row_buf, 0)

    def copy(kind: LoopKind) -> list:
        js = tuple(Var(f"j{k}") for k in range(len(rest)))
        value = Load(upd, (Var("r"),) + js)
        if node.attr is Combiner.ADD:
            value = ScalarOp(Scalar.ADD, node.dtype, (Load(out, (Var("row"),) + js), value),
                             (node.dtype, node.dtype))
        inner = [Store(out, (Var("row"),) + js, value)]
        for k in reversed(range(len(rest))):
            inner = [Loop(LoopKind.SERIAL, f"j{k}", Int(0), rest[k], tuple(inner))]
        return [Loop(kind, "r", Int(0), count,
                     (Let("row", Load(row_buf, (Var("r"),))),) + tuple(inner))]

    def parallel() -> list:
        # Rows written by several threads must be distinct (a repeated row's last write
        # wins, or its updates add up, which only the ordered loop keeps): marked in a
        # bitmap first.
        seen, distinct = gen.names.fresh("seen"), gen.names.fresh("distinct")
        check = Verbatim((
            f"{distinct} = {out}.shape[0] <= {BITMAP_ROWS_PER_UPDATE} * "
            f"{row_buf}.shape[0] + 4096",
            f"if {distinct}:",
            f"    {seen} = np.zeros({out}.shape[0], dtype=np.bool_)",
            f"    for r in range({row_buf}.shape[0]):",
            f"        if {seen}[{row_buf}[r]]:",
            f"            {distinct} = False",
            "            break",
            f"        {seen}[{row_buf}[r]] = True"), defines=(distinct,))
        return [check, If(Var(distinct), tuple(copy(LoopKind.PARALLEL)),
                          tuple(copy(LoopKind.SERIAL)))]

    dims = list(rows.shape) + list(node.shape[1:])
    work = index_op(IndexOpKind.MUL, count, *rest) if rest else count
    return stmts + gen.branch(dims, work, parallel, lambda: copy(LoopKind.SERIAL))
