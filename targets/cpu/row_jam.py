"""Unroll-and-jam of row reductions: JAM rows of a reduction share one pass over its axis.

A loop nest whose members each reduce one axis per output element (a matrix-vector
product `a @ x`, row sums, row norms, or several of them over the same rows) is emitted by
`codegen.Generator.nest` as

    for i0 in prange(rows):
        acc = 0
        for r0 in range(cols):
            acc = radd(acc, a[i0, r0] * x[r0])
        out[i0] = acc

`jammed` rewrites its parallel version so each pass of the reduction loop serves JAM
consecutive rows, each with its own accumulator, and a remainder loop takes the last rows
one at a time:

    for i0_b in prange(rows // JAM):
        i0 = i0_b * JAM; i0_j1 = i0 + 1; ...
        acc = 0; acc_j1 = 0; ...
        for r0 in range(cols):
            acc = radd(acc, a[i0, r0] * x[r0]); acc_j1 = radd(acc_j1, a[i0_j1, r0] * x[r0])
        out[i0] = acc; out[i0_j1] = acc_j1; ...

Loads that do not depend on the row (`x[r0]`) are then read once per JAM rows, and JAM rows
stream from memory at once, which keeps more cache misses in flight. The `power_iteration`
corpus kernel (21 L3-bound 1000x1000 float64 `a @ x`) took 3.04 ms jammed by 4 against
3.20 a row at a time (NumPy 3.19), timed side by side. Each row still has its own
accumulator; the vectorizer may split a row's sum differently in the jammed loop and in
the remainder loop, as it may in a nest's parallel and serial versions.

Several reductions of a row are jammed loop by loop, and the statements between their loops
(combining results) are copied per row in order. The copies are made on the generated
text: every name the row's statements assign, and the row variable itself, get a `_j<k>`
suffix in copy k (generated names are `v12`, `acc7`, `i0`, ...: whole-word matches cannot
hit other names).
"""

from __future__ import annotations

import re

from ...compiler.core.ir import NodeKind

JAM = 4   # rows per pass of the reduction loop
# an assignment's targets: `v = ...`, `a, b = ...`, `acc += ...`
_ASSIGNED = re.compile(r"^\s*([A-Za-z_][\w\s,]*?)\s*(?:[-+*/%&|^@]|//|\*\*|<<|>>)?=(?!=)")
_LOOP = re.compile(r"^\s*for\s+([A-Za-z_]\w*)\s+in\s")


MAX_LINES = 40   # statements of a row beyond which it is not jammed (each copy compiles)


def jammable(gen, group, p: int) -> bool:
    """Whether `group`'s nest (p outer loops) holds only one-axis reductions (a lone one, or
    several of the same rows fused, whose results may stay in locals) and values computed
    per row from them, and so can be jammed."""
    if p == 0 or gen.row_allocs:
        return False
    if len(group.members) == 1 and gen.schedule.boxes.get(id(group.members[0])):
        return False

    def per_row(m) -> bool:   # a one-axis reduction, or a value per row computed from them
        if m.kind is NodeKind.REDUCE:
            return len(m.rshape) == 1 and bool(m.shape)
        return m.kind is NodeKind.COMPUTE and len(m.shape) == p
    return any(m.kind is NodeKind.REDUCE for m in group.members) and all(
        per_row(m) and id(m) not in gen.schedule.scratch for m in group.members)


def _chunks(lines: list) -> list:
    """Top-level statements of a row, each with the indented lines (and `else`/`elif`
    clauses) that belong to it."""
    out: list = []
    for line in lines:
        if out and (line.startswith(" ") or line.startswith(("else:", "elif "))):
            out[-1].append(line)
        else:
            out.append([line])
    return out


def _renamer(lines: list, row: str):
    """A function giving copy k of a line: each assigned name and `row` renamed."""
    names = {row} | {name.strip() for m in map(_ASSIGNED.match, lines) if m
                     for name in m.group(1).split(",") if name.strip()}
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names))) + r")\b")

    def copy(line: str, k: int) -> str:
        return line if k == 0 else pattern.sub(lambda mt: f"{mt.group(1)}_j{k}", line)
    return copy


def jammed(row_loop: str, row: str, extent: str, row_lines: list, member_lines: list):
    """The lines of the innermost outer loop (`row_loop`, a `for <row> in (p)range(...)`
    header over `extent` rows) and its body (`row_lines`: statements hoisted to the row
    level, then `member_lines`), jammed by JAM with a remainder loop: each reduction loop of
    the row runs once for JAM rows, its body copied per row; the statements between the
    loops are copied per row in order.  None when the row is too long to copy, a loop's
    bounds depend on the row, or a loop branches: the reductions that gain are the
    vectorized ones, and copies of branchy loops only cost compile time (6.3 s against 2.8
    for five reductions, two with argmax)."""
    every = row_lines + member_lines
    chunks = _chunks(every)
    loops = [c for c in chunks if _LOOP.match(c[0])]
    if len(every) > MAX_LINES or not loops or any(
            line.rstrip().endswith(":") for c in loops for line in c[1:]):
        return None   # too long, or a loop with branches (argmax: it does not vectorize)
    copy = _renamer(every, row)
    if any(copy(c[0], 1) != c[0] for c in loops):
        return None   # a loop's bounds depend on the row: the copies cannot share it
    rng = "prange" if "prange(" in row_loop else "range"
    indent = row_loop[:len(row_loop) - len(row_loop.lstrip())]
    inner = indent + "    "
    block = f"{row}_b"
    out = [f"{indent}for {block} in {rng}(({extent}) // {JAM}):",
           f"{inner}{row} = {block} * {JAM}"]
    out += [f"{inner}{row}_j{k} = {row} + {k}" for k in range(1, JAM)]
    for chunk in chunks:
        if _LOOP.match(chunk[0]):
            out.append(inner + chunk[0])
            out += [inner + copy(line, k) for k in range(JAM) for line in chunk[1:]]
        else:
            out += [inner + copy(line, k) for k in range(JAM) for line in chunk]
    out.append(f"{indent}for {row} in range(({extent}) // {JAM} * {JAM}, {extent}):")
    out += [inner + line for line in every]
    return out
