"""The numba peer's kernels: the natural loops a numba user writes for W1, W2, W3 and W6.

Plain Python functions; `benchmarks/peers.py` compiles each twice, with `numba.njit`
(serial: `prange` then acts as `range`) and with `numba.njit(parallel=True)`.  Row sums
accumulate in float64 (`0.0` literals), as such loops usually do; results are stored into
float32 arrays allocated with `np.empty_like`.
"""

from __future__ import annotations

import numpy as np
from numba import prange

C17 = np.float32(1.7)
C03 = np.float32(0.3)
TWO = np.float32(2.0)
ONE = np.float32(1.0)


def chain(x):
    """tanh(x*1.7+0.3)*exp(-x*x)+sqrt(abs(x)) over a 1-D float32 array."""
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        v = x[i]
        out[i] = np.tanh(v * C17 + C03) * np.exp(-v * v) + np.sqrt(np.abs(v))
    return out


def softmax(x):
    """Softmax over the last axis of a 2-D float32 array, one row at a time."""
    out = np.empty_like(x)
    n = x.shape[1]
    for i in prange(x.shape[0]):
        m = x[i, 0]
        for j in range(1, n):
            m = max(m, x[i, j])
        s = 0.0
        for j in range(n):
            e = np.exp(x[i, j] - m)
            out[i, j] = e
            s += e
        inv = 1.0 / s
        for j in range(n):
            out[i, j] = out[i, j] * inv
    return out


def layernorm(x, gamma, beta, eps):
    """(x - mean) / sqrt(var + eps) * gamma + beta over the last axis of a 2-D array."""
    out = np.empty_like(x)
    n = x.shape[1]
    for i in prange(x.shape[0]):
        s = 0.0
        for j in range(n):
            s += x[i, j]
        mean = s / n
        v = 0.0
        for j in range(n):
            d = x[i, j] - mean
            v += d * d
        inv = 1.0 / np.sqrt(v / n + eps)
        for j in range(n):
            out[i, j] = (x[i, j] - mean) * inv * gamma[j] + beta[j]
    return out


def affine(x):
    """x * 2 + 1 as a NumPy array expression."""
    return x * TWO + ONE
