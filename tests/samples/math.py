"""Samples for the elementwise math ops (ops/math_ops.py and the math_* modules it combines).

Inputs are fed through placeholders whose static shape is drawn as exact, partly unknown or
of unknown rank, so inference with unknown dimensions is exercised too.  Oracles are plain
NumPy/Python, mostly computed in float64 and rounded to the op's dtype; they never call
flowjit's kernels.
"""

import math

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import flowjit as tf
from flowjit.ops.math_binary import add_v2

from . import OpCase
from .strategies import arrays, broadcast_pair, shapes

F = (np.float32, np.float64)
FH = (np.float16, np.float32, np.float64)
INTS = (np.int32, np.int64)
TOL = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-9}


def _tol(dtype):
    return TOL.get(np.dtype(dtype), 1e-6)


@st.composite
def _static_shape(draw, shape):
    """The placeholder's declared shape: exact, some dims unknown, or unknown rank."""
    mode = draw(st.integers(0, 2))
    if mode == 0:
        return list(shape)
    if mode == 1:
        return [d if draw(st.booleans()) else None for d in shape]
    return None


def _ph(name, arr, static):
    return tf.placeholder(tf.as_dtype(arr.dtype), static, name=name)


def _nonzero(dtype):
    if np.dtype(dtype).kind == "u":
        return st.integers(1, 50)
    if np.dtype(dtype).kind == "f":
        w = np.dtype(dtype).itemsize * 8
        return st.floats(0.5, 10, width=w) | st.floats(-10, -0.5, width=w)
    return st.integers(1, 50) | st.integers(-50, -1)


def _f64(fn, out=None):
    """An oracle computing `fn` in float64 and rounding to the input's (or `out`) dtype."""
    def oracle(*xs):
        return np.asarray(fn(*(x.astype(np.float64) for x in xs))).astype(out or xs[0].dtype)
    return oracle


@st.composite
def _binary(draw, make, oracle, dtypes, x_el=None, y_el=None):
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    sx, sy = draw(broadcast_pair())
    x = draw(arrays(dtype, sx, x_el(dtype) if x_el else None))
    y = draw(arrays(dtype, sy, y_el(dtype) if y_el else None))
    px, py = draw(_static_shape(sx)), draw(_static_shape(sy))
    return OpCase(lambda: [make(_ph("x", x, px), _ph("y", y, py))], {"x": x, "y": y},
                  lambda f: [oracle(f["x"], f["y"])], rtol=_tol(dtype), atol=_tol(dtype))


@st.composite
def _unary(draw, make, oracle, dtypes, el=None):
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    shape = draw(shapes())
    x = draw(arrays(dtype, shape, el(dtype) if el else None))
    px = draw(_static_shape(shape))
    return OpCase(lambda: [make(_ph("x", x, px))], {"x": x}, lambda f: [oracle(f["x"])],
                  rtol=_tol(dtype), atol=_tol(dtype))


def _floats(lo, hi):
    """Elements in [lo, hi] (bounds rounded to the dtype, as hypothesis requires)."""
    def elements(dtype):
        t = np.dtype(dtype).type
        return st.floats(float(t(lo)), float(t(hi)), width=np.dtype(dtype).itemsize * 8)
    return elements


def _truncdiv_int(x, y):
    q = (np.abs(x.astype(np.int64)) // np.abs(y.astype(np.int64))) * np.sign(x) * np.sign(y)
    return q.astype(x.dtype)


def _truncdiv(x, y):
    return _truncdiv_int(x, y) if x.dtype.kind == "i" else np.trunc(x / y)


def _truncmod(x, y):
    return (x - _truncdiv_int(x, y) * y).astype(x.dtype) if x.dtype.kind == "i" else \
        np.fmod(x, y)


def _realdiv(x, y):
    target = np.float32 if x.dtype.itemsize <= 2 and x.dtype.kind in "iu" else \
        (np.float64 if x.dtype.kind in "iu" else x.dtype)
    return x.astype(target) / y.astype(target)


def _pow_case():
    ints = _binary(tf.pow, lambda x, y: (x.astype(np.int64) ** y).astype(x.dtype), INTS,
                   x_el=lambda d: st.integers(-6, 6), y_el=lambda d: st.integers(0, 4))
    floats = _binary(lambda x, y: x ** y, _f64(np.power), F, x_el=_floats(0.1, 5),
                     y_el=_floats(-3, 3))
    return ints | floats


def _strings(shape):
    return arrays(np.int8, shape, st.integers(0, 2)).map(
        lambda a: np.array([b"ab"[:k] for k in a.reshape(-1)], dtype=object).reshape(a.shape))


def _per_string(fn, dtype):
    """An oracle applying `fn` to each broadcast pair of byte strings."""
    def oracle(x, y):
        bx, by = np.broadcast_arrays(x, y)
        flat = [fn(a, b) for a, b in zip(bx.reshape(-1), by.reshape(-1))]
        out = np.empty(len(flat), dtype=dtype)
        out[:] = flat
        return out.reshape(bx.shape)
    return oracle


@st.composite
def _string_binary(draw, make, oracle):
    sx, sy = draw(broadcast_pair(max_dims=2))
    sx = sx or (1,)  # a 0-d string result is fetched as a Python bytes object
    x, y = draw(_strings(sx)), draw(_strings(sy))
    return OpCase(lambda: [make(tf.placeholder(tf.string, sx, name="x"),
                                tf.placeholder(tf.string, None, name="y"))],
                  {"x": x, "y": y}, lambda f: [oracle(f["x"], f["y"])])


def _compare(make, oracle):
    return _binary(make, oracle, F + INTS) | _binary(
        make, oracle, (np.int32,), x_el=lambda d: st.integers(-2, 2),
        y_el=lambda d: st.integers(-2, 2))


def _shift_counts(dtype):
    return st.integers(-3, 8 * np.dtype(dtype).itemsize + 5)


def _shift_oracle(left):
    """x << y or x >> y with Python integers, wrapped to x's dtype: counts outside
    [0, width) give 0 (left) or the sign (right), as NumPy's shifts."""
    def oracle(x, y):
        bits = x.dtype.itemsize * 8
        xs, ys = np.broadcast_arrays(x, y)
        out = np.empty(xs.shape, x.dtype)
        for k in np.ndindex(xs.shape):
            a, b = int(xs[k]), int(ys[k])
            if 0 <= b < bits:
                v = (a << b) if left else (a >> b)
            else:
                v = 0 if left or a >= 0 else -1
            v &= (1 << bits) - 1
            if x.dtype.kind == "i" and v >= 1 << (bits - 1):
                v -= 1 << bits
            out[k] = v
        return out
    return oracle


def _logical(make, oracle):
    return _binary(make, oracle, (np.bool_,))


@st.composite
def _complex_abs(draw):
    dtype = np.dtype(draw(st.sampled_from((np.complex64, np.complex128))))
    real = np.float32 if dtype == np.complex64 else np.float64
    shape = draw(shapes())
    re, im = draw(arrays(real, shape)), draw(arrays(real, shape))
    x = (re + 1j * im).astype(dtype)
    static = draw(_static_shape(shape))
    return OpCase(lambda: [tf.abs(_ph("x", x, static))], {"x": x},
                  lambda f: [np.hypot(f["x"].real.astype(np.float64),
                                      f["x"].imag.astype(np.float64)).astype(real)],
                  rtol=_tol(real), atol=_tol(real))


@st.composite
def _add_n(draw):
    dtype = np.dtype(draw(st.sampled_from(F + INTS)))
    shape = draw(shapes())
    n = draw(st.integers(2, 4))
    xs = [draw(arrays(dtype, shape)) for _ in range(n)]
    static = draw(_static_shape(shape))
    feeds = {f"x{i}": x for i, x in enumerate(xs)}
    return OpCase(lambda: [tf.add_n([_ph(k, v, static) for k, v in feeds.items()])], feeds,
                  lambda f: [sum(v.astype(np.float64) for v in f.values()).astype(dtype)],
                  rtol=_tol(dtype), atol=_tol(dtype))


_CASTABLE = (np.float16, np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_)


@st.composite
def _cast(draw):
    src = np.dtype(draw(st.sampled_from(_CASTABLE)))
    dst = np.dtype(draw(st.sampled_from([d for d in _CASTABLE if np.dtype(d) != src])))
    shape = draw(shapes())
    el = st.integers(0, 100) if src == np.uint8 else None
    x = draw(arrays(src, shape, el))
    if dst == np.uint8 and src.kind != "b":  # keep values representable, as TF's are
        x = np.abs(x)

    def oracle(f):
        v = f["x"]
        if dst == np.bool_:
            return [np.array([e != 0 for e in v.reshape(-1)], dtype=bool).reshape(v.shape)]
        if dst.kind in "iu" and src.kind == "f":
            v = np.trunc(v)
        return [v.astype(np.float64).astype(dst)]

    static = draw(_static_shape(shape))
    return OpCase(lambda: [tf.cast(_ph("x", x, static), tf.as_dtype(dst))], {"x": x}, oracle,
                  rtol=0.0, atol=0.0)   # a cast rounds once: exact


@st.composite
def _select(draw):
    dtype = np.dtype(draw(st.sampled_from(F + INTS + (np.bool_,))))
    sc, sx, sy = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=4, min_side=0,
                                                        max_side=4)).input_shapes
    c = draw(arrays(np.bool_, sc))
    x, y = draw(arrays(dtype, sx)), draw(arrays(dtype, sy))
    statics = [draw(_static_shape(s)) for s in (sc, sx, sy)]
    feeds = {"c": c, "x": x, "y": y}

    def build():
        return [tf.where_v2(*(_ph(k, feeds[k], s) for k, s in zip("cxy", statics)))]

    def oracle(f):
        out = np.broadcast_arrays(f["c"], f["x"], f["y"])
        return [np.array([a if k else b for k, a, b in zip(*(o.reshape(-1) for o in out))],
                         dtype=dtype).reshape(out[0].shape)]

    return OpCase(build, feeds, oracle)


@st.composite
def _select_v1(draw):
    """TensorFlow 1.x where: x and y of one shape; condition of that shape, scalar or rows."""
    dtype = np.dtype(draw(st.sampled_from(F + INTS)))
    shape = draw(shapes())
    mode = draw(st.sampled_from(["same", "scalar", "rows"] if shape else ["same", "scalar"]))
    c = draw(arrays(np.bool_, {"same": shape, "scalar": (), "rows": shape[:1]}[mode]))
    x, y = draw(arrays(dtype, shape)), draw(arrays(dtype, shape))
    feeds = {"c": c, "x": x, "y": y}
    statics = {k: draw(_static_shape(v.shape)) for k, v in feeds.items()}

    def oracle(f):
        out = np.empty(shape, dtype)
        for idx in np.ndindex(*shape):
            pick = f["c"][()] if mode == "scalar" else f["c"][idx[:f["c"].ndim]]
            out[idx] = f["x"][idx] if pick else f["y"][idx]
        return [out]

    return OpCase(lambda: [tf.where(*(_ph(k, v, statics[k]) for k, v in feeds.items()))],
                  feeds, oracle)


@st.composite
def _where_coords(draw):
    dtype = draw(st.sampled_from((np.bool_, np.int32, np.float32)))
    shape = draw(shapes())
    x = draw(arrays(np.bool_, shape)).astype(dtype)
    static = draw(_static_shape(shape))

    def oracle(f):
        v = f["x"]
        coords = [idx for idx in np.ndindex(*v.shape) if v[idx]]
        return [np.array(coords, dtype=np.int64).reshape(len(coords), v.ndim)]

    return OpCase(lambda: [tf.where(_ph("x", x, static))], {"x": x}, oracle)


@st.composite
def _clip(draw):
    dtype = np.dtype(draw(st.sampled_from(F + INTS)))
    shape = draw(shapes())

    def bound_shape():
        k = draw(st.integers(0, len(shape)))
        return [d if draw(st.booleans()) else 1 for d in shape[len(shape) - k:]]

    t = draw(arrays(dtype, shape))
    lo, hi = draw(arrays(dtype, bound_shape())), draw(arrays(dtype, bound_shape()))
    feeds = {"t": t, "lo": lo, "hi": hi}
    statics = {k: draw(_static_shape(v.shape)) for k, v in feeds.items()}

    def oracle(f):
        r = np.where(f["t"] > f["hi"], f["hi"], f["t"])
        return [np.where(r < f["lo"], f["lo"], r).astype(dtype)]

    return OpCase(lambda: [tf.clip_by_value(*(_ph(k, v, statics[k]) for k, v in feeds.items()))],
                  feeds, oracle)


def _round_el(dtype):
    w = np.dtype(dtype).itemsize * 8
    return st.integers(-20, 20).map(lambda k: k / 2) | st.floats(-50, 50, width=w)


def _specials(dtype):
    w = np.dtype(dtype).itemsize * 8
    return st.floats(allow_nan=True, allow_infinity=True, width=w) | st.sampled_from(
        [np.nan, np.inf, -np.inf, 0.0])


def _py(fn, out=None):
    """An oracle applying a Python scalar function to every element (float64 in)."""
    def oracle(x):
        flat = [fn(float(e)) for e in x.reshape(-1)]
        return np.array(flat, dtype=np.float64).reshape(x.shape).astype(out or x.dtype)
    return oracle


SAMPLES = {
    "Add": _binary(lambda x, y: x + y, np.add, FH + INTS) | _string_binary(
        tf.add, _per_string(lambda a, b: a + b, object)),
    "AddV2": _binary(add_v2, np.add, FH + INTS),
    "Sub": _binary(lambda x, y: x - y, lambda x, y: np.subtract(x, y), FH + INTS),
    "Mul": _binary(tf.multiply, lambda x, y: x * y, FH + INTS),
    "RealDiv": _binary(lambda x, y: x / y, _realdiv, FH + INTS + (np.int8, np.uint16),
                       y_el=_nonzero),
    "FloorDiv": _binary(lambda x, y: x // y, lambda x, y: np.floor(x / y).astype(x.dtype),
                        F + INTS, y_el=_nonzero),
    "FloorMod": _binary(lambda x, y: x % y, np.mod, F + INTS, y_el=_nonzero),
    "TruncateDiv": _binary(tf.truncatediv, _truncdiv, F + INTS, y_el=_nonzero),
    "TruncateMod": _binary(tf.truncatemod, _truncmod, F + INTS, y_el=_nonzero),
    "Pow": _pow_case(),
    "Maximum": _binary(tf.maximum, lambda x, y: np.where(x > y, x, y), FH + INTS),
    "Minimum": _binary(tf.minimum, lambda x, y: np.where(x < y, x, y), FH + INTS),
    "SquaredDifference": _binary(tf.squared_difference, _f64(lambda x, y: (x - y) ** 2), F)
    | _binary(tf.squared_difference, lambda x, y: (x - y) * (x - y), INTS),
    "Atan2": _binary(tf.atan2, _f64(np.arctan2), FH),
    "Equal": _compare(tf.equal, lambda x, y: x == y) | _logical(tf.equal, np.equal)
    | _string_binary(tf.equal, _per_string(lambda a, b: a == b, bool)),
    "NotEqual": _compare(tf.not_equal, lambda x, y: x != y) | _string_binary(
        tf.not_equal, _per_string(lambda a, b: a != b, bool)),
    "Less": _compare(lambda x, y: x < y, lambda x, y: x < y),
    "LessEqual": _compare(lambda x, y: x <= y, lambda x, y: x <= y),
    "Greater": _compare(lambda x, y: x > y, lambda x, y: x > y),
    "GreaterEqual": _compare(lambda x, y: x >= y, lambda x, y: x >= y),
    "LogicalAnd": _logical(lambda x, y: x & y, lambda x, y: x & y),
    "LogicalOr": _logical(lambda x, y: x | y, lambda x, y: x | y),
    "AddN": _add_n(),
    "Neg": _unary(lambda x: -x, lambda x: (0 - x).astype(x.dtype), FH + INTS),
    "Abs": _unary(tf.abs, lambda x: np.where(x < 0, -x, x), FH + INTS),
    "ComplexAbs": _complex_abs(),
    "Sign": _unary(tf.sign, lambda x: ((x > 0).astype(x.dtype) - (x < 0)).astype(x.dtype),
                   FH + INTS),
    "Square": _unary(tf.square, lambda x: x * x, FH + INTS),
    "Sqrt": _unary(tf.sqrt, _f64(lambda x: x ** 0.5), FH, el=_floats(0, 50)),
    "Rsqrt": _unary(tf.rsqrt, _f64(lambda x: x ** -0.5), FH, el=_floats(0.01, 50)),
    "Reciprocal": _unary(tf.reciprocal, _f64(lambda x: 1 / x), FH, el=_nonzero),
    "Exp": _unary(tf.exp, _py(math.exp), FH),
    "Expm1": _unary(tf.expm1, _py(math.expm1), FH),
    "Log": _unary(tf.log, _py(math.log), FH, el=_floats(0.01, 50)),
    "Log1p": _unary(tf.log1p, _py(math.log1p), FH, el=_floats(-0.9, 50)),
    "Sin": _unary(tf.sin, _py(math.sin), FH),
    "Cos": _unary(tf.cos, _py(math.cos), FH),
    "Tan": _unary(tf.tan, _py(math.tan), F, el=_floats(-1.4, 1.4)),
    "Tanh": _unary(tf.tanh, _py(math.tanh), FH),
    "Sigmoid": _unary(tf.sigmoid, _f64(lambda x: 0.5 * (1 + np.tanh(x / 2))), FH,
                      el=_floats(-200, 200)),
    "Erf": _unary(tf.erf, _py(math.erf), FH),
    "Floor": _unary(tf.floor, _py(math.floor), FH, el=_round_el),
    "Ceil": _unary(tf.ceil, _py(math.ceil), FH, el=_round_el),
    "Round": _unary(tf.round, _py(round), FH, el=_round_el),
    "LogicalNot": _unary(lambda x: ~x, lambda x: x == False, (np.bool_,)),  # noqa: E712
    "BitwiseAnd": _binary(tf.bitwise.bitwise_and, lambda x, y: x & y, INTS + (np.uint8,)),
    "BitwiseOr": _binary(tf.bitwise.bitwise_or, lambda x, y: x | y, INTS + (np.uint8,)),
    "BitwiseXor": _binary(tf.bitwise.bitwise_xor, lambda x, y: x ^ y, INTS + (np.uint8,)),
    "Invert": _unary(tf.bitwise.invert, lambda x: (-1 - x.astype(np.int64)).astype(x.dtype),
                     INTS + (np.uint8,)),
    "LeftShift": _binary(tf.bitwise.left_shift, _shift_oracle(True), INTS,
                         y_el=_shift_counts),
    "RightShift": _binary(tf.bitwise.right_shift, _shift_oracle(False), INTS,
                          y_el=_shift_counts),
    "IsNan": _unary(tf.is_nan, lambda x: x != x, FH, el=_specials),
    "IsInf": _unary(tf.is_inf, _py(math.isinf, np.bool_), FH, el=_specials),
    "IsFinite": _unary(tf.is_finite, _py(math.isfinite, np.bool_), FH, el=_specials),
    "Cast": _cast(),
    "Select": _select_v1(),
    "SelectV2": _select(),
    "Where": _where_coords(),
    "ClipByValue": _clip(),
}
