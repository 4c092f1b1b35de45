"""Sizes that are 1 whenever they can be: `is_unit(size)` for broadcasting.

A kernel is compiled for every runtime size that is not 1 (signatures record which sizes are
1, so an IR `DIM` is never 1 at run time).  A slice such as `x[:, :1]` or `x[:, -1:]` then has
a size expression, `max(min(1, n), 0)`, that is 1 for every such n except 0.  NumPy
broadcasts it against `x`'s n columns (`x - x[:, :1]`), so the lowering must too: a size
expression that evaluates to 1 for every n >= 2 counts as a broadcast dimension (read at
index 0), and the runtime check left for n == 0 requires it to be 1 or equal to the size it
is broadcast against, as NumPy requires.

The test evaluates the expression on every combination of n in 2..(largest constant + 3)
and two large values, for expressions over at most two runtime sizes built from integer
constants, + - *, min, max, // and %: such an expression is piecewise linear with breaks at
n below the largest constant, so one that is 1 on all those points is 1 everywhere.
"""

from __future__ import annotations

import itertools
import operator

from . import ir
from .ir import Scalar

_MAX_DIMS = 2
_MAX_PROBE = 40
_LARGE = (1 << 20, (1 << 20) + 3)

_BINARY = {Scalar.ADD: operator.add, Scalar.SUB: operator.sub, Scalar.MUL: operator.mul,
           Scalar.MAX: max, Scalar.MIN: min, Scalar.EQ: operator.eq, Scalar.NE: operator.ne,
           Scalar.LT: operator.lt, Scalar.LE: operator.le, Scalar.GT: operator.gt,
           Scalar.GE: operator.ge}

_memo: dict = {}


def is_unit(size: ir.Expr) -> bool:
    """True when the size expression `size` is the constant 1, or is 1 for every value >= 2
    of the runtime sizes it depends on (see the module docstring)."""
    if ir.is_const(size):
        return size.attr == 1
    hit = _memo.get(id(size))
    if hit is not None and hit[0] is size:
        return hit[1]
    result = _probe(size)
    if len(_memo) > 4096:
        _memo.clear()
    _memo[id(size)] = (size, result)
    return result


def _probe(size) -> bool:
    parts = list(ir.walk(size))
    dims = sorted({e.attr for e in parts if e.op is Scalar.DIM})
    if not dims or len(dims) > _MAX_DIMS:
        return False
    consts = [e.attr for e in parts if e.op is Scalar.CONST]
    if not all(isinstance(c, int) and not isinstance(c, bool) for c in consts):
        return False
    top = min(max((abs(c) for c in consts), default=0) + 3, _MAX_PROBE)
    samples = list(range(2, top + 1)) + list(_LARGE)
    for values in itertools.product(samples, repeat=len(dims)):
        if _evaluate(size, dict(zip(dims, values))) != 1:
            return False
    return True


def _evaluate(e, env):
    """The integer value of the size expression `e` with runtime sizes from `env`, or None
    when it uses anything else (a load, a float)."""
    op = e.op
    if op is Scalar.CONST:
        return e.attr
    if op is Scalar.DIM:
        return env[e.attr]
    args = [_evaluate(a, env) for a in e.args]
    if any(a is None for a in args):
        return None
    if op in _BINARY:
        return _BINARY[op](*args)
    if op is Scalar.NEG:
        return -args[0]
    if op in (Scalar.FLOORDIV, Scalar.MOD):
        if args[1] == 0:
            return None
        return args[0] // args[1] if op is Scalar.FLOORDIV else args[0] % args[1]
    if op is Scalar.SELECT:
        return args[1] if args[0] else args[2]
    if op is Scalar.CAST and e.dtype.is_integer:
        return int(args[0])
    return None
