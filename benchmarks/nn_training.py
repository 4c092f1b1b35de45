"""W6: steps per second of a CNN and an LSTM training step, flowjit against its peers.

The models and every system's step are in `benchmarks/nn_training_peers.py`: a small CNN
(2 convolutions with bias + ReLU, 2 max-pools, a dense layer; batch 64 of 28x28x1) and an
LSTM classifier (BasicLSTMCell(128) unrolled over 50 steps by dynamic_rnn; batch 32), both
trained by Adam on a fed batch.

Systems (each skipped with the reason when not installed):
- flowjit: `Session.run([loss, train])` on the TF1 graph, compiling every cluster on its
  first run (`JitOptions(policy="always")`); its first step is the **cold compile**, since
  the measuring process uses an empty kernel cache (`--warm-cache` keeps the user's);
- flowjit nojit: the same graph with `ConfigProto(jit=False)`, every op's NumPy reference
  kernel: the baseline of the ratio column, and the oracle of the check;
- jax, torch, tensorflow: as `nn_training_peers` describes.

Method: every system starts from the same weights; its first two losses (the second one
after an Adam update) must match flowjit nojit's to `LOSS_RTOL`, else the row says WRONG and
nothing is timed.  The systems are then timed interleaved (`benchmarks/timing.py`); the
table gives steps/s, the median step, min..max, the ratio of medians to flowjit nojit and to
the fastest peer (below 1: faster than every peer), the cores used, and the first step
(compile included).

Run: `python -m flowjit bench nn [--quick] [--threads N]` (or `python -m
flowjit.benchmarks.nn_training --models cnn,lstm --json PATH`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

from ..progress import progress
from .peers import describe
from .timing import add_timing_arguments, measure, pin_threads, rerun_in_child
from .nn_training_peers import (MODELS, Unavailable, make_data, make_jax, make_tensorflow,
                                make_torch, session_step)

LOSS_RTOL = 2e-4     # float32 sums reordered (convolutions, 50 recurrent steps)
PEERS = ("jax", "torch", "tensorflow")


def make_flowjit(model, x, labels, init, threads):
    """flowjit Session.run, every cluster compiled on its first run."""
    import flowjit as tf

    config = tf.ConfigProto(jit=tf.JitOptions(policy="always"))
    return session_step(tf, model, x, labels, init, config)


def make_flowjit_nojit(model, x, labels, init, threads):
    """flowjit Session.run with the NumPy reference kernels, op by op."""
    import flowjit as tf

    return session_step(tf, model, x, labels, init, tf.ConfigProto(jit=False))


SYSTEMS = {"flowjit nojit": make_flowjit_nojit, "flowjit": make_flowjit, "jax": make_jax,
           "torch": make_torch, "tensorflow": make_tensorflow}


def run_model(model: str, systems: list, threads: int, repeats: int, target: float) -> list:
    """Check and time every system on `model`; return its rows (dicts)."""
    x, labels, init = make_data(model)
    rows, calls, reference = [], {}, None
    for system in systems:
        row = {"model": model, "variant": system, "status": "ok", "reason": ""}
        rows.append(row)
        try:
            step = SYSTEMS[system](model, x, labels, init, threads)
            t0 = time.perf_counter()
            first = float(np.asarray(step()))
            row["first_s"] = time.perf_counter() - t0
            losses = (first, float(np.asarray(step())))
        except Unavailable as exc:
            row["status"], row["reason"] = "unavailable", str(exc)
            continue
        except Exception as exc:  # noqa: BLE001 - reported in the table
            row["status"], row["reason"] = "FAILED", describe(exc)
            continue
        if reference is None:
            reference = losses
        elif not np.allclose(losses, reference, rtol=LOSS_RTOL, atol=0):
            row["status"] = "WRONG"
            row["reason"] = f"losses {losses} vs the reference's {reference}"
            continue
        calls[system] = step
    for m in measure(calls, repeats, target) if calls else []:
        row = next(r for r in rows if r["variant"] == m.name)
        row.update(median=m.median, min=min(m.times), max=max(m.times),
                   threads=m.median_threads, retries=m.retries)
    base = next((r["median"] for r in rows if r["variant"] == "flowjit nojit"
                 and "median" in r), float("nan"))
    peers = [r["median"] for r in rows if r["variant"] in PEERS and "median" in r]
    for row in rows:
        if "median" in row:
            row["ratio"] = row["median"] / base
            row["vs_peers"] = row["median"] / min(peers) if peers else float("nan")
    return rows


def describe_model(model: str) -> str:
    """One line naming the model's sizes."""
    p = MODELS[model]
    if model == "cnn":
        return (f"CNN, batch {p['batch']} of {p['size']}x{p['size']}x1: conv {p['k']}x{p['k']}"
                f"x{p['c1']} + pool, conv {p['k']}x{p['k']}x{p['c2']} + pool, dense -> "
                f"{p['classes']}; Adam")
    return (f"LSTM, batch {p['batch']}, {p['steps']} steps of {p['features']}, hidden "
            f"{p['hidden']}, dense -> {p['classes']}; Adam")


def print_model(model: str, rows: list, out) -> None:
    """The table of one model."""
    print(f"\nW6 {describe_model(model)}", file=out)
    print(f"  {'variant':<14} {'steps/s':>8} {'median':>10} {'(min..max)':>16} "
          f"{'ratio':>6} {'vs peers':>8} {'thr':>4} {'1st step':>9}", file=out)
    for row in rows:
        if "median" not in row:
            print(f"  {row['variant']:<14} {row['status']}: {row['reason']}", file=out)
            continue
        spread = f"({row['min'] * 1e3:.3g}..{row['max'] * 1e3:.3g})"
        print(f"  {row['variant']:<14} {1 / row['median']:8.1f} {row['median'] * 1e3:7.3g} ms "
              f"{spread:>16} {row['ratio']:6.2f} {row['vs_peers']:8.2f} {row['threads']:4.1f} "
              f"{row['first_s']:7.2f} s", file=out)
    out.flush()


def run(systems, models, threads: int, repeats: int, target: float, out=None) -> dict:
    """Check, time and print `systems` on `models`; returns {"meta": ..., "rows": [...]}."""
    out = out or sys.stdout
    print(f"flowjit CNN/LSTM training-step benchmark (W6); {os.cpu_count()} CPUs, {threads} "
          f"thread(s) for every system; {repeats} interleaved repetitions of ~{target:g} s "
          "batches", file=out)
    rows = []
    with progress(models, desc="nn training", unit="model") as bar:
        for model in bar:
            model_rows = run_model(model, systems, threads, repeats, target)
            with bar.printing(out):
                print_model(model, model_rows, out)
            rows += model_rows
    print("  ratio = median / flowjit nojit's; vs peers = median / the fastest peer's (below "
          "1: faster than all); 1st step includes compiling (flowjit: an empty kernel cache)",
          file=out)
    return {"meta": dict(cpus=os.cpu_count(), threads=threads, repeats=repeats,
                         target_seconds=target), "rows": rows}


def main(argv=None) -> int:
    """Command line: re-runs itself in a child with the thread environment, then measures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_timing_arguments(parser)
    parser.add_argument("--quick", action="store_true", help="3 repetitions")
    parser.add_argument("--models", default=",".join(MODELS),
                        help="comma-separated among " + ", ".join(MODELS) + " (all)")
    parser.add_argument("--systems", default=",".join(SYSTEMS),
                        help="comma-separated among " + ", ".join(SYSTEMS) + " (all)")
    parser.add_argument("--warm-cache", action="store_true",
                        help="keep flowjit's kernel cache (the first step is then not cold)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [s for s in systems if s not in SYSTEMS] + [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"unknown systems or models: {', '.join(unknown)}")
    if "flowjit nojit" in systems:        # the reference goes first: it checks the others
        systems.remove("flowjit nojit")
    systems.insert(0, "flowjit nojit")
    from .compiler_workloads import child_env

    env = child_env(args.threads)
    with tempfile.TemporaryDirectory(prefix="flowjit-nn-bench-") as cache:
        if not args.warm_cache:
            env["FLOWJIT_CACHE_DIR"] = cache
        status = rerun_in_child("flowjit.benchmarks.nn_training", argv, args.threads, env)
    if status is not None:
        return status
    pin_threads(args.threads)
    result = run(systems, models, args.threads, args.repeats or (3 if args.quick else 7),
                 args.target_seconds)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
