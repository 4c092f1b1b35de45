"""Code for a LIBCALL node: sorting along the last axis, and LAPACK routines on matrices.

Each routine runs once per index of the leading axes, on views that put those axes into one:
rows of `(rows, n)` for SORT/ARGSORT, matrices of `(batch, n, n)` (or `(batch, n, k)`
right-hand sides) for the linear-algebra routines.  The output buffer is C-contiguous
(allocated here), so those views of it are free; an input is made C-contiguous first
(`np.ascontiguousarray`, a no-op when it already is).

- SORT copies each row into the output and sorts it in place (numba's quicksort, NaNs last,
  as NumPy's order); ARGSORT is numba's stable merge sort (`kind='mergesort'`), which is a
  valid result for every NumPy `kind` and equals NumPy's own for stable ones.  Rows run in a
  parallel loop when the elements are many (decided at run time like the loop nests).
- INV, DET, SOLVE, CHOLESKY call numba's `np.linalg` (scipy's LAPACK) per matrix, in an
  ordered loop: LAPACK raises `np.linalg.LinAlgError` for a singular or not
  positive-definite matrix, and a loop that can raise is not a parallel loop.
"""

from __future__ import annotations

from ...compiler.core.ir import Routine
from ...compiler.loop_ir import Alloc, Call, Do, Int, Load, Loop, LoopKind, Source, Store, Var

_LINALG = {Routine.INV: "np.linalg.inv", Routine.DET: "np.linalg.det",
           Routine.SOLVE: "np.linalg.solve", Routine.CHOLESKY: "np.linalg.cholesky"}


def _product(dims: list) -> str:
    return " * ".join(f"({d})" for d in dims) if dims else "1"


def libcall_lines(gen, node) -> list:
    """Loop-IR statements computing LIBCALL `node` into its buffer (allocated here)."""
    stmts = gen.allocate(node)
    out = gen.buffers[id(node)]
    args = [gen.buffers[id(x)] for x in node.inputs]
    fresh = gen.names.fresh
    first = node.inputs[0]
    dims = [gen.size_text(d) for d in first.shape]
    if node.attr in (Routine.SORT, Routine.ARGSORT):
        rows, n = _product(dims[:-1]), dims[-1]
        src, dst = fresh("rows"), fresh("rows")
        stmts += [Alloc(src, Source(f"np.ascontiguousarray({args[0]}).reshape(({rows}, {n}))")),
                  Alloc(dst, Source(f"{out}.reshape(({rows}, {n}))"))]
        # rows copied by loops: an array assignment would make numba compile its
        # shape-mismatch error message (seconds per process)
        column = (Var("r"), Var("c"))
        if node.attr is Routine.SORT:
            body = (Loop(LoopKind.SERIAL, "c", Int(0), Source(n),
                         (Store(dst, column, Load(src, column)),)),
                    Do(Call(f"{dst}[r].sort")))
        else:
            order = fresh("order")
            body = (Alloc(order, Source(f"np.argsort({src}[r], kind='mergesort')")),
                    Loop(LoopKind.SERIAL, "c", Int(0), Source(n),
                         (Store(dst, column, Load(order, (Var("c"),))),)))
        return stmts + gen.branch(
            first.shape, Source(f"({rows}) * ({n})"),
            lambda: [Loop(LoopKind.PARALLEL, "r", Int(0), Source(rows), body)],
            lambda: [Loop(LoopKind.SERIAL, "r", Int(0), Source(rows), body)])
    batch = _product(dims[:-2])
    mats = [fresh("mats") for _ in args]
    for name, buf, x in zip(mats, args, node.inputs):
        tail = ", ".join(gen.size_text(d) for d in x.shape[-2:])
        stmts.append(Alloc(name, Source(
            f"np.ascontiguousarray({buf}).reshape(({batch}, {tail}))")))
    call = f"{_LINALG[node.attr]}({', '.join(f'{m}[b]' for m in mats)})"
    target = fresh("dets" if node.attr is Routine.DET else "mats")
    if node.attr is Routine.DET:
        view = f"{out}.reshape(({batch},))"
        body = (Store(target, (Var("b"),), Source(call)),)
    else:   # each result matrix copied by loops (no array assignment: see above)
        rows, cols = (gen.size_text(d) for d in node.shape[-2:])
        view = f"{out}.reshape(({batch}, {rows}, {cols}))"
        result = fresh("result")
        at = (Var("i"), Var("j"))
        body = (Alloc(result, Source(call)),
                Loop(LoopKind.SERIAL, "i", Int(0), Source(rows), (
                    Loop(LoopKind.SERIAL, "j", Int(0), Source(cols), (
                        Store(target, (Var("b"),) + at, Load(result, at)),)),)))
    return stmts + [Alloc(target, Source(view)),
                    Loop(LoopKind.SERIAL, "b", Int(0), Source(batch), body)]
