"""Code for a SCATTER node: `out = base` with rows `rows[r]` replaced by `updates[r]`.

The rows are written in order (the last write of a repeated row wins), one plain loop over
the row's elements each; the rows were checked to be in range before this loop nest runs
(ops/scatter_ops.py).  With enough work, the rows are first checked to be distinct (a
bitmap of the base's rows) and, when they are, written by all threads (an embedding
update `table[ids] -= lr * g` of 8192 rows of 64 floats: the ordered copy was the longest
part of the kernel). When the schedule lets the scatter take `base`'s buffer
(`schedule.reuse`: a dead temporary, or a donated argument), only the rows are written;
otherwise `base` is copied into a new buffer first.
"""

from __future__ import annotations


BITMAP_ROWS_PER_UPDATE = 32  # the distinct-rows check marks rows in a bitmap of the base's
                             # rows: only when that is at most this many bytes per update row


def scatter_lines(gen, node) -> list:
    """Statements computing SCATTER `node` into its buffer."""
    base, rows, updates = node.inputs
    src = gen.buffers[id(base)]
    lines = gen.allocate(node)
    out = gen.buffers[id(node)]
    if out != src:
        lines.append(f"{out}[...] = {src}")
    row_buf, upd = gen.buffers[id(rows)], gen.buffers[id(updates)]
    rest = [gen.size_text(d) for d in node.shape[1:]]

    def copy(loop: str, indent: str) -> list:
        out_lines = [f"{indent}for r in {loop}({row_buf}.shape[0]):",
                     f"{indent}    row = {row_buf}[r]"]
        indent += "    "
        for k, extent in enumerate(rest):
            out_lines.append(f"{indent}for j{k} in range({extent}):")
            indent += "    "
        tail = "".join(f", j{k}" for k in range(len(rest)))
        return out_lines + [f"{indent}{out}[row{tail}] = {upd}[r{tail}]"]

    def parallel() -> list:
        # Rows written by several threads must be distinct (a repeated row's last write
        # wins, which only the ordered loop keeps): marked in a bitmap first.
        seen, distinct = gen.names.fresh("seen"), gen.names.fresh("distinct")
        return ([f"{distinct} = {out}.shape[0] <= {BITMAP_ROWS_PER_UPDATE} * "
                 f"{row_buf}.shape[0] + 4096",
                 f"if {distinct}:",
                 f"    {seen} = np.zeros({out}.shape[0], dtype=np.bool_)",
                 f"    for r in range({row_buf}.shape[0]):",
                 f"        if {seen}[{row_buf}[r]]:",
                 f"            {distinct} = False",
                 "            break",
                 f"        {seen}[{row_buf}[r]] = True",
                 f"if {distinct}:"] + copy("prange", "    ")
                + ["else:"] + copy("range", "    "))

    dims = list(rows.shape) + list(node.shape[1:])
    work = " * ".join([f"{row_buf}.shape[0]"] + rest)
    return lines + gen.branch(dims, work, parallel, lambda: copy("range", ""))
