"""The scalar operations of the kernel IR as whole-array NumPy functions (the reference target).

`apply(op, dtype, args, arg_dtypes)` computes one `Scalar` operation over NumPy arrays that
broadcast against each other and returns an array of the expression's `dtype`.  Each entry
of `_OPS` says what the operation means (compiler/core/ir.py lists them); where the IR
leaves a choice to the machine, the choice is the CPU target's, so the two agree exactly on
integers and bools:
- integer arithmetic wraps in the result's dtype; integer floor division and modulo by zero
  give 0 (ops that must raise check their divisors first, as run-time checks);
- MAX/MIN propagate NaN (`a if a > b or a != a else b`, so max(-0.0, 0.0) is 0.0);
- FLOORDIV of floats is floor(a / b), MOD of floats takes the divisor's sign;
- SHL/SHR take the count in the result's dtype; counts outside [0, bits) give 0 (SHR of a
  negative value: -1);
- CAST to bool is `!= 0`; other casts are NumPy's (a NaN cast to an integer is unspecified
  in both targets).
Callers run these under `np.errstate(all="ignore")`: overflow, NaN and division by zero are
values here, never warnings.  No numba: the reference target is the oracle the compiled
targets are tested against (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import math

import numpy as np

from ...compiler.core.ir import Scalar


def np_dtype(dtype) -> np.dtype:
    """The NumPy dtype of a flowjit dtype."""
    return np.dtype(dtype.np_dtype)


def _max(args, dtype):
    a, b = args
    if dtype.is_floating:
        return np.where((a > b) | (a != a), a, b)
    return np.maximum(a, b)


def _min(args, dtype):
    a, b = args
    if dtype.is_floating:
        return np.where((a < b) | (a != a), a, b)
    return np.minimum(a, b)


def _floordiv(args, dtype):
    a, b = args
    if dtype.is_integer:
        return np.floor_divide(a, b)     # 0 for a zero divisor, as the CPU's ifloordiv
    return np.floor(np.true_divide(a, b))


def _pow(args, dtype):
    a, b = args
    if not dtype.is_integer:
        return np.power(a, b)
    a, b = a.astype(np_dtype(dtype)), np.asarray(b).astype(np_dtype(dtype))
    if not dtype.is_unsigned and np.any(b < 0):
        # integer powers with a negative exponent: 1 for 1, +-1 for -1, else 0
        ok = np.power(a, np.where(b < 0, 0, b))
        odd = (b % 2) != 0
        neg = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0))
        return np.where(b < 0, neg, ok)
    return np.power(a, b)


def _sign(args, dtype):
    return np.sign(args[0])


def _sigmoid(args, dtype):
    x = args[0]
    positive = 1 / (1 + np.exp(-x))
    z = np.exp(x)
    return np.where(x >= 0, positive, z / (1 + z))


_ERF = np.vectorize(math.erf, otypes=[np.float64])


def _erf(args, dtype):
    x = np.asarray(args[0])
    return _ERF(x) if x.size else x.astype(np.float64)


def _rounding(fn):
    def apply(args, dtype):
        x = args[0]
        return fn(x) if np.asarray(x).dtype.kind == "f" else x
    return apply


def _shift(left: bool):
    def apply(args, dtype):
        t = np_dtype(dtype)
        a = np.asarray(args[0]).astype(t)
        b = np.asarray(args[1]).astype(t)
        bits = 8 * t.itemsize
        inside = (b >= 0) & (b < bits)
        count = np.where(inside, b, 0).astype(t)
        if left:
            return np.where(inside, np.left_shift(a, count), np.zeros((), t))
        outside = np.where(a < 0, np.invert(np.zeros((), t)), np.zeros((), t))
        return np.where(inside, np.right_shift(a, count), outside)
    return apply


def _cast(args, dtype):
    x = np.asarray(args[0])
    if dtype.is_bool:
        return x != 0
    return x.astype(np_dtype(dtype))


def _is_float_test(fn):
    def apply(args, dtype):
        x = np.asarray(args[0])
        return fn(x) if x.dtype.kind in "fc" else np.zeros(x.shape, bool)
    return apply


def _unary(fn):
    return lambda args, dtype: fn(args[0])


def _binary(fn):
    return lambda args, dtype: fn(args[0], args[1])


def _bits(fn, logical):
    def apply(args, dtype):
        return (logical if dtype.is_bool else fn)(*args)
    return apply


_OPS = {
    Scalar.ADD: _binary(np.add), Scalar.SUB: _binary(np.subtract),
    Scalar.MUL: _binary(np.multiply), Scalar.DIV: _binary(np.true_divide),
    Scalar.FLOORDIV: _floordiv, Scalar.MOD: _binary(np.mod), Scalar.POW: _pow,
    Scalar.MAX: _max, Scalar.MIN: _min,
    Scalar.NEG: _unary(np.negative), Scalar.ABS: _unary(np.abs), Scalar.SIGN: _sign,
    Scalar.SQRT: _unary(np.sqrt), Scalar.EXP: _unary(np.exp), Scalar.EXPM1: _unary(np.expm1),
    Scalar.LOG: _unary(np.log), Scalar.LOG1P: _unary(np.log1p), Scalar.TANH: _unary(np.tanh),
    Scalar.SIGMOID: _sigmoid, Scalar.ERF: _erf, Scalar.SIN: _unary(np.sin),
    Scalar.COS: _unary(np.cos), Scalar.TAN: _unary(np.tan), Scalar.ATAN2: _binary(np.arctan2),
    Scalar.FLOOR: _rounding(np.floor), Scalar.CEIL: _rounding(np.ceil),
    Scalar.ROUND: _rounding(np.rint),
    Scalar.EQ: _binary(np.equal), Scalar.NE: _binary(np.not_equal),
    Scalar.LT: _binary(np.less), Scalar.LE: _binary(np.less_equal),
    Scalar.GT: _binary(np.greater), Scalar.GE: _binary(np.greater_equal),
    Scalar.AND: _binary(np.logical_and), Scalar.OR: _binary(np.logical_or),
    Scalar.NOT: _unary(np.logical_not),
    Scalar.SELECT: lambda args, dtype: np.where(np.asarray(args[0], bool), args[1], args[2]),
    Scalar.BITAND: _bits(np.bitwise_and, np.logical_and),
    Scalar.BITOR: _bits(np.bitwise_or, np.logical_or),
    Scalar.BITXOR: _bits(np.bitwise_xor, np.logical_xor),
    Scalar.BITNOT: lambda args, dtype: np.invert(np.asarray(args[0])),
    Scalar.SHL: _shift(left=True), Scalar.SHR: _shift(left=False),
    Scalar.CAST: _cast,
    Scalar.ISNAN: _is_float_test(np.isnan), Scalar.ISINF: _is_float_test(np.isinf),
}

# CONST, VAR, DIM and LOAD are leaves the interpreter evaluates itself (interpreter.py)
LEAVES = frozenset({Scalar.CONST, Scalar.VAR, Scalar.DIM, Scalar.LOAD})
SUPPORTED = frozenset(_OPS) | LEAVES


def apply(op: Scalar, dtype, args) -> np.ndarray:
    """`op` over the arrays `args` (broadcasting), as an array of `dtype`."""
    fn = _OPS.get(op)
    if fn is None:
        raise NotImplementedError(f"the reference target has no scalar operation {op.value}")
    out = np.asarray(fn([np.asarray(a) for a in args], dtype))
    if dtype.is_bool:
        return out if out.dtype == np.bool_ else out != 0
    return out.astype(np_dtype(dtype), copy=False)
