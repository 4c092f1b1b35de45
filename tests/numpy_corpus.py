"""A corpus of ordinary NumPy kernels: the code `flowjit.jit` must compile unchanged.

Owns `CORPUS`, a list of `Kernel` records (function, argument factory for a "small" test size
and a "bench" size, the arguments it mutates, tolerances, static arguments, whether numba
compiles the same source).  Each kernel is written the way people write NumPy: slicing,
in-place slice updates in time loops, broadcasting, reductions with `axis`/`keepdims`,
methods (`.sum()`, `.T`, `.reshape`, `.astype`, `.copy()`), Python loops over static
`range`s (also element by element, each iteration reading the last), a `while` loop with
a data-dependent exit, and `x.shape[0]` used as a Python integer.  The kernels import
nothing but NumPy.

Used by `tests/test_numpy_corpus_bench.py` (flowjit against NumPy, results and mutated
arguments) and `benchmarks/numpy_corpus.py` (NumPy, flowjit.jit, numba.njit and pythran
timed).
Checked under plain NumPy and `numba.njit` by running this module:
`python tests/numpy_corpus.py`.

Sizes: "small" arguments are tiny and odd (7x11, ...) so the tests run fast; "bench"
arguments take about 0.5-20 ms per NumPy call.  The loop kernels (a carried dependence:
triangular solves, factorisations, Gauss-Seidel, recurrences, dynamic programming, a
`while` loop until convergence) have smaller "small" sizes still (4x5 for Gauss-Seidel and
the ADI sweep): flowjit unrolls Python loops while tracing, so every iteration adds ops to
compile.  Argument shapes depend only on the size, never on the random generator, so two
calls with new random values hit the same compiled signature.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Callable

import numpy as np

# --- stencils with slice updates in time loops ---------------------------------------------


def jacobi2d(u, steps):
    """Jacobi sweeps of the 2-D Laplace equation, in place on `u` (its border stays fixed)."""
    for _ in range(steps):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])


def heat2d_roll(u, alpha, steps):
    """Explicit heat equation on a periodic grid with `np.roll`; returns the new field."""
    for _ in range(steps):
        lap = (np.roll(u, 1, axis=0) + np.roll(u, -1, axis=0)
               + np.roll(u, 1, axis=1) + np.roll(u, -1, axis=1) - 4 * u)
        u = u + alpha * lap
    return u


def wave1d(u, u_prev, c2, steps):
    """1-D wave equation, leapfrog in time with two ping-pong buffers (both mutated)."""
    for _ in range(steps):
        u_prev[1:-1] = (2 * u[1:-1] - u_prev[1:-1]
                        + c2 * (u[2:] - 2 * u[1:-1] + u[:-2]))
        u, u_prev = u_prev, u


def life_float(grid, steps):
    """Game of life on a 0/1 float grid (zero outside), `steps` generations, in place."""
    for _ in range(steps):
        n = np.zeros_like(grid)
        n[1:, :] += grid[:-1, :]
        n[:-1, :] += grid[1:, :]
        n[:, 1:] += grid[:, :-1]
        n[:, :-1] += grid[:, 1:]
        n[1:, 1:] += grid[:-1, :-1]
        n[1:, :-1] += grid[:-1, 1:]
        n[:-1, 1:] += grid[1:, :-1]
        n[:-1, :-1] += grid[1:, 1:]
        born = (n == 3).astype(grid.dtype)
        survive = grid * (n == 2)
        grid[:, :] = np.maximum(born, survive)
    return grid.sum()


# --- linear algebra -------------------------------------------------------------------------


def power_iteration(a, x, iters):
    """Power iteration with matrix-vector products: (unit eigenvector, Rayleigh quotient)."""
    for _ in range(iters):
        y = a @ x
        x = y / np.sqrt(np.sum(y * y))
    return x, x @ (a @ x)


def syrk_update(c, a, alpha):
    """Rank-k update `C += alpha A A^T`, in place on `c`."""
    c += alpha * (a @ a.T)


def symm_from_lower(a, b):
    """Symmetric matrix from the lower triangle of `a` (`np.tril`/`np.triu`), times `b`."""
    s = np.tril(a) + np.tril(a, -1).T
    upper = np.triu(a, 1)
    return s @ b - upper.sum(axis=0)[:, None] * b


def gram_schmidt(v):
    """Modified Gram-Schmidt on the rows of `v` (few rows, many columns): orthonormal rows."""
    q = v.copy()
    k = q.shape[0]
    for i in range(k):
        for j in range(i):
            q[i] -= (q[j] @ q[i]) * q[j]
        q[i] /= np.sqrt(q[i] @ q[i])
    return q


def outer_rank2(a, u, v):
    """Symmetric rank-2 update with `np.outer`, and the row sums of the result."""
    b = a + np.outer(u, v) + np.outer(v, u)
    return b, b.sum(axis=1)


def sparse_update(table, ids, grads, lr):
    """Embedding-table SGD step `table[ids] -= lr * grads` (ids unique), in place."""
    table[ids] -= lr * grads


# --- physics --------------------------------------------------------------------------------


def nbody_forces(pos, mass, eps):
    """Softened gravitational accelerations of every body: pairwise differences by
    broadcasting, inverse cube, sum over the other bodies."""
    d = pos[None, :, :] - pos[:, None, :]
    r2 = (d ** 2).sum(axis=-1) + eps * eps
    inv3 = r2 ** -1.5
    return (d * (mass[None, :] * inv3)[:, :, None]).sum(axis=1)


def leapfrog_nbody(pos, vel, mass, dt, steps):
    """Kick-drift leapfrog of a softened n-body system, in place on `pos` and `vel`."""
    n = pos.shape[0]
    for _ in range(steps):
        d = pos.reshape(1, n, 3) - pos.reshape(n, 1, 3)
        r2 = np.sum(d * d, axis=2) + 0.01
        w = mass.reshape(1, n) / (r2 * np.sqrt(r2))
        acc = np.sum(d * w.reshape(n, n, 1), axis=1)
        vel += dt * acc
        pos += dt * vel
    return 0.5 * np.sum(mass * np.sum(vel * vel, axis=1))


def grad_laplacian(f, h):
    """Central-difference gradient components and 5-point Laplacian on the interior."""
    gx = (f[1:-1, 2:] - f[1:-1, :-2]) / (2 * h)
    gy = (f[2:, 1:-1] - f[:-2, 1:-1]) / (2 * h)
    lap = (f[2:, 1:-1] + f[:-2, 1:-1] + f[1:-1, 2:] + f[1:-1, :-2]
           - 4 * f[1:-1, 1:-1]) / (h * h)
    return gx, gy, lap


# --- statistics -----------------------------------------------------------------------------


def covariance(x):
    """Sample covariance of the columns of `x` (rows are observations)."""
    xc = x - x.mean(axis=0)
    return xc.T @ xc / (x.shape[0] - 1)


def correlation(x):
    """Pearson correlation of the columns of `x` with `np.mean` and `np.std(ddof=1)`."""
    m = np.mean(x, axis=0, keepdims=True)
    s = np.std(x, axis=0, ddof=1, keepdims=True)
    z = (x - m) / s
    return (z.T @ z) / (x.shape[0] - 1)


def robust_scale(x):
    """Centre the columns on their median and scale by the interquartile range."""
    med = np.median(x, axis=0)
    q1, q3 = np.percentile(x, [25, 75], axis=0)
    return (x - med) / (q3 - q1)


def ridge_regression(x, y, lam):
    """Ridge least squares through the normal equations: solve (X^T X + lam I) w = X^T y."""
    g = x.T @ x + lam * np.eye(x.shape[1])
    return np.linalg.solve(g, x.T @ y)


def zscore_inplace(x):
    """Z-score normalise the rows of `x` in place (`np.var`, `ddof=0`), clipped to +-3."""
    x -= x.mean(axis=-1, keepdims=True)
    x /= np.sqrt(np.var(x, axis=-1, keepdims=True) + 1e-6)
    x[:] = np.clip(x, -3, 3)


def minmax_scale(x):
    """Min-max scale each column to [0, 1]; also the row of each column's maximum and the
    largest value overall."""
    lo = np.min(x, axis=0)
    hi = np.max(x, axis=0)
    scaled = (x - lo) / (hi - lo)
    return scaled, np.argmax(x, axis=0), x.max()


def masked_stats(x, thresh):
    """Values above `thresh` (NaN elsewhere), their count per row, and the per-row mean
    of the rest with `np.where`."""
    keep = x > thresh
    masked = np.where(keep, x, np.nan)
    count = keep.sum(axis=1)
    rest = np.where(keep, 0.0, x).sum(axis=1) / (x.shape[1] - count + 1)
    return masked, count, rest


# --- image filters --------------------------------------------------------------------------


def box_blur3(img):
    """3x3 box blur of an edge-padded image (`np.pad`), as nine shifted slices."""
    h, w = img.shape
    p = np.pad(img, 1, mode="edge")
    out = np.zeros_like(img)
    for dy in range(3):
        for dx in range(3):
            out += p[dy:dy + h, dx:dx + w]
    return out / 9


def sobel(img):
    """Sobel gradient magnitude of the interior, from shifted slices."""
    gx = (img[:-2, 2:] + 2 * img[1:-1, 2:] + img[2:, 2:]
          - img[:-2, :-2] - 2 * img[1:-1, :-2] - img[2:, :-2])
    gy = (img[2:, :-2] + 2 * img[2:, 1:-1] + img[2:, 2:]
          - img[:-2, :-2] - 2 * img[:-2, 1:-1] - img[:-2, 2:])
    return np.sqrt(gx * gx + gy * gy)


def gaussian_blur_sep(img):
    """Separable 5-tap binomial blur ("valid" region): rows then columns, static loop."""
    k = np.array([1.0, 4.0, 6.0, 4.0, 1.0], dtype=img.dtype) / 16
    h, w = img.shape
    tmp = np.zeros((h, w - 4), dtype=img.dtype)
    for i in range(5):
        tmp += k[i] * img[:, i:i + w - 4]
    out = np.zeros((h - 4, w - 4), dtype=img.dtype)
    for i in range(5):
        out += k[i] * tmp[i:i + h - 4, :]
    return out


def avg_pool4(img):
    """4x4 average pooling through `.reshape` and a mean over two axes."""
    h, w = img.shape
    return img.reshape(h // 4, 4, w // 4, 4).mean(axis=(1, 3))


# --- batched contractions and complex arithmetic -------------------------------------------


def batched_matmul(a, b):
    """A batch of matrix products whose batch dims broadcast: (1, m, k) @ (batch, k, n)."""
    return a @ b


def contractions(a, b, w):
    """A batched contraction by einsum ('bij,bjk->bik') plus a tensordot with a shared matrix
    (contracting a's last axis with w's first)."""
    return np.einsum("bij,bjk->bik", a, b) + np.tensordot(a, w, axes=([2], [0]))


def fft_butterflies(x, tw1, tw2, tw3):
    """Three radix-2 decimation-in-frequency stages on complex rows: split each block in
    halves, twiddle the second half, then sum and difference (reshape-heavy complex code)."""
    n = x.shape[-1]
    y = x
    for tw, size in ((tw1, n), (tw2, n // 2), (tw3, n // 4)):
        y = y.reshape(-1, 2, size // 2)
        top, bottom = y[:, 0], y[:, 1] * tw
        y = np.concatenate((top + bottom, top - bottom), axis=-1)
    return y.reshape(x.shape)


def matmul_chain(a, b, c, d):
    """A chain of square matrix products, left to right."""
    return a @ b @ c @ d


# --- small neural-network layers ------------------------------------------------------------


def softmax(x):
    """Softmax over the last axis, max-subtracted."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def mlp(x, w1, b1, w2, b2):
    """Two-layer perceptron: tanh hidden layer, ReLU output (`np.maximum(x, 0)`)."""
    h = np.tanh(x @ w1 + b1)
    return np.maximum(h @ w2 + b2, 0)


def mlp_softmax(x, w1, b1, w2, b2):
    """Two-layer perceptron with a ReLU hidden layer and softmax class probabilities."""
    h = np.maximum(x @ w1 + b1, 0)
    z = h @ w2 + b2
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layernorm(x, gamma, beta, eps):
    """Layer normalisation over the last axis."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def conv1d(x, w):
    """'Valid' 1-D correlation of each row of `x` with `w`: a loop over kernel offsets."""
    n = x.shape[1]
    k = w.shape[0]
    out = np.zeros((x.shape[0], n - k + 1), dtype=x.dtype)
    for i in range(k):
        out += w[i] * x[:, i:i + n - k + 1]
    return out


def conv2d_relu(img, kern, bias):
    """'Valid' 2-D correlation by accumulating shifted slices, plus bias and ReLU."""
    kh, kw = kern.shape
    h = img.shape[0] - kh + 1
    w = img.shape[1] - kw + 1
    out = np.zeros((h, w), dtype=img.dtype)
    for dy in range(kh):
        for dx in range(kw):
            out += kern[dy, dx] * img[dy:dy + h, dx:dx + w]
    return np.maximum(out + bias, 0)


def logsumexp(x):
    """Row-wise log-sum-exp, stabilised by the row maximum."""
    m = np.max(x, axis=1)
    return m + np.log(np.sum(np.exp(x - m[:, None]), axis=1))


def cross_entropy(logits, labels):
    """Mean cross-entropy of integer `labels` under softmax(`logits`) (fancy indexing)."""
    n = logits.shape[0]
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(n), labels].mean()


# --- loops with a carried dependence (sequential in the loop variable) ---------------------


def forward_subst(L, b):
    """Forward substitution: solve `L x = b` for lower-triangular `L`, row by row."""
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def cholesky(a):
    """Cholesky factor `L` (lower, `a = L L^T`) of a symmetric positive-definite matrix,
    column by column with slices."""
    n = a.shape[0]
    L = np.zeros_like(a)
    for j in range(n):
        L[j, j] = np.sqrt(a[j, j] - L[j, :j] @ L[j, :j])
        L[j + 1:, j] = (a[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return L


def lu_inplace(a):
    """LU factorisation without pivoting, in place: `a` becomes L (unit diagonal, below)
    and U (on and above the diagonal) by rank-1 updates of the trailing block."""
    n = a.shape[0]
    for k in range(n - 1):
        a[k + 1:, k] /= a[k, k]
        a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])


def gauss_seidel(u, f, h2, sweeps):
    """Gauss-Seidel sweeps of the 2-D Poisson equation, point by point in place on `u`
    (its border stays fixed): each update reads the neighbours already updated."""
    n, m = u.shape
    for _ in range(sweeps):
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                u[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
                                  - h2 * f[i, j])


def linear_recurrence(x, a):
    """First-order linear recurrence (an IIR filter): `y[i] = a * y[i-1] + x[i]`."""
    y = np.empty_like(x)
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        y[i] = a * y[i - 1] + x[i]
    return y


def adi_sweep(u, alpha):
    """One ADI-style implicit diffusion step: the tridiagonal systems
    `(1 + 2 alpha) v[j] - alpha (v[j-1] + v[j+1]) = u[j]` solved along every row, then along
    every column, by the Thomas algorithm (forward elimination, back substitution),
    vectorised over the other axis."""
    n, m = u.shape
    b = 1.0 + 2.0 * alpha
    # rows: the recurrences run along axis 1
    c = np.empty(m, dtype=u.dtype)
    d = np.empty_like(u)
    c[0] = -alpha / b
    d[:, 0] = u[:, 0] / b
    for j in range(1, m):
        den = b + alpha * c[j - 1]
        c[j] = -alpha / den
        d[:, j] = (u[:, j] + alpha * d[:, j - 1]) / den
    v = np.empty_like(u)
    v[:, m - 1] = d[:, m - 1]
    for j in range(m - 2, -1, -1):
        v[:, j] = d[:, j] - c[j] * v[:, j + 1]
    # columns: the recurrences run along axis 0
    c = np.empty(n, dtype=u.dtype)
    c[0] = -alpha / b
    d[0, :] = v[0, :] / b
    for i in range(1, n):
        den = b + alpha * c[i - 1]
        c[i] = -alpha / den
        d[i, :] = (v[i, :] + alpha * d[i - 1, :]) / den
    w = np.empty_like(u)
    w[n - 1, :] = d[n - 1, :]
    for i in range(n - 2, -1, -1):
        w[i, :] = d[i, :] - c[i] * w[i + 1, :]
    return w


def edit_distance(s, t):
    """Levenshtein distance table of two integer sequences (dynamic programming, cell by
    cell): `d[i, j]` is the distance between `s[:i]` and `t[:j]`."""
    n = s.shape[0]
    m = t.shape[0]
    d = np.zeros((n + 1, m + 1), dtype=np.int64)
    d[:, 0] = np.arange(n + 1)
    d[0, :] = np.arange(m + 1)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            sub = d[i - 1, j - 1] + (s[i - 1] != t[j - 1])
            d[i, j] = min(d[i - 1, j] + 1, d[i, j - 1] + 1, sub)
    return d


def kepler_newton(mean_anomaly, ecc, tol, max_iter):
    """Kepler's equation `E - e sin E = M` for every `M`, by Newton iteration until the
    largest step is below `tol` (at most `max_iter` steps): (E, the steps taken)."""
    e_anom = mean_anomaly.copy()
    steps = 0
    delta = tol + 1.0
    while delta > tol and steps < max_iter:
        step = (e_anom - ecc * np.sin(e_anom) - mean_anomaly) / (1.0 - ecc * np.cos(e_anom))
        e_anom = e_anom - step
        delta = np.abs(step).max()
        steps += 1
    return e_anom, steps


# --- the records ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Kernel:
    """One corpus kernel and how to call and check it.

    `make_args(rng, size)` returns a tuple of fresh arguments for size "small" or "bench";
    `mutates` lists the indices of the arguments the kernel changes in place; `fresh` says
    the benchmark must give every call fresh copies (repeating the mutation changes the
    workload); `numba_ok` is False when `numba.njit` cannot compile the unchanged source
    (`numba_note` says why).
    """

    name: str
    fn: Callable
    make_args: Callable
    mutates: tuple = ()
    static_argnames: tuple = ()
    rtol32: float = 1e-4
    atol32: float = 1e-5
    rtol64: float = 1e-9
    atol64: float = 1e-11
    fresh: bool = False
    numba_ok: bool = True
    numba_note: str = ""

    def tolerance(self, dtype) -> tuple:
        """(rtol, atol) for comparing values of `dtype` (exact for integers and bools)."""
        dtype = np.dtype(dtype)
        if dtype.kind not in "fc":
            return 0.0, 0.0
        if dtype.itemsize <= 4 or dtype == np.complex64:
            return self.rtol32, self.atol32
        return self.rtol64, self.atol64


def _pick(size: str, small, bench):
    if size not in ("small", "bench"):
        raise ValueError(f"size must be 'small' or 'bench', not {size!r}")
    return small if size == "small" else bench


def _f32(a):
    return a.astype(np.float32)


def _jacobi_args(rng, size):
    n, m, steps = _pick(size, (7, 11, 5), (512, 512, 20))
    u = rng.random((n, m))
    u[0, :] = 1.0  # a hot edge keeps the field away from zero (and denormals) when repeated
    return u, steps


def _heat_args(rng, size):
    n, m, steps = _pick(size, (9, 13, 4), (256, 256, 10))
    return _f32(rng.random((n, m))), 0.2, steps


def _wave_args(rng, size):
    n, steps = _pick(size, (17, 6), (60_000, 20))
    x = np.linspace(0.0, 1.0, n)
    u = np.sin(np.pi * x) + 0.01 * rng.standard_normal(n)
    u[0] = u[-1] = 0.0
    return u, u * 0.999, 0.25, steps


def _life_args(rng, size):
    n, m, steps = _pick(size, (9, 12, 4), (256, 256, 8))
    return (rng.random((n, m)) < 0.35).astype(np.float64), steps


def _power_args(rng, size):
    n, iters = _pick(size, (11, 6), (1000, 20))
    a = rng.standard_normal((n, n))
    return a @ a.T / n, rng.standard_normal(n), iters


def _syrk_args(rng, size):
    n, k = _pick(size, (7, 5), (600, 300))
    return _f32(rng.standard_normal((n, n))), _f32(rng.standard_normal((n, k))), 0.5


def _symm_args(rng, size):
    n, m = _pick(size, (9, 4), (600, 64))
    return rng.standard_normal((n, n)), rng.standard_normal((n, m))


def _gram_args(rng, size):
    k, n = _pick(size, (4, 13), (8, 100_000))
    return (rng.standard_normal((k, n)),)


def _outer_args(rng, size):
    n, m = _pick(size, (7, 7), (1500, 1500))
    return (_f32(rng.standard_normal((n, m))), _f32(rng.standard_normal(n)),
            _f32(rng.standard_normal(m)))


def _sparse_args(rng, size):
    rows, dim, batch = _pick(size, (13, 5, 6), (100_000, 64, 8192))
    ids = rng.permutation(rows)[:batch]  # unique: with duplicates `a[i] -= v` keeps one
    return (_f32(rng.standard_normal((rows, dim))), ids,
            _f32(rng.standard_normal((batch, dim))), 0.1)


def _nbody_args(rng, size):
    n = _pick(size, 7, 300)
    return rng.standard_normal((n, 3)), rng.random(n) + 0.5, 0.1


def _leapfrog_args(rng, size):
    n, steps = _pick(size, (6, 3), (160, 6))
    return (rng.standard_normal((n, 3)), 0.1 * rng.standard_normal((n, 3)),
            rng.random(n) / n, 0.01, steps)


def _grad_args(rng, size):
    n, m = _pick(size, (7, 11), (1024, 1024))
    return _f32(rng.standard_normal((n, m))), 0.5


def _obs_args(dtype):
    def make(rng, size):
        n, m = _pick(size, (13, 5), (20_000, 64))
        x = rng.standard_normal((n, m)) * rng.random(m) * 3 + rng.standard_normal(m)
        return (x.astype(dtype),)
    return make


def _ridge_args(rng, size):
    n, m = _pick(size, (17, 5), (20_000, 64))
    x = rng.standard_normal((n, m))
    return x, x @ rng.standard_normal(m) + 0.1 * rng.standard_normal(n), 0.5


def _rows_args(dtype, small, bench, scale=1.0):
    def make(rng, size):
        return ((rng.standard_normal(_pick(size, small, bench)) * scale).astype(dtype),)
    return make


def _masked_args(rng, size):
    return rng.standard_normal(_pick(size, (7, 11), (1000, 1000))), 0.5


def _img_args(dtype, small, bench):
    def make(rng, size):
        return (rng.random(_pick(size, small, bench)).astype(dtype),)
    return make


def _mlp_args(rng, size):
    b, d, h, o = _pick(size, (5, 7, 9, 3), (512, 512, 512, 256))
    return (_f32(rng.standard_normal((b, d))), _f32(rng.standard_normal((d, h)) / np.sqrt(d)),
            _f32(rng.standard_normal(h)), _f32(rng.standard_normal((h, o)) / np.sqrt(h)),
            _f32(rng.standard_normal(o)))


def _mlp_softmax_args(rng, size):
    b, d, h, o = _pick(size, (5, 7, 9, 3), (2048, 64, 128, 10))
    return (_f32(rng.standard_normal((b, d))), _f32(rng.standard_normal((d, h)) / np.sqrt(d)),
            _f32(rng.standard_normal(h)), _f32(rng.standard_normal((h, o)) / np.sqrt(h)),
            _f32(rng.standard_normal(o)))


def _bmm_args(rng, size):
    batch, m, k, n = _pick(size, (3, 5, 7, 4), (64, 128, 64, 96))
    return _f32(rng.standard_normal((1, m, k))), _f32(rng.standard_normal((batch, k, n)))


def _contraction_args(rng, size):
    batch, i, j, k = _pick(size, (3, 5, 7, 4), (64, 64, 32, 48))
    return (rng.standard_normal((batch, i, j)), rng.standard_normal((batch, j, k)),
            rng.standard_normal((j, k)))


def _fft_args(rng, size):
    rows, n = _pick(size, (3, 16), (256, 1024))
    x = rng.standard_normal((rows, n)) + 1j * rng.standard_normal((rows, n))
    return (x,) + tuple(np.exp(-2j * np.pi * np.arange(n // m) / (n // m * 2))
                        for m in (2, 4, 8))


def _chain_args(rng, size):
    n = _pick(size, 9, 128)
    return tuple(rng.standard_normal((n, n)) / np.sqrt(n) for _ in range(4))


def _layernorm_args(rng, size):
    b, d = _pick(size, (5, 11), (4096, 768))
    return (_f32(rng.standard_normal((b, d)) * 2 + 1), _f32(rng.random(d) + 0.5),
            _f32(rng.standard_normal(d)), 1e-5)


def _conv1d_args(rng, size):
    b, n, k = _pick(size, (3, 17, 5), (64, 8192, 9))
    return rng.standard_normal((b, n)), rng.standard_normal(k)


def _conv2d_args(rng, size):
    n, m, k = _pick(size, (9, 12, 3), (512, 512, 5))
    return _f32(rng.standard_normal((n, m))), _f32(rng.standard_normal((k, k))), 0.1


def _xent_args(rng, size):
    n, c = _pick(size, (7, 5), (4096, 1000))
    return _f32(rng.standard_normal((n, c)) * 3), rng.integers(0, c, n)


def _lower_args(rng, size):
    n = _pick(size, 9, 1000)
    # unit lower triangle plus a dominant diagonal: well conditioned at any size
    L = np.tril(rng.standard_normal((n, n)) / np.sqrt(n), -1) + np.diag(1.0 + rng.random(n))
    return L, rng.standard_normal(n)


def _spd_args(rng, size):
    n = _pick(size, 7, 200)
    a = rng.standard_normal((n, n))
    return (a @ a.T / n + np.eye(n),)


def _lu_args(rng, size):
    n = _pick(size, 9, 150)
    # diagonally dominant: stable without pivoting
    return (rng.standard_normal((n, n)) + n * np.eye(n),)


def _gauss_seidel_args(rng, size):
    n, m, sweeps = _pick(size, (4, 5, 2), (40, 50, 1))
    u = rng.random((n, m))
    u[0, :] = 1.0
    return u, rng.standard_normal((n, m)), 1.0 / (n * m), sweeps


def _recurrence_args(rng, size):
    return rng.standard_normal(_pick(size, 17, 10_000)), 0.9


def _adi_args(rng, size):
    n, m = _pick(size, (4, 5), (200, 200))
    return rng.random((n, m)), 0.5


def _edit_args(rng, size):
    n, m = _pick(size, (7, 9), (40, 50))
    return rng.integers(0, 4, n), rng.integers(0, 4, m)


def _kepler_args(rng, size):
    n = _pick(size, 13, 20_000)
    return rng.random(n) * 2 * np.pi, 0.7, 1e-12, 50


# numba 0.68 reduces whole arrays only: its mean/std/var/min/max (functions and methods)
# accept no axis (nor keepdims) argument
_NO_AXIS = "numba's mean/std/var take no axis argument"
_NO_MINMAX_AXIS = "numba's min/max take no axis argument"
_NO_BATCHED_MATMUL = "numba's matmul takes 1-D and 2-D arrays only"

CORPUS = [
    Kernel("jacobi2d", jacobi2d, _jacobi_args, mutates=(0,), static_argnames=("steps",)),
    Kernel("heat2d_roll", heat2d_roll, _heat_args, static_argnames=("steps",),
           numba_ok=False, numba_note="numba's np.roll takes no axis argument"),
    Kernel("wave1d", wave1d, _wave_args, mutates=(0, 1), static_argnames=("steps",),
           rtol64=1e-8, atol64=1e-10),
    Kernel("life_float", life_float, _life_args, mutates=(0,), static_argnames=("steps",),
           fresh=True),  # repeated, the population dies out or freezes
    Kernel("power_iteration", power_iteration, _power_args, static_argnames=("iters",),
           rtol64=1e-8, atol64=1e-10),
    Kernel("syrk_update", syrk_update, _syrk_args, mutates=(0,), rtol32=1e-4, atol32=1e-4),
    Kernel("symm_from_lower", symm_from_lower, _symm_args, atol64=1e-10),
    Kernel("gram_schmidt", gram_schmidt, _gram_args, atol64=1e-12),
    Kernel("outer_rank2", outer_rank2, _outer_args, atol32=1e-4),
    Kernel("sparse_update", sparse_update, _sparse_args, mutates=(0,)),
    Kernel("batched_matmul", batched_matmul, _bmm_args, rtol32=1e-4, atol32=1e-4,
           numba_ok=False, numba_note=_NO_BATCHED_MATMUL),
    Kernel("contractions", contractions, _contraction_args, atol64=1e-10,
           numba_ok=False, numba_note="numba has no np.einsum or np.tensordot"),
    Kernel("fft_butterflies", fft_butterflies, _fft_args, atol64=1e-10),
    Kernel("matmul_chain", matmul_chain, _chain_args, atol64=1e-10),
    Kernel("nbody_forces", nbody_forces, _nbody_args, rtol64=1e-8, atol64=1e-9),
    Kernel("leapfrog_nbody", leapfrog_nbody, _leapfrog_args, mutates=(0, 1),
           static_argnames=("steps",), rtol64=1e-8, atol64=1e-10,
           fresh=True),  # repeated, close encounters change the orbits without bound
    Kernel("grad_laplacian", grad_laplacian, _grad_args, atol32=1e-4),
    Kernel("covariance", covariance, _obs_args(np.float64), atol64=1e-10,
           numba_ok=False, numba_note=_NO_AXIS),
    Kernel("correlation", correlation, _obs_args(np.float32), rtol32=1e-3, atol32=1e-4,
           numba_ok=False, numba_note=_NO_AXIS),
    Kernel("robust_scale", robust_scale, _rows_args(np.float64, (9, 6), (2000, 500)),
           numba_ok=False, numba_note="numba's median/percentile take no axis argument"),
    Kernel("ridge_regression", ridge_regression, _ridge_args, rtol64=1e-8, atol64=1e-10),
    Kernel("zscore_inplace", zscore_inplace, _rows_args(np.float32, (9, 13), (2000, 1000), 4),
           mutates=(0,), rtol32=1e-4, atol32=1e-4,
           numba_ok=False, numba_note=_NO_AXIS),
    Kernel("minmax_scale", minmax_scale, _rows_args(np.float64, (7, 11), (2000, 1000)),
           numba_ok=False, numba_note=_NO_MINMAX_AXIS),
    Kernel("masked_stats", masked_stats, _masked_args),
    Kernel("box_blur3", box_blur3, _img_args(np.float32, (7, 11), (1024, 1024)),
           numba_ok=False, numba_note="numba has no np.pad"),
    Kernel("sobel", sobel, _img_args(np.float64, (7, 11), (1024, 1024))),
    Kernel("gaussian_blur_sep", gaussian_blur_sep,
           _img_args(np.float32, (9, 13), (1024, 1024))),
    Kernel("avg_pool4", avg_pool4, _img_args(np.float64, (8, 12), (2048, 2048)),
           numba_ok=False, numba_note=_NO_AXIS),
    Kernel("softmax", softmax, _rows_args(np.float32, (5, 11), (2048, 1000), 3),
           numba_ok=False, numba_note=_NO_MINMAX_AXIS),
    Kernel("mlp", mlp, _mlp_args, rtol32=1e-4, atol32=1e-4),
    Kernel("mlp_softmax", mlp_softmax, _mlp_softmax_args, rtol32=1e-4, atol32=1e-5,
           numba_ok=False, numba_note=_NO_MINMAX_AXIS),
    Kernel("layernorm", layernorm, _layernorm_args, rtol32=1e-4, atol32=1e-4,
           numba_ok=False, numba_note=_NO_AXIS),
    Kernel("conv1d", conv1d, _conv1d_args),
    Kernel("conv2d_relu", conv2d_relu, _conv2d_args, atol32=1e-4),
    Kernel("logsumexp", logsumexp, _rows_args(np.float64, (7, 11), (2000, 1000), 3),
           numba_ok=False, numba_note=_NO_MINMAX_AXIS),
    Kernel("cross_entropy", cross_entropy, _xent_args, numba_ok=False,
           numba_note=_NO_MINMAX_AXIS),
    Kernel("forward_subst", forward_subst, _lower_args, rtol64=1e-8, atol64=1e-10),
    Kernel("cholesky", cholesky, _spd_args, rtol64=1e-8, atol64=1e-10),
    Kernel("lu_inplace", lu_inplace, _lu_args, mutates=(0,), rtol64=1e-8, atol64=1e-10,
           fresh=True),  # repeated, it factors its own factors (values grow without bound)
    Kernel("gauss_seidel", gauss_seidel, _gauss_seidel_args, mutates=(0,),
           static_argnames=("sweeps",)),
    Kernel("linear_recurrence", linear_recurrence, _recurrence_args),
    Kernel("adi_sweep", adi_sweep, _adi_args),
    Kernel("edit_distance", edit_distance, _edit_args),
    Kernel("kepler_newton", kepler_newton, _kepler_args, static_argnames=("max_iter",)),
]

BY_NAME = {k.name: k for k in CORPUS}


def copy_args(args: tuple) -> tuple:
    """Fresh copies of the arrays in `args` (scalars are passed through)."""
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _self_check(numba_too: bool = True) -> int:
    """Run every kernel on both sizes under NumPy (and its small size under numba.njit,
    comparing with NumPy); print one line each; return the number of surprises."""
    import time
    surprises = 0
    for k in CORPUS:
        line = f"{k.name:<18}"
        for size in ("small", "bench"):
            args = k.make_args(np.random.default_rng(0), size)
            t0 = time.perf_counter()
            k.fn(*args)
            line += f" {size} {1e3 * (time.perf_counter() - t0):8.3f} ms"
        if numba_too:
            import numba
            try:
                args = k.make_args(np.random.default_rng(1), "small")
                ref_args, nb_args = copy_args(args), copy_args(args)
                ref, got = k.fn(*ref_args), numba.njit(k.fn)(*nb_args)
                ok = all(g is r is None or np.allclose(g, r, equal_nan=True)
                         for g, r in zip(_leaves(got), _leaves(ref)))
                ok = ok and all(np.allclose(nb_args[i], ref_args[i]) for i in k.mutates)
                line += f"  numba {'ok' if ok else 'WRONG'}"
                surprises += (not ok) + (not k.numba_ok)
            except Exception as exc:  # noqa: BLE001 - reported
                line += f"  numba fails: {type(exc).__name__}: {_first_line(exc)}"
                surprises += k.numba_ok
        print(line)
    return surprises


def _first_line(exc: BaseException) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    lines = [ln for ln in text.splitlines() if ln.strip() and "Failed in" not in ln
             and "Resolution failure" not in ln]
    return lines[0][:110] if lines else ""


def _leaves(value) -> list:
    return [v for item in value for v in _leaves(item)] if isinstance(value, tuple) \
        else [value]


if __name__ == "__main__":
    raise SystemExit(min(_self_check(), 1))
