"""Tiered execution as a user meets it: a training loop in a default `tf.Session()`.

The model and the hand-written NumPy step are W5's (benchmarks/training_step.py: 2-layer
MLP, Adam).  Each measurement is a fresh child process, so imports, the kernel cache and the
background compiler start as in a user's script; the clock starts at the first
`sess.run(train, feed)` (after the graph is built and the variables initialized) and stops
after the last step:
- numpy: the same number of hand-written NumPy steps;
- flowjit cold: default policy, an empty kernel cache (the clusters run with reference
  kernels while they compile in the background, then compiled);
- flowjit warm: the same script again on the cache the cold run filled (the kernel is
  looked up on the first step and runs compiled from it).  After its timed loop the cold
  child lets its background compiles finish (untimed), so the cache holds the optimized
  kernel as it would for a user's next run some time later.
Per row: total seconds, the speed-up over NumPy (NumPy's time / flowjit's: above 1 is
faster), and for flowjit the step at which a compiled kernel took over (the quick tier
first), the step from which the optimized kernel ran, and the seconds until the first; the
clusters' explain() lines go to stderr (how each runs and why).  Repeated `--repeats` times;
medians are reported.

Run: `python -m flowjit.benchmarks.tiered_session [--quick]`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from ..progress import progress

CASES = {"small": ((100, 32, 16, 8), 10_000), "large": ((4096, 32, 1024, 8), 30)}

_CHILD = """
import json, sys, time
import numpy as np
from flowjit.benchmarks import training_step as ts
sizes, steps, system = json.loads(sys.argv[1])
x, y, init = ts.make_inputs(*sizes)
if system == "numpy":
    step, _ = ts.make_numpy(x, y, init, 0)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    print("RESULT " + json.dumps({"seconds": time.perf_counter() - start}))
    sys.exit(0)
import flowjit as tf
from flowjit.runtime.clustering import ClusterStep
graph = tf.Graph()
with graph.as_default():
    xp, yp, cost, train, variables, init_op = ts._graph_program(tf, x, y, init)
sess = tf.Session(graph=graph)
sess.run(init_op)
feed, fetches = {xp: x, yp: y}, [cost, train]
clusters = []
swap_step = swap_seconds = optimized_step = optimized_seconds = None
start = time.perf_counter()
for i in range(steps):
    sess.run(fetches, feed)
    if optimized_step is None:
        if not clusters:   # the training step's clusters (not the initializer's)
            clusters = [n for p in sess._plans.values() for n in p.ops
                        if isinstance(n, ClusterStep) and cost.op in n.ops]
        if swap_step is None and clusters and all(c.kernels.compiled_runs for c in clusters):
            swap_step, swap_seconds = i, time.perf_counter() - start
        tiers = {t.value for c in clusters for t in c.kernels.tiers.values()}
        if swap_step is not None and tiers == {"optimized"}:
            optimized_step, optimized_seconds = i, time.perf_counter() - start
seconds = time.perf_counter() - start
# not timed: let the background compiles finish and install (quick kernel, then the
# optimized one), so the next run of this script finds what a user's next run would
from flowjit.runtime import compile_queue
for _ in range(3):
    compile_queue.wait_idle(timeout=900)
    sess.run(fetches, feed)
tf.wait_for_cache_writes()
print("RESULT " + json.dumps({"seconds": seconds, "swap_step": swap_step,
                              "swap_seconds": swap_seconds, "optimized_step": optimized_step,
                              "optimized_seconds": optimized_seconds,
                              "clusters": len(clusters),
                              "explain": [c.explain().splitlines()[-1] for c in clusters]}))
"""


def _child(sizes, steps, system, cache_dir) -> dict:
    env = dict(os.environ, FLOWJIT_CACHE_DIR=cache_dir)
    env.pop("FLOWJIT_JIT", None)
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps([sizes, steps, system])],
                          env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{system} child failed:\n{done.stderr[-3000:]}")
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def run_case(name: str, repeats: int, steps: int | None = None) -> list:
    """Rows (system, median seconds, speed-up over NumPy, swap step, swap seconds)."""
    sizes, default_steps = CASES[name]
    steps = steps or default_steps
    results = {"numpy": [], "flowjit cold": [], "flowjit warm": []}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as cache:
            results["numpy"].append(_child(sizes, steps, "numpy", cache))
            results["flowjit cold"].append(_child(sizes, steps, "flowjit", cache))
            results["flowjit warm"].append(_child(sizes, steps, "flowjit", cache))
    numpy_s = statistics.median(r["seconds"] for r in results["numpy"])
    rows = []
    for system, runs in results.items():
        seconds = statistics.median(r["seconds"] for r in runs)
        swaps = [(r.get("swap_step"), r.get("optimized_step")) for r in runs]
        swap_s = [r.get("swap_seconds") for r in runs if r.get("swap_seconds") is not None]
        rows.append((f"{name} ({steps} steps)", system, seconds, numpy_s / seconds,
                     swaps, statistics.median(swap_s) if swap_s else None))
        for r in runs:
            for line in r.get("explain", []):
                print(f"    {system}: {line}", file=sys.stderr)
    return rows


def main(argv=None) -> int:
    """Measure every case and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one repeat")
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    print(f"{'case':<22} {'system':<14} {'seconds':>9} {'vs NumPy':>9}  compiled from step, "
          f"optimized from step (seconds to compiled)")
    started = time.perf_counter()
    bar = progress(args.cases.split(","), desc="tiered session", unit="case")
    for name in bar:
        for case, system, seconds, speedup, swaps, swap_s in run_case(name, repeats):
            when = "" if system == "numpy" else f"  {swaps} ({swap_s and round(swap_s, 2)})"
            with bar.printing(sys.stdout):
                print(f"{case:<22} {system:<14} {seconds:9.3f} {speedup:8.2f}x{when}",
                      flush=True)
    print(f"({time.perf_counter() - started:.0f} s; medians of {repeats} fresh processes per "
          "row; vs NumPy = NumPy's time / this row's)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
