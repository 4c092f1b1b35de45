"""Branch-free sin, cos and erf for numba loops, per float type (see vecmath_explog for the
conventions: one source for float32 and float64, constants typed as F, njit functions with
explicit options that LLVM always inlines into the calling loop).

- sin/cos: n = rint(x*2/pi); r = x - n*pi/2 with pi/2 split in three parts, each step an exact
  `fma` (the first step is exact because x and n*P1 share the grid of P1's last bit), accurate
  for |n| up to about 2**42 (f64) / 2**17 (f32). From TRIG_BIG on, a select takes the
  Payne-Hanek reduction of vecmath_reduce instead (both always run). sin/cos of r are odd/even
  polynomials; the quadrant (bits 0 and 1 of n) picks one of them and the sign with selects.
- erf: x*(2/sqrt(pi) + x*x*P1(x*x)) for |x| below a threshold, otherwise
  1 - exp(-x*x)*R(|x|) with R a polynomial in |x| - center whose coefficients are chosen per
  lane among 3 (f64) or 2 (f32) intervals by selects (one Horner chain, no branch); |x| is
  clamped where erf rounds to 1.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from numba import njit

from . import vecmath_coeffs as K
from .vecmath_bits import copysign, fabs, fma, fmadd, int_bit, rint
from .vecmath_explog import _JIT, _horner
from .vecmath_reduce import make_big_reduce

_PIO2 = {
    np.float64: (1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33),
    np.float32: (1.5707963705062866, -4.371138828673793e-08, -1.7151245100058819e-15),
}
_TWO_OVER_PI = {np.float64: 0.6366197723675814, np.float32: 0.6366197466850281}
# |x| from which sin/cos use Payne-Hanek reduction (Cody-Waite is accurate to 2**42 / 2**17;
# Payne-Hanek here needs |x| >= 2**22 for float64).
TRIG_BIG = {np.float64: 2.0 ** 30, np.float32: 2.0 ** 17}
_SIN_TINY = {np.float64: 2.0 ** -27, np.float32: 2.0 ** -12}  # sin(x) rounds to x below

_ERF = {
    np.float64: dict(small=0.875, clamp=6.0, bounds=(1.875, 3.25), centers=(1.375, 2.5625, 4.625),
                     P=K.ERFP64, R=(K.ERFR64_0, K.ERFR64_1, K.ERFR64_2)),
    np.float32: dict(small=1.0, clamp=4.0, bounds=(2.2, 2.2), centers=(1.6, 3.1, 3.1),
                     P=K.ERFP32, R=(K.ERFR32_0, K.ERFR32_1, K.ERFR32_1)),
}
_TWO_OVER_SQRTPI = {np.float64: (1.1283791670955126, 1.533545961316588e-17),
                    np.float32: (1.128379225730896, -5.8635382771399236e-08)}


def _horner_select3(c0: tuple, c1: tuple, c2: tuple) -> Callable:
    """Jitted p(u, in0, in1): the polynomial c0 where in0, else c1 where in1, else c2."""
    deg = len(c0) - 1

    @njit(**_JIT)
    def poly(u, in0, in1):
        acc = c0[deg] if in0 else (c1[deg] if in1 else c2[deg])
        for k in range(deg - 1, -1, -1):
            acc = fmadd(acc, u, c0[k] if in0 else (c1[k] if in1 else c2[k]))
        return acc

    return poly


def make_trig(F: type, exp: Callable) -> dict[str, Callable]:
    """Build sin, cos, erf (and the Cody-Waite-only sin_limited, cos_limited with their
    trig_needs_full(x) predicate) jitted for float type F; `exp` is vecmath's exp for F."""
    f = F
    zero, half, one = f(0.0), f(0.5), f(1.0)
    p1, p2, p3 = (f(c) for c in _PIO2[F])
    big_limit, inf = f(TRIG_BIG[F]), f(np.inf)
    reduce_big = make_big_reduce(F)
    two_over_pi = f(_TWO_OVER_PI[F])
    sin_tiny = f(_SIN_TINY[F])
    sin_s = _horner(tuple(f(c) for c in (K.SINS64 if F is np.float64 else K.SINS32)))
    cos_c = _horner(tuple(f(c) for c in (K.COSC64 if F is np.float64 else K.COSC32)))
    e = _ERF[F]
    erf_small, erf_clamp = f(e["small"]), f(e["clamp"])
    erf_b0, erf_b1 = (f(b) for b in e["bounds"])
    erf_c0, erf_c1, erf_c2 = (f(c) for c in e["centers"])
    # erf(x) = x*(k0 + k0_lo) + x*z*P1(z): 2/sqrt(pi) in two parts, fused into one rounding
    erf_k0, erf_k0_lo = (f(c) for c in _TWO_OVER_SQRTPI[F])
    erf_p1 = _horner(tuple(f(c) for c in e["P"]))
    erf_r = _horner_select3(*(tuple(f(c) for c in cs) for cs in e["R"]))

    @njit(**_JIT)
    def _reduce(x):
        # (n, r) with x = n*pi/2 + r, |r| <= pi/4 (+ rounding slack)
        n = rint(x * two_over_pi)
        r = fma(n, -p1, x)
        r = fma(n, -p2, r)
        return n, fma(n, -p3, r)

    @njit(**_JIT)
    def _reduce_any(x):
        # Cody-Waite, or Payne-Hanek for large finite |x| (both always run; a select picks)
        n, r = _reduce(x)
        ax = fabs(x)
        qb, rb = reduce_big(ax)
        big = (ax >= big_limit) & (ax < inf)
        neg = x < zero
        n = (-qb if neg else qb) if big else n
        r = (-rb if neg else rb) if big else r
        return n, r

    @njit(**_JIT)
    def _sin_cos_poly(r):
        z = r * r
        s = fmadd(r, z * sin_s(z), r)
        hz = half * z
        w = one - hz
        c = w + (((one - w) - hz) + z * z * cos_c(z))  # (1-w)-hz recovers w's rounding error
        return s, c

    def _sin_cos(reduce):
        @njit(**_JIT)
        def sin(x):
            n, r = reduce(x)
            s, c = _sin_cos_poly(r)
            v = c if int_bit(n, 1) else s
            v = -v if int_bit(n, 2) else v
            return x if fabs(x) < sin_tiny else v  # keeps -0.0 and subnormals exact

        @njit(**_JIT)
        def cos(x):
            n, r = reduce(x)
            s, c = _sin_cos_poly(r)
            v = s if int_bit(n, 1) else c
            return -v if int_bit(n + one, 2) else v

        return sin, cos

    sin, cos = _sin_cos(_reduce_any)
    sin_limited, cos_limited = _sin_cos(_reduce)  # accurate only where not trig_needs_full

    @njit(**_JIT)
    def trig_needs_full(x):
        ax = fabs(x)
        return (ax >= big_limit) & (ax < inf)

    @njit(**_JIT)
    def erf(x):
        ax = fabs(x)
        z = x * x
        small = fmadd(x, erf_k0, x * fmadd(z, erf_p1(z), erf_k0_lo))
        small = x if x == zero else small  # -0.0 (k0_lo < 0 in float32 would give +0.0)
        a = erf_clamp if ax > erf_clamp else ax  # NaN passes through
        in0 = a < erf_b0
        in1 = a < erf_b1
        u = a - (erf_c0 if in0 else (erf_c1 if in1 else erf_c2))
        tail = copysign(one - exp(-(a * a)) * erf_r(u, in0, in1), x)
        return small if ax < erf_small else tail

    return {"sin": sin, "cos": cos, "erf": erf, "sin_limited": sin_limited,
            "cos_limited": cos_limited, "trig_needs_full": trig_needs_full}
