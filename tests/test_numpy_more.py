"""The ufuncs and functions added to flowjit's NumPy tracing (np_ufuncs.py, np_functions_more.py),
compared with NumPy itself. Every jit uses fallback=False, so a graph break fails the test;
the unary and binary ufuncs each share one jitted function (one compile per dtype).
"""

import warnings

import numpy as np
import pytest

import flowjit as tf

UNARY = (np.arctan, np.arcsin, np.arccos, np.arcsinh, np.arccosh, np.arctanh, np.trunc,
         np.fabs, np.cbrt, np.signbit, np.sinc)
BINARY = (np.fmod, np.logaddexp, np.logaddexp2, np.copysign, np.heaviside, np.float_power)
RTOL = {np.float32: 1e-6, np.float64: 4e-15}

unary_jit = tf.jit(lambda x: tuple(u(x) for u in UNARY), fallback=False)
binary_jit = tf.jit(lambda a, b: tuple(u(a, b) for u in BINARY), fallback=False)


def _unary_inputs(dtype):
    rng = np.random.default_rng(0)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1e-30,
             -1e-30, 1e30, -1e30, 1.5, np.nextafter(1.0, 2.0), np.nextafter(1.0, 0.0),
             -np.nextafter(1.0, 0.0), 3e38, -3e38]
    if dtype == np.float64:
        edges += [1e300, -1e300, 1e-300, 5e-324]
    vals = np.concatenate([edges, rng.standard_normal(64) * 4, rng.uniform(-1, 1, 64),
                           10.0 ** rng.uniform(-20, 20, 32) * rng.choice([-1, 1], 32)])
    return vals.astype(dtype)


def _check(got, ref, rtol, what):
    got = np.asarray(got)
    assert got.dtype == ref.dtype, (what, got.dtype, ref.dtype)
    assert got.shape == ref.shape, (what, got.shape, ref.shape)
    if ref.dtype.kind != "f":
        np.testing.assert_array_equal(got, ref, err_msg=what)
        return
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref), err_msg=f"{what}: NaNs")
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=0, equal_nan=True, err_msg=what)
    zero = ref == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(ref[zero]),
                                  err_msg=f"{what}: sign of zero")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_ufuncs_match_numpy(dtype):
    x = _unary_inputs(dtype)
    got = unary_jit(x)
    with np.errstate(all="ignore"):
        for u, g in zip(UNARY, got):
            _check(g, u(x), RTOL[dtype], f"np.{u.__name__}({np.dtype(dtype)})")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary_ufuncs_match_numpy(dtype):
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.5, -3.0, 1e30, -1e-30,
                        80.0, -80.0])
    rng = np.random.default_rng(1)
    a = np.concatenate([np.repeat(special, len(special)), rng.standard_normal(64) * 5])
    b = np.concatenate([np.tile(special, len(special)), rng.standard_normal(64) * 5])
    a, b = a.astype(dtype), b.astype(dtype)
    got = binary_jit(a, b)
    with np.errstate(all="ignore"):
        for u, g in zip(BINARY, got):
            _check(g, u(a, b), RTOL[dtype], f"np.{u.__name__}({np.dtype(dtype)})")


def test_integer_inputs_follow_numpy_promotion():
    fn = tf.jit(lambda a, b: (np.fmod(a, b), np.trunc(a), np.float_power(a, b), np.arcsin(a),
                              np.cbrt(a), np.logaddexp(a, b), np.sinc(a)), fallback=False)
    info = np.iinfo(np.int32)
    v = np.array([info.min, info.max, 0, 1, -1, 7, -7, 3], np.int32)
    a, b = np.repeat(v, len(v)), np.tile(v, len(v))
    got = fn(a, b)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = (np.fmod(a, b), np.trunc(a), np.float_power(a, b), np.arcsin(a), np.cbrt(a),
               np.logaddexp(a, b), np.sinc(a))
    for name, g, r in zip("fmod trunc float_power arcsin cbrt logaddexp sinc".split(), got, ref):
        _check(g, r, 4e-15, name)


def _nan_data():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 5))
    x[0, 1] = x[2, 3] = x[3, 0] = np.nan
    x[1, :] = np.nan        # an all-NaN row
    x[:, 4] = np.nan        # an all-NaN column
    return x


NAN_FUNCS = (np.nansum, np.nanmean, np.nanmax, np.nanmin)


@pytest.mark.parametrize("axis,keepdims,dtype", [
    (None, False, np.float64), (0, False, np.float32), (-1, True, np.float64),
    ((0, 1), True, np.float32)])
def test_nan_reductions(axis, keepdims, dtype):
    x = _nan_data()
    fn = tf.jit(lambda a: tuple(f(a, axis=axis, keepdims=keepdims) for f in NAN_FUNCS) +
                (np.count_nonzero(a > 0, axis=axis if axis != (0, 1) else None),
                 np.ptp(a, axis=axis, keepdims=keepdims)),
                fallback=False)
    xd = x.astype(dtype)
    got = fn(xd)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = tuple(f(xd, axis=axis, keepdims=keepdims) for f in NAN_FUNCS) + \
            (np.count_nonzero(xd > 0, axis=axis if axis != (0, 1) else None),
             np.ptp(xd, axis=axis, keepdims=keepdims))
    for name, g, r in zip("nansum nanmean nanmax nanmin count_nonzero ptp".split(), got, ref):
        _check(np.asarray(g), np.asarray(r), RTOL[dtype] * 4, name)


def test_nan_reductions_on_integers_and_count_nonzero():
    x = np.array([[3, 0, -2], [0, 0, 5]], np.int32)
    fn = tf.jit(lambda a: (np.nansum(a, axis=0), np.nanmean(a, axis=1), np.nanmax(a),
                           np.nanmin(a, axis=1, keepdims=True), np.count_nonzero(a),
                           np.count_nonzero(a, axis=1), np.ptp(a, axis=0)), fallback=False)
    ref = (np.nansum(x, axis=0), np.nanmean(x, axis=1), np.nanmax(x),
           np.nanmin(x, axis=1, keepdims=True), np.count_nonzero(x), np.count_nonzero(x, axis=1),
           np.ptp(x, axis=0))
    for g, r in zip(fn(x), ref):
        _check(np.asarray(g), np.asarray(r), 1e-15, "int")


def test_average():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    w1 = np.array([1.0, 2.0, 0.5, 3.0])
    w2 = rng.uniform(0.1, 1, (3, 4)).astype(np.float32)
    xi = np.arange(12, dtype=np.int32).reshape(3, 4)
    fn = tf.jit(lambda a, b: (np.average(a), np.average(a, axis=0), np.average(a, axis=1,
                weights=w1), np.average(a, weights=w2), np.average(a, axis=1, weights=w2,
                keepdims=True), np.average(b, axis=0, weights=[1, 2, 3]), np.average(b)),
                fallback=False)
    ref = (np.average(x), np.average(x, axis=0), np.average(x, axis=1, weights=w1),
           np.average(x, weights=w2), np.average(x, axis=1, weights=w2, keepdims=True),
           np.average(xi, axis=0, weights=[1, 2, 3]), np.average(xi))
    for g, r in zip(fn(x, xi), ref):
        _check(np.asarray(g), np.asarray(r), 1e-6, "average")
    with pytest.raises(ZeroDivisionError):
        tf.jit(lambda a: np.average(a, axis=0, weights=[1.0, -1.0, 0.0]), fallback=False)(x)


def test_cross_meshgrid_sinc_tensordot():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((5, 3))
    b = rng.standard_normal(3).astype(np.float32)
    x = np.linspace(-2, 2, 4)
    y = np.arange(3, dtype=np.float32)
    t1 = rng.standard_normal((2, 3, 4))
    t2 = rng.standard_normal((3, 4, 5))

    def f(a, b, x, y, t1, t2):
        return (np.cross(a, b), np.cross(b, b), *np.meshgrid(x, y), *np.meshgrid(x, y, x,
                indexing="ij"), *np.meshgrid(x, y, sparse=True), np.sinc(x), np.sinc(y),
                np.tensordot(t1, t2), np.tensordot(t1, t2, axes=([2], [1])),
                np.tensordot(t1, t2, axes=([1, 2], [0, 1])),
                np.tensordot(t1, t2, axes=([1], [0])), np.tensordot(t1, t2[0], axes=0))

    got = tf.jit(f, fallback=False)(a, b, x, y, t1, t2)
    ref = f(a, b, x, y, t1, t2)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        _check(np.asarray(g), np.asarray(r), 1e-12 if r.dtype == np.float64 else 1e-6, "fn")
    assert isinstance(tf.jit(lambda x, y: np.meshgrid(x, y), fallback=False)(x, y), tuple)
    assert np.sinc(np.zeros(1))[0] == tf.jit(np.sinc, fallback=False)(np.zeros(1))[0] == 1.0


def test_unsupported_forms_are_graph_breaks():
    from flowjit.errors import UnimplementedError

    a2 = np.ones((4, 2))
    with pytest.raises(UnimplementedError):
        tf.jit(lambda a: np.cross(a, a), fallback=False)(a2)
    with pytest.raises(UnimplementedError):
        tf.jit(lambda a, w: np.average(a, weights=w), fallback=False)(a2, a2)
