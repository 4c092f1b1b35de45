"""Outlining: a long generated function is cut into functions of a few loop nests each.

numba's compile time grows faster than a function's length: its reaching-definitions,
liveness and SSA passes walk every block for every variable (docs/architecture.md,
"Compile time").  A training step's kernel is one function of 1,200-1,400 lines and
compiled in about a minute; cut into functions of about `CHUNK_LINES` lines that the kernel
calls, the same code compiles several times faster, and runs as fast (a call per loop nest
costs nanoseconds; each part keeps its own `prange` loops, so the kernel itself is serial).

`outline_source(source, names)` rewrites the generated module's text (render.py's output)
and returns the new text; the functions named in `names` are cut when longer than
`MIN_LINES`.  A part is a run of whole top-level statements, split where a loop nest begins
(render.py's `# loop nest` comments), so its comments stay with its code.  Each part becomes
`def <function>_p<k>(<names it reads that are set before it>)`, returning the names it sets
that later code reads; the function calls it in its place.  A name is passed or returned
only where Python's rules make it surely bound there (`_bound`): a part that would read a
name bound in an earlier part only on some paths is merged with that earlier part.  The
new functions are listed in SUBKERNELS (build.py compiles them with the same numba options;
each gets numba's `parallel` only if it has a `prange` loop).
"""

from __future__ import annotations

import ast

MIN_LINES = 160      # functions shorter than this stay whole
CHUNK_LINES = 70     # a part grows by whole loop nests until it has this many lines
NEST_MARK = "# loop nest "
_UNSUPPORTED = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                ast.Global, ast.Nonlocal, ast.FunctionDef, ast.ClassDef, ast.With, ast.Try,
                ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await, ast.Delete)


class _Unsupported(Exception):
    """A statement the analysis does not model: the function is left whole."""


def outline_source(source: str, names=None) -> str:
    """`source` with each function of `names` (default: every function it defines) longer
    than MIN_LINES cut into parts."""
    tree = ast.parse(source)
    if names is None:
        names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    lines = source.split("\n")
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    edits = []      # (first line, last line, replacement lines), 1-based, inclusive
    new_defs = []   # (line before which the new functions go, their lines, their names)
    for name in names:
        func = functions.get(name)
        if func is None or func.end_lineno - func.lineno + 1 < MIN_LINES:
            continue
        try:
            plan = _plan(func, lines)
        except _Unsupported:
            continue
        if plan is None:
            continue
        calls, parts = plan
        edits.extend(calls)
        new_defs.append((func.lineno, parts, [p[0] for p in parts]))
    if not edits:
        return source
    for first, last, replacement in sorted(edits, reverse=True):
        lines[first - 1:last] = replacement
    added_names = []
    for before, parts, part_names in sorted(new_defs, reverse=True):
        block = []
        for _, text in parts:
            block += text + ["", ""]
        lines[before - 1:before - 1] = block
        added_names = part_names + added_names
    return _list_subkernels("\n".join(lines), added_names)


def _list_subkernels(source: str, added: list) -> str:
    """Add `added` to the module's SUBKERNELS tuple (made when missing), before the
    functions already listed (callers compile lazily, so order is only for reading)."""
    marker = "\nSUBKERNELS = "
    start = source.find(marker)
    if start < 0:
        first_def = source.find("\ndef ")
        line = f"\nSUBKERNELS = {tuple(added)!r}  # compiled first\n"
        return source[:first_def] + line + source[first_def:]
    end = source.find("\n", start + 1)
    listed = ast.literal_eval(source[start + len(marker):end].split("#")[0].strip())
    line = f"\nSUBKERNELS = {tuple(added) + tuple(listed)!r}  # compiled first"
    return source[:start] + line + source[end:]


def _plan(func: ast.FunctionDef, lines: list):
    """(call edits, [(part name, part lines)]) cutting `func`, or None when it has no
    place to cut."""
    for node in ast.walk(func):
        if node is not func and isinstance(node, _UNSUPPORTED):
            raise _Unsupported(type(node).__name__)
    body = func.body
    units = _units(body, lines, func)
    if len(units) < 2:
        return None
    groups = _group(units)
    params = {a.arg for a in func.args.args}
    stored = _stored_names(func) | params
    while True:
        bad = _first_unsafe(groups, params, stored)
        if bad is None:
            break
        groups[bad - 1:bad + 1] = [groups[bad - 1] + groups[bad]]
    if len(groups) < 2:
        return None
    parts, calls = [], []
    indent = " " * body[0].col_offset
    bound = set(params)
    for k, (group, later) in enumerate(zip(groups, _later_reads(groups, stored))):
        stmts = _stmts(group)
        returns = any(isinstance(n, ast.Return) for s in stmts for n in ast.walk(s))
        args, results, after, _ = _signature(stmts, stored, later, bound)
        bound |= after if not returns else _bound(stmts, bound)
        if returns:      # kept in place
            continue
        part_name = f"{func.name}_p{k}"
        first, last = group[0].first, group[-1].last
        text = [f"def {part_name}({', '.join(args)}):"]
        if _calls_wide_vectors(func):
            text.append(f"{indent}wide_vectors()")
        text += [indent + ln[len(indent):] if ln.startswith(indent) else ln
                 for ln in lines[first - 1:last]]
        call = f"{part_name}({', '.join(args)})"
        if results:
            text.append(f"{indent}return ({', '.join(results)},)")
            call = f"({', '.join(results)},) = {call}"
        parts.append((part_name, text))
        calls.append((first, last, [indent + call]))
    return (calls, parts) if parts else None


class _Unit:
    """Top-level statements of one loop nest: lines first..last (with its comment)."""

    def __init__(self, first: int):
        self.first, self.last, self.stmts = first, first, []


def _units(body: list, lines: list, func) -> list:
    """The function's top-level statements grouped by loop nest (a `# loop nest` comment
    starts a unit); statements before the first nest (checks) form the first unit."""
    marks = [i + 1 for i in range(func.lineno, func.end_lineno)
             if lines[i].strip().startswith(NEST_MARK)]
    units: list = []
    for stmt in body:
        start = max([m for m in marks if m <= stmt.lineno] or [stmt.lineno])
        if isinstance(stmt, ast.Expr) and stmt is body[0]:
            continue    # the leading wide_vectors() call stays in the function
        if not units or start > units[-1].last:
            units.append(_Unit(min(start, stmt.lineno)))
        units[-1].stmts.append(stmt)
        units[-1].last = stmt.end_lineno
    return units


def _group(units: list) -> list:
    """Units gathered into parts of about CHUNK_LINES lines."""
    groups, current, size = [], [], 0
    for unit in units:
        current.append(unit)
        size += unit.last - unit.first + 1
        if size >= CHUNK_LINES:
            groups.append(current)
            current, size = [], 0
    if current:
        groups.append(current)
    return groups


def _stmts(group: list) -> list:
    return [s for unit in group for s in unit.stmts]


def _later_reads(groups: list, stored: set) -> list:
    """Per part, the names the parts after it read (each part's reads computed once)."""
    reads = [_reads(_stmts(g)) & stored for g in groups]
    later, suffix = [set() for _ in groups], set()
    for k in range(len(groups) - 1, -1, -1):
        later[k] = set(suffix)
        suffix |= reads[k]
    return later


def _signature(stmts: list, stored: set, later_reads: set, bound: set) -> tuple:
    """(arguments, results, names bound after, safe) of a part: it takes the names it
    reads, and those it may rebind that later parts read (so they are bound on every path
    out of it); it returns the names it binds that later parts read.  Unsafe: it reads a
    name not surely bound before it, or would return one it binds only on some paths."""
    reads = _reads(stmts) & stored
    results = _stored_in(stmts) & later_reads
    rebound = (results - _bound(stmts, reads)) & bound
    args = reads | rebound
    after = _bound(stmts, args)
    safe = args <= bound and results <= after
    return sorted(args), sorted(results), after, safe


def _first_unsafe(groups: list, params: set, stored: set):
    """The index (from 1) of a part to merge with the one before it, or None when every
    part is safe (`_signature`)."""
    bound = set(params)
    for k, (group, later) in enumerate(zip(groups, _later_reads(groups, stored))):
        args, _, after, safe = _signature(_stmts(group), stored, later, bound)
        if not set(args) <= bound:
            if k == 0:
                return None if len(groups) == 1 else 1
            return k
        if not safe:
            return k + 1 if k + 1 < len(groups) else k
        bound |= after
    return None


def _stored_names(func) -> set:
    return {n.id for n in ast.walk(func) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)}


def _stored_in(stmts: list) -> set:
    return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)}


def _calls_wide_vectors(func) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "wide_vectors" for n in ast.walk(func))


def _reads(stmts: list) -> set:
    """Names the statements read before binding them on every path (their live-ins)."""
    live: set = set()
    _scan(stmts, set(), live)
    return live


def _bound(stmts: list, entry: set) -> set:
    """Names surely bound after the statements, given those of `entry` bound before."""
    return _scan(stmts, set(entry), set())


def _scan(stmts: list, bound: set, live: set) -> set:
    """Walk statements in order: add to `live` each name read where it may be unbound;
    return the names surely bound after them."""
    bound = set(bound)
    for s in stmts:
        if isinstance(s, ast.Assign):
            _load(s.value, bound, live)
            for target in s.targets:
                _store(target, bound, live)
        elif isinstance(s, ast.AugAssign):
            _load(s.value, bound, live)
            _load(s.target, bound, live)
            _store(s.target, bound, live)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                _load(s.value, bound, live)
                _store(s.target, bound, live)
        elif isinstance(s, ast.For):
            _load(s.iter, bound, live)
            inner = set(bound)
            _store(s.target, inner, live)
            _scan(s.body, inner, live)
            _scan(s.orelse, bound, live)
        elif isinstance(s, ast.While):
            _load(s.test, bound, live)
            _scan(s.body, bound, live)
            _scan(s.orelse, bound, live)
        elif isinstance(s, ast.If):
            _load(s.test, bound, live)
            bound |= _scan(s.body, bound, live) & _scan(s.orelse, bound, live)
        elif isinstance(s, (ast.Expr, ast.Return, ast.Raise, ast.Assert)):
            for child in ast.iter_child_nodes(s):
                _load(child, bound, live)
        elif not isinstance(s, (ast.Pass, ast.Break, ast.Continue)):
            raise _Unsupported(type(s).__name__)
    return bound


def _load(node, bound: set, live: set) -> None:
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in bound:
            live.add(n.id)


def _store(target, bound: set, live: set) -> None:
    if isinstance(target, ast.Name):
        bound.add(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            _store(element, bound, live)
    else:   # a subscript or attribute: stores into an object it reads
        _load(target, bound, live)
