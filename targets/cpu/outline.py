"""Outlining: a long loop program is cut into functions of a few loop nests each, a CPU
pass over the loop IR (`LOOP_PASSES` in codegen.py; it runs on the kernel and on each while
loop's condition and body).

numba's compile time grows faster than a function's length: its reaching-definitions,
liveness and SSA passes walk every block for every variable (docs/architecture.md,
"Compile time").  A training step's kernel is one function of 1,200-1,400 generated lines
and compiled in about a minute; cut into functions of about `CHUNK_LINES` lines that the
kernel calls, the same code compiles several times faster, and runs as fast (a call per
loop nest costs nanoseconds; each part keeps its own `prange` loops).

`outline(program)` leaves programs shorter than `MIN_LINES` rendered lines alone.  A part is
a run of whole top-level statements, cut where a loop nest begins (the `loop nest` comments
of codegen.py), so comments stay with their code.  Each part becomes a `LoopProgram` in the
program's `functions`, `<program>_p<k>(<names it reads that are set before it>)`, returning
the names it binds that later code reads; the program calls it in its place (a `Verbatim`
call that declares the names it binds).  Which names a statement reads and binds is read
from its rendered text with Python's `ast` (the text is only analysed: what the target
renders is the new loop program).  A name is passed or returned only where Python's rules
make it surely bound there (`_bound`): a part that would read a name bound in an earlier
part only on some paths is merged with that earlier part.  render.py lists the parts in
SUBKERNELS; build.py compiles each with the kernel's numba options (`parallel` only for a
part with a `prange` loop).
"""

from __future__ import annotations

import ast
import dataclasses
import threading

from ...compiler.loop_ir import LoopProgram, Return, StmtKind, Var, Verbatim
from . import render
from .render import INDENT
from .vector_width import WIDE

MIN_LINES = 160      # functions shorter than this stay whole
CHUNK_LINES = 70     # a part grows by whole loop nests until it has this many lines
NEST_MARK = "loop nest "
_PARSE_LOCK = threading.Lock()   # kernels of several devices compile at once
_UNSUPPORTED = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                ast.Global, ast.Nonlocal, ast.FunctionDef, ast.ClassDef, ast.With, ast.Try,
                ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await, ast.Delete)


class _Unsupported(Exception):
    """A statement the analysis does not model: the program is left whole."""


def outline(program: LoopProgram) -> LoopProgram:
    """`program` cut into parts when longer than MIN_LINES (module docstring)."""
    if len(render.lines(program.body, INDENT)) < MIN_LINES:
        return program
    body = program.body
    lead = body[:1] if body and body[0] == WIDE else ()
    try:
        units = _units(body[len(lead):])
        plan = _plan(program, units)
    except _Unsupported:
        return program
    if plan is None:
        return program
    new_body, parts = list(lead), []
    bound = set(program.params)
    for k, (group, later) in enumerate(plan):
        stmts = _stmts(group)
        returns = any(u.returns for u in group)
        args, results, after, _ = _signature(stmts, plan.stored, later, bound)
        bound |= after if not returns else _bound(stmts, bound)
        ir_stmts = tuple(s for u in group for s in u.ir)
        if returns:      # kept in place
            new_body.extend(ir_stmts)
            continue
        name = f"{program.name}_p{k}"
        tail = (Return(tuple(Var(r) for r in results)),) if results else ()
        parts.append(LoopProgram(name, tuple(args), (), lead + ir_stmts + tail))
        call = f"{name}({', '.join(args)})"
        if results:
            call = f"({', '.join(results)},) = {call}"
        new_body.append(Verbatim((call,), tuple(results)))
    return dataclasses.replace(program, body=tuple(new_body),
                               functions=tuple(program.functions) + tuple(parts))


class _Plan(list):
    """[(group, names later groups read)] with `stored`: every name the program binds."""


def _plan(program: LoopProgram, units: list):
    """The program's units grouped into parts, merged until every cut is safe; None when
    fewer than two parts remain."""
    if len(units) < 2:
        return None
    groups = _group(units)
    params = set(program.params)
    stored = {n.id for u in units for s in u.tree for n in ast.walk(s)
              if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} | params
    while len(groups) > 1:
        bad = _first_unsafe(groups, params, stored)
        if bad is None:
            break
        bad = max(bad, 1)
        groups[bad - 1:bad + 1] = [groups[bad - 1] + groups[bad]]
    if len(groups) < 2:
        return None
    plan = _Plan(zip(groups, _later_reads(groups, stored)))
    plan.stored = stored
    return plan


class _Unit:
    """Top-level statements of one loop nest: the loop-IR statements, their Python syntax
    trees (for the analysis), their rendered length, whether one returns."""

    def __init__(self):
        self.ir, self.tree, self.size, self.returns = [], [], 0, False

    def add(self, stmt) -> None:
        text = render.lines((stmt,), "")
        self.ir.append(stmt)
        self.size += len(text)
        if stmt.kind is not StmtKind.COMMENT:   # parsed as a function body (a return)
            source = "def _part():\n" + "\n".join(INDENT + t for t in text)
            with _PARSE_LOCK:   # CPython 3.11's ast conversion is not thread-safe
                inner = ast.parse(source).body[0]
            for node in ast.walk(inner):
                if node is not inner and isinstance(node, _UNSUPPORTED):
                    raise _Unsupported(type(node).__name__)
                self.returns = self.returns or isinstance(node, ast.Return)
            self.tree.extend(inner.body)


def _units(body) -> list:
    """The statements grouped by loop nest: a `loop nest` comment starts a unit; each
    statement before the first nest (the checks) is a unit of its own."""
    units: list = []
    in_nests = False
    for stmt in body:
        starts = stmt.kind is StmtKind.COMMENT and stmt.text.startswith(NEST_MARK)
        in_nests = in_nests or starts
        if not units or starts or not in_nests:
            units.append(_Unit())
        units[-1].add(stmt)
    return units


def _group(units: list) -> list:
    """Units gathered into parts of about CHUNK_LINES lines."""
    groups, current, size = [], [], 0
    for unit in units:
        current.append(unit)
        size += unit.size
        if size >= CHUNK_LINES:
            groups.append(current)
            current, size = [], 0
    if current:
        groups.append(current)
    return groups


def _stmts(group: list) -> list:
    return [s for unit in group for s in unit.tree]


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


def _stored_in(stmts: list) -> set:
    return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)}


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
