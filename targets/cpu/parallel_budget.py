"""Which loop nests of a kernel get a parallel version (codegen.py asks, per nest).

numba compiles each prange region of a kernel as a function of its own (~0.6-1 s each), so a
kernel gets at most MAX_PARALLEL_NESTS of them, given to the nests with the most work
(`work_estimate`, a run-time size counted GUESSED_SIZE), and beyond those up to
MAX_LARGE_NESTS nests that are surely large (`surely_large`) or row reductions over
run-time sizes.  Giving the budget to the first nests instead left 20 matrix-vector
products of an unrolled power iteration on one thread after the fourth.
"""

from __future__ import annotations

from ...compiler.core import ir

MAX_PARALLEL_NESTS = 8       # the loop nests with the most work get a prange region
GUESSED_SIZE = 1000          # a run-time size, when ranking loop nests by their work
LARGE_WORK = 1_000_000       # elements: nests surely this large are parallel beyond the 8 ...
MAX_LARGE_NESTS = 24         # ... up to this many (serial, each would cost >= ~0.3 ms)


def choose(requests) -> frozenset:
    """Indices of the nests to make parallel, from (work estimate, surely large) per nest
    in the order the generator met them."""
    ranked = sorted(range(len(requests)), key=lambda k: (-requests[k][0], k))
    return frozenset(ranked[:MAX_PARALLEL_NESTS] +
                     [k for k in ranked[MAX_PARALLEL_NESTS:MAX_LARGE_NESTS] if requests[k][1]])


def surely_large(dims) -> bool:
    """Whether a nest over `dims` visits at least LARGE_WORK elements by its static sizes
    alone (a kernel compiled for exact shapes).  With run-time sizes nothing is sure: the
    arrays of a Session cluster (a training step's weights) have them too, and counting
    them as large gave such kernels twice the parallel regions to compile."""
    static = 1
    for d in dims:
        if not ir.is_const(d):
            return False
        static *= d.attr
    return static >= LARGE_WORK


def work_estimate(dims) -> float:
    """The elements a loop nest over `dims` visits, a run-time size counted GUESSED_SIZE."""
    work = 1.0
    for d in dims:
        work *= d.attr if ir.is_const(d) else GUESSED_SIZE
    return work
