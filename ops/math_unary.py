"""Elementwise one-input math ops and `Cast`.

Owns: Neg, Abs, ComplexAbs, Sign, Square, Sqrt, Rsqrt, Reciprocal, Exp, Expm1, Log, Log1p,
Sin, Cos, Tan, Tanh, Sigmoid, Erf, Floor, Ceil, Round, LogicalNot, IsNan, IsInf, IsFinite,
Cast, and their TensorFlow 1.x functions (`negative`, `abs`, ..., `cast`, `to_float`, ...).

Invariants: each op accepts exactly the dtypes TensorFlow's op definition allows (minus
bfloat16 and, for Reciprocal, the integer types TensorFlow's CPU kernels lack) and returns
the input's dtype (bool for predicates, the real type for ComplexAbs), float16 included.
Kernels run under `np.errstate(all="ignore")`: overflow gives inf and invalid input NaN, as
in TensorFlow, never a NumPy RuntimeWarning.  Sigmoid is evaluated as exp(-|x|)-based
branches so that no intermediate overflows.  Cast truncates floats toward zero, maps
complex to real by dropping the imaginary part, and to bool by `x != 0`.
"""

from __future__ import annotations

import numpy as np
import scipy.special

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor
from .builder import (FLOAT_OR_COMPLEX, FLOATS, check_dtype, graph_for, make_op,
                      to_tensor)
from .registry import OpDef, Trait

_BOOL = (_dtypes.bool_,)
_SIGNED = (_dtypes.int8, _dtypes.int16, _dtypes.int32, _dtypes.int64, *FLOAT_OR_COMPLEX)
_SIGNED_REAL = (_dtypes.int8, _dtypes.int16, _dtypes.int32, _dtypes.int64, *FLOATS)
_SQUARE_TYPES = (*_dtypes.INTEGER_DTYPES, *FLOAT_OR_COMPLEX)


def unary_def(name: str, fn, allowed, out=None, doc: str = "") -> OpDef:
    """An elementwise one-input OpDef computing `fn(x)`.

    `out(dtype) -> dtype` gives the output dtype (default: the input's).  Also used by other
    op modules for their own elementwise ops.
    """

    def infer(op):
        x = op.inputs[0]
        check_dtype(x, allowed, "x")
        return [(out(x.dtype) if out else x.dtype, x.shape)]

    def kernel(ctx, inputs, attrs):
        x = inputs[0]
        dtype = out(_dtypes.as_dtype(x.dtype)).np_dtype if out else x.dtype
        with np.errstate(all="ignore"):
            y = fn(x)
        return [np.asarray(y, dtype=dtype)]

    return OpDef(name, infer, kernel, traits={Trait.ELEMENTWISE}, doc=doc)


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


NEG = unary_def("Neg", np.negative, _SIGNED, doc="-x")
ABS = unary_def("Abs", np.abs, _SIGNED_REAL, doc="|x| for real x")
COMPLEX_ABS = unary_def("ComplexAbs", np.abs, _dtypes.COMPLEX_DTYPES,
                        out=lambda d: d.real_dtype, doc="|x| for complex x (real output)")
SIGN = unary_def("Sign", _sign, _SIGNED, doc="-1, 0 or 1 (x/|x| for complex)")
SQUARE = unary_def("Square", np.square, _SQUARE_TYPES, doc="x * x")
SQRT = unary_def("Sqrt", np.sqrt, FLOAT_OR_COMPLEX, doc="square root")
RSQRT = unary_def("Rsqrt", lambda x: 1 / np.sqrt(x), FLOAT_OR_COMPLEX, doc="1 / sqrt(x)")
RECIPROCAL = unary_def("Reciprocal", lambda x: 1 / x, FLOAT_OR_COMPLEX, doc="1 / x")
EXP = unary_def("Exp", np.exp, FLOAT_OR_COMPLEX, doc="e ** x")
EXPM1 = unary_def("Expm1", np.expm1, FLOAT_OR_COMPLEX, doc="e ** x - 1")
LOG = unary_def("Log", np.log, FLOAT_OR_COMPLEX, doc="natural logarithm")
LOG1P = unary_def("Log1p", np.log1p, FLOAT_OR_COMPLEX, doc="log(1 + x)")
SIN = unary_def("Sin", np.sin, FLOAT_OR_COMPLEX, doc="sine")
COS = unary_def("Cos", np.cos, FLOAT_OR_COMPLEX, doc="cosine")
TAN = unary_def("Tan", np.tan, FLOAT_OR_COMPLEX, doc="tangent")
TANH = unary_def("Tanh", np.tanh, FLOAT_OR_COMPLEX, doc="hyperbolic tangent")
SIGMOID = unary_def("Sigmoid", _sigmoid, FLOAT_OR_COMPLEX, doc="1 / (1 + exp(-x))")
ERF = unary_def("Erf", scipy.special.erf, FLOATS, doc="Gauss error function")
FLOOR = unary_def("Floor", np.floor, FLOATS, doc="largest integer <= x")
CEIL = unary_def("Ceil", np.ceil, FLOATS, doc="smallest integer >= x")
ROUND = unary_def("Round", _round, (*_SIGNED_REAL, *_dtypes.COMPLEX_DTYPES),
                  doc="nearest integer, half to even")
LOGICAL_NOT = unary_def("LogicalNot", np.logical_not, _BOOL, doc="not x")
IS_NAN = unary_def("IsNan", np.isnan, FLOATS, out=_to_bool, doc="x is NaN")
IS_INF = unary_def("IsInf", np.isinf, FLOATS, out=_to_bool, doc="x is +-inf")
IS_FINITE = unary_def("IsFinite", np.isfinite, FLOATS, out=_to_bool, doc="x is finite")


def _apply(op_def: OpDef, x, name) -> Tensor:
    x = to_tensor(x, graph=graph_for((x,)), name="x")
    return make_op(op_def, [x], {"T": x.dtype}, name or op_def.name).outputs[0]


def negative(x, name: str | None = None) -> Tensor:
    """-x, elementwise (signed integers, floats, complex)."""
    return _apply(NEG, x, name)


def abs(x, name: str | None = None) -> Tensor:  # noqa: A001 - TensorFlow's name
    """|x|, elementwise; for complex x the result is real (op ComplexAbs)."""
    x = to_tensor(x, graph=graph_for((x,)), name="x")
    if x.dtype.is_complex:
        return make_op(COMPLEX_ABS, [x], {"T": x.dtype, "Tout": x.dtype.real_dtype},
                       name or "ComplexAbs").outputs[0]
    return _apply(ABS, x, name)


def sign(x, name: str | None = None) -> Tensor:
    """-1, 0 or 1 by the sign of x (NaN stays NaN; complex: x / |x|, 0 at 0)."""
    return _apply(SIGN, x, name)


def square(x, name: str | None = None) -> Tensor:
    """x * x, elementwise."""
    return _apply(SQUARE, x, name)


def sqrt(x, name: str | None = None) -> Tensor:
    """Square root, elementwise (float and complex; NaN for negative reals)."""
    return _apply(SQRT, x, name)


def rsqrt(x, name: str | None = None) -> Tensor:
    """1 / sqrt(x), elementwise (float and complex)."""
    return _apply(RSQRT, x, name)


def reciprocal(x, name: str | None = None) -> Tensor:
    """1 / x, elementwise (float and complex)."""
    return _apply(RECIPROCAL, x, name)


def exp(x, name: str | None = None) -> Tensor:
    """e ** x, elementwise (float and complex)."""
    return _apply(EXP, x, name)


def expm1(x, name: str | None = None) -> Tensor:
    """e ** x - 1, accurate near zero (float and complex)."""
    return _apply(EXPM1, x, name)


def log(x, name: str | None = None) -> Tensor:
    """Natural logarithm (float and complex; -inf at 0, NaN below)."""
    return _apply(LOG, x, name)


def log1p(x, name: str | None = None) -> Tensor:
    """log(1 + x), accurate near zero (float and complex)."""
    return _apply(LOG1P, x, name)


def sin(x, name: str | None = None) -> Tensor:
    """Sine, elementwise (float and complex)."""
    return _apply(SIN, x, name)


def cos(x, name: str | None = None) -> Tensor:
    """Cosine, elementwise (float and complex)."""
    return _apply(COS, x, name)


def tan(x, name: str | None = None) -> Tensor:
    """Tangent, elementwise (float and complex)."""
    return _apply(TAN, x, name)


def tanh(x, name: str | None = None) -> Tensor:
    """Hyperbolic tangent, elementwise (float and complex)."""
    return _apply(TANH, x, name)


def sigmoid(x, name: str | None = None) -> Tensor:
    """1 / (1 + exp(-x)), computed without overflow for any real x (float and complex)."""
    return _apply(SIGMOID, x, name)


def erf(x, name: str | None = None) -> Tensor:
    """The Gauss error function (float types)."""
    return _apply(ERF, x, name)


def floor(x, name: str | None = None) -> Tensor:
    """Largest integral value not greater than x (float types)."""
    return _apply(FLOOR, x, name)


def ceil(x, name: str | None = None) -> Tensor:
    """Smallest integral value not less than x (float types)."""
    return _apply(CEIL, x, name)


def round(x, name: str | None = None) -> Tensor:  # noqa: A001 - TensorFlow's name
    """Round to the nearest integer, half to even; integer tensors are returned as they are."""
    x = to_tensor(x, graph=graph_for((x,)), name="x")
    if x.dtype.is_integer:
        return x
    return _apply(ROUND, x, name)


def logical_not(x, name: str | None = None) -> Tensor:
    """Boolean not, elementwise (bool only)."""
    return _apply(LOGICAL_NOT, x, name)


def is_nan(x, name: str | None = None) -> Tensor:
    """True where x is NaN (float types)."""
    return _apply(IS_NAN, x, name)


def is_inf(x, name: str | None = None) -> Tensor:
    """True where x is +inf or -inf (float types)."""
    return _apply(IS_INF, x, name)


def is_finite(x, name: str | None = None) -> Tensor:
    """True where x is neither infinite nor NaN (float types)."""
    return _apply(IS_FINITE, x, name)


# --- Cast ----------------------------------------------------------------------------------


def _cast_infer(op):
    x = op.inputs[0]
    dst = op.get_attr("DstT")
    if (x.dtype is _dtypes.string) != (dst is _dtypes.string):
        raise TypeError(f"Cast {x.dtype.name} to {dst.name} is not supported.")
    return [(dst, x.shape)]


def _cast_kernel(ctx, inputs, attrs):
    x = inputs[0]
    dst = attrs["DstT"]
    if x.dtype.kind == "c" and not dst.is_complex:
        x = x.real  # TensorFlow drops the imaginary part (also before a cast to bool)
    with np.errstate(all="ignore"):
        y = (x != 0) if dst is _dtypes.bool_ else x.astype(dst.np_dtype)
    return [np.asarray(y, dtype=dst.np_dtype)]


CAST = OpDef("Cast", _cast_infer, _cast_kernel, traits={Trait.ELEMENTWISE},
             doc="convert to DstT: floats truncate toward zero, bool is x != 0")


def cast(x, dtype, name: str | None = None) -> Tensor:
    """`x` converted to `dtype` (TensorFlow's `tf.cast`).

    Floats convert to integers by truncation toward zero, anything to bool by `x != 0`,
    complex to real by dropping the imaginary part.  A tensor already of `dtype` is returned
    unchanged.  Strings cannot be cast to or from other types (TypeError).
    """
    dtype = _dtypes.as_dtype(dtype)
    x = to_tensor(x, graph=graph_for((x,)), name="x")
    if x.dtype is dtype:
        return x
    return make_op(CAST, [x], {"SrcT": x.dtype, "DstT": dtype, "Truncate": False},
                   name or "Cast").outputs[0]


def to_float(x, name: str = "ToFloat") -> Tensor:
    """cast(x, float32) (deprecated TensorFlow 1.x name)."""
    return cast(x, _dtypes.float32, name=name)


def to_double(x, name: str = "ToDouble") -> Tensor:
    """cast(x, float64) (deprecated TensorFlow 1.x name)."""
    return cast(x, _dtypes.float64, name=name)


def to_int32(x, name: str = "ToInt32") -> Tensor:
    """cast(x, int32) (deprecated TensorFlow 1.x name)."""
    return cast(x, _dtypes.int32, name=name)


def to_int64(x, name: str = "ToInt64") -> Tensor:
    """cast(x, int64) (deprecated TensorFlow 1.x name)."""
    return cast(x, _dtypes.int64, name=name)


__all__ = [
    "negative", "abs", "sign", "square", "sqrt", "rsqrt", "reciprocal", "exp", "expm1", "log",
    "log1p", "sin", "cos", "tan", "tanh", "sigmoid", "erf", "floor", "ceil", "round",
    "logical_not", "is_nan", "is_inf", "is_finite", "cast", "to_float", "to_double",
    "to_int32", "to_int64",
]

OP_DEFS = (NEG, ABS, COMPLEX_ABS, SIGN, SQUARE, SQRT, RSQRT, RECIPROCAL, EXP, EXPM1, LOG,
           LOG1P, SIN, COS, TAN, TANH, SIGMOID, ERF, FLOOR, CEIL, ROUND, LOGICAL_NOT, IS_NAN,
           IS_INF, IS_FINITE, CAST)


# --- lowerings to kernel IR ---------------------------------------------------------------------
def _attach_lowerings():
    from ..compiler.core import ir
    from ..compiler.core.ir import Scalar as S
    from .lower_util import elementwise_lowering, lower_as

    def one(dt):
        return ir.const(1, dt)

    for op_def, kind in ((NEG, S.NEG), (ABS, S.ABS), (SIGN, S.SIGN), (SQRT, S.SQRT),
                         (EXP, S.EXP), (EXPM1, S.EXPM1), (LOG, S.LOG), (LOG1P, S.LOG1P),
                         (SIN, S.SIN), (COS, S.COS), (TAN, S.TAN), (TANH, S.TANH),
                         (SIGMOID, S.SIGMOID), (ERF, S.ERF), (FLOOR, S.FLOOR), (CEIL, S.CEIL),
                         (LOGICAL_NOT, S.NOT), (IS_NAN, S.ISNAN), (IS_INF, S.ISINF)):
        op_def.lower = lower_as(kind)
    ROUND.lower = elementwise_lowering(
        lambda dt, x: x if dt.is_integer else ir.make(S.ROUND, dt, (x,)))
    SQUARE.lower = elementwise_lowering(lambda dt, x: ir.make(S.MUL, dt, (x, x)))
    RSQRT.lower = elementwise_lowering(
        lambda dt, x: ir.make(S.DIV, dt, (one(dt), ir.make(S.SQRT, dt, (x,)))))
    RECIPROCAL.lower = elementwise_lowering(lambda dt, x: ir.make(S.DIV, dt, (one(dt), x)))
    IS_FINITE.lower = elementwise_lowering(lambda dt, x: ir.make(S.NOT, dt, (ir.make(
        S.OR, dt, (ir.make(S.ISNAN, dt, (x,)), ir.make(S.ISINF, dt, (x,)))),)))
    CAST.lower = elementwise_lowering(lambda dt, x: ir.make(S.CAST, dt, (x,)))


_attach_lowerings()
