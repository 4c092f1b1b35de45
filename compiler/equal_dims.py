"""Which run-time sizes a program's checks prove equal, for comparing shapes.

A kernel checks at its start that the sizes an op needs equal are equal (`in1.shape[1] ==
in2.shape[0]` before `a @ b + bias`), and raises otherwise.  After those checks two shapes
built from different but checked-equal size expressions describe the same extents, so memory
planning may let one node write into the other's buffer, and a GEMM may apply an epilogue
whose shape was spelled with the bias's length.  `SizeClasses` is the union of the
`size == size` checks (sizes: expressions of dims and constants, no loaded values).
"""

from __future__ import annotations

from .core import ir
from .core.ir import Scalar


def _size_expr(e) -> bool:
    """Whether `e` is a size computed from sizes alone (dims, constants and arithmetic on
    them, no loaded value): interned, so one object has one value in a run."""
    return all(x.op is not Scalar.LOAD for x in ir.walk(e))


class SizeClasses:
    """Equivalence classes of size expressions under a program's equality checks."""

    def __init__(self, program: ir.Program):
        self._parent: dict = {}
        for cond, _ in program.checks:
            if cond.op is Scalar.EQ and len(cond.args) == 2 and \
                    all(_size_expr(a) for a in cond.args):
                self._union(*cond.args)

    def _find(self, e):
        while self._parent.get(e, e) is not e:
            e = self._parent[e]
        return e

    def _union(self, a, b):
        ra, rb = self._find(a), self._find(b)
        if ra is not rb:
            self._parent[ra] = rb

    def same(self, a, b) -> bool:
        """Whether sizes a and b are equal in every run that passed the checks."""
        return a is b or self._find(a) is self._find(b) or (
            ir.is_const(a) and ir.is_const(b) and a.attr == b.attr)

    def same_shape(self, s, t) -> bool:
        """Whether shapes s and t (tuples of size expressions) are equal after the checks."""
        return len(s) == len(t) and all(self.same(a, b) for a, b in zip(s, t))
