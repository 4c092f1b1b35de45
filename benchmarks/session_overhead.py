"""Session-overhead benchmark: `Session.run` of tiny graphs versus the same NumPy code.

The graphs are so small that the time measured is flowjit's per-call overhead (fetch and
feed handling, plan lookup, the executor's ready queue, one Python kernel call per op), not
arithmetic: a few hundred bytes move per call, so a bandwidth or FLOP limit is meaningless
here and only the ratio to NumPy is reported.

Method (the project's benchmarking rules):
- every variant's output is checked against a float64 NumPy reference before timing;
- each variant is timed in batches of calls calibrated to ~0.1 s, per-call time = batch
  time / calls; flowjit and NumPy batches alternate (A B, then B A, ...) for `--repeats`
  repetitions and the table reports median and min..max and the ratio of medians;
- thread counts come from OMP_NUM_THREADS & co., which `python -m flowjit bench` sets in
  the environment of a fresh process before NumPy is imported; the threads actually used
  (process CPU time / wall time) are printed per row;
- `/proc/stat` is read around each batch: when other processes kept more than a quarter of
  a core busy meanwhile, the batch is retried (at most twice) and the retries counted.
  The measuring itself lives in `benchmarks/timing.py`, shared with the compiler benchmark.

Run: `python -m flowjit bench session` (or `python -m flowjit.benchmarks.session_overhead
[--repeats N] [--target-seconds S] [--json PATH]`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

import numpy as np

from ..progress import progress
from .timing import Measurement, add_blas_argument, measure

RTOL, ATOL = 1e-5, 1e-6


# --- the cases ---------------------------------------------------------------------------------


def _chain_numpy(x, steps):
    for k in range(steps):
        x = x * np.float32(1.0 + 0.01 * k) + np.float32(0.5)
    return x


def case_affine(tf):
    """x * 2 + 1 on 8 float32 elements fed through a placeholder."""
    x = tf.placeholder(tf.float32, [8], name="x")
    y = x * 2.0 + 1.0
    xv = np.linspace(-1.0, 1.0, 8, dtype=np.float32)
    sess = tf.Session()
    return dict(name="x*2+1, 8 f32, feed_dict",
                flowjit=lambda: sess.run(y, {x: xv}),
                numpy=lambda: xv * np.float32(2.0) + np.float32(1.0),
                reference=xv.astype(np.float64) * 2.0 + 1.0, close=sess.close)


def case_chain(tf):
    """Ten elementwise ops in a row (five multiply-adds) on 64 float32 elements."""
    x = tf.placeholder(tf.float32, [64], name="x")
    y = x
    for k in range(5):
        y = y * (1.0 + 0.01 * k) + 0.5
    xv = np.linspace(-1.0, 1.0, 64, dtype=np.float32)
    sess = tf.Session()
    return dict(name="10-op chain, 64 f32",
                flowjit=lambda: sess.run(y, {x: xv}),
                numpy=lambda: _chain_numpy(xv, 5),
                reference=_chain_numpy(xv.astype(np.float64), 5), close=sess.close)


def _wide_numpy(x, width):
    branches = [x * x.dtype.type(1.0 + i) + x.dtype.type(i) for i in range(width)]
    while len(branches) > 1:
        branches = [branches[i] + branches[i + 1] for i in range(0, len(branches), 2)]
    return branches[0]


def case_wide(tf, inter_op_threads: int):
    """16 independent branches (x * c + i) summed by a tree of adds: 47 ops."""
    width = 16
    x = tf.placeholder(tf.float32, [64], name="x")
    branches = [x * (1.0 + i) + float(i) for i in range(width)]
    while len(branches) > 1:
        branches = [branches[i] + branches[i + 1] for i in range(0, len(branches), 2)]
    y = branches[0]
    xv = np.linspace(-1.0, 1.0, 64, dtype=np.float32)
    config = tf.ConfigProto(inter_op_parallelism_threads=inter_op_threads)
    sess = tf.Session(config=config)
    pool = "default inter-op pool" if inter_op_threads == 0 else \
        f"inter_op={inter_op_threads}"
    return dict(name=f"wide 16 branches, {pool}",
                flowjit=lambda: sess.run(y, {x: xv}),
                numpy=lambda: _wide_numpy(xv, width),
                reference=_wide_numpy(xv.astype(np.float64), width), close=sess.close)


def check(case) -> None:
    """Both variants must match the float64 reference (dtype float32, allclose)."""
    for variant in ("flowjit", "numpy"):
        out = np.asarray(case[variant]())
        if out.dtype != np.float32 or not np.allclose(out, case["reference"], RTOL, ATOL):
            raise AssertionError(f"{case['name']}: {variant} output is wrong (dtype "
                                 f"{out.dtype}); not timing it.")


# --- the report ---------------------------------------------------------------------------------


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:9.1f}"


def _spread(m: Measurement) -> str:
    return f"{_us(m.median)} ({_us(min(m.times))}..{_us(max(m.times))})"


def run(repeats: int = 7, target_seconds: float = 0.1, out=None) -> list:
    """Run every case, print the table to `out`, return the rows as dicts."""
    import flowjit as tf

    out = out or sys.stdout
    threads_env = {v: os.environ.get(v, "unset") for v in ("OMP_NUM_THREADS",
                                                         "OPENBLAS_NUM_THREADS")}
    print(f"flowjit {tf.__version__} session overhead vs NumPy {np.__version__}; "
          f"{os.cpu_count()} CPUs; {threads_env}; {repeats} interleaved repetitions of "
          f"~{target_seconds:g} s batches; times are microseconds per call, median "
          f"(min..max)", file=out)
    header = (f"{'case':<40} {'ops':>4} {'flowjit':>9} {'(min..max)':>21} {'numpy':>9} "
              f"{'(min..max)':>21} {'ratio':>7} {'us/op':>6} {'thr':>4} {'retry':>5}")
    print(header, file=out)
    print("-" * len(header), file=out)
    rows = []
    builders = [case_affine, case_chain, lambda tf: case_wide(tf, 0),
                lambda tf: case_wide(tf, 1)]
    bar = progress(builders, desc="session overhead", unit="case")
    for build in bar:
        graph = tf.Graph()
        with graph.as_default():
            case = build(tf)
            n_ops = len(graph.get_operations()) - 1  # every op but the fed placeholder runs
            check(case)
            fj, npy = measure({"flowjit": case["flowjit"], "numpy": case["numpy"]},
                              repeats, target_seconds)
            case["close"]()
        ratio = fj.median / npy.median
        row = dict(case=case["name"], ops=n_ops, flowjit_us=fj.median * 1e6,
                   numpy_us=npy.median * 1e6, ratio=ratio,
                   flowjit_threads=statistics.median(fj.threads),
                   retries=fj.retries + npy.retries)
        rows.append(row)
        with bar.printing(out):
            print(f"{case['name']:<40} {n_ops:4d} {_spread(fj)} {_spread(npy)} {ratio:7.0f} "
                  f"{fj.median * 1e6 / n_ops:6.1f} {row['flowjit_threads']:4.1f} "
                  f"{row['retries']:5d}", file=out)
    print("ops = graph ops run per call (constants included); ratio = flowjit median / NumPy "
          "median; us/op = flowjit time per op; "
          "thr = cores flowjit used (CPU time / wall); retry = batches retried because "
          "other processes were busy.", file=out)
    return rows


def main(argv=None) -> int:
    """Command-line entry: `--repeats N --target-seconds S`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--target-seconds", type=float, default=0.1)
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    add_blas_argument(parser)
    args = parser.parse_args(argv)
    rows = run(args.repeats, args.target_seconds)
    if args.json:
        meta = dict(cpus=os.cpu_count(), repeats=args.repeats,
                    target_seconds=args.target_seconds,
                    threads=int(os.environ.get("FLOWJIT_BENCH_THREADS", "0")) or None)
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
