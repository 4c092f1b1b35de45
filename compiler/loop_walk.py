"""Traversal and rewriting of loop-IR nodes (compiler/loop_ir.py): nested blocks, walks over
statements and expressions, the names a body binds or reads, `map_body` (rebuild a body
statement by statement) and `rename` (scalar names, for copies of a loop body).

Invariants: nothing here mutates a node; every function dispatches on node kinds (enums).
"""

from __future__ import annotations

import dataclasses

from .loop_ir import Do, ExprKind, Let, Load, Return, StmtKind, Store, Var

def blocks(stmt) -> tuple:
    """The statement lists nested directly in `stmt`."""
    kind = stmt.kind
    if kind in (StmtKind.LOOP, StmtKind.WHILE):
        return (stmt.body,)
    if kind is StmtKind.IF:
        return (stmt.then, stmt.orelse)
    return ()


def walk_stmts(body):
    """Every statement of `body`, nested ones included, in order."""
    for s in body:
        yield s
        for b in blocks(s):
            yield from walk_stmts(b)


def children(e) -> tuple:
    """Sub-expressions of expression `e`."""
    kind = e.kind
    if kind is ExprKind.LOAD:
        return e.indices
    if kind in (ExprKind.SCALAR, ExprKind.INDEX, ExprKind.CALL):
        return e.args
    return ()


def walk_expr(e):
    """Expression `e` and every sub-expression, outermost first."""
    yield e
    for a in children(e):
        yield from walk_expr(a)


def stmt_exprs(s) -> tuple:
    """Expressions a statement reads (not those of nested blocks)."""
    kind = s.kind
    if kind is StmtKind.LOOP:
        return (s.start, s.stop)
    if kind in (StmtKind.WHILE, StmtKind.IF, StmtKind.CHECK):
        return (s.cond,)
    if kind in (StmtKind.LET, StmtKind.ALLOC):
        return (s.value,)
    if kind is StmtKind.STORE:
        return s.indices + (s.value,)
    if kind is StmtKind.ACCUMULATE:
        return (s.value, s.index)
    if kind is StmtKind.DO:
        return (s.call,)
    if kind is StmtKind.RETURN:
        return s.values
    return ()


def names_read(e) -> set:
    """Variables and accumulators expression `e` reads."""
    out = set()
    for x in walk_expr(e):
        if x.kind is ExprKind.VAR:
            out.add(x.name)
        elif x.kind is ExprKind.ACC_RESULT:
            out.add(x.acc)
    return out


def assigned(body) -> set:
    """Scalar names bound anywhere in `body` (lets and accumulators, not loop indices)."""
    out = set()
    for s in walk_stmts(body):
        if s.kind is StmtKind.LET:
            out.add(s.name)
        elif s.kind is StmtKind.ACCUMULATE:
            out.add(s.acc)
    return out


def map_body(body, fn) -> tuple:
    """`body` with every statement (nested ones first) replaced by `fn(stmt)`, a tuple."""
    out = []
    for s in body:
        if s.kind in (StmtKind.LOOP, StmtKind.WHILE):
            s = dataclasses.replace(s, body=map_body(s.body, fn))
        elif s.kind is StmtKind.IF:
            s = dataclasses.replace(s, then=map_body(s.then, fn), orelse=map_body(s.orelse, fn))
        out.extend(fn(s))
    return tuple(out)


def rename_expr(e, names: dict):
    """Expression `e` with variables renamed by `names` (old -> new)."""
    kind = e.kind
    if kind is ExprKind.VAR:
        return Var(names.get(e.name, e.name))
    if kind is ExprKind.ACC_RESULT:
        return dataclasses.replace(e, acc=names.get(e.acc, e.acc))
    if kind is ExprKind.LOAD:
        return Load(e.buffer, tuple(rename_expr(a, names) for a in e.indices))
    if kind in (ExprKind.SCALAR, ExprKind.INDEX, ExprKind.CALL):
        return dataclasses.replace(e, args=tuple(rename_expr(a, names) for a in e.args))
    return e


def rename(body, names: dict) -> tuple:
    """Statements `body` with scalar names (reads, lets, accumulators, loop indices) renamed
    by `names`; buffer names are kept."""
    def one(s):
        r = lambda e: rename_expr(e, names)  # noqa: E731
        kind = s.kind
        if kind is StmtKind.LOOP:
            s = dataclasses.replace(s, var=names.get(s.var, s.var), start=r(s.start),
                                    stop=r(s.stop))
        elif kind in (StmtKind.WHILE, StmtKind.IF, StmtKind.CHECK):
            s = dataclasses.replace(s, cond=r(s.cond))
        elif kind is StmtKind.LET:
            s = Let(names.get(s.name, s.name), r(s.value))
        elif kind is StmtKind.ALLOC:
            s = dataclasses.replace(s, value=r(s.value))
        elif kind is StmtKind.STORE:
            s = Store(s.buffer, tuple(map(r, s.indices)), r(s.value))
        elif kind is StmtKind.ACCUMULATE:
            s = dataclasses.replace(s, acc=names.get(s.acc, s.acc), value=r(s.value),
                                    index=r(s.index))
        elif kind is StmtKind.DO:
            s = Do(r(s.call))
        elif kind is StmtKind.RETURN:
            s = Return(tuple(map(r, s.values)))
        return (s,)
    return map_body(body, one)
