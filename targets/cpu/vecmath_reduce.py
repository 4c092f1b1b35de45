"""Payne-Hanek argument reduction for large |x| in sin/cos, branch-free in integer arithmetic.

For x = M * 2**e (M the integer significand), x*2/pi mod 4 only depends on a window of the
bits of 2/pi starting near bit e: earlier bits give multiples of 4. `make_big_reduce(F)` builds
a jitted `(q, r)` = (quadrant 0..3, remainder) with |x| = q*pi/2 + r (mod 2*pi), |r| <= pi/4,
computed as M times a 96-bit (float32) or 192-bit (float64) window of 2/pi, in 32-bit limbs
held in uint64 lanes, and converted to a float remainder with extra precision. Every lane does
the same work (no branches), so loops stay vectorized: float32 picks its window from four
64-bit constants with selects, float64 reads `TWO_OVER_PI_WORDS` with a clamped index (vector
gathers). Valid for finite |x| >= 2**-7 (float32) or 2**22 (float64); vecmath_trig selects it
above TRIG_BIG, where Cody-Waite reduction is no longer accurate.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from numba import njit

from .vecmath_bits import float_bits, fma
from .vecmath_explog import _JIT

# Bits 1..1184 of 2/pi after the binary point, 32 per word, after 32 zero bits of padding (so
# windows may start a little before the binary point). Generated with
# mpmath: int(mpmath.floor(2 / mpmath.pi * 2**1216)), mp.dps = 500.
TWO_OVER_PI_WORDS = np.array([
    0x00000000,
    0xa2f9836e, 0x4e441529, 0xfc2757d1, 0xf534ddc0, 0xdb629599, 0x3c439041, 0xfe5163ab,
    0xdebbc561, 0xb7246e3a, 0x424dd2e0, 0x06492eea, 0x09d1921c, 0xfe1deb1c, 0xb129a73e,
    0xe88235f5, 0x2ebb4484, 0xe99c7026, 0xb45f7e41, 0x3991d639, 0x835339f4, 0x9c845f8b,
    0xbdf9283b, 0x1ff897ff, 0xde05980f, 0xef2f118b, 0x5a0a6d1f, 0x6d367ecf, 0x27cb09b7,
    0x4f463f66, 0x9e5fea2d, 0x7527bac7, 0xebe5f17b, 0x3d0739f7, 0x8a5292ea, 0x6bfb5fb1,
    0x1f8d5d08, 0x56033046, 0xfc7b6bab,
], dtype=np.uint64)
_PAD = 32

# (mantissa bits, exponent bias) per type.
_LAYOUT = {np.float64: (52, 1023), np.float32: (23, 127)}
_PIO2 = {np.float64: (1.5707963267948966, 6.123233995736766e-17),
         np.float32: (1.5707963705062866, -4.371138828673793e-08)}


def make_big_reduce(F: type) -> Callable:
    """Jitted `reduce_big(ax) -> (q, r)` for float type F (ax = |x|, finite, large)."""
    mant, bias = _LAYOUT[F]
    u = np.uint64
    words = TWO_OVER_PI_WORDS
    mask32, mant_mask, implicit = u(0xFFFFFFFF), u((1 << mant) - 1), u(1 << mant)
    sh32, sh62, sh2, sh_m = u(32), u(62), u(2), u(mant)
    half_q = u(1 << 61)
    # x = M * 2**(E - bias - mant); the window's first bit is k+1 with k = E - bias - mant - 2
    first = bias + mant + 2 - _PAD
    nwords = 6 if F is np.float64 else 3
    max_pos = u(32 * (len(words) - nwords - 1))
    p1, p2 = F(_PIO2[F][0]), F(_PIO2[F][1])
    scale_hi = F(2.0 ** -64)
    scale_63 = F(2.0 ** -63)
    scale_lo = F(2.0 ** -128)
    low11 = u(0x7FF)
    ftype = F

    @njit(**_JIT)
    def _window(e_biased, i):
        # 32-bit word i (0 = most significant) of the window of 2/pi used for this exponent
        pos = e_biased - u(first) if e_biased > u(first) else u(0)
        pos = pos if pos < max_pos else max_pos
        j = (pos >> u(5)) + u(i)
        s = pos & u(31)
        pair = (words[j] << sh32) | words[j + u(1)]
        return (pair >> (sh32 - s)) & mask32

    if F is np.float32:
        # The windows float32 needs lie in the first 256 padded bits: keep those as four uint64
        # constants and pick them with selects (vector blends) - gathers would cost more than
        # the whole Cody-Waite path.
        c0, c1, c2, c3 = _leading_words64(4)
        sh63, sh6, m63 = u(63), u(6), u(63)

        @njit(**_JIT)
        def reduce_big(ax):
            b = u(float_bits(ax))
            e_biased = b >> sh_m
            m = (b & mant_mask) | implicit
            pos = e_biased - u(first) if e_biased > u(first) else u(0)
            pos = pos if pos < u(135) else u(135)
            j = pos >> sh6
            s = pos & m63
            hi = c0 if j == u(0) else (c1 if j == u(1) else c2)
            mid = c1 if j == u(0) else (c2 if j == u(1) else c3)
            lo = c2 if j == u(0) else c3
            # 96-bit window = bits s .. s+95 of hi:mid:lo (x >> 1 >> (63 - s): no shift by 64)
            top = (hi << s) | ((mid >> u(1)) >> (sh63 - s))
            nxt = (mid << s) | ((lo >> u(1)) >> (sh63 - s))
            w2, w1, w0 = top >> sh32, top & mask32, nxt >> sh32
            # bits 32..95 of m * (w2 w1 w0); the carry out of bits 0..31 is below the error
            c1_ = (m * w1 & mask32) + ((m * w0) >> sh32)
            c2_ = m * w2 + ((m * w1) >> sh32) + (c1_ >> sh32)
            v = (c2_ << sh32) | (c1_ & mask32)  # 2 quadrant bits . 62 fraction bits
            q = ((v + half_q) >> sh62) & u(3)
            frac = np.int64(v << sh2) >> np.int64(1)  # quadrant fraction in [-1/2, 1/2), * 2**63
            # frac as f1 + f2 exactly enough: f1 rounds it, f2 is the integer remainder
            f1 = ftype(frac)
            f2 = ftype(frac - np.int64(f1))
            f1, f2 = f1 * scale_63, f2 * scale_63
            return ftype(q), fma(f1, p1, fma(f2, p1, f1 * p2))

        return reduce_big

    @njit(**_JIT)
    def reduce_big(ax):
        b = u(float_bits(ax))
        e_biased = b >> sh_m
        m = (b & mant_mask) | implicit
        ml, mh = m & mask32, m >> sh32
        w5, w4, w3 = _window(e_biased, 0), _window(e_biased, 1), _window(e_biased, 2)
        w2, w1, w0 = _window(e_biased, 3), _window(e_biased, 4), _window(e_biased, 5)
        # column sums (32-bit limbs) of m * (w5 .. w0) for bits 64..191
        c2 = ((ml * w2) & mask32) + ((ml * w1) >> sh32) + ((mh * w1) & mask32) \
            + ((mh * w0) >> sh32)
        c3 = ((ml * w3) & mask32) + ((ml * w2) >> sh32) + ((mh * w2) & mask32) \
            + ((mh * w1) >> sh32) + (c2 >> sh32)
        c4 = ((ml * w4) & mask32) + ((ml * w3) >> sh32) + ((mh * w3) & mask32) \
            + ((mh * w2) >> sh32) + (c3 >> sh32)
        c5 = (ml * w5) + ((ml * w4) >> sh32) + (mh * w4) + ((mh * w3) >> sh32) + (c4 >> sh32)
        v_hi = (c5 << sh32) | (c4 & mask32)
        v_lo = ((c3 & mask32) << sh32) | (c2 & mask32)
        q = ((v_hi + half_q) >> sh62) & u(3)
        top = np.int64((v_hi << sh2) | (v_lo >> sh62))  # signed quadrant fraction * 2**64
        bottom = v_lo << sh2
        # top exactly as (53-bit part + 11-bit part), then add the next 64 bits
        t_hi = ftype(top & np.int64(~0x7FF)) * scale_hi
        t_lo = ftype(np.int64(u(top) & low11)) * scale_hi + ftype(bottom) * scale_lo
        s = t_hi + t_lo
        err = t_lo - (s - t_hi)
        rh = s * p1
        rl = fma(s, p1, -rh) + (s * p2 + err * p1)  # fma: rounding error of s*p1
        return ftype(q), rh + rl

    return reduce_big


def _leading_words64(count: int) -> tuple:
    """The first `count` 64-bit words of the padded 2/pi bit string, as np.uint64."""
    w = TWO_OVER_PI_WORDS
    return tuple(np.uint64((int(w[2 * i]) << 32) | int(w[2 * i + 1])) for i in range(count))
