"""W5: steps per second of a training step (forward, backward, Adam update) of a 2-layer MLP.

The model is examples/mlp_train.py's: `cost = sum((y - tanh(tanh(x@w1 + b1)@w2 + b2))**2)`
trained by Adam with TF 1.x's defaults (lr 1e-3, beta1 0.9, beta2 0.999, epsilon 1e-8).
Cases: batch 100, 32->16->8 (the example's sizes) and batch 4096, 32->1024->8 (large).
One timed call is one step on the same fed x, y; the parameters keep training while timed.

Systems (each skipped with the reason when not installed):
- numpy: the forward, backward and Adam update written by hand (the baseline);
- flowjit: `Session.run([cost, train], feed_dict)` on the example's graph (tf.train
  .AdamOptimizer), with auto-clustering compiling on the first run (`flowjit`) and with
  `ConfigProto(jit=False)`, every op's NumPy reference kernel (`flowjit nojit`);
- flowjit v&g: one `flowjit.jit` function holding `flowjit.value_and_grad` of the loss and
  the Adam update; the state (params, slots, beta powers as 0-d float32 arrays, never Python
  numbers, which would be static and recompile) goes in and comes back as arrays;
- jax: `jax.jit` of the whole step (`jax.value_and_grad` + Adam written in jnp);
- torch: eager autograd + `torch.optim.Adam`;
- tensorflow: `tf.compat.v1` Session running the same graph as flowjit.

Method (as `benchmarks/compiler_workloads.py`): every system starts from the same NumPy
initial weights; its first step (loss, and the parameters after the update) is checked
against the NumPy step before timing, and a wrong variant is reported WRONG and not timed;
the variants of a case are timed interleaved over `--repeats` repetitions of batches
calibrated to `--target-seconds` (`benchmarks/timing.py`); the table gives steps/s (1 /
median), median and min..max per step, the ratio of medians to NumPy (below 1 is faster),
the cores used and retried batches.  Measuring runs in a child process whose environment sets
the thread counts before any import (`--threads`, all CPUs by default).

The hyperparameters, the TF1 graph (run by flowjit and by TensorFlow) and the steps of
JAX, PyTorch and TensorFlow are in `benchmarks/training_peers.py`.

Run: `python -m flowjit bench training [--quick] [--threads N] [--repeats N]` (or
`python -m flowjit.benchmarks.training_step`, which also takes `--cases small,large` and
`--json PATH`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import statistics
import sys
import time

import numpy as np

from ..progress import progress
from .peers import describe
from .timing import add_timing_arguments, blas_cores, measure, pin_threads, rerun_in_child
from .training_peers import (BETA1, BETA2, EPSILON, LR, Unavailable, _graph_program,  # noqa: F401
                             _session_step, make_jax, make_tensorflow, make_torch)

CASES = {"small": (100, 32, 16, 8), "large": (4096, 32, 1024, 8)}
LOSS_RTOL = 1e-4     # float32 sums of 800 / 32768 squared errors, differently ordered
PARAM_ATOL = 2e-6    # after one Adam step of ~1e-3 per weight: a wrong gradient moves ~1e-3


def make_inputs(batch: int, n_in: int, hidden: int, n_out: int, seed: int = 0) -> tuple:
    """(x, y, [w1, b1, w2, b2]) float32: uniform inputs, truncated-normal(0.1) weights."""
    rng = np.random.default_rng(seed)

    def truncated(shape):
        w = rng.standard_normal(shape)
        while (bad := np.abs(w) > 2).any():
            w[bad] = rng.standard_normal(int(bad.sum()))
        return (0.1 * w).astype(np.float32)

    x = rng.random((batch, n_in), dtype=np.float32)
    y = rng.random((batch, n_out), dtype=np.float32)
    params = [truncated((n_in, hidden)), np.zeros(hidden, np.float32),
              truncated((hidden, n_out)), np.zeros(n_out, np.float32)]
    return x, y, params


# --- the systems: each make_* returns (step() -> loss, params() -> list of arrays) ----------


def make_numpy(x, y, init, threads):
    """Hand-written forward, backward and TF-style Adam in float32 NumPy."""
    params = [p.copy() for p in init]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    t = [0]
    one, b1, b2 = np.float32(1), np.float32(BETA1), np.float32(BETA2)

    def step():
        w1, c1, w2, c2 = params
        a = np.tanh(x @ w1 + c1)
        out = np.tanh(a @ w2 + c2)
        err = y - out
        loss = np.sum(err * err)
        dz2 = np.float32(-2) * err * (one - out * out)
        da = dz2 @ w2.T
        dz1 = da * (one - a * a)
        grads = [x.T @ dz1, dz1.sum(axis=0), a.T @ dz2, dz2.sum(axis=0)]
        t[0] += 1
        lr_t = np.float32(LR * np.sqrt(1 - BETA2 ** t[0]) / (1 - BETA1 ** t[0]))
        for p, g, mi, vi in zip(params, grads, m, v):
            mi *= b1
            mi += (one - b1) * g
            vi *= b2
            vi += (one - b2) * g * g
            p -= lr_t * mi / (np.sqrt(vi) + np.float32(EPSILON))
        return loss

    return step, lambda: params


def make_flowjit(x, y, init, threads):
    """flowjit Session.run; auto-clustering compiles the clusters on their first run."""
    import flowjit as tf
    from flowjit.runtime.config import JitOptions

    jit = JitOptions(policy="always")
    return _session_step(tf, x, y, init, tf.ConfigProto(jit=jit))


def make_flowjit_nojit(x, y, init, threads):
    """flowjit Session.run with ConfigProto(jit=False): NumPy reference kernels op by op."""
    import flowjit as tf

    return _session_step(tf, x, y, init, tf.ConfigProto(jit=False))


def _mlp_loss(w1, b1, w2, b2, x, y):
    """The model's cost as ordinary NumPy code (traced by flowjit.value_and_grad)."""
    err = y - np.tanh(np.tanh(x @ w1 + b1) @ w2 + b2)
    return np.sum(err * err)


def make_flowjit_value_and_grad(x, y, init, threads):
    """flowjit.jit of the whole step: flowjit.value_and_grad of the loss, TF-style Adam.

    The state goes in as separate arrays and comes back as new ones (measured faster than
    mutating the arguments in place, whose write-back copies each state array, and than
    passing lists, which miss JitFunction's all-arrays fast path). The bias-correction
    powers beta1^t, beta2^t are float32 0-d arrays multiplied each step (as TF's
    beta1_power), never Python numbers, which would be static and recompile every step.
    """
    import flowjit

    if not hasattr(flowjit, "value_and_grad"):
        raise Unavailable("flowjit.value_and_grad does not exist yet")
    f32 = np.float32
    loss_and_grads = flowjit.value_and_grad(_mlp_loss, argnums=(0, 1, 2, 3))

    @flowjit.jit
    def train(w1, b1, w2, b2, m1, mb1, m2, mb2, v1, vb1, v2, vb2, beta1_t, beta2_t, xb, yb):
        params = (w1, b1, w2, b2)
        loss, grads = loss_and_grads(*params, xb, yb)
        beta1_t = beta1_t * f32(BETA1)
        beta2_t = beta2_t * f32(BETA2)
        lr_t = f32(LR) * np.sqrt(f32(1) - beta2_t) / (f32(1) - beta1_t)
        m = [f32(BETA1) * mi + f32(1 - BETA1) * g for mi, g in zip((m1, mb1, m2, mb2), grads)]
        v = [f32(BETA2) * vi + f32(1 - BETA2) * g * g
             for vi, g in zip((v1, vb1, v2, vb2), grads)]
        new = [p - lr_t * mi / (np.sqrt(vi) + f32(EPSILON)) for p, mi, vi in zip(params, m, v)]
        return (loss, *new, *m, *v, beta1_t, beta2_t)

    # [w1, b1, w2, b2, m (4), v (4), beta1^t, beta2^t]
    state = ([np.array(p, np.float32) for p in init]
             + [np.zeros(np.shape(p), np.float32) for _ in "mv" for p in init]
             + [np.ones((), np.float32), np.ones((), np.float32)])
    xb, yb = np.ascontiguousarray(x, np.float32), np.ascontiguousarray(y, np.float32)

    def step():
        loss, *state[:] = train(*state, xb, yb)
        return loss

    return step, lambda: state[:4]


SYSTEMS = {"numpy": make_numpy, "flowjit": make_flowjit, "flowjit nojit": make_flowjit_nojit,
           "flowjit v&g": make_flowjit_value_and_grad, "jax": make_jax, "torch": make_torch,
           "tensorflow": make_tensorflow}


def training_systems(peers) -> list:
    """The systems for a list of peer keys: NumPy, every flowjit variant, and the named
    peers that have a training step (numexpr and numba have none)."""
    return [s for s in SYSTEMS if s == "numpy" or s.startswith("flowjit") or s in peers]


# --- checking, timing, reporting ---------------------------------------------------------------


class _Collect(logging.Handler):
    def __init__(self, messages: list):
        super().__init__(logging.INFO)
        self.messages = messages

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage().removeprefix("flowjit: "))


@contextlib.contextmanager
def _flowjit_log():
    """What flowjit logs (INFO and up: e.g. a cluster left to the reference kernels)."""
    messages: list = []
    logger, handler = logging.getLogger("flowjit"), _Collect(messages)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def check_first_step(loss, params, ref_loss, ref_params) -> str:
    """'' when a first step matches NumPy's (loss to LOSS_RTOL, parameters to PARAM_ATOL)."""
    loss = float(np.asarray(loss))
    if not abs(loss - ref_loss) <= LOSS_RTOL * abs(ref_loss):
        return f"loss {loss!r} vs NumPy's {ref_loss!r}"
    for i, (p, r) in enumerate(zip(params, ref_params)):
        worst = float(np.max(np.abs(np.asarray(p, np.float64) - r)))
        if not worst <= PARAM_ATOL:
            return f"parameter {i} after the update differs from NumPy's by {worst:.3g}"
    return ""


def run_case(name: str, systems: list, threads: int, repeats: int, target: float) -> list:
    """Check and time every system on case `name`; return its rows (dicts)."""
    batch, n_in, hidden, n_out = CASES[name]
    x, y, init = make_inputs(batch, n_in, hidden, n_out)
    ref_step, ref_params = make_numpy(x, y, init, threads)
    ref_loss = float(ref_step())
    ref = [np.array(p, np.float64) for p in ref_params()]
    rows, calls = [], {}
    for system in systems:
        row = {"case": name, "variant": system, "status": "ok", "reason": ""}
        rows.append(row)
        try:
            step, params = SYSTEMS[system](x, y, init, threads)
            with _flowjit_log() as messages:
                t0 = time.perf_counter()
                loss = step()
                row["first_s"] = time.perf_counter() - t0
            row["note"] = "; ".join(dict.fromkeys(messages))
            wrong = check_first_step(loss, params(), ref_loss, ref)
        except Unavailable as exc:
            row["status"], row["reason"] = "unavailable", str(exc)
            continue
        except Exception as exc:  # noqa: BLE001 - reported in the table
            row["status"], row["reason"] = "FAILED", describe(exc)
            continue
        if wrong:
            row["status"], row["reason"] = "WRONG", wrong
            continue
        calls[system] = step
    for m in measure(calls, repeats, target) if calls else []:
        row = next(r for r in rows if r["variant"] == m.name)
        row.update(median=m.median, min=min(m.times), max=max(m.times),
                   threads=m.median_threads, retries=m.retries)
    base = next((r["median"] for r in rows if r["variant"] == "numpy" and "median" in r), None)
    for row in rows:
        if "median" in row:
            row["ratio"] = row["median"] / base if base else float("nan")
    return rows


def print_case(name: str, rows: list, out) -> None:
    """The table of case `name`."""
    batch, n_in, hidden, n_out = CASES[name]
    print(f"\nW5 training step, {name}: batch {batch}, {n_in}->{hidden}->{n_out}, tanh, "
          f"sum of squares, Adam", file=out)
    print(f"  {'variant':<14} {'steps/s':>9} {'median':>9} {'(min..max)':>14} "
          f"{'ratio':>6} {'thr':>4} {'1st step':>9} {'retry':>5}", file=out)
    for row in rows:
        if "median" not in row:
            print(f"  {row['variant']:<14} {row['status']}: {row['reason']}", file=out)
            continue
        scale, unit = (1e3, "ms") if row["median"] >= 1e-3 else (1e6, "us")
        spread = f"({row['min'] * scale:.3g}..{row['max'] * scale:.3g})"
        print(f"  {row['variant']:<14} {1 / row['median']:9.1f} {row['median'] * scale:6.3g} "
              f"{unit} {spread:>14} {row['ratio']:6.2f} {row['threads']:4.1f} "
              f"{row['first_s'] * 1e3:6.1f} ms {row['retries']:5d}", file=out)
    for row in rows:
        if row.get("note"):
            print(f"  note, {row['variant']}: {row['note']}", file=out)
    out.flush()


def run(systems, cases, threads: int, repeats: int, target: float, out=None) -> dict:
    """Check, time and print `systems` (names of SYSTEMS) on `cases` (names of CASES).

    Returns {"meta": ..., "rows": [one dict per case and system: case, variant, status,
    reason, and when timed median, min, max (seconds a step), ratio (to NumPy's median),
    threads, retries, first_s]}.
    """
    out = out or sys.stdout
    print(f"flowjit training-step benchmark (W5); {os.cpu_count()} CPUs, {threads} "
          f"thread(s) for every system; {repeats} interleaved repetitions of "
          f"~{target:g} s batches", file=out)
    print(f"OpenBLAS kernels: {blas_cores()}", file=out)
    rows = []
    with progress(cases, desc="training step", unit="case") as bar:
        for name in bar:
            case_rows = run_case(name, systems, threads, repeats, target)
            with bar.printing(out):
                print_case(name, case_rows, out)
            rows += case_rows
    busy = statistics.median([r.get("retries", 0) for r in rows])
    print("  ratio = median time / NumPy's (below 1 = faster); thr = cores used; 1st step "
          "includes compiling" + ("; many batches retried: rerun on a quiet machine"
                                  if busy else ""), file=out)
    meta = dict(cpus=os.cpu_count(), threads=threads, repeats=repeats, target_seconds=target)
    return {"meta": meta, "rows": rows}


def main(argv=None) -> int:
    """Command line: re-runs itself in a child with the thread environment, then measures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_timing_arguments(parser)
    parser.add_argument("--quick", action="store_true", help="only the small case")
    parser.add_argument("--cases", default=None, help="comma-separated among "
                        + ", ".join(CASES) + " (all; small with --quick)")
    parser.add_argument("--systems", default=",".join(SYSTEMS),
                        help="comma-separated among " + ", ".join(SYSTEMS) + " (all)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    cases = [c.strip() for c in (args.cases or ("small" if args.quick else ",".join(CASES)))
             .split(",") if c.strip()]
    unknown = [s for s in systems if s not in SYSTEMS] + [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown systems or cases: {', '.join(unknown)}")
    if "numpy" not in systems:
        systems.insert(0, "numpy")
    from .compiler_workloads import child_env

    status = rerun_in_child("flowjit.benchmarks.training_step", argv, args.threads,
                            child_env(args.threads))
    if status is not None:
        return status
    pin_threads(args.threads)
    result = run(systems, cases, args.threads, args.repeats or (3 if args.quick else 7),
                 args.target_seconds)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
