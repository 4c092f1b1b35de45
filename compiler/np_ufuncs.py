"""NumPy ufuncs on traced arrays: NumPy's own type resolution, then flowjit graph ops.

`apply_ufunc(ufunc, method, inputs, kwargs)` is what `TracedArray.__array_ufunc__` calls.
For `__call__`, NumPy itself resolves the loop (`ufunc.resolve_dtypes`, NEP 50: Python
scalars are weak, 0-d arrays are not) and checks Python scalars against the array dtype by
running the ufunc on empty arrays, so promotion and its errors are exactly NumPy's; the
inputs are cast to the loop's dtypes and the op from `UFUNCS` builds the result. `reduce`
maps add/multiply/maximum/minimum/logical_and/logical_or to reductions, `accumulate` the
first four to scans (np_reductions.accumulate). `out=` writes into a traced array (or
raises for a NumPy one); `where=`, `casting=`, other methods (`outer`, `at`, ...) and
ufuncs not in the table raise GraphBreak.

`UFUNCS`, `REDUCERS` and `ACCUMULATORS` are also the published lists of supported ufuncs
and methods (docs/numpy_support.md).
"""

from __future__ import annotations

import math

import numpy as np

from ..ops import api as op_api
from ..ops import bitwise_ops
from .np_array import (GraphBreak, TracedArray, WeakScalar, _Buffer, api, as_tensor,
                       dtype_breaks, np_dtype_of, to_tensor, wrap)


def _float_only(fn):
    def build(*xs):
        if any(not np.issubdtype(np.dtype(x.dtype.as_numpy_dtype), np.inexact) for x in xs):
            raise GraphBreak("this ufunc on integer inputs")
        return fn(*xs)
    return build


def _fmax(a, b, pick):
    tf = api()
    if not a.dtype.is_floating:
        return pick(a, b)
    m = pick(a, b)
    return tf.where_v2(tf.is_nan(a), b, tf.where_v2(tf.is_nan(b), a, m))


def _log_base(base):
    def build(x):
        tf = api()
        return tf.multiply(tf.log(x), tf.constant(1.0 / math.log(base), dtype=x.dtype))
    return build


def _exp_base(base):
    def build(x):
        tf = api()
        return tf.exp(tf.multiply(x, tf.constant(math.log(base), dtype=x.dtype)))
    return build


def _real_only(what):
    """The identity on real numbers (np.conjugate, np.real, ...); complex input breaks."""
    def build(x):
        if x.dtype.is_complex:
            raise GraphBreak(f"np.{what} on complex numbers")
        return x
    return build


def _bits(logical, bitwise):
    """A bitwise ufunc: the logical op on booleans, tf.bitwise's on integers."""
    def build(*xs):
        if all(x.dtype.name == "bool" for x in xs):
            return logical(*xs)
        return bitwise(*xs)
    return build


def _unary(fn):
    """A one-argument ufunc computed by the op function `fn`."""
    return lambda x: fn(x)


def _binary(fn):
    """A two-argument ufunc computed by the op function `fn`."""
    return lambda a, b: fn(a, b)


def _numpy_floor_division(fn, quotient: bool):
    """floor_divide / remainder as NumPy computes them: floats through `_float_divmod`;
    integers with NumPy's results where the divisor is 0 (0, with NumPy's warning left out;
    the kernels' own integer division raises there, as TF's does) or -1."""
    def op(a, b):
        tf = api()
        if a.dtype.is_floating:
            return _float_divmod(a, b)[0 if quotient else 1]
        if not a.dtype.is_integer:
            return fn(a, b)
        zero, one = tf.zeros_like(b), tf.ones_like(b)
        bad = tf.equal(b, zero)
        if a.dtype.is_unsigned:
            return tf.where_v2(bad, zero, fn(a, tf.where_v2(bad, one, b)))
        # x // -1 is -x (INT_MIN // -1 wraps to INT_MIN, as NumPy's), x % -1 is 0: no
        # division by -1, which overflows for INT_MIN
        minus = tf.equal(b, tf.negative(one))
        safe = tf.where_v2(tf.logical_or(bad, minus), one, b)
        special = tf.negative(a) if quotient else tf.zeros_like(a)
        return tf.where_v2(bad, zero, tf.where_v2(minus, special, fn(a, safe)))
    return op


def _float_divmod(a, b):
    """(a // b, a % b) for floats as NumPy computes them (npy_divmod): from C's fmod, the
    remainder moved to the divisor's sign, a signed zero remainder taking the divisor's sign,
    and the quotient (a - mod) / b rounded to the nearest whole number; b == 0 gives a / b
    and fmod's NaN.  So inf // 2 is NaN and -5 // inf is -1, unlike floor(a / b)."""
    tf = api()
    zero = tf.zeros_like(a)
    fmod = _fmod(a, b)
    div = tf.divide(tf.subtract(a, fmod), b)
    moved = tf.logical_and(tf.not_equal(fmod, zero),
                           tf.not_equal(tf.less(b, zero), tf.less(fmod, zero)))
    mod = tf.where_v2(moved, tf.add(fmod, b),
                      tf.where_v2(tf.equal(fmod, zero), _copysign(zero, b), fmod))
    div = tf.where_v2(moved, tf.subtract(div, tf.ones_like(div)), div)
    floor = tf.floor(div)
    rounded = tf.where_v2(tf.greater(tf.subtract(div, floor), _c(0.5, a)),
                          tf.add(floor, tf.ones_like(floor)), floor)
    quotient = tf.divide(a, b)
    floordiv = tf.where_v2(tf.not_equal(div, zero), rounded, _copysign(zero, quotient))
    by_zero = tf.equal(b, zero)
    return tf.where_v2(by_zero, quotient, floordiv), tf.where_v2(by_zero, fmod, mod)


def _divide(a, b):
    tf = api()
    return tf.truediv(a, b)


# |x| above which sinh/cosh are (exp(|x|/2) / 2) * exp(|x|/2): exp(|x|) itself overflows
# before they do (sinh(710) = 1.1e308, exp(710) = inf)
_HYPERBOLIC_SPLIT = {np.dtype(np.float64): 700.0, np.dtype(np.float32): 80.0,
                     np.dtype(np.float16): 10.0}


def _large_half_exp(tf, ax):
    h = tf.exp(tf.multiply(_c(0.5, ax), ax))
    return tf.multiply(tf.multiply(_c(0.5, ax), h), h)


def _sinh(x):
    """sinh without cancellation near 0 (from expm1: (e + e / (e + 1)) / 2 with e =
    expm1(|x|)) or overflow before sinh itself overflows; the sign copied back (-0.0 kept)."""
    tf = api()
    ax = tf.abs(x)
    e = tf.expm1(ax)
    small = tf.multiply(_c(0.5, x), tf.add(e, tf.divide(e, tf.add(e, _c(1.0, x)))))
    split = _c(_HYPERBOLIC_SPLIT[np.dtype(x.dtype.as_numpy_dtype)], x)
    return _copysign(tf.where_v2(tf.greater(ax, split), _large_half_exp(tf, ax), small), x)


def _cosh(x):
    """cosh as (E + 1 / E) / 2, E = exp(|x|), or from exp(|x| / 2) where E would overflow."""
    tf = api()
    ax = tf.abs(x)
    big = tf.exp(ax)
    small = tf.multiply(_c(0.5, x), tf.add(big, tf.reciprocal(big)))
    split = _c(_HYPERBOLIC_SPLIT[np.dtype(x.dtype.as_numpy_dtype)], x)
    return tf.where_v2(tf.greater(ax, split), _large_half_exp(tf, ax), small)


def _hypot(a, b):
    """sqrt(a*a + b*b) scaled by the larger magnitude, so neither overflows nor underflows
    in between (hypot(1e200, 1e200) is 1.4e200, not inf); inf wins over NaN, as C's."""
    tf = api()
    ma, mb = tf.abs(a), tf.abs(b)
    big, small = tf.maximum(ma, mb), tf.minimum(ma, mb)
    zero = _c(0.0, big)
    ratio = tf.divide(small, tf.where_v2(tf.equal(big, zero), _c(1.0, big), big))
    scaled = tf.multiply(big, tf.sqrt(tf.add(_c(1.0, big), tf.multiply(ratio, ratio))))
    nan = tf.logical_or(tf.is_nan(a), tf.is_nan(b))
    scaled = tf.where_v2(nan, tf.add(a, b), scaled)
    inf = tf.logical_or(tf.is_inf(a), tf.is_inf(b))
    return tf.where_v2(inf, _c(np.inf, big), scaled)


def _scale(factor):
    def build(x):
        tf = api()
        return tf.multiply(x, tf.constant(factor, dtype=x.dtype))
    return build


def _c(value, like):
    return api().constant(value, dtype=like.dtype)


def _signbit(x):
    """x < 0, or x == 0 with 1/x < 0 (-0.0); a NaN counts as positive."""
    tf = api()
    zero = _c(0.0, x)
    neg_zero = tf.logical_and(tf.equal(x, zero), tf.less(tf.reciprocal(x), zero))
    return tf.logical_or(tf.less(x, zero), neg_zero)


def _copysign(a, b):
    tf = api()
    mag = tf.abs(a)
    return tf.where_v2(_signbit(b), tf.negative(mag), mag)


def _big(x):
    """The size above which sqrt(1 + x*x) == |x| in x's dtype (and x*x may overflow)."""
    return _c(float(np.finfo(x.dtype.as_numpy_dtype).eps) ** -0.5, x)


def _arcsin(x):
    tf = api()
    one = _c(1.0, x)
    return tf.atan2(x, tf.sqrt(tf.multiply(tf.subtract(one, x), tf.add(one, x))))


def _arccos(x):
    tf = api()
    one = _c(1.0, x)
    return tf.atan2(tf.sqrt(tf.multiply(tf.subtract(one, x), tf.add(one, x))), x)


def _arcsinh(x):
    tf = api()
    one = _c(1.0, x)
    a = tf.abs(x)
    a2 = tf.square(a)
    small = tf.log1p(tf.add(a, tf.truediv(a2, tf.add(one, tf.sqrt(tf.add(one, a2))))))
    large = tf.add(tf.log(a), _c(math.log(2.0), x))
    r = tf.where_v2(tf.greater(a, _big(x)), large, small)
    return tf.where_v2(tf.equal(x, _c(0.0, x)), x, _copysign(r, x))


def _arccosh(x):
    tf = api()
    one, two = _c(1.0, x), _c(2.0, x)
    t = tf.subtract(x, one)
    small = tf.log1p(tf.add(t, tf.sqrt(tf.multiply(t, tf.add(two, t)))))
    large = tf.add(tf.log(x), _c(math.log(2.0), x))
    r = tf.where_v2(tf.greater(x, _big(x)), large, small)
    return tf.where_v2(tf.less(x, one), _c(np.nan, x), r)


def _arctanh(x):
    tf = api()
    one = _c(1.0, x)
    a = tf.abs(x)   # odd symmetry keeps log1p's argument positive (accurate near -1)
    r = tf.multiply(_c(0.5, x), tf.log1p(tf.truediv(tf.add(a, a), tf.subtract(one, a))))
    return tf.where_v2(tf.equal(x, _c(0.0, x)), x, _copysign(r, x))


def _fmod(a, b):
    """C's fmod from the floored FloorMod: |a| mod |b| carries a's sign (exact for floats);
    integers correct the floored result, and x fmod 0 is 0 as in NumPy."""
    tf = api()
    if a.dtype.is_floating:
        return _copysign(tf.floormod(tf.abs(a), tf.abs(b)), a)
    zero, one = tf.zeros_like(b), tf.ones_like(b)
    if a.dtype.is_unsigned:
        bad = tf.equal(b, zero)
        return tf.where_v2(bad, zero, tf.floormod(a, tf.where_v2(bad, one, b)))
    bad = tf.logical_or(tf.equal(b, zero), tf.equal(b, tf.negative(one)))   # INT_MIN % -1
    r = tf.floormod(a, tf.where_v2(bad, one, b))
    fix = tf.logical_and(tf.not_equal(r, zero), tf.not_equal(tf.less(r, zero), tf.less(a, zero)))
    return tf.where_v2(bad, zero, tf.where_v2(fix, tf.subtract(r, b), r))


def _trunc(x):
    tf = api()
    if not x.dtype.is_floating:
        return x
    return tf.where_v2(tf.less(x, _c(0.0, x)), tf.ceil(x), tf.floor(x))


def _logaddexp(base):
    def build(a, b):
        tf = api()
        m = tf.maximum(a, b)
        d = tf.negative(tf.abs(tf.subtract(a, b)))
        if base == 2.0:
            tail = tf.multiply(tf.log1p(tf.pow(_c(2.0, a), d)), _c(1.0 / math.log(2.0), a))
            same = tf.add(a, _c(1.0, a))
        else:
            tail = tf.log1p(tf.exp(d))
            same = tf.add(a, _c(math.log(2.0), a))
        return tf.where_v2(tf.equal(a, b), same, tf.add(m, tail))
    return build


def _cbrt(x):
    tf = api()
    a = tf.abs(x)
    y = tf.pow(a, _c(1.0 / 3.0, x))
    # one Newton step, y - (y - a / y**2) / 3, where y is finite and non-zero
    ok = tf.logical_and(tf.is_finite(y), tf.greater(y, _c(0.0, x)))
    safe = tf.where_v2(ok, y, tf.ones_like(y))
    step = tf.subtract(safe, tf.multiply(tf.subtract(safe, tf.truediv(a, tf.square(safe))),
                                         _c(1.0 / 3.0, x)))
    r = tf.where_v2(ok, step, y)
    return tf.where_v2(tf.equal(x, _c(0.0, x)), x, _copysign(r, x))


def _heaviside(x, h0):
    tf = api()
    zero = _c(0.0, x)
    r = tf.where_v2(tf.less(x, zero), tf.zeros_like(x),
                    tf.where_v2(tf.greater(x, zero), tf.ones_like(x), h0))
    return tf.where_v2(tf.is_nan(x), x, r)


UFUNCS = {
    np.add: _binary(op_api.add), np.subtract: _binary(op_api.subtract),
    np.multiply: _binary(op_api.multiply), np.true_divide: _divide,
    np.floor_divide: _numpy_floor_division(op_api.floordiv, quotient=True),
    np.remainder: _numpy_floor_division(op_api.floormod, quotient=False),
    np.power: _binary(op_api.pow), np.maximum: _binary(op_api.maximum),
    np.minimum: _binary(op_api.minimum),
    np.fmax: lambda a, b: _fmax(a, b, api().maximum),
    np.fmin: lambda a, b: _fmax(a, b, api().minimum),
    np.arctan2: _float_only(_binary(op_api.atan2)), np.hypot: _float_only(_hypot),
    np.equal: _binary(op_api.equal), np.not_equal: _binary(op_api.not_equal),
    np.less: _binary(op_api.less),
    np.less_equal: _binary(op_api.less_equal), np.greater: _binary(op_api.greater),
    np.greater_equal: _binary(op_api.greater_equal), np.logical_and: _binary(op_api.logical_and),
    np.logical_or: _binary(op_api.logical_or), np.logical_xor: _binary(op_api.logical_xor),
    np.logical_not: _unary(op_api.logical_not),
    np.bitwise_and: _bits(op_api.logical_and, bitwise_ops.bitwise_and),
    np.bitwise_or: _bits(op_api.logical_or, bitwise_ops.bitwise_or),
    np.bitwise_xor: _bits(op_api.logical_xor, bitwise_ops.bitwise_xor),
    np.invert: _bits(op_api.logical_not, bitwise_ops.invert),
    np.left_shift: bitwise_ops.left_shift,
    np.right_shift: bitwise_ops.right_shift,
    np.negative: _unary(op_api.negative), np.positive: lambda x: x, np.absolute: _unary(op_api.abs),
    np.sqrt: _float_only(_unary(op_api.sqrt)), np.square: _unary(op_api.square),
    np.reciprocal: _float_only(_unary(op_api.reciprocal)),
    np.exp: _float_only(_unary(op_api.exp)), np.expm1: _float_only(_unary(op_api.expm1)),
    np.exp2: _float_only(_exp_base(2.0)), np.log: _float_only(_unary(op_api.log)),
    np.log1p: _float_only(_unary(op_api.log1p)), np.log2: _float_only(_log_base(2.0)),
    np.log10: _float_only(_log_base(10.0)), np.sin: _float_only(_unary(op_api.sin)),
    np.cos: _float_only(_unary(op_api.cos)), np.tan: _float_only(_unary(op_api.tan)),
    np.tanh: _float_only(_unary(op_api.tanh)), np.sinh: _float_only(_sinh),
    np.cosh: _float_only(_cosh), np.floor: _float_only(_unary(op_api.floor)),
    np.ceil: _float_only(_unary(op_api.ceil)), np.rint: _float_only(_unary(op_api.round)),
    np.sign: _unary(op_api.sign), np.isnan: _unary(op_api.is_nan), np.isinf: _unary(op_api.is_inf),
    np.isfinite: _unary(op_api.is_finite), np.deg2rad: _float_only(_scale(math.pi / 180)),
    np.rad2deg: _float_only(_scale(180 / math.pi)), np.conjugate: _real_only("conjugate"),
    np.radians: _float_only(_scale(math.pi / 180)), np.degrees: _float_only(_scale(180 / math.pi)),
    np.arctan: _float_only(lambda x: api().atan2(x, api().ones_like(x))),
    np.arcsin: _float_only(_arcsin), np.arccos: _float_only(_arccos),
    np.arcsinh: _float_only(_arcsinh), np.arccosh: _float_only(_arccosh),
    np.arctanh: _float_only(_arctanh), np.fmod: _fmod, np.trunc: _trunc,
    np.fabs: _float_only(_unary(op_api.abs)), np.logaddexp: _float_only(_logaddexp(math.e)),
    np.logaddexp2: _float_only(_logaddexp(2.0)), np.cbrt: _float_only(_cbrt),
    np.signbit: _float_only(_signbit), np.copysign: _float_only(_copysign),
    np.heaviside: _float_only(_heaviside), np.float_power: _float_only(_binary(op_api.pow)),
}
REDUCERS = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min",
            np.logical_and: "all", np.logical_or: "any"}
ACCUMULATORS = (np.add, np.multiply, np.maximum, np.minimum)   # log-step scans


def _dummy(x):
    """A stand-in for NumPy's type checks: empty arrays for arrays, scalars as themselves."""
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return x
    if isinstance(x, WeakScalar):
        return x.weak(0)
    dt = np_dtype_of(x)
    t = as_tensor(x)
    ndim = (t.shape.ndims or 0) if t is not None else np.ndim(x)
    return np.empty((0,) * max(ndim, 1) if ndim else (), dtype=dt)


def resolve(ufunc, inputs) -> tuple:
    """(loop input dtypes, output dtype) NumPy would use for `ufunc(*inputs)`; raises
    NumPy's own error for an impossible combination."""
    dummies = [_dummy(x) for x in inputs]
    with np.errstate(all="ignore"):
        result = ufunc(*dummies)   # NumPy's own errors (e.g. a Python int out of range)
    first = result[0] if isinstance(result, tuple) else result
    key = tuple(np_dtype_of(x) for x in inputs) + (None,) * ufunc.nout
    try:
        dtypes = ufunc.resolve_dtypes(key)
        if all(isinstance(k, type) for k in key[:ufunc.nin]) and \
                any(np.dtype(d).kind == "O" for d in dtypes):
            raise TypeError("only weak scalars: NumPy picks the object loop")
    except (TypeError, ValueError):
        dtypes = (np.result_type(*dummies),) * ufunc.nin + (np.asarray(first).dtype,)
    return dtypes[:ufunc.nin], np.asarray(first).dtype


def call(ufunc, inputs) -> TracedArray:
    """`ufunc(*inputs)` recorded into the graph."""
    build = UFUNCS.get(ufunc)
    if build is None:
        raise GraphBreak(f"np.{ufunc.__name__} (not supported by flowjit's NumPy tracing)")
    loop, out_dtype = resolve(ufunc, inputs)
    if ufunc in _COMPARISONS:
        settled = _out_of_range_comparison(ufunc, inputs, loop)
        if settled is not None:
            return settled
    tensors = [to_tensor(x, dt) for x, dt in zip(inputs, loop)]
    if ufunc in (np.absolute, np.sign) and loop[0].kind in "ub":
        result = tensors[0] if ufunc is np.absolute else api().sign(
            to_tensor(tensors[0], np.int64))
    elif loop[0].kind == "b" and ufunc in _BOOL_AS_LOGIC:
        result = _BOOL_AS_LOGIC[ufunc](*tensors)   # True + True is True
    else:
        try:
            result = build(*tensors)
        except TypeError as e:   # the op has no kernel for this dtype
            if ufunc not in _WRAPPING or np.dtype(out_dtype).kind not in "iu":
                raise GraphBreak(f"np.{ufunc.__name__} on {', '.join(map(str, loop))}",
                                 str(e).splitlines()[0]) from None
            # uint8 negation, int8 powers, ...: arithmetic modulo 2**bits gives the same
            # bits in int64, and the cast back to the narrow type wraps as NumPy's does
            result = build(*[to_tensor(t, np.int64) for t in tensors])
    out = to_tensor(result, out_dtype)
    weak = _weak_result(inputs, out_dtype)
    return WeakScalar(_Buffer(out), weak) if weak is not None else wrap(out)


_WEAK_KINDS = {"i": int, "u": int, "f": float, "c": complex}


def _weak_result(inputs, out_dtype):
    """Python arithmetic on weak scalars (a converted loop's index, docs/architecture.md
    "Python control flow in @jit") stays weak, as the Python number it stands for would."""
    if not any(isinstance(x, WeakScalar) for x in inputs):
        return None
    if not all(isinstance(x, WeakScalar) or (isinstance(x, (int, float, complex)) and
                                              not isinstance(x, (bool, np.generic)))
               for x in inputs):
        return None
    return _WEAK_KINDS.get(np.dtype(out_dtype).kind)


_COMPARISONS = (np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal)


def _out_of_range_comparison(ufunc, inputs, loop):
    """NumPy 2 compares an integer array with a Python int its dtype cannot hold (uint8 !=
    -1, int8 < 1000) by value: every element lies on the same side of it, so the result is
    one truth value everywhere (that of the dtype's nearest limit); None otherwise."""
    for k, x in enumerate(inputs):
        other = inputs[1 - k]
        if type(x) is not int or loop[k].kind not in "iu" or as_tensor(other) is None:
            continue
        info = np.iinfo(loop[k])
        if info.min <= x <= info.max:
            continue
        operands = [info.min if x < info.min else info.max] * 2
        operands[k] = x
        truth = bool(ufunc(*operands))
        tf = api()
        return wrap(tf.fill(tf.shape(as_tensor(other)), tf.constant(truth)))
    return None


# bool inputs: NumPy's add/multiply/maximum/minimum loops are or/and
_BOOL_AS_LOGIC = {np.add: op_api.logical_or, np.multiply: op_api.logical_and,
                  np.maximum: op_api.logical_or, np.minimum: op_api.logical_and}
# ring operations: computed in int64 when the op has no kernel for a narrow integer type
_WRAPPING = (np.add, np.subtract, np.multiply, np.negative, np.power, np.square)


def apply_ufunc(ufunc, method, inputs, kwargs):
    """The body of `TracedArray.__array_ufunc__`; an op's unsupported dtype is a graph break
    (NumPy may support it)."""
    with dtype_breaks(f"np.{ufunc.__name__}"):
        return _apply_ufunc(ufunc, method, inputs, kwargs)


def _apply_ufunc(ufunc, method, inputs, kwargs):
    out = kwargs.pop("out", None)
    for name in ("where", "casting", "order", "subok", "signature"):
        if name in kwargs and not (name == "where" and kwargs[name] is True):
            raise GraphBreak(f"np.{ufunc.__name__}(..., {name}=...)")
        kwargs.pop(name, None)
    dtype = kwargs.pop("dtype", None)
    if method == "__call__" and ufunc in TWO_OUTPUTS:
        if kwargs or dtype is not None:
            raise GraphBreak(f"np.{ufunc.__name__} with {sorted(kwargs) or ['dtype']}")
        return _store_outputs(TWO_OUTPUTS[ufunc](*inputs), out)
    if method == "__call__":
        if ufunc is np.matmul:
            from . import np_linalg

            result = np_linalg.matmul(*inputs)
        else:
            if kwargs:
                raise GraphBreak(f"np.{ufunc.__name__} with {sorted(kwargs)}")
            result = call(ufunc, inputs)
        if dtype is not None:
            result = wrap(to_tensor(result, np.dtype(dtype)))
    elif method == "reduce" and ufunc in REDUCERS:
        from . import np_reductions

        axis = kwargs.pop("axis", 0)
        keepdims = kwargs.pop("keepdims", False)
        if kwargs:
            raise GraphBreak(f"np.{ufunc.__name__}.reduce with {sorted(kwargs)}")
        result = np_reductions.reduce(REDUCERS[ufunc], inputs[0], axis=axis, keepdims=keepdims,
                                     dtype=dtype)
    elif method == "outer" and ufunc in UFUNCS and ufunc.nin == 2 and not kwargs:
        result = call(ufunc, _outer_operands(*inputs))
        if dtype is not None:
            result = wrap(to_tensor(result, np.dtype(dtype)))
    elif method == "accumulate" and ufunc in ACCUMULATORS:
        from . import np_reductions

        axis = kwargs.pop("axis", 0)
        if kwargs:
            raise GraphBreak(f"np.{ufunc.__name__}.accumulate with {sorted(kwargs)}")
        result = np_reductions.accumulate(ufunc, inputs[0], axis=axis, dtype=dtype)
    else:
        raise GraphBreak(f"np.{ufunc.__name__}.{method}")
    if out is not None:
        return _store_outputs((result,), out if isinstance(out, tuple) else (out,))[0]
    return result


def _outer_operands(a, b) -> tuple:
    """(a, b) shaped so that broadcasting them gives `ufunc.outer(a, b)`: a gains one axis
    of length 1 per axis of b."""
    a = a if isinstance(a, TracedArray) else np.asarray(a)
    b = b if isinstance(b, TracedArray) else np.asarray(b)
    return a.reshape(tuple(a.shape) + (1,) * b.ndim), b


def _store_outputs(results: tuple, out) -> tuple:
    """`results`, or written into the traced arrays of `out=` (a tuple, None for a fresh
    output) and those returned."""
    if out is None:
        return results
    stored = []
    for result, target in zip(results, out):
        if target is None:
            stored.append(result)
            continue
        if not isinstance(target, TracedArray):
            raise GraphBreak("out= naming an array that is not traced")
        target[...] = result
        stored.append(target)
    return tuple(stored)


def _divmod(a, b) -> tuple:
    """np.divmod: (a // b, a % b), each with floor_divide's and remainder's own rules."""
    return call(np.floor_divide, (a, b)), call(np.remainder, (a, b))


def _modf(x) -> tuple:
    """np.modf: (fractional part, integral part), both with x's sign; modf(±inf) is
    (±0, ±inf)."""
    (loop,), _ = resolve(np.modf, (x,))
    x = wrap(to_tensor(x, loop))
    whole = call(np.trunc, (x,))
    from .np_functions import where

    frac = where(call(np.isinf, (x,)), 0.0, call(np.subtract, (x, whole)))
    return call(np.copysign, (frac, x)), whole


TWO_OUTPUTS = {np.divmod: _divmod, np.modf: _modf}


def any_traced(values) -> bool:
    return any(as_tensor(v) is not None for v in values)
