"""Tiling benchmark: loop nests blocked by the data they touch (compiler/loop_tile.py).

Cases, float32 by default, against NumPy:
- T1 transpose-add `a + a.T` of a 4096x4096 matrix: the transposed read walks a whole row
  per element unless the nest is tiled;
- T2 column reduction `a.sum(axis=0)` of 4096x4096 (the CPU target's column nests, blocked
  by columns: targets/cpu/reduce_nests.py);
- T3 broadcast outer product `x[:, None] * y[None, :]` (4096 x 4096 output).

Each case is checked against NumPy first, then timed (median of `--repeats` calls after a
warm-up); the table gives milliseconds and the ratio to NumPy (below 1 is faster), and the
tiles the compiler chose (from the "loop IR" stage).

Run: `python -m flowjit.benchmarks.tiling [--n 4096] [--repeats 7] [--dtype float32]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from ..progress import progress


def _cases():
    return {
        "T1 transpose-add a + a.T": (lambda a, x, y: a + a.T, "a"),
        "T2 column sum a.sum(axis=0)": (lambda a, x, y: a.sum(axis=0), "a"),
        "T3 outer product x[:, None] * y": (lambda a, x, y: x[:, None] * y[None, :], "xy"),
    }


def _time(fn, args, repeats: int) -> float:
    fn(*args)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None) -> list:
    """Run the cases; print and return rows (case, numpy ms, flowjit ms, ratio, tiles)."""
    import flowjit

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--dtype", default="float32")
    opts = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((opts.n, opts.n)).astype(opts.dtype)
    x = rng.standard_normal(opts.n).astype(opts.dtype)
    y = rng.standard_normal(opts.n).astype(opts.dtype)
    rows = []
    print(f"{'case':34} {'numpy ms':>9} {'flowjit ms':>10} {'ratio':>6}  tiles")
    bar = progress(_cases().items(), desc="tiling", unit="case")
    for name, (fn, _) in bar:
        jitted = flowjit.jit(fn)
        want = fn(*(v.astype(np.float64) for v in (a, x, y)))   # float64 reference
        scale = float(np.abs(want).max(initial=1.0)) * opts.n    # sums of n float32 values
        np.testing.assert_allclose(jitted(a, x, y), want, rtol=1e-5, atol=1e-6 * scale)
        loop_ir = jitted.lower(a, x, y).stages.text("loop IR")
        tiles = "; ".join(dict.fromkeys(line.strip().lstrip("# ") for line in
                                        loop_ir.splitlines() if "tiles of" in line)) or "none"
        t_np = _time(fn, (a, x, y), opts.repeats)
        t_fj = _time(jitted, (a, x, y), opts.repeats)
        rows.append((name, t_np * 1e3, t_fj * 1e3, t_fj / t_np, tiles))
        with bar.printing(sys.stdout):
            print(f"{name:34} {t_np * 1e3:9.2f} {t_fj * 1e3:10.2f} {t_fj / t_np:6.2f}  {tiles}")
    return rows


if __name__ == "__main__":
    main()
