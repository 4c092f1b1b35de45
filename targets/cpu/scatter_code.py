"""Code for a SCATTER node: `out = base` with rows `rows[r]` replaced by `updates[r]`.

The rows are written in order (the last write of a repeated row wins), one plain loop over
the row's elements each; the rows were checked to be in range before this loop nest runs
(ops/scatter_ops.py). When the schedule lets the scatter take `base`'s buffer
(`schedule.reuse`: a dead temporary, or a donated argument), only the rows are written;
otherwise `base` is copied into a new buffer first.
"""

from __future__ import annotations


def scatter_lines(gen, node) -> list:
    """Statements computing SCATTER `node` into its buffer."""
    base, rows, updates = node.inputs
    src = gen.buffers[id(base)]
    lines = gen.allocate(node)
    out = gen.buffers[id(node)]
    if out != src:
        lines.append(f"{out}[...] = {src}")
    row_buf, upd = gen.buffers[id(rows)], gen.buffers[id(updates)]
    lines += [f"for r in range({row_buf}.shape[0]):",
              f"    row = {row_buf}[r]"]
    rest = [gen.size_text(d) for d in node.shape[1:]]
    indent = "    "
    for k, extent in enumerate(rest):
        lines.append(f"{indent}for j{k} in range({extent}):")
        indent += "    "
    tail = "".join(f", j{k}" for k in range(len(rest)))
    lines.append(f"{indent}{out}[row{tail}] = {upd}[r{tail}]")
    return lines
