"""Index arithmetic shared by the lowerings of the array ops (array, join, fill, pad, shape,
slicing and gather ops).

Those ops lower to index remaps: each output element loads an input at an index computed
from the output's loop variables.  This module owns that arithmetic on int64 `Expr`s and the
conventions the lowerings share:
- the builders (`add`, `sub`, `lt`, `select`, ...) fold constants and trivial identities as
  they build, so static sizes stay static while lowering and decisions can be made on them;
- `clamp` keeps an index inside [0, size).  Generated code evaluates BOTH arms of a SELECT
  (one statement per operation, hoisted), so a load in an arm that is not taken must still
  address a valid element; a clamped index reads element 0 of an empty input at worst,
  a value that is then discarded;
- `require` records a runtime condition (`LowerContext.check`) unless it is statically
  true; a statically false one raises NotLowerable, so the op runs with its reference
  kernel and raises TensorFlow's error when the graph runs;
- `out_shape` prefers a size the graph knows statically over a runtime Expr;
- `provably_nonneg` tells whether a symbolic size can never be negative (so it cannot be the
  -1 wildcard of Reshape/SplitV).
"""

from __future__ import annotations

from ..compiler.core import ir
from ..compiler.core.ir import Expr
from ..compiler.core.ir import Scalar as S
from ..compiler.core.ir_build import NotLowerable

_ARITH = {S.ADD: lambda a, b: a + b, S.SUB: lambda a, b: a - b, S.MUL: lambda a, b: a * b,
          S.FLOORDIV: lambda a, b: a // b, S.MOD: lambda a, b: a % b, S.MAX: max, S.MIN: min}
_COMPARE = {S.EQ: lambda a, b: a == b, S.NE: lambda a, b: a != b, S.LT: lambda a, b: a < b,
            S.LE: lambda a, b: a <= b, S.GT: lambda a, b: a > b, S.GE: lambda a, b: a >= b}


def index(v) -> Expr:
    """`v` (a Python int or an integer Expr) as an int64 index Expr."""
    if isinstance(v, Expr):
        return v if v.dtype is ir.INDEX else ir.make(S.CAST, ir.INDEX, (v,))
    return ir.index(int(v))


def _arith(op: S, a, b) -> Expr:
    a, b = index(a), index(b)
    if ir.is_const(a) and ir.is_const(b) and not (op in (S.FLOORDIV, S.MOD) and b.attr == 0):
        return ir.index(_ARITH[op](a.attr, b.attr))
    if op is S.ADD and ir.is_const(a, 0) or op is S.MUL and ir.is_const(a, 1):
        return b
    if op in (S.ADD, S.SUB) and ir.is_const(b, 0) or \
            op in (S.MUL, S.FLOORDIV) and ir.is_const(b, 1):
        return a
    if op is S.MUL and (ir.is_const(a, 0) or ir.is_const(b, 0)):
        return ir.index(0)
    if op is S.MOD and ir.is_const(b, 1):
        return ir.index(0)
    if op in (S.MAX, S.MIN) and a is b:
        return a
    return ir.make(op, ir.INDEX, (a, b))


def add(a, b) -> Expr:
    return _arith(S.ADD, a, b)


def sub(a, b) -> Expr:
    return _arith(S.SUB, a, b)


def mul(a, b) -> Expr:
    return _arith(S.MUL, a, b)


def floordiv(a, b) -> Expr:
    return _arith(S.FLOORDIV, a, b)


def mod(a, b) -> Expr:
    return _arith(S.MOD, a, b)


def maximum(a, b) -> Expr:
    return _arith(S.MAX, a, b)


def minimum(a, b) -> Expr:
    return _arith(S.MIN, a, b)


def _compare(op: S, a, b) -> Expr:
    a, b = index(a), index(b)
    if ir.is_const(a) and ir.is_const(b):
        return ir.const(_COMPARE[op](a.attr, b.attr), "bool")
    if a is b:
        return ir.const(op in (S.EQ, S.LE, S.GE), "bool")
    return ir.make(op, "bool", (a, b))


def eq(a, b) -> Expr:
    return _compare(S.EQ, a, b)


def ne(a, b) -> Expr:
    return _compare(S.NE, a, b)


def lt(a, b) -> Expr:
    return _compare(S.LT, a, b)


def le(a, b) -> Expr:
    return _compare(S.LE, a, b)


def ge(a, b) -> Expr:
    return _compare(S.GE, a, b)


def all_of(conds) -> Expr:
    """The logical AND of bool Exprs (True for none)."""
    out = ir.const(True, "bool")
    for c in conds:
        if ir.is_const(c, False):
            return c
        if not ir.is_const(c, True):
            out = c if ir.is_const(out, True) else ir.make(S.AND, "bool", (out, c))
    return out


def any_of(conds) -> Expr:
    """The logical OR of bool Exprs (False for none)."""
    out = ir.const(False, "bool")
    for c in conds:
        if ir.is_const(c, True):
            return c
        if not ir.is_const(c, False):
            out = c if ir.is_const(out, False) else ir.make(S.OR, "bool", (out, c))
    return out


def select(cond: Expr, if_true: Expr, if_false: Expr) -> Expr:
    """cond ? if_true : if_false (both arms are evaluated by generated code)."""
    if ir.is_const(cond, True) or if_true is if_false:
        return if_true
    if ir.is_const(cond, False):
        return if_false
    return ir.make(S.SELECT, if_true.dtype, (cond, if_true, if_false))


def choose(position: Expr, values) -> Expr:
    """values[position] for a runtime position in [0, len(values)): a chain of SELECTs."""
    values = list(values)
    out = values[-1]
    for k in range(len(values) - 2, -1, -1):
        out = select(eq(position, k), values[k], out)
    return out


def clamp(e, size) -> Expr:
    """`e` forced into [0, size - 1] (0 when size is 0): a load there is always valid."""
    return maximum(minimum(e, sub(size, 1)), 0)


def nonzero(e) -> Expr:
    """`e`, or 1 where it is 0 (TensorFlow's products that skip zero sizes)."""
    e = index(e)
    return select(eq(e, 0), ir.index(1), e)


def product(dims) -> Expr:
    out = ir.index(1)
    for d in dims:
        out = mul(out, d)
    return out


def total(dims) -> Expr:
    out = ir.index(0)
    for d in dims:
        out = add(out, d)
    return out


def provably_nonneg(e: Expr) -> bool:
    """True when `e` can never be negative (constants >= 0, input sizes, and sums,
    products, quotients, minima, maxima and selects of such)."""
    if e.op is S.CONST:
        return e.attr >= 0
    if e.op is S.DIM:
        return True
    if e.op is S.MAX:
        return any(provably_nonneg(a) for a in e.args)
    if e.op in (S.ADD, S.MUL, S.FLOORDIV, S.MIN, S.CAST):
        return all(provably_nonneg(a) for a in e.args)
    if e.op is S.SELECT:
        return provably_nonneg(e.args[1]) and provably_nonneg(e.args[2])
    return False


def require(ctx, cond: Expr, message: str):
    """Check `cond` at run time; NotLowerable (reference kernel) when statically false."""
    if ir.is_const(cond, True):
        return
    if ir.is_const(cond, False):
        raise NotLowerable(f"always fails, left to the reference kernel: {message}")
    ctx.check(cond, message)


def require_equal(ctx, a, b, message: str):
    require(ctx, eq(a, b), message)


def out_shape(tensor, dims) -> tuple:
    """`dims` (Exprs) with every size the graph knows statically for `tensor` made constant."""
    dims = [index(d) for d in dims]
    static = tensor.shape.dims
    if static is not None and len(static) == len(dims):
        dims = [ir.index(s) if s is not None else d for s, d in zip(static, dims)]
    return tuple(dims)


def static_axis(ctx, tensor, rank: int, what: str = "axis") -> int:
    """A static scalar axis argument normalized into [0, rank); NotLowerable otherwise."""
    value = ctx.static(tensor, what).reshape(-1)
    if value.size != 1 or not -rank <= int(value[0]) < max(rank, 1):
        raise NotLowerable(f"{what} {value.tolist()} is not valid for rank {rank}")
    return int(value[0]) % max(rank, 1)


def drop(seq, k: int) -> list:
    """`seq` without its element k."""
    return list(seq[:k]) + list(seq[k + 1:])
