"""Names in the statements compiler/autograph.py rewrites: which a statement binds (its
state), reads and mutates, and which control transfers it holds (docs/architecture.md
"Python control flow in @jit")."""

from __future__ import annotations

import ast

_PRIVATE = "_ag_f"     # names of the helper functions the rewrite defines

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
           ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _own_nodes(stmts):
    """Every node of `stmts` outside nested scopes (the scopes' own nodes included)."""
    stack = list(reversed(stmts))
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, _SCOPES):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(n))))


def _loop_nodes(stmts):
    """Nodes of a loop body outside nested scopes and nested loops."""
    stack = list(reversed(stmts))
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, _SCOPES + (ast.For, ast.While)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(n))))


def _assigned(stmts) -> list:
    """Names `stmts` bind in their own scope, in order of first appearance."""
    out: dict = {}
    for n in _own_nodes(stmts):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out[n.id] = None
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[n.name] = None
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out[(a.asname or a.name).split(".")[0]] = None
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out[n.name] = None
    return [k for k in out if not k.startswith(_PRIVATE)]


def _read(nodes) -> list:
    out: dict = {}
    for n in nodes:
        for m in ast.walk(n):
            if isinstance(m, ast.Name) and isinstance(m.ctx, ast.Load) and \
                    not m.id.startswith("_ag_"):
                out[m.id] = None
    return list(out)


def _mutated(nodes) -> list:
    """Names whose objects the statements may change: `x.f(...)`, `x[k] = v`, `x.a = v`."""
    out: dict = {}
    for n in nodes:
        for m in ast.walk(n):
            base = None
            if isinstance(m, ast.Call) and isinstance(m.func, ast.Attribute):
                base = m.func.value
            elif isinstance(m, (ast.Subscript, ast.Attribute)) and \
                    isinstance(m.ctx, (ast.Store, ast.Del)):
                base = m.value
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name) and not base.id.startswith("_ag_"):
                out[base.id] = None
    return list(out)


def _has(stmts, kinds, loops_too=False) -> bool:
    walk = _own_nodes(stmts) if loops_too else _loop_nodes(stmts)
    return any(isinstance(n, kinds) for n in walk)


