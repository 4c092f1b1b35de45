"""The compiler benchmark's two settings: flowjit's default manners and its process tuning.

flowjit changes no process-wide state unless the user opts in (runtime/process_tuning.py;
docs/architecture.md, "Manners in the user's process").  `python -m flowjit bench compiler`
measures with the default settings and then, with `--tuning both` (its default), NumPy and
flowjit again in a fresh process that called `flowjit.config.tune_process()`, and prints
flowjit's ratio to NumPy under each (`print_tuning_summary`): the cost of the default.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from ..runtime.process_tuning import process_tuned

TUNING_TEXT = {
    "default": "default (flowjit changes no process-wide state: no thread pinning, no "
               "GOMP_SPINCOUNT, OpenBLAS and BLAS thread counts as the user left them)",
    "tuned": "tuned (flowjit.config.tune_process(): OpenMP workers pinned, GOMP_SPINCOUNT="
             "20000, OpenBLAS spin bounded, scipy's BLAS on one thread inside kernels)"}


def tuning_setting() -> str:
    """"tuned" when this process opted in to flowjit's process tuning, else "default"."""
    return "tuned" if process_tuned() else "default"


def run_tuned(args, steady: list, out) -> dict | None:
    """Measure NumPy and flowjit on the `steady` workloads again in a fresh process with
    process tuning on (`--tuning both`); its tables go to stdout, its results are returned
    (None if it failed).  `args`: the benchmark's parsed command line."""
    if not steady:
        return None
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "tuned.json")
        cmd = [sys.executable, "-m", "flowjit.benchmarks.compiler_workloads", "--tuning",
               "tuned", "--peers", "none", "--workloads", ",".join(steady), "--threads",
               str(args.threads), "--target-seconds", str(args.target_seconds),
               "--json", path] + (["--repeats", str(args.repeats)] if args.repeats else [])
        cmd += ["--quick"] * args.quick + ["--native-blas"] * args.native_blas
        print("\n--- the same, NumPy and flowjit only, in a process that called "
              "flowjit.config.tune_process() ---", file=out, flush=True)
        if subprocess.call(cmd, env=os.environ.copy()) != 0 or not os.path.exists(path):
            return None
        with open(path) as f:
            return json.load(f)


def print_tuning_summary(default_rows: list, tuned_rows: list, out) -> None:
    """flowjit's ratio to NumPy per case with the default settings and with process tuning
    (each measured against NumPy in its own process)."""
    def ratios(rows):
        return {r["case"]: r["ratio_to_numpy"] for r in rows
                if r["variant"] == "flowjit.jit" and r["ratio_to_numpy"]}
    default, tuned = ratios(default_rows), ratios(tuned_rows)
    print("\nProcess tuning: flowjit.jit time / NumPy's time, default settings vs "
          "tune_process() (below 1 = faster than NumPy)", file=out)
    print(f"  {'case':<44} {'default':>8} {'tuned':>8} {'default/tuned':>14}", file=out)
    for case in dict.fromkeys(list(default) + list(tuned)):
        d, t = default.get(case), tuned.get(case)
        cost = f"{d / t:14.2f}" if d and t else f"{'-':>14}"
        print(f"  {case[:44]:<44} {d or float('nan'):8.2f} {t or float('nan'):8.2f} {cost}",
              file=out)
