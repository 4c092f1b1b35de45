"""Tiling of loop nests by the data they touch: a loop-IR pass (compiler/loop_ir.py) that
blocks a two-deep nest whose inner loop walks some array against its memory order.

A nest `for i0: for i1: out[i0, i1] = a[i0, i1] + a[i1, i0]` reads `a[i1, i0]` with a stride
of a whole row per inner iteration: for large arrays every such load misses the cache.
`tile_nests(program, tile)` rewrites such a nest into tiles of `tile` x `tile` iterations,

    for i0_t in [0, ceil(n0 / tile)):            (the outer loop's kind: parallel stays so)
        for i1_t in [0, ceil(n1 / tile)):
            # tile ...
            for i0 in [i0_t * tile, min(n0, i0_t * tile + tile)):
                for i1 in [i1_t * tile, min(n1, i1_t * tile + tile)):
                    <the same body>

so the rows and the columns a tile touches both stay in cache.  Candidates are perfect
nests (scalar lets between the two loops are allowed, they are recomputed per tile) of two
loops starting at 0, with a loop-free inner body that stores along the inner index (the
last index of every store is the inner variable) and loads some array with the inner
variable in an earlier index position and not in its last one (a transposed or column
read).  Nests tagged for another transformation (a row reduction's jamming), and nests that
store into an array they read at other indices (in place: the order would matter), are
left alone.
The tile size is the target's choice (its cache sizes, or a GPU's thread block); the
chosen tiles show as a comment in the loop IR and the source (docs/architecture.md,
principle 7: explain yourself).
"""

from __future__ import annotations

import dataclasses

from .loop_ir import (Comment, ExprKind, IndexOpKind, Int, Loop, LoopKind, LoopProgram,
                      StmtKind, Var, index_op)
from .loop_walk import map_body, stmt_exprs, walk_expr, walk_stmts


def _strided_reads(inner: Loop, outer_var: str) -> list:
    """Arrays the inner loop's body reads against memory order (the inner index in an
    earlier position, not the last); [] when the nest is no candidate."""
    var = inner.var
    reads, stores = [], 0
    for s in walk_stmts(inner.body):
        if s.kind in (StmtKind.LOOP, StmtKind.WHILE, StmtKind.IF, StmtKind.VERBATIM,
                      StmtKind.ACCUMULATE, StmtKind.DO):
            return []
        if s.kind is StmtKind.STORE:
            stores += 1
            if not s.indices or s.indices[-1] != Var(var):
                return []
        for e in stmt_exprs(s):
            for x in walk_expr(e):
                if x.kind is not ExprKind.LOAD or len(x.indices) < 2:
                    continue
                if x.indices[-1] != Var(var) and Var(var) in x.indices[:-1] and \
                        x.buffer not in reads:
                    reads.append(x.buffer)
    if not stores or _aliased(inner.body):
        return []
    return reads


def _aliased(body) -> bool:
    """Whether a stored array is also read at other indices (an in-place update: the order
    of iterations would then matter)."""
    stored = {}
    for s in walk_stmts(body):
        if s.kind is StmtKind.STORE:
            stored.setdefault(s.buffer, set()).add(s.indices)
    for s in walk_stmts(body):
        for e in stmt_exprs(s):
            for x in walk_expr(e):
                if x.kind is ExprKind.LOAD and x.buffer in stored and \
                        stored[x.buffer] != {x.indices}:
                    return True
    return False


def _tiled(outer: Loop, tile: int):
    """`outer` and its inner loop as tiles (module docstring), or None."""
    if outer.start != Int(0) or outer.tags:
        return None
    lets = outer.body[:-1]
    inner = outer.body[-1] if outer.body else None
    if inner is None or inner.kind is not StmtKind.LOOP or inner.start != Int(0) or \
            any(s.kind is not StmtKind.LET for s in lets):
        return None
    reads = _strided_reads(inner, outer.var)
    if not reads:
        return None
    t = Int(tile)

    def blocks(stop):
        return index_op(IndexOpKind.FLOORDIV, index_op(IndexOpKind.ADD, stop, Int(tile - 1)), t)

    def in_tile(loop: Loop, body):
        lo = index_op(IndexOpKind.MUL, Var(f"{loop.var}_t"), t)
        hi = index_op(IndexOpKind.MIN, loop.stop, index_op(IndexOpKind.ADD, lo, t))
        return Loop(LoopKind.SERIAL, loop.var, lo, hi, body)

    note = Comment(f"tiles of {tile}x{tile} over {outer.var}, {inner.var}: "
                   f"{', '.join(reads)} read across rows")
    rows = in_tile(outer, tuple(lets) + (in_tile(inner, inner.body),))
    columns = Loop(LoopKind.SERIAL, f"{inner.var}_t", Int(0), blocks(inner.stop), (rows,))
    return [note, Loop(outer.loop_kind, f"{outer.var}_t", Int(0), blocks(outer.stop),
                       (columns,))]


def tile_nests(program: LoopProgram, tile: int) -> LoopProgram:
    """`program` with every candidate two-deep nest (module docstring) cut into tiles of
    `tile` x `tile` iterations."""
    def one(s):
        if s.kind is StmtKind.LOOP and s.body and s.body[-1].kind is StmtKind.LOOP:
            out = _tiled(s, tile)
            if out is not None:
                return tuple(out)
        return (s,)
    return dataclasses.replace(program, body=map_body(program.body, one))

