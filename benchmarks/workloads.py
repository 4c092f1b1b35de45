"""The compiler benchmark's workloads W1-W6: inputs, float64 references, tolerances, limits.

Each `Case` is one timed table: a kernel (the name of the method every peer in
`benchmarks/peers.py` implements for it, e.g. "softmax"), float32 inputs made from a fixed
seed, the float64 NumPy reference its outputs are checked against (`rtol`, `atol`), and the
work it must do: `bytes_moved` (the inputs read once plus the output written once, the least
any implementation can move) and `flops` (matmul only).  `sizes()` gives the default, quick
and test sizes; `build_cases` makes the cases of the chosen workloads.

Machine limits (the project's benchmarking notes, a 2-core AMD EPYC with a 32 MiB L3):
copy bandwidth ~40 GB/s while the data fits the last-level cache, ~25 GB/s beyond (a case
uses the former when its inputs fit: repeated calls find them there), and ~275 GFLOP/s for
OpenBLAS SGEMM.  Both are 2-thread figures.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

WORKLOADS = ("W1", "W2", "W3", "W4", "W6", "W7")
TITLES = {
    "W1": "elementwise chain tanh(x*1.7+0.3)*exp(-x*x)+sqrt(abs(x))",
    "W2": "softmax over the last axis",
    "W3": "layernorm over the last axis, gamma/beta, eps 1e-5",
    "W4": "matmul; relu(A@B + bias)",
    "W6": "call overhead: x*2+1 on a few float32 values",
    "W7": "compile time of W2 (fresh processes: cold and warm cache)",
}
LAYERNORM_EPS = 1e-5
CACHE_BANDWIDTH = 40e9   # bytes/s, working set within the last-level cache
MEMORY_BANDWIDTH = 25e9  # bytes/s, beyond it
SGEMM_FLOPS = 275e9      # float32 FLOP/s


@dataclasses.dataclass(frozen=True)
class Sizes:
    """Problem sizes: W1 element counts, W2/W3 rows x cols, W4 matrix order, W6 elements."""

    elementwise: tuple = (10**4, 10**6, 10**7)
    rows: int = 4096
    cols: int = 1024
    matmul: int = 1024
    overhead: int = 8


DEFAULT = Sizes()
QUICK = Sizes(elementwise=(10**4, 10**6), rows=512, cols=1024, matmul=512)
TINY = Sizes(elementwise=(37,), rows=5, cols=16, matmul=12, overhead=8)


@dataclasses.dataclass
class Case:
    """One timed table: a kernel, its inputs, its float64 reference and its work."""

    workload: str           # "W1".."W6"
    label: str              # what the table header says, sizes included
    kernel: str             # the method name the peers implement
    inputs: tuple           # float32 NumPy arrays
    reference: np.ndarray   # float64
    rtol: float
    atol: float
    bytes_moved: int = 0    # least bytes read + written (0: not bandwidth-bound)
    flops: int = 0          # floating-point operations (0: not compute-bound)

    @property
    def bandwidth_limit(self) -> float:
        """The copy bandwidth (bytes/s) to expect: the cache's while the inputs, read again by
        every call, fit the last-level cache; the memory's beyond it."""
        input_bytes = sum(a.nbytes for a in self.inputs)
        return CACHE_BANDWIDTH if input_bytes <= last_level_cache_bytes() \
            else MEMORY_BANDWIDTH


def last_level_cache_bytes() -> int:
    """Size of this machine's last-level cache (32 MiB when /sys does not say)."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    best = 0
    try:
        for entry in os.listdir(base):
            with open(os.path.join(base, entry, "size")) as f:
                text = f.read().strip()
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            best = max(best, int(text.rstrip("KMG")) * scale)
    except (OSError, ValueError):
        pass
    return best or 32 << 20


# --- float64 references (the same formulas the peers use) ----------------------------------------


def chain_reference(x: np.ndarray) -> np.ndarray:
    """W1's chain on float64."""
    x = x.astype(np.float64)
    return np.tanh(x * 1.7 + 0.3) * np.exp(-x * x) + np.sqrt(np.abs(x))


def softmax_reference(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis on float64."""
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layernorm_reference(x, gamma, beta) -> np.ndarray:
    """(x - mean) / sqrt(var + eps) * gamma + beta over the last axis, on float64."""
    x = x.astype(np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LAYERNORM_EPS) * gamma.astype(np.float64) \
        + beta.astype(np.float64)


def _f32(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


def build_cases(workloads, sizes: Sizes = DEFAULT, seed: int = 0) -> list:
    """The cases of `workloads` (ids among W1-W6; W7 is `compile_time`'s), in a fixed order."""
    rng = np.random.default_rng(seed)
    cases = []
    f4 = 4  # bytes per float32
    if "W1" in workloads:
        for n in sizes.elementwise:
            x = _f32(rng.uniform(-3.0, 3.0, n))
            count = f"10^{len(str(n)) - 1}" if str(n).strip("0") == "1" else str(n)
            cases.append(Case("W1", f"W1 elementwise chain, n={count}", "chain", (x,),
                              chain_reference(x), rtol=2e-5, atol=2e-6,
                              bytes_moved=2 * f4 * n))
    rows, cols = sizes.rows, sizes.cols
    if "W2" in workloads:
        x = _f32(rng.standard_normal((rows, cols)) * 3.0)
        cases.append(Case("W2", f"W2 softmax, {rows}x{cols}", "softmax", (x,),
                          softmax_reference(x), rtol=1e-5, atol=1e-8,
                          bytes_moved=2 * f4 * rows * cols))
    if "W3" in workloads:
        x = _f32(rng.standard_normal((rows, cols)) * 2.0 + 1.5)
        gamma = _f32(rng.uniform(0.5, 1.5, cols))
        beta = _f32(rng.uniform(-0.5, 0.5, cols))
        cases.append(Case("W3", f"W3 layernorm, {rows}x{cols}", "layernorm",
                          (x, gamma, beta), layernorm_reference(x, gamma, beta),
                          rtol=1e-4, atol=1e-5,
                          bytes_moved=f4 * (2 * rows * cols + 2 * cols)))
    if "W4" in workloads:
        n = sizes.matmul
        a = _f32(rng.uniform(-1.0, 1.0, (n, n)))
        b = _f32(rng.uniform(-1.0, 1.0, (n, n)))
        bias = _f32(rng.uniform(-1.0, 1.0, n))
        product = a.astype(np.float64) @ b.astype(np.float64)
        atol = 1e-6 * n  # float32 sums of n products of values in [-1, 1]
        cases.append(Case("W4", f"W4 matmul {n}x{n}", "matmul", (a, b), product,
                          rtol=1e-4, atol=atol, flops=2 * n**3))
        cases.append(Case("W4", f"W4 relu(A@B+bias) {n}x{n}", "matmul_bias_relu",
                          (a, b, bias), np.maximum(product + bias, 0.0), rtol=1e-4,
                          atol=atol, flops=2 * n**3 + 2 * n * n))
    if "W6" in workloads:
        x = _f32(np.linspace(-1.0, 1.0, sizes.overhead))
        cases.append(Case("W6", f"W6 call overhead, x*2+1 on {sizes.overhead} f32",
                          "affine", (x,), x.astype(np.float64) * 2.0 + 1.0,
                          rtol=1e-6, atol=1e-6))
    return cases


def check_output(case: Case, out) -> tuple:
    """(ok, message, worst error as a fraction of the tolerance) of an output for `case`."""
    out = np.asarray(out)
    if out.dtype != np.float32:
        return False, f"dtype {out.dtype}, want float32", float("inf")
    if out.shape != case.reference.shape:
        return False, f"shape {out.shape}, want {case.reference.shape}", float("inf")
    ref = case.reference
    with np.errstate(invalid="ignore"):
        excess = np.abs(out.astype(np.float64) - ref) / (case.atol + case.rtol * np.abs(ref))
    worst = float(np.nanmax(excess, initial=0.0)) if excess.size else 0.0
    if not np.all(np.isfinite(out)) or worst > 1.0:
        return False, f"error {worst:.3g}x tolerance (rtol {case.rtol:g}, atol " \
                      f"{case.atol:g})", worst
    return True, "", worst
