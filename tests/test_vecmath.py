"""Tests for targets/cpu/vecmath: accuracy in ulp against NumPy/SciPy, special values, and that
loops calling the functions are vectorized (packed SIMD, no libm calls) in the loop forms the
code generator uses: a plain `range` loop and a `range` loop nested in a `prange` loop.

All nine functions are compiled into two kernels per dtype to keep numba compile time low (plus
one float32 kernel for the dense exp/expm1/tanh sweep).
"""

from __future__ import annotations

import platform
import re

import numpy as np
import pytest
import scipy.special
from numba import njit, prange

from flowjit.targets.cpu import vecmath
from flowjit.targets.cpu.vecmath import (
    TRIG_LIMITED_MAX, VECMATH, VECMATH_BY_DTYPE, VECMATH_LIMITED, trig_needs_full)

NAMES = ("exp", "expm1", "log", "log1p", "tanh", "sigmoid", "erf", "sin", "cos")
exp, expm1, log, log1p, tanh, sigmoid, erf, sin, cos = (VECMATH[n] for n in NAMES)
sin_limited, cos_limited = VECMATH_LIMITED["sin"], VECMATH_LIMITED["cos"]


@njit(error_model="numpy")
def _serial(x, out):
    # rows 0-8: NAMES; rows 9-10: sin/cos_limited; returns whether any needs the full version
    big = False
    for i in range(x.shape[0]):
        v = x[i]
        big |= trig_needs_full(v)
        out[9, i] = sin_limited(v)
        out[10, i] = cos_limited(v)
        out[0, i] = exp(v)
        out[1, i] = expm1(v)
        out[2, i] = log(v)
        out[3, i] = log1p(v)
        out[4, i] = tanh(v)
        out[5, i] = sigmoid(v)
        out[6, i] = erf(v)
        out[7, i] = sin(v)
        out[8, i] = cos(v)
    return big


@njit(error_model="numpy", parallel=True)
def _nested(x, out):
    for r in prange(x.shape[0]):
        for i in range(x.shape[1]):
            v = x[r, i]
            out[0, r, i] = exp(v)
            out[1, r, i] = expm1(v)
            out[2, r, i] = log(v)
            out[3, r, i] = log1p(v)
            out[4, r, i] = tanh(v)
            out[5, r, i] = sigmoid(v)
            out[6, r, i] = erf(v)
            out[7, r, i] = sin(v)
            out[8, r, i] = cos(v)


def _sigmoid_ref(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


_REF = {"exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "tanh": np.tanh,
        "sigmoid": _sigmoid_ref, "erf": scipy.special.erf, "sin": np.sin, "cos": np.cos}
# Allowed max ulp: float32 against the float64 reference rounded to float32 (near correctly
# rounded); float64 against NumPy/SciPy float64, which are themselves off by up to ~2-3 ulp
# for tanh, sigmoid (the reference formula) and erf.
_TOL32 = dict.fromkeys(NAMES, 1) | {"sigmoid": 2}
_TOL64 = dict.fromkeys(NAMES, 1) | {"tanh": 3, "sigmoid": 3, "erf": 4, "sin": 2, "cos": 2}


def _samples(dtype) -> np.ndarray:
    rng = np.random.default_rng(1234)
    n = 60_000
    ity = np.uint32 if dtype == np.float32 else np.uint64
    bits = rng.integers(0, np.iinfo(ity).max, size=n, dtype=ity, endpoint=True)
    anywhere = bits.view(dtype)  # every binade, both signs, subnormals, inf/nan patterns
    big = 2.0 ** 17 if dtype == np.float32 else 2.0 ** 42
    k = rng.integers(1, 10 ** 6, size=n // 4)
    parts = [
        anywhere,
        rng.uniform(-20, 20, n), rng.uniform(-800, 800, n // 2), rng.uniform(-1, 1, n // 2),
        rng.standard_normal(n // 2) * 10.0 ** rng.uniform(-30, 0, n // 2),
        k * (np.pi / 2), rng.uniform(-big, big, n // 4),  # sin/cos near multiples of pi/2
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 88.72, 88.73, 709.78, 709.79,
                  -103.97, -745.13, -745.14, np.finfo(dtype).max, np.finfo(dtype).tiny,
                  np.finfo(dtype).smallest_subnormal, -np.finfo(dtype).smallest_subnormal]),
    ]
    return np.concatenate([np.asarray(p).astype(dtype) for p in parts])


def _ordered(a: np.ndarray) -> np.ndarray:
    b = a.view(np.int32 if a.dtype == np.float32 else np.int64).astype(np.int64)
    sign_off = np.int64(0x7FFFFFFF if a.dtype == np.float32 else 0x7FFFFFFFFFFFFFFF)
    return np.where(b < 0, -(b & sign_off), b)  # monotonic in the float value, -0 == +0


def ulp_distance(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Distance in representable values; 0 where both are NaN, inf where only one is."""
    d = np.abs(_ordered(got) - _ordered(ref)).astype(np.float64)
    both_nan = np.isnan(got) & np.isnan(ref)
    d[both_nan] = 0.0
    d[np.isnan(got) != np.isnan(ref)] = np.inf
    return d


@pytest.fixture(scope="module", params=[np.float32, np.float64], ids=["float32", "float64"])
def results(request):
    dtype = request.param
    x = _samples(dtype)
    out = np.empty((len(NAMES) + 2, x.size), dtype)
    assert _serial(x, out)
    rows = 64
    cols = -(-x.size // rows)
    x2 = np.resize(x, rows * cols).reshape(rows, cols)
    out2 = np.empty((len(NAMES), rows, cols), dtype)
    _nested(x2, out2)
    return dtype, x, out, out2.reshape(len(NAMES), -1)[:, :x.size]


def test_limited_sin_cos_match_full_versions_below_the_limit(results):
    dtype, x, out, _ = results
    below = ~(np.abs(x) >= TRIG_LIMITED_MAX[np.dtype(dtype).name])  # NaN counts as below
    for full, limited in ((7, 9), (8, 10)):
        assert np.array_equal(out[full][below].view(np.uint8), out[limited][below].view(np.uint8))
    limit = dtype(TRIG_LIMITED_MAX[np.dtype(dtype).name])
    small = np.array([1.0, -3.0, np.nan, np.inf], dtype)
    assert not _serial(small, np.empty((len(NAMES) + 2, small.size), dtype))
    edge = np.array([1.0, -limit], dtype)
    assert _serial(edge, np.empty((len(NAMES) + 2, edge.size), dtype))


def test_accuracy_in_ulp(results):
    dtype, x, out, _ = results
    tol = _TOL32 if dtype == np.float32 else _TOL64
    failures = []
    with np.errstate(all="ignore"):
        for row, name in enumerate(NAMES):
            ref = _REF[name](x.astype(np.float64)).astype(dtype)
            d = ulp_distance(out[row], ref)
            worst = int(np.argmax(d))
            if d[worst] > tol[name]:
                failures.append(f"{name}: {d[worst]:g} ulp at x={x[worst]!r}: "
                                f"got {out[row][worst]!r}, want {ref[worst]!r}")
    assert not failures, "\n".join(failures)


def test_signed_zero_follows_reference(results):
    dtype, x, out, _ = results
    with np.errstate(all="ignore"):
        for row, name in enumerate(NAMES):
            ref = _REF[name](x.astype(np.float64)).astype(dtype)
            zero = ref == 0
            assert np.array_equal(np.signbit(out[row][zero]), np.signbit(ref[zero])), name


def test_nested_prange_loop_gives_same_bits_as_serial_loop(results):
    _, _, out, out_nested = results
    assert np.array_equal(out[:len(NAMES)].view(np.uint8), out_nested.view(np.uint8))


_INF, _NAN = np.inf, np.nan
_SPECIAL = {  # name: [(x, expected)], compared bit for bit (NaN: any NaN)
    "exp": [(-_INF, 0.0), (_INF, _INF), (_NAN, _NAN), (1e4, _INF), (-1e4, 0.0), (0.0, 1.0),
            (-0.0, 1.0)],
    "expm1": [(-_INF, -1.0), (_INF, _INF), (_NAN, _NAN), (-0.0, -0.0), (0.0, 0.0), (1e4, _INF)],
    "log": [(0.0, -_INF), (-0.0, -_INF), (-1.0, _NAN), (-_INF, _NAN), (_INF, _INF), (1.0, 0.0),
            (_NAN, _NAN)],
    "log1p": [(-1.0, -_INF), (-2.0, _NAN), (_INF, _INF), (-0.0, -0.0), (0.0, 0.0), (_NAN, _NAN)],
    "tanh": [(_INF, 1.0), (-_INF, -1.0), (-0.0, -0.0), (0.0, 0.0), (_NAN, _NAN), (1e30, 1.0)],
    "sigmoid": [(_INF, 1.0), (-_INF, 0.0), (0.0, 0.5), (-0.0, 0.5), (_NAN, _NAN)],
    "erf": [(_INF, 1.0), (-_INF, -1.0), (-0.0, -0.0), (0.0, 0.0), (_NAN, _NAN), (10.0, 1.0)],
    "sin": [(_INF, _NAN), (-_INF, _NAN), (_NAN, _NAN), (-0.0, -0.0), (0.0, 0.0)],
    "cos": [(_INF, _NAN), (-_INF, _NAN), (_NAN, _NAN), (-0.0, 1.0), (0.0, 1.0)],
}


def test_special_values(results):
    dtype = results[0]
    cases = sorted({repr(v): v for pairs in _SPECIAL.values() for v, _ in pairs})  # keeps -0.0
    x = np.array([float(c) for c in cases], dtype)
    out = np.empty((len(NAMES) + 2, x.size), dtype)
    _serial(x, out)
    for row, name in enumerate(NAMES):
        for xv, want in _SPECIAL[name]:
            got = out[row][cases.index(repr(xv))]
            want = dtype(want)
            ok = np.isnan(got) if np.isnan(want) else got.tobytes() == want.tobytes()
            assert ok, f"{name}({xv!r}) in {dtype.__name__}: got {got!r}, want {want!r}"


def test_overflow_and_subnormal_results():
    for dtype in (np.float32, np.float64):
        x = np.array([88.7, 88.8, 709.7, 709.8, -87.5, -100.0, -103.0, -720.0, -744.0, -745.2],
                     dtype)
        out = np.empty((len(NAMES) + 2, x.size), dtype)
        _serial(x, out)
        with np.errstate(all="ignore"):
            ref = np.exp(x.astype(np.float64)).astype(dtype)
        assert np.all(ulp_distance(out[0], ref) <= 1), (dtype, out[0], ref)
        assert np.any((ref > 0) & (ref < np.finfo(dtype).tiny))  # subnormals were exercised


@njit(error_model="numpy")
def _exp_tanh_f32(x, out):
    for i in range(x.shape[0]):
        out[0, i] = exp(x[i])
        out[1, i] = expm1(x[i])
        out[2, i] = tanh(x[i])


def _float32_windows() -> np.ndarray:
    # consecutive float32 values around the float32 exp/expm1/tanh branch and range points:
    # tanh's polynomial/exp switch (0.7) and the first steps of its own exp reduction
    # (n = rint(2|x|*log2(e)) changes at |x| = (k + 1/2)*ln2/2: 0.866, 1.213), exp's overflow
    # threshold and its x < 0 scaling path, the normal/subnormal result boundary (-87.34),
    # exp -> 0 (-103.97), expm1's clamp (-18) and its cancellation region (|x| ~ ln2/2),
    # tanh's clamp (10) and where it rounds to 1 (9.01)
    centers = [0.7, 0.8664339757, 1.2130075660, 88.72283172607422, 88.3762626647950,
               -87.33654475055310, -103.27892990343185, -103.97208, -18.0, -17.33, 0.34657359,
               -0.34657359, 1.0397208, 10.0, 9.01, 2.0 ** -12, 2.0 ** -126]
    k = np.arange(-3000, 3001, dtype=np.int64)
    parts = []
    for c in centers:
        for sign in (1.0, -1.0):
            b = np.array([sign * c], np.float32).view(np.int32).astype(np.int64)
            parts.append((b + k).astype(np.int32).view(np.float32))
    return np.concatenate(parts)


def test_float32_exp_expm1_tanh_sweep_and_branch_points():
    # every 509th float32 bit pattern (8.4M values: all binades, both signs, inf/NaN) plus
    # dense windows around the branch points; exhaustive checks give 1 ulp for all three
    sweep = np.arange(0, 2 ** 32, 509, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([sweep, _float32_windows()])
    out = np.empty((3, x.size), np.float32)
    _exp_tanh_f32(x, out)
    with np.errstate(all="ignore"):
        x64 = x.astype(np.float64)
        refs = [r.astype(np.float32) for r in (np.exp(x64), np.expm1(x64), np.tanh(x64))]
    for row, (name, ref) in enumerate(zip(("exp", "expm1", "tanh"), refs)):
        d = ulp_distance(out[row], ref)
        worst = int(np.argmax(d))
        assert d[worst] <= 1, (name, x[worst], out[row][worst], d[worst])
        assert np.array_equal(np.signbit(out[row][x == 0]), np.signbit(ref[x == 0])), name


@njit(error_model="numpy")
def _tanh_f32(x, out):
    for i in range(x.shape[0]):
        out[i] = tanh(x[i])


def test_float32_tanh_dense_over_all_binades():
    # ~10**7 float32 in [-10, 10]: every 211th bit pattern from 0 to 10.0 (all binades from the
    # subnormals up, every mantissa residue class mod 211), both signs; the exhaustive check
    # over all 2**32 inputs gives 1 ulp
    top = int(np.array([10.0], np.float32).view(np.uint32)[0])
    pos = np.arange(0, top + 1, 211, dtype=np.uint32).view(np.float32)
    x = np.concatenate([pos, -pos])
    out = np.empty_like(x)
    _tanh_f32(x, out)
    ref = np.tanh(x.astype(np.float64)).astype(np.float32)
    d = ulp_distance(out, ref)
    worst = int(np.argmax(d))
    assert x.size > 10 ** 7 and d[worst] <= 1, (x[worst], out[worst], ref[worst], d[worst])
    assert np.array_equal(np.signbit(out), np.signbit(x))


_LIBM = re.compile(r"call [^\n]*@(llvm\.)?(exp|expm1|log|log1p|tanh|erf|sin|cos|pow)"
                   r"(f|\.f32|\.f64|\.v\d+f(32|64))?\(")
_PACKED_X86 = re.compile(r"\bv?(mul|add|sub|fmadd\d+|fnmadd\d+|fmsub\d+)p[sd]\s")


@pytest.mark.parametrize("kernel", [_serial, _nested], ids=["range", "prange_then_range"])
def test_loops_are_vectorized_without_calls(results, kernel):
    dtype = results[0]
    sig = next(s for s in kernel.signatures if str(s[0].dtype) == np.dtype(dtype).name)
    ir = kernel.inspect_llvm(sig)
    lane = "float" if dtype == np.float32 else "double"
    widths = {int(w) for w in re.findall(rf"<(\d+) x {lane}>", ir)}
    assert widths and max(widths) >= 4, f"no vector of {lane}: {sorted(widths)}"
    assert "llvm.loop.isvectorized" in ir
    assert not _LIBM.search(ir), _LIBM.search(ir).group(0)
    calls = "".join(re.findall(r"call [^\n]*", ir))
    assert "targets3cpu" not in calls, "a vecmath function was not inlined"
    if dtype == np.float32:
        assert not re.search(r"<\d+ x double>", ir), "float32 math was widened to float64"
    if platform.machine() in ("x86_64", "AMD64"):
        asm = kernel.inspect_asm(sig)
        assert _PACKED_X86.search(asm), "no packed float instructions"


def test_special_values_survive_fastmath_callers():
    # vecmath functions keep their own strict flags even when the caller is fastmath
    @njit(error_model="numpy", fastmath=True)
    def fast(x, out):
        for i in range(x.shape[0]):
            out[0, i] = exp(x[i])
            out[1, i] = log(x[i])

    x = np.array([np.nan, np.inf, -np.inf, 0.0, -1.0], np.float32)
    out = np.empty((2, x.size), np.float32)
    fast(x, out)
    assert np.isnan(out[0, 0]) and out[0, 1] == np.inf and out[0, 2] == 0
    assert np.isnan(out[1, 0]) and out[1, 1] == np.inf and out[1, 3] == -np.inf
    assert np.isnan(out[1, 4])


def test_generic_names_and_python_fallbacks():
    assert set(VECMATH) == set(NAMES) == set(vecmath.NAMES)
    for dt in ("float32", "float64"):
        assert set(VECMATH_BY_DTYPE[dt]) == set(NAMES)
    assert vecmath.exp_f32 is VECMATH_BY_DTYPE["float32"]["exp"]
    assert vecmath.cos_f64 is VECMATH_BY_DTYPE["float64"]["cos"]
    # called from Python, the generic names compute NumPy/SciPy's result
    x = np.array([-2.0, 0.5, 3.0])
    np.testing.assert_array_equal(tanh(x), np.tanh(x))
    np.testing.assert_array_equal(erf(x), scipy.special.erf(x))
    np.testing.assert_allclose(sigmoid(x), 1 / (1 + np.exp(-x)), rtol=1e-15)


def test_integer_and_complex_arguments_use_numpy_fallback():
    @njit
    def f(i, z):
        return exp(i), sigmoid(i), exp(z), sigmoid(z), trig_needs_full(z)

    e, s, ez, sz, big = f(3, 1 + 1j)
    assert e == np.exp(3.0) and abs(s - 1 / (1 + np.exp(-3.0))) < 1e-15
    assert abs(ez - np.exp(1 + 1j)) < 1e-15 and abs(sz - 1 / (1 + np.exp(-1 - 1j))) < 1e-15
    assert not big


def test_two_over_pi_table_matches_mpmath():
    mpmath = pytest.importorskip("mpmath")
    from flowjit.targets.cpu.vecmath_reduce import TWO_OVER_PI_WORDS

    words = [int(w) for w in TWO_OVER_PI_WORDS]
    nbits = 32 * (len(words) - 1)
    with mpmath.workdps(nbits // 3 + 50):
        want = int(mpmath.floor(2 / mpmath.pi * mpmath.mpf(2) ** nbits))
    got = 0
    for w in words[1:]:
        got = (got << 32) | w
    assert words[0] == 0 and got == want
