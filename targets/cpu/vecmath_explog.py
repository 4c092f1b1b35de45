"""Branch-free exp, expm1, log, log1p, tanh and sigmoid for numba loops, per float type.

`make_explog(F)` builds the scalar functions for F = np.float32 or np.float64 from one source,
with every constant typed as F so float32 code never widens to float64. Each function is a
separate numba.njit function with the options in `_JIT`: `forceinline` (LLVM alwaysinline, so
no call is left in the caller's loop and the loop vectorizer widens it; LLVM's own heuristics
refuse to inline the larger ones), error_model="numpy" (divisions carry no ZeroDivisionError
branch), and fastmath/boundscheck set explicitly off so that the functions keep strict IEEE
semantics inside fastmath callers (an unset option is inherited from the first caller that
compiles the function, and that version is then reused by every caller).

Algorithms (coefficients in vecmath_coeffs):
- exp: n = rint(x*log2(e)), r = x - n*ln2 with ln2 split hi+lo (n*hi exact) and the rounding
  error of r kept, exp(r) = 1 + (r + r^2*q(r)), scaled by 2**n as two exact power-of-two
  factors so overflow gives inf and the subnormal range rounds once.
- expm1: same reduction; 2**n * (((1 - 2**-n) + r) + t) where expm1(r) = r + t: the first
  sum is exact where it cancels (|n| <= 1).
- log: x = m*2**e, m in [sqrt(1/2), sqrt(2)); f = m-1, s = f/(2+f), log1p(f) = 2*atanh(s)
  evaluated as f - (f*f/2 - s*(f*f/2 + z*T(z))), z = s*s; subnormals are prescaled.
- log1p: log of u = 1+x plus the rounding correction (1+x-u)/u.
- tanh: e/(e+2) with e = expm1(2|x|), |x| clamped where tanh rounds to 1, sign copied back.
- sigmoid: e = exp(-|x|); 1/(1+e) for x >= 0, e/(1+e) otherwise (the reference kernel's form).
Special values are patched with selects at the end, never with branches.

float32 replaces exp, expm1 and tanh with cheaper forms (`_make_exp_f32`; float64 keeps the
above). n is read from the bits of the "shifter" sum z = x*log2(e) + 1.5*2**23 (no rint or
float->int conversion) and 2**n is applied by adding n to the exponent field of the result
(ldexp_shifter: two integer ops) instead of two multiplications:
- exp: r as above but rounded once (no Fast2Sum term), exp(r) = 1 + r*(1 + r*G(r)) (Horner,
  6 FMAs, G minimax for exp's relative error). For x < 0 the exponent add uses n + 64 and the
  result is multiplied by 2**-64: exact on normal results, one correct rounding into the
  subnormals. x > 88.7228... (overflow) and NaN are patched with one select from x + inf.
- expm1: the float64 algorithm (Fast2Sum term kept: expm1 cancels near |n| = 1) with the
  shifter n and the exponent-add scaling, overflow patched as in exp.
- tanh: |x| < 0.7: |x| + |x|**3 * P(x**2) (minimax, 5 coefficients); otherwise
  1 - 2/(E + 1) with E = exp(2|x|) computed inline with the reduction folded in: n from the
  shifter sum |x|*(2*log2(e)) + shifter, s = |x| - n*(ln2/2) with one float32 constant (its
  error grows with n, but so does the damping below), E = 2**n * p(s) with p a degree-5
  minimax of exp(2s) on |s| <= ln2/4 (relative error 9.2e-8, 2**-23.4), exponent add for
  2**n. An error d in E reaches tanh as d * 2E/(E + 1)**2 <= 0.3 d (x >= 0.7), so this
  shorter exp (5 FMAs instead of exp's 6 + 3 for the two-constant reduction and 2|x|) keeps
  tanh within 1 ulp. |x| is clamped at 10 (exp stays normal, 2/(E + 1) < 2**-27 so the
  result rounds to 1); sign copied back (keeps -0.0; NaN takes the polynomial side). A single
  rational x*P(x**2)/Q(x**2) was tried and rejected: even with P and Q computed exactly and
  then rounded to float32 once each, the quotient is off by up to 2-3 ulp near 1 (each
  rounding of a quantity near 1 is worth up to 1 ulp of a result just below 1), and with
  float32 Horner evaluation 5 ulp.
Exhaustively checked over all 2**32 float32 inputs against float64 libm rounded to float32:
exp, expm1 and tanh are all within 1 ulp.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from numba import njit

from . import vecmath_coeffs as K
from .vecmath_bits import (
    copysign, fabs, fmadd, frexp_sqrt2, ldexp_shifter, pow2_neg_shifter, pow2i, rint)

_EXPQ = {np.float64: K.EXPQ64, np.float32: K.EXPQ32}
_LOGT = {np.float64: K.LOGT64, np.float32: K.LOGT32}
_LN2_HI = {np.float64: 0.6931471803691238, np.float32: 0.693115234375}
_LN2_LO = {np.float64: 1.9082149292705877e-10, np.float32: 3.194618329871446e-05}
_LOG2E = {np.float64: 1.4426950408889634, np.float32: 1.4426950216293335}
# exp: clamp so that 2**n stays inside pow2i's range once split in two halves.
_EXP_HI = {np.float64: 710.0, np.float32: 89.0}  # exp overflows to inf above ~709.78 / 88.72
_EXP_LO = {np.float64: -746.0, np.float32: -104.0}  # exp is 0 below ~-745.13 / -103.97
_EXPM1_LO = {np.float64: -40.0, np.float32: -18.0}  # expm1 rounds to -1 below these
_EXPM1_NT = {np.float64: 60.0, np.float32: 30.0}  # 1 - 2**-n rounds to 1 from here on
_TANH_CLAMP = {np.float64: 20.0, np.float32: 10.0}  # tanh rounds to +-1 beyond these
_SUBNORMAL_SCALE = {np.float64: 54, np.float32: 25}
_MIN_NORMAL = {np.float64: 2.0 ** -1022, np.float32: 2.0 ** -126}

# Options are set explicitly: numba lets a callee inherit unset options (fastmath, boundscheck)
# from whichever caller compiles it first, and caches that version for every later caller.
_JIT = {"error_model": "numpy", "nogil": True, "forceinline": True, "fastmath": False,
        "boundscheck": False}


def _horner(coeffs: tuple) -> Callable:
    """A jitted polynomial evaluator for constant coefficients (lowest degree first).

    The Horner steps are written out as one expression (fmadd(fmadd(c2, x, c1), x, c0)):
    the same operations in the same order as a loop over the coefficients, but numba types
    and LLVM optimizes straight-line code in a fraction of the time of a loop it must
    unroll, and every cold kernel that calls exp, tanh, log, ... compiles these."""
    names = {f"c{k}": value for k, value in enumerate(coeffs)}
    expr = f"c{len(coeffs) - 1}"
    for k in range(len(coeffs) - 2, -1, -1):
        expr = f"fmadd({expr}, x, c{k})"
    namespace = {"fmadd": fmadd, **names}
    namespace["__name__"] = __name__
    exec(f"def poly(x):\n    return {expr}\n", namespace)
    return njit(**_JIT)(namespace["poly"])


def make_explog(F: type) -> dict[str, Callable]:
    """Build {"exp", "expm1", "log", "log1p", "tanh", "sigmoid"} jitted for float type F."""
    f = F
    zero, half, one, two = f(0.0), f(0.5), f(1.0), f(2.0)
    inf, nan = f(np.inf), f(np.nan)
    log2e, ln2_hi, ln2_lo = f(_LOG2E[F]), f(_LN2_HI[F]), f(_LN2_LO[F])
    exp_hi, exp_lo, expm1_lo = f(_EXP_HI[F]), f(_EXP_LO[F]), f(_EXPM1_LO[F])
    expm1_nt, tanh_clamp = f(_EXPM1_NT[F]), f(_TANH_CLAMP[F])
    min_normal = f(_MIN_NORMAL[F])
    sub_k = f(_SUBNORMAL_SCALE[F])
    sub_scale = f(2.0 ** _SUBNORMAL_SCALE[F])
    expq = _horner(tuple(f(c) for c in _EXPQ[F]))
    logt = _horner(tuple(f(c) for c in _LOGT[F]))

    @njit(**_JIT)
    def _expm1_reduced(xs):
        # (n, r, t) with xs = n*ln2 + r, |r| <= ln2/2 (+ slack) and expm1(r) = r + t
        n = rint(xs * log2e)
        hi = fmadd(n, -ln2_hi, xs)  # exact: n*ln2_hi has few bits
        lo = n * ln2_lo
        r = hi - lo
        c = (hi - r) - lo  # rounding error of r (Fast2Sum), worth ~1 ulp near |n| = 1
        return n, r, fmadd(r * r, expq(r), c)

    @njit(**_JIT)
    def _scale(y, n):
        # y * 2**n for |n| <= ~1100 (f64) / ~150 (f32): two exact factors, one final rounding
        n1 = rint(n * half)
        return y * pow2i(n1) * pow2i(n - n1)

    @njit(**_JIT)
    def exp(x):
        xs = x if x < exp_hi else exp_hi  # NaN -> exp_hi here, restored below
        xs = xs if xs > exp_lo else exp_lo
        n, r, t = _expm1_reduced(xs)
        y = _scale(one + (r + t), n)
        return x if x != x else y

    @njit(**_JIT)
    def expm1(x):
        xs = x if x < exp_hi else exp_hi
        xs = xs if xs > expm1_lo else expm1_lo
        n, r, t = _expm1_reduced(xs)
        nt = n if n < expm1_nt else expm1_nt
        # (1 - 2**-n) + r is exact for |n| <= 1, where it cancels; t is small
        y = _scale(((one - pow2i(-nt)) + r) + t, n)
        y = x if x != x else y
        return x if x == zero else y  # keeps -0.0

    @njit(**_JIT)
    def _log_parts(m):
        # (f, hfsq, s*(hfsq + R)) for m in [sqrt(1/2), sqrt(2)): log(m) = f - (hfsq - that)
        fm = m - one
        s = fm / (two + fm)
        z = s * s
        hfsq = half * fm * fm
        return fm, hfsq, s * fmadd(z, logt(z), hfsq)

    @njit(**_JIT)
    def log(x):
        tiny = x < min_normal
        xs = x * sub_scale if tiny else x
        m, e = frexp_sqrt2(xs)
        e = e - sub_k if tiny else e
        fm, hfsq, corr = _log_parts(m)
        y = e * ln2_hi - ((hfsq - (corr + e * ln2_lo)) - fm)
        y = -inf if x == zero else y
        y = y if x >= zero else nan  # negative or NaN
        return inf if x == inf else y

    @njit(**_JIT)
    def log1p(x):
        u = one + x
        # 1 + x - u exactly, then divided by u: log1p(x) = log(u) + c to first order
        c = (one - (u - x)) if u >= two else (x - (u - one))
        c = c / u
        m, e = frexp_sqrt2(u)
        fm, hfsq, corr = _log_parts(m)
        y = e * ln2_hi - ((hfsq - (corr + (e * ln2_lo + c))) - fm)
        y = x if x == zero else y
        y = -inf if x == -one else y
        y = y if x >= -one else nan  # below -1 or NaN
        return inf if x == inf else y

    @njit(**_JIT)
    def tanh(x):
        ax = fabs(x)
        ax = tanh_clamp if ax > tanh_clamp else ax  # NaN passes through
        e = expm1(ax + ax)
        return copysign(e / (e + two), x)

    if F is np.float32:
        exp, expm1, tanh = _make_exp_f32()

    @njit(**_JIT)
    def sigmoid(x):
        e = exp(-fabs(x))
        num = one if x >= zero else e  # NaN takes e (NaN)
        return num / (one + e)

    return {"exp": exp, "expm1": expm1, "log": log, "log1p": log1p, "tanh": tanh,
            "sigmoid": sigmoid}


def _make_exp_f32() -> tuple[Callable, Callable, Callable]:
    """float32 exp, expm1 and tanh that scale by 2**n with an integer add on the exponent bits.

    Same reduction as make_explog's (x = n*ln2 + r, hi = x - n*ln2_hi exact), but n comes from
    the shifter sum z = x*log2(e) + 1.5*2**23, whose low bits are n: no rint, no conversions.
    """
    f = np.float32
    zero, one, two, inf = f(0.0), f(1.0), f(2.0), f(np.inf)
    shifter = f(1.5 * 2.0 ** 23)
    log2e, ln2_hi, ln2_lo = f(_LOG2E[f]), f(_LN2_HI[f]), f(_LN2_LO[f])
    exp_lo, expm1_lo = f(_EXP_LO[f]), f(_EXPM1_LO[f])
    # largest float32 whose exp is finite (rounds to FLT_MAX); n = 128 there but exp(r) < 1
    exp_max = f(88.72283172607422)
    sub_shift, sub_scale = shifter + f(64.0), f(2.0 ** -64)  # ldexp_shifter(y, sub_shift): y*2**64
    expm1_nt = shifter + f(_EXPM1_NT[f])
    tanh_clamp, tanh_small = f(_TANH_CLAMP[f]), f(0.7)
    two_log2e, half_ln2 = log2e * two, f(np.log(2.0)) * f(0.5)  # both exact scalings by 2
    expg = _horner(tuple(f(c) for c in K.EXPG32))
    expq = _horner(tuple(f(c) for c in K.EXPQ32))
    exp2s = _horner(tuple(f(c) for c in K.EXP2S32))
    tanhp = _horner(tuple(f(c) for c in K.TANHP32))

    @njit(**_JIT)
    def _reduce(xs):
        # (z, r): z = shifter + n, xs = n*ln2 + r, |r| <= ln2/2 + 2e-6, r rounded once
        z = fmadd(xs, log2e, shifter)
        n = z - shifter
        hi = fmadd(n, -ln2_hi, xs)  # exact (n*ln2_hi has few bits, |n| <= 150)
        return z, fmadd(n, -ln2_lo, hi)

    @njit(**_JIT)
    def exp(x):
        xs = exp_lo if x < exp_lo else x  # -inf -> exp_lo (exp is 0); NaN passes
        z, r = _reduce(xs)
        p = fmadd(r, fmadd(r, expg(r), one), one)  # exp(r), r*(1 + r*G) rounded once
        y = ldexp_shifter(p, z)  # exact while the result is normal
        # x < 0: add 64 more to the exponent (the integer adds wrap back: p*2**(n+64) is exact
        # and normal) and round once by * 2**-64, which gives the subnormal results
        y = ldexp_shifter(y, sub_shift) * sub_scale if xs < zero else y
        return y if x <= exp_max else x + inf  # overflow -> inf, NaN -> NaN

    @njit(**_JIT)
    def expm1(x):
        xs = x if x > expm1_lo else expm1_lo  # NaN -> expm1_lo, restored below
        z = fmadd(xs, log2e, shifter)
        n = z - shifter
        hi = fmadd(n, -ln2_hi, xs)  # exact
        lo = n * ln2_lo
        r = hi - lo
        c = (hi - r) - lo  # rounding error of r (Fast2Sum), worth ~1 ulp near |n| = 1
        t = fmadd(r * r, expq(r), c)  # expm1(r) = r + t
        zt = z if z < expm1_nt else expm1_nt
        # (1 - 2**-n) + r is exact for |n| <= 1, where it cancels; t is small
        y = ldexp_shifter(((one - pow2_neg_shifter(zt)) + r) + t, z)
        y = y if x <= exp_max else x + inf
        return x if x == zero else y  # keeps -0.0

    @njit(**_JIT)
    def tanh(x):
        ax = fabs(x)
        # |x| >= 0.7: 1 - 2/(E + 1), E = exp(2|x|) = 2**n * exp(2s), |s| <= ln2/4; an error d
        # in E reaches tanh damped to d * 2E/(E + 1)**2 <= 0.3 d, hence the short exp
        big = ax if ax < tanh_clamp else tanh_clamp
        z = fmadd(big, two_log2e, shifter)  # shifter + n, n = rint(2|x|*log2(e))
        s = fmadd(z - shifter, -half_ln2, big)
        e = ldexp_shifter(exp2s(s), z)  # normal: 1 <= E <= 2**29 * 1.5
        t_big = one - two / (e + one)
        # |x| < 0.7 (and NaN): odd polynomial, in |x| so that the sign comes back with -0.0
        x2 = ax * ax
        t_small = fmadd(ax * x2, tanhp(x2), ax)
        return copysign(t_big if ax >= tanh_small else t_small, x)

    return exp, expm1, tanh
