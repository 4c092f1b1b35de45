"""Elementwise one-input math ops (Cast: math_cast.py).

Owns: Neg, Abs, ComplexAbs, Sign, Square, Sqrt, Rsqrt, Reciprocal, Exp, Expm1, Log, Log1p,
Sin, Cos, Tan, Tanh, Sigmoid, Erf, Floor, Ceil, Round, LogicalNot, IsNan, IsInf, IsFinite,
their TensorFlow 1.x functions (`negative`, `abs`, ..., `is_finite`), gradients and
lowerings.

Invariants: each op accepts exactly the dtypes TensorFlow's op definition allows (minus
bfloat16 and, for Reciprocal, the integer types TensorFlow's CPU kernels lack) and returns
the input's dtype (bool for predicates, the real type for ComplexAbs), float16 included.
Kernels run under `np.errstate(all="ignore")`: overflow gives inf and invalid input NaN, as
in TensorFlow, never a NumPy RuntimeWarning.  Sigmoid is evaluated as exp(-|x|)-based
branches so that no intermediate overflows.

Gradients are written with the op functions; piecewise-constant ops (Floor, Ceil, Round)
have gradient None and Sign has zeros, as in TensorFlow; Sqrt, Rsqrt and Reciprocal give 0
where the output gradient is 0 (TensorFlow's SqrtGrad/RsqrtGrad/ReciprocalGrad kernels), so
a masked branch (`where(x > 0, sqrt(x), 0)`) at x == 0 gets 0, not 0 * inf = NaN.
Predicates (LogicalNot, IsNan, IsInf, IsFinite) and ComplexAbs have none.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir import Scalar as S
from . import fill_ops, math_compare, select_ops
from .builder import FLOAT_OR_COMPLEX, FLOATS, graph_for, make_op, to_tensor
from .elementwise import apply_unary, unary_def
from .lower_util import elementwise_lowering, lower_as
from .registry import not_differentiable

_BOOL = (_dtypes.bool_,)
_SIGNED = (_dtypes.int8, _dtypes.int16, _dtypes.int32, _dtypes.int64, *FLOAT_OR_COMPLEX)
_SIGNED_REAL = (_dtypes.int8, _dtypes.int16, _dtypes.int32, _dtypes.int64, *FLOATS)
_SQUARE_TYPES = (*_dtypes.INTEGER_DTYPES, *FLOAT_OR_COMPLEX)


# --- kernels ----------------------------------------------------------------------------------


def _to_bool(dtype):
    return _dtypes.bool_


def _sign(x):
    if x.dtype.kind == "c":
        mag = np.abs(x)
        return np.where(mag == 0, 0, x / np.where(mag == 0, 1, mag))
    return np.sign(x)


def _sigmoid(x):
    if x.dtype.kind == "c":
        return 1 / (1 + np.exp(-x))
    # exp(-|x|) never overflows; pick the branch that divides by a number >= 1.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _round(x):
    return x if x.dtype.kind in "iu" else np.round(x)  # np.round rounds half to even


# --- gradients --------------------------------------------------------------------------------


def _grad(fn):
    """A gradient for y = f(x) given `fn(x, y, g) -> dx`."""
    def gradient(op, g):
        return [fn(op.inputs[0], op.outputs[0], g)]

    return gradient


def _none(op, *grads):
    return [None] * len(op.inputs)


def _zero(t):
    return fill_ops.zeros_like(t)


def _zero_where_no_gradient(fn):
    """`fn(x, y, g)`, but 0 where g is 0 (see the module docstring)."""
    def gradient(x, y, g):
        return select_ops.where_v2(math_compare.equal(g, _zero(g)), _zero(g), fn(x, y, g))
    return _grad(gradient)


def _erf_grad(x, y, g):
    return g * (2.0 / math.sqrt(math.pi)) * exp(-square(x))


# --- lowerings ---------------------------------------------------------------------------------


def _one(dt):
    return ir.const(1, dt)


def _ir(fn):
    """A lowering from `fn(dtype, x) -> scalar expression`."""
    return elementwise_lowering(fn)


def _is_finite_ir(dt, x):
    return ir.make(S.NOT, dt, (ir.make(S.OR, dt, (ir.make(S.ISNAN, dt, (x,)),
                                                  ir.make(S.ISINF, dt, (x,)))),))


# --- the ops -----------------------------------------------------------------------------------

NEG = unary_def("Neg", np.negative, _SIGNED, doc="-x", gradient=_grad(lambda x, y, g: -g),
                lower=lower_as(S.NEG, complex_ok=True))
ABS = unary_def("Abs", np.abs, _SIGNED_REAL, doc="|x| for real x",
                gradient=_grad(lambda x, y, g: g * sign(x)), lower=lower_as(S.ABS))
COMPLEX_ABS = unary_def("ComplexAbs", np.abs, _dtypes.COMPLEX_DTYPES,
                        out=lambda d: d.real_dtype, doc="|x| for complex x (real output)")
SIGN = unary_def("Sign", _sign, _SIGNED, doc="-1, 0 or 1 (x/|x| for complex)",
                 gradient=_grad(lambda x, y, g: _zero(x)), lower=lower_as(S.SIGN))
SQUARE = unary_def("Square", np.square, _SQUARE_TYPES, doc="x * x",
                   gradient=_grad(lambda x, y, g: g * (x * 2.0)),
                   lower=_ir(lambda dt, x: ir.make(S.MUL, dt, (x, x))))
SQRT = unary_def("Sqrt", np.sqrt, FLOAT_OR_COMPLEX, doc="square root",
                 gradient=_zero_where_no_gradient(lambda x, y, g: g * 0.5 / y),
                 lower=lower_as(S.SQRT))
RSQRT = unary_def("Rsqrt", lambda x: 1 / np.sqrt(x), FLOAT_OR_COMPLEX, doc="1 / sqrt(x)",
                  gradient=_zero_where_no_gradient(lambda x, y, g: g * (y * y * y) * -0.5),
                  lower=_ir(lambda dt, x: ir.make(S.DIV, dt, (_one(dt),
                                                             ir.make(S.SQRT, dt, (x,))))))
RECIPROCAL = unary_def("Reciprocal", lambda x: 1 / x, FLOAT_OR_COMPLEX, doc="1 / x",
                       gradient=_zero_where_no_gradient(lambda x, y, g: -g * y * y),
                       lower=_ir(lambda dt, x: ir.make(S.DIV, dt, (_one(dt), x))))
EXP = unary_def("Exp", np.exp, FLOAT_OR_COMPLEX, doc="e ** x",
                gradient=_grad(lambda x, y, g: g * y), lower=lower_as(S.EXP))
EXPM1 = unary_def("Expm1", np.expm1, FLOAT_OR_COMPLEX, doc="e ** x - 1",
                  gradient=_grad(lambda x, y, g: g * (y + 1.0)), lower=lower_as(S.EXPM1))
LOG = unary_def("Log", np.log, FLOAT_OR_COMPLEX, doc="natural logarithm",
                gradient=_grad(lambda x, y, g: g / x), lower=lower_as(S.LOG))
LOG1P = unary_def("Log1p", np.log1p, FLOAT_OR_COMPLEX, doc="log(1 + x)",
                  gradient=_grad(lambda x, y, g: g / (x + 1.0)), lower=lower_as(S.LOG1P))
SIN = unary_def("Sin", np.sin, FLOAT_OR_COMPLEX, doc="sine",
                gradient=_grad(lambda x, y, g: g * cos(x)), lower=lower_as(S.SIN))
COS = unary_def("Cos", np.cos, FLOAT_OR_COMPLEX, doc="cosine",
                gradient=_grad(lambda x, y, g: -g * sin(x)), lower=lower_as(S.COS))
TAN = unary_def("Tan", np.tan, FLOAT_OR_COMPLEX, doc="tangent",
                gradient=_grad(lambda x, y, g: g * (y * y + 1.0)), lower=lower_as(S.TAN))
TANH = unary_def("Tanh", np.tanh, FLOAT_OR_COMPLEX, doc="hyperbolic tangent",
                 gradient=_grad(lambda x, y, g: g * (1.0 - y * y)), lower=lower_as(S.TANH))
SIGMOID = unary_def("Sigmoid", _sigmoid, FLOAT_OR_COMPLEX, doc="1 / (1 + exp(-x))",
                    gradient=_grad(lambda x, y, g: g * y * (1.0 - y)),
                    lower=lower_as(S.SIGMOID))
ERF = unary_def("Erf", scipy.special.erf, FLOATS, doc="Gauss error function",
                gradient=_grad(_erf_grad), lower=lower_as(S.ERF))
FLOOR = unary_def("Floor", np.floor, FLOATS, doc="largest integer <= x", gradient=_none,
                  lower=lower_as(S.FLOOR))
CEIL = unary_def("Ceil", np.ceil, FLOATS, doc="smallest integer >= x", gradient=_none,
                 lower=lower_as(S.CEIL))
ROUND = unary_def("Round", _round, (*_SIGNED_REAL, *_dtypes.COMPLEX_DTYPES),
                  doc="nearest integer, half to even", gradient=_none,
                  lower=_ir(lambda dt, x: x if dt.is_integer else ir.make(S.ROUND, dt, (x,))))
LOGICAL_NOT = unary_def("LogicalNot", np.logical_not, _BOOL, doc="not x",
                        gradient=not_differentiable, lower=lower_as(S.NOT))
IS_NAN = unary_def("IsNan", np.isnan, FLOATS, out=_to_bool, doc="x is NaN",
                   lower=lower_as(S.ISNAN))
IS_INF = unary_def("IsInf", np.isinf, FLOATS, out=_to_bool, doc="x is +-inf",
                   lower=lower_as(S.ISINF))
IS_FINITE = unary_def("IsFinite", np.isfinite, FLOATS, out=_to_bool, doc="x is finite",
                      lower=_ir(_is_finite_ir))


def negative(x, name: str | None = None) -> Tensor:
    """-x, elementwise (signed integers, floats, complex)."""
    return apply_unary(NEG, x, name)


def abs(x, name: str | None = None) -> Tensor:  # noqa: A001 - TensorFlow's name
    """|x|, elementwise; for complex x the result is real (op ComplexAbs)."""
    x = to_tensor(x, graph=graph_for((x,)), name="x")
    if x.dtype.is_complex:
        return make_op(COMPLEX_ABS, [x], {"T": x.dtype, "Tout": x.dtype.real_dtype},
                       name or "ComplexAbs").outputs[0]
    return apply_unary(ABS, x, name)


def sign(x, name: str | None = None) -> Tensor:
    """-1, 0 or 1 by the sign of x (NaN stays NaN; complex: x / |x|, 0 at 0)."""
    return apply_unary(SIGN, x, name)


def square(x, name: str | None = None) -> Tensor:
    """x * x, elementwise."""
    return apply_unary(SQUARE, x, name)


def sqrt(x, name: str | None = None) -> Tensor:
    """Square root, elementwise (float and complex; NaN for negative reals)."""
    return apply_unary(SQRT, x, name)


def rsqrt(x, name: str | None = None) -> Tensor:
    """1 / sqrt(x), elementwise (float and complex)."""
    return apply_unary(RSQRT, x, name)


def reciprocal(x, name: str | None = None) -> Tensor:
    """1 / x, elementwise (float and complex)."""
    return apply_unary(RECIPROCAL, x, name)


def exp(x, name: str | None = None) -> Tensor:
    """e ** x, elementwise (float and complex)."""
    return apply_unary(EXP, x, name)


def expm1(x, name: str | None = None) -> Tensor:
    """e ** x - 1, accurate near zero (float and complex)."""
    return apply_unary(EXPM1, x, name)


def log(x, name: str | None = None) -> Tensor:
    """Natural logarithm (float and complex; -inf at 0, NaN below)."""
    return apply_unary(LOG, x, name)


def log1p(x, name: str | None = None) -> Tensor:
    """log(1 + x), accurate near zero (float and complex)."""
    return apply_unary(LOG1P, x, name)


def sin(x, name: str | None = None) -> Tensor:
    """Sine, elementwise (float and complex)."""
    return apply_unary(SIN, x, name)


def cos(x, name: str | None = None) -> Tensor:
    """Cosine, elementwise (float and complex)."""
    return apply_unary(COS, x, name)


def tan(x, name: str | None = None) -> Tensor:
    """Tangent, elementwise (float and complex)."""
    return apply_unary(TAN, x, name)


def tanh(x, name: str | None = None) -> Tensor:
    """Hyperbolic tangent, elementwise (float and complex)."""
    return apply_unary(TANH, x, name)


def sigmoid(x, name: str | None = None) -> Tensor:
    """1 / (1 + exp(-x)), computed without overflow for any real x (float and complex)."""
    return apply_unary(SIGMOID, x, name)


def erf(x, name: str | None = None) -> Tensor:
    """The Gauss error function (float types)."""
    return apply_unary(ERF, x, name)


def floor(x, name: str | None = None) -> Tensor:
    """Largest integral value not greater than x (float types)."""
    return apply_unary(FLOOR, x, name)


def ceil(x, name: str | None = None) -> Tensor:
    """Smallest integral value not less than x (float types)."""
    return apply_unary(CEIL, x, name)


def round(x, name: str | None = None) -> Tensor:  # noqa: A001 - TensorFlow's name
    """Round to the nearest integer, half to even; integer tensors are returned as they are."""
    x = to_tensor(x, graph=graph_for((x,)), name="x")
    if x.dtype.is_integer:
        return x
    return apply_unary(ROUND, x, name)


def logical_not(x, name: str | None = None) -> Tensor:
    """Boolean not, elementwise (bool only)."""
    return apply_unary(LOGICAL_NOT, x, name)


def is_nan(x, name: str | None = None) -> Tensor:
    """True where x is NaN (float types)."""
    return apply_unary(IS_NAN, x, name)


def is_inf(x, name: str | None = None) -> Tensor:
    """True where x is +inf or -inf (float types)."""
    return apply_unary(IS_INF, x, name)


def is_finite(x, name: str | None = None) -> Tensor:
    """True where x is neither infinite nor NaN (float types)."""
    return apply_unary(IS_FINITE, x, name)


__all__ = [
    "negative", "abs", "sign", "square", "sqrt", "rsqrt", "reciprocal", "exp", "expm1", "log",
    "log1p", "sin", "cos", "tan", "tanh", "sigmoid", "erf", "floor", "ceil", "round",
    "logical_not", "is_nan", "is_inf", "is_finite",
]

OP_DEFS = (NEG, ABS, COMPLEX_ABS, SIGN, SQUARE, SQRT, RSQRT, RECIPROCAL, EXP, EXPM1, LOG,
           LOG1P, SIN, COS, TAN, TANH, SIGMOID, ERF, FLOOR, CEIL, ROUND, LOGICAL_NOT, IS_NAN,
           IS_INF, IS_FINITE)
