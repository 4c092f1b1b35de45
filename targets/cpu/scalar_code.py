"""Scalar operations of the kernel IR as numba source text, plus the helpers they call.

`render(op, dtype, args, arg_dtypes)` returns a Python expression for one `Scalar` op;
`literal` writes typed constants; `reduce_init/step/result` write the accumulator code of
each `Combiner`.  Results are always of the IR node's dtype: integer arithmetic is wrapped
in an explicit cast so int32 overflow wraps as NumPy's does (numba would widen to int64).
Generated modules `from ...scalar_code import *` to reach the helper functions below
(NaN-propagating max/min, integer floor division and modulo that give 0 for a zero divisor
(ops that must raise check the divisor first), and the
vectorizable transcendental functions of `vecmath` when available).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...compiler.core.ir import Combiner, Scalar
from .gemm import (gemm_epilogue, gemm_parallel, gram_product, gram_product_t,  # noqa: F401
                   matmul_into)
from .gram_blas import gram_rows  # noqa: F401 - called by generated code
from .large_buffers import empty_buffer  # noqa: F401 - called by generated code
from .reduce_steps import radd, rmax, rmin  # noqa: F401 - called by generated code
from .vector_width import wide_vectors  # noqa: F401 - called by generated code

__all__ = ["fmax", "fmin", "ifloordiv", "imod", "isign", "ishl", "ishr", "np", "math", "VM_exp",
           "VM_log", "VM_tanh", "VM_sigmoid", "VM_erf", "VM_sin", "VM_cos", "VM_expm1", "VM_log1p",
           "empty_buffer", "gemm_epilogue", "gemm_parallel", "gram_product", "gram_product_t",
           "gram_rows", "matmul_into", "radd", "rmax", "rmin", "wide_vectors"]

_INLINE = dict(inline="always", error_model="numpy")


@njit(**_INLINE)
def fmax(a, b):
    return a if (a > b or a != a) else b


@njit(**_INLINE)
def fmin(a, b):
    return a if (a < b or a != a) else b


@njit(**_INLINE)
def ifloordiv(a, b):
    """a // b for integers; 0 when b is 0 (numba's numpy error model): no exception, so a
    loop computing it keeps one exit and stays a parallel loop.  Ops that must raise check
    their divisors before (math_division._checked_integer_division)."""
    return a // b


@njit(**_INLINE)
def imod(a, b):
    """a % b for integers (the divisor's sign); 0 when b is 0, as ifloordiv."""
    return a % b


@njit(**_INLINE)
def isign(a):
    return (a > 0) - (a < 0)


@njit(**_INLINE)
def ishl(a, b, bits):
    return a << b if 0 <= b < bits else a - a   # a - a: zero of a's type


@njit(**_INLINE)
def ishr(a, b, bits):
    if 0 <= b < bits:
        return a >> b
    # -1 or 0 in a's own type: `(a - a) - 1` mixed uint64 with an int64 literal, which numba
    # types as float64, and the whole result went through float64 (uint64 >> 7 lost bits)
    return ~(a - a) if a < 0 else a - a


def _fallback(fn):
    return njit(**_INLINE)(fn)


@_fallback
def _sigmoid(x):
    if x >= 0:
        return 1 / (1 + np.exp(-x))
    z = np.exp(x)
    return z / (1 + z)


@_fallback
def _erf(x):
    return math.erf(x)


def _vecmath_table():
    try:
        from .vecmath import VECMATH  # vectorizable versions, when present
    except ImportError:
        return {}
    return dict(VECMATH)


_VM = _vecmath_table()
VM_exp = _VM.get("exp") or _fallback(lambda x: np.exp(x))
VM_log = _VM.get("log") or _fallback(lambda x: np.log(x))
VM_tanh = _VM.get("tanh") or _fallback(lambda x: np.tanh(x))
VM_sigmoid = _VM.get("sigmoid") or _sigmoid
VM_erf = _VM.get("erf") or _erf
VM_sin = _VM.get("sin") or _fallback(lambda x: np.sin(x))
VM_cos = _VM.get("cos") or _fallback(lambda x: np.cos(x))
VM_expm1 = _VM.get("expm1") or _fallback(lambda x: np.expm1(x))
VM_log1p = _VM.get("log1p") or _fallback(lambda x: np.log1p(x))

_FUNCS = {Scalar.EXP: "VM_exp", Scalar.LOG: "VM_log", Scalar.TANH: "VM_tanh",
          Scalar.SIGMOID: "VM_sigmoid", Scalar.ERF: "VM_erf", Scalar.SIN: "VM_sin",
          Scalar.COS: "VM_cos", Scalar.EXPM1: "VM_expm1", Scalar.LOG1P: "VM_log1p",
          Scalar.SQRT: "np.sqrt", Scalar.TAN: "np.tan", Scalar.FLOOR: "np.floor",
          Scalar.CEIL: "np.ceil", Scalar.ROUND: "np.rint", Scalar.ISNAN: "np.isnan",
          Scalar.ISINF: "np.isinf", Scalar.ABS: "abs", Scalar.ATAN2: "np.arctan2"}
_INFIX = {Scalar.ADD: "+", Scalar.SUB: "-", Scalar.MUL: "*", Scalar.DIV: "/",
          Scalar.BITAND: "&", Scalar.BITOR: "|", Scalar.BITXOR: "^",
          Scalar.POW: "**", Scalar.EQ: "==", Scalar.NE: "!=", Scalar.LT: "<", Scalar.LE: "<=",
          Scalar.GT: ">", Scalar.GE: ">="}


def np_type(dtype) -> str:
    return "np." + np.dtype(dtype.np_dtype).name


def literal(value, dtype) -> str:
    """Source for a typed constant (NaN and infinities included)."""
    if dtype.is_bool:
        return repr(bool(value))
    if dtype.is_floating:
        v = float(value)
        text = "np.nan" if v != v else ("np.inf" if v == math.inf else
                                        ("-np.inf" if v == -math.inf else repr(v)))
        return f"{np_type(dtype)}({text})"
    if dtype.is_complex:
        return f"{np_type(dtype)}({complex(value)!r})"
    return f"{np_type(dtype)}({int(value)})"


def _typed(text: str, dtype) -> str:
    """Force `text` to `dtype` (numba widens small ints and mixes int/float types)."""
    if dtype.is_bool:
        return text
    return f"{np_type(dtype)}({text})"


def render(op: Scalar, dtype, args, arg_dtypes, helpers=None) -> str:
    """A numba expression computing `op(*args)` as `dtype`."""
    a = args
    src = arg_dtypes[0] if arg_dtypes else dtype
    if op in _INFIX:
        text = f"({a[0]} {_INFIX[op]} {a[1]})"
        return text if dtype.is_bool or dtype.is_floating and src is dtype else _typed(text,
                                                                                         dtype)
    if op is Scalar.FLOORDIV:
        if src.is_integer:
            return _typed(f"ifloordiv({a[0]}, {a[1]})", dtype)
        return _typed(f"np.floor({a[0]} / {a[1]})", dtype)
    if op is Scalar.MOD:
        if src.is_integer:
            return _typed(f"imod({a[0]}, {a[1]})", dtype)
        return _typed(f"({a[0]} % {a[1]})", dtype)
    if op in (Scalar.MAX, Scalar.MIN):
        if dtype.is_integer:  # no NaN: the builtin (compiles faster than fmax), on typed
            # operands (a prange index is uint64, which unifies with int64 to float64)
            return f"{op.value}({_typed(a[0], dtype)}, {_typed(a[1], dtype)})"
        return f"{'fmax' if op is Scalar.MAX else 'fmin'}({a[0]}, {a[1]})"
    if op is Scalar.NEG:
        return _typed(f"(-{a[0]})", dtype)
    if op is Scalar.BITNOT:
        return _typed(f"(~{a[0]})", dtype)
    if op in (Scalar.SHL, Scalar.SHR):   # typed operands: numba shifts in the wider type
        bits = 8 * np.dtype(dtype.np_dtype).itemsize
        name = "ishl" if op is Scalar.SHL else "ishr"
        return _typed(f"{name}({_typed(a[0], dtype)}, {_typed(a[1], dtype)}, {bits})", dtype)
    if op is Scalar.SIGN:
        return _typed(f"np.sign({a[0]})" if src.is_floating else f"isign({a[0]})", dtype)
    if op is Scalar.AND:
        return f"({a[0]} and {a[1]})"
    if op is Scalar.OR:
        return f"({a[0]} or {a[1]})"
    if op is Scalar.NOT:
        return f"(not {a[0]})"
    if op is Scalar.SELECT:
        if dtype.is_integer:  # typed arms, as for MAX/MIN
            return f"({_typed(a[1], dtype)} if {a[0]} else {_typed(a[2], dtype)})"
        return f"({a[1]} if {a[0]} else {a[2]})"
    if op is Scalar.CAST:
        if dtype.is_bool:
            return f"({a[0]} != 0)"
        return _typed(a[0], dtype)
    if op in _FUNCS:
        text = f"{_FUNCS[op]}({', '.join(a)})"
        return text if dtype.is_bool else _typed(text, dtype)
    raise NotImplementedError(f"no CPU code for scalar op {op.value}")


def reduce_init(comb: Combiner, acc: str, dtype, gen) -> list:
    if comb in (Combiner.ARGMAX, Combiner.ARGMIN):
        return [f"{acc} = {gen.constant(0, dtype)}", f"{acc}_i = 0", f"{acc}_first = True"]
    from ...compiler.core.ir_build import identity_value

    return [f"{acc} = {gen.constant(identity_value(comb, dtype), dtype)}"]


_VECTOR_STEPS = {Combiner.ADD: "radd", Combiner.MAX: "rmax", Combiner.MIN: "rmin"}


def reduce_step(comb: Combiner, acc: str, value: str, index: str, dtype) -> list:
    if dtype.is_floating and comb in _VECTOR_STEPS:
        return [f"{acc} = {_VECTOR_STEPS[comb]}({acc}, {value})"]
    if comb is Combiner.ADD:
        return [f"{acc} += {value}"]
    if comb is Combiner.MUL:
        return [f"{acc} *= {value}"]
    if comb is Combiner.MAX:
        return [f"{acc} = fmax({acc}, {value})"]
    if comb is Combiner.MIN:
        return [f"{acc} = fmin({acc}, {value})"]
    if comb is Combiner.AND:
        return [f"{acc} = {acc} and {value}"]
    if comb is Combiner.OR:
        return [f"{acc} = {acc} or {value}"]
    better = ">" if comb is Combiner.ARGMAX else "<"
    # NaNs are skipped, as TensorFlow's kernels do (all-NaN gives index 0)
    nan = f" or ({acc} != {acc} and {value} == {value})" if dtype.is_floating else ""
    return [f"if {acc}_first or {value} {better} {acc}{nan}:",
            f"    {acc} = {value}", f"    {acc}_i = {index}", f"    {acc}_first = False"]


def reduce_result(comb: Combiner, acc: str, dtype) -> str:
    if comb in (Combiner.ARGMAX, Combiner.ARGMIN):
        return f"{np_type(dtype)}({acc}_i)"
    return acc if dtype.is_bool else _typed(acc, dtype)
