"""Compiler benchmark: flowjit.jit against NumPy and its peers on workloads W1-W7.

W1 elementwise chain (10^4, 10^6, 10^7 elements), W2 softmax and W3 layernorm over the last
axis of 4096x1024, W4 1024x1024 matmul and relu(A@B + bias), W6 per-call overhead of x*2+1
on 8 values, W7 compile time of W2 (`benchmarks/compile_time.py`).  Inputs, references and
limits: `benchmarks/workloads.py`; the systems: `benchmarks/peers.py` (NumPy the baseline;
numexpr, numba, JAX, PyTorch eager and torch.compile, TensorFlow with XLA; flowjit.jit).

Method (the project's benchmarking rules; measuring in `benchmarks/timing.py`):
- every variant's first and second calls are checked against a float64 NumPy reference
  (float32 result, the case's rtol/atol); a wrong variant is reported WRONG and not timed,
  and a variant that raises is reported with the reason ("unavailable" for flowjit's missing
  pieces); the first call's time (compile included, excluded from the steady-state figures)
  is reported, and so is what flowjit logged meanwhile (a fallback to reference kernels);
- inputs are converted to each system's arrays outside the timed region; each system
  allocates its output each call;
- the variants of a case are timed interleaved over `--repeats` repetitions of batches
  calibrated to `--target-seconds` (one call per batch when a call is longer); the table
  gives median and min..max per call, the ratio of medians to NumPy (time / NumPy's time:
  below 1 is faster), the bandwidth (least bytes moved / time) or GFLOP/s and its fraction
  of the machine's limit, the cores actually used, and batches retried because other
  processes kept more than a quarter of a core busy;
- each variant is also timed one call at a time (`timing.measure_single`: threads asleep,
  inputs out of cache, 3 x `--repeats` calls), its ratio to NumPy's single call in the
  "1 call" column and a second summary table;
- every system gets the same thread count: the measuring runs in a child process whose
  environment sets OMP/OPENBLAS/MKL/NUMBA/NUMEXPR thread variables (and XLA_FLAGS for one
  thread) before any import, restricted by CPU affinity to that many CPUs; torch and TF get
  it through their threading APIs too.

Process tuning (runtime/process_tuning.py): flowjit changes no process-wide state by
default, and `flowjit.config.tune_process()` opts in to pinning its OpenMP workers, bounding
libgomp's and OpenBLAS's spin and running scipy's BLAS on one thread inside kernels.  The
report shows both, so the cost of the default is known: `--tuning both` (the default)
measures everything with the default settings, then NumPy and flowjit again in a fresh
process that opted in (W7 is not repeated), and ends with a table of flowjit's ratio to
NumPy under each; `--tuning default` or `--tuning tuned` measures one setting.  Each
report's header names its setting.

Run: `python -m flowjit bench compiler [--quick] [--workloads W1,W2] [--peers numba,jax]
[--threads N] [--repeats N] [--json PATH]` (or `python -m flowjit.benchmarks.compiler_workloads`,
which also takes `--tuning both|default|tuned`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import platform
import statistics
import sys
import time

from ..progress import progress
from ..runtime.process_tuning import tune_process
from . import compile_time
from .peers import PEER_KEYS, PEERS, FlowjitPeer, NumpyPeer, describe
from .tuning import TUNING_TEXT, print_tuning_summary, run_tuned, tuning_setting
from .timing import (BUSY_ELSEWHERE_LIMIT, add_timing_arguments, measure, measure_single,
                     pin_threads,
                     print_row_notes, rerun_in_child, thread_env, blas_cores)
from .workloads import (DEFAULT, QUICK, SGEMM_FLOPS, WORKLOADS, Case, build_cases,
                        check_output)

STEADY = tuple(w for w in WORKLOADS if w != "W7")


@dataclasses.dataclass
class Row:
    """One variant of one case: its status and, when it ran correctly, its timings."""

    workload: str
    case: str
    variant: str
    status: str             # ok, WRONG, FAILED, unavailable
    reason: str = ""
    first_call_s: float | None = None
    error_vs_tolerance: float | None = None
    median_s: float | None = None
    min_s: float | None = None
    max_s: float | None = None
    ratio_to_numpy: float | None = None
    single_s: float | None = None        # median of single calls (timing.measure_single)
    single_ratio: float | None = None    # single_s / NumPy's single_s
    gbytes_per_s: float | None = None
    gflops: float | None = None
    fraction_of_limit: float | None = None
    threads_used: float | None = None
    busy_elsewhere: float | None = None  # median cores other processes used meanwhile
    retries: int = 0
    note: str = ""          # warnings flowjit logged during the first call


class _Warnings(logging.Handler):
    """Collects the messages of WARNING records (instead of printing them)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage().removeprefix("flowjit.jit: "))


@contextlib.contextmanager
def _flowjit_warnings():
    """Collect what the `flowjit` loggers warn (e.g. a JIT falling back to reference kernels)."""
    handler, logger = _Warnings(), logging.getLogger("flowjit")
    logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)


def _fail_status(variant, exc: BaseException) -> str:
    return "unavailable" if isinstance(exc, variant.soft_errors) else "FAILED"


def run_case(case: Case, systems: list, repeats: int, target_seconds: float) -> list:
    """Check every variant of `systems` on `case`, time the correct ones; one Row each."""
    rows, timed = [], {}
    for system in systems:
        for variant in system.variants(case):
            row = Row(case.workload, case.label, variant.name, "ok")
            rows.append(row)
            if variant.call is None:
                row.status, row.reason = variant.build_status, variant.error
                continue
            try:
                with _flowjit_warnings() as warnings:
                    t0 = time.perf_counter()
                    out = variant.call()
                    row.first_call_s = time.perf_counter() - t0
                row.note = "; ".join(warnings)
                ok, message, worst = check_output(case, variant.to_numpy(out))
                if ok:  # the steady-state call must be right too (a JIT may switch paths)
                    ok, message, worst = check_output(case, variant.to_numpy(variant.call()))
                    message = message and message + " (second call)"
            except Exception as exc:  # noqa: BLE001 - reported in the table
                row.status, row.reason = _fail_status(variant, exc), describe(exc)
                continue
            row.error_vs_tolerance = worst
            if not ok:
                row.status, row.reason = "WRONG", message
                continue
            timed[variant.name] = (row, variant.call)
    if timed:
        results = measure({name: call for name, (_, call) in timed.items()}, repeats,
                          target_seconds)
        for m in results:
            row = timed[m.name][0]
            row.median_s, row.min_s, row.max_s = m.median, min(m.times), max(m.times)
            row.threads_used, row.retries = m.median_threads, m.retries
            row.busy_elsewhere = statistics.median(m.elsewhere)
            if case.bytes_moved:
                row.gbytes_per_s = case.bytes_moved / m.median / 1e9
                row.fraction_of_limit = case.bytes_moved / m.median / case.bandwidth_limit
            if case.flops:
                row.gflops = case.flops / m.median / 1e9
                row.fraction_of_limit = case.flops / m.median / SGEMM_FLOPS
        singles = measure_single({name: call for name, (_, call) in timed.items()},
                                 3 * repeats)
        for name, seconds in singles.items():
            timed[name][0].single_s = seconds
    base = next((r for r in rows if r.variant == "numpy" and r.median_s), None)
    for row in rows:
        if base is not None and row.median_s:
            row.ratio_to_numpy = row.median_s / base.median_s
        if base is not None and row.single_s and base.single_s:
            row.single_ratio = row.single_s / base.single_s
    return rows


# --- the report ---------------------------------------------------------------------------------


def _fmt_time(seconds: float, unit: float) -> str:
    return f"{seconds / unit:.3g}"


def _unit(seconds: float) -> tuple:
    for scale, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if seconds >= scale:
            return scale, name
    return 1e-6, "us"


def print_case(case: Case, rows: list, out) -> None:
    """The table of one case."""
    work = ""
    if case.bytes_moved:
        work = f"; {case.bytes_moved / 1e6:.3g} MB moved, limit " \
               f"{case.bandwidth_limit / 1e9:.0f} GB/s"
    if case.flops:
        work = f"; {case.flops / 1e9:.3g} GFLOP, limit {SGEMM_FLOPS / 1e9:.0f} GFLOP/s"
    print(f"\n{case.label}{work}", file=out)
    rate = "GB/s" if case.bytes_moved else "GFLOP/s" if case.flops else ""
    print(f"  {'variant':<17} {'median':>9} {'(min..max)':>17} {'ratio':>7} {rate:>8} "
          f"{'%limit':>6} {'thr':>4} {'1 call':>6} {'1st call':>9} {'err':>7} {'retry':>5}",
          file=out)
    for row in rows:
        if row.status != "ok":
            err = "" if row.error_vs_tolerance is None else \
                f" (err {row.error_vs_tolerance:.3g}x tol)"
            print(f"  {row.variant:<17} {row.status}: {row.reason}{err}", file=out)
            continue
        scale, unit = _unit(row.median_s)
        spread = f"({_fmt_time(row.min_s, scale)}..{_fmt_time(row.max_s, scale)})"
        value = row.gbytes_per_s if case.bytes_moved else row.gflops if case.flops else None
        rate_text = f"{value:8.1f}" if value is not None else f"{'':>8}"
        limit = f"{row.fraction_of_limit:6.0%}" if row.fraction_of_limit is not None \
            else f"{'':>6}"
        first_scale, first_unit = _unit(row.first_call_s)
        first = f"{_fmt_time(row.first_call_s, first_scale)} {first_unit}"
        print(f"  {row.variant:<17} {_fmt_time(row.median_s, scale):>6} {unit:<2} "
              f"{spread:>17} {row.ratio_to_numpy or float('nan'):7.2f} {rate_text} {limit} "
              f"{row.threads_used:4.1f} {row.single_ratio or float('nan'):6.2f} {first:>9} "
              f"{row.error_vs_tolerance:7.2g} "
              f"{row.retries:5d}", file=out)
    print_row_notes(rows, out)


def print_summary(rows: list, out) -> None:
    """Ratio to NumPy of every variant (rows) on every case (columns)."""
    cases = list(dict.fromkeys(r.case for r in rows))
    variants = list(dict.fromkeys(r.variant for r in rows))
    short = [c.split(",")[0].split(" ")[0] + (f" {c.split('n=')[1]}" if "n=" in c else "")
             + (" relu" if "relu" in c else "") for c in cases]
    print("\nSummary: time / NumPy's time (below 1 = faster than NumPy; - = not run, "
          "x = wrong, failed or unavailable)", file=out)
    print(f"  {'variant':<17} " + " ".join(f"{s:>9}" for s in short), file=out)
    cell = {(r.case, r.variant): r for r in rows}
    for v in variants:
        texts = []
        for c in cases:
            r = cell.get((c, v))
            texts.append("-" if r is None else "x" if r.status != "ok" else
                         f"{r.ratio_to_numpy:.2f}")
        print(f"  {v:<17} " + " ".join(f"{t:>9}" for t in texts), file=out)
    print("Single calls (threads asleep, inputs out of cache): time / NumPy's single call",
          file=out)
    for v in variants:
        texts = []
        for c in cases:
            r = cell.get((c, v))
            texts.append("-" if r is None or r.single_ratio is None else
                         "x" if r.status != "ok" else f"{r.single_ratio:.2f}")
        print(f"  {v:<17} " + " ".join(f"{t:>9}" for t in texts), file=out)


def _version(module: str) -> str:
    try:
        mod = sys.modules.get(module) or __import__(module)
        return getattr(mod, "__version__", "?")
    except Exception:  # noqa: BLE001 - not installed
        return "-"


def run(workloads=WORKLOADS, peers=PEER_KEYS, sizes=DEFAULT, repeats: int = 7,
        target_seconds: float = 0.1, threads: int | None = None, out=None,
        flowjit: bool = True) -> dict:
    """Run the chosen workloads with NumPy, `peers` and (unless `flowjit` is False) flowjit;
    print the tables to `out` (stdout); return the results.

    Returns {"meta": ..., "rows": [Row as dict, ...], "compile": [W7 rows]}.
    """
    out = out or sys.stdout
    threads = threads or int(os.environ.get("FLOWJIT_BENCH_THREADS", "0")) or \
        (os.cpu_count() or 1)
    systems, unavailable = [NumpyPeer()], {}
    for peer_class in [p for p in PEERS if p.key in peers] + [FlowjitPeer] * flowjit:
        peer = peer_class()
        try:
            peer.setup(threads)
            systems.append(peer)
        except Exception as exc:  # noqa: BLE001 - reported in the header
            unavailable[peer.key] = describe(exc)
    versions = {s.key: _version(s.key) for s in systems}
    tuning = tuning_setting()
    meta = dict(python=platform.python_version(), cpus=os.cpu_count(), threads=threads,
                repeats=repeats, target_seconds=target_seconds, versions=versions,
                unavailable_peers=unavailable, process_tuning=tuning)
    print(f"flowjit compiler benchmark; {os.cpu_count()} CPUs, {threads} thread(s) for every "
          f"system; {repeats} interleaved repetitions of ~{target_seconds:g} s batches",
          file=out)
    print("process tuning: " + TUNING_TEXT[tuning], file=out)
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()), file=out)
    print(f"OpenBLAS kernels: {blas_cores()}", file=out)
    for key, reason in unavailable.items():
        print(f"peer {key} not run: {reason}", file=out)
    rows = []
    with progress(build_cases([w for w in workloads if w in STEADY], sizes),
                  desc="compiler", unit="case") as bar:
        for case in bar:
            bar.set_postfix(case=case.workload)
            case_rows = run_case(case, systems, repeats, target_seconds)
            with bar.printing(out):
                print_case(case, case_rows, out)
                out.flush()
            rows.extend(case_rows)
    if rows:
        print_summary(rows, out)
        print("  thr = cores used (CPU time / wall); 1st call includes compiling; err = worst "
              "|error| as a fraction of the tolerance; retry = batches retried because other "
              "processes were busy.", file=out)
        busy = [r for r in rows if (r.busy_elsewhere or 0.0) > BUSY_ELSEWHERE_LIMIT]
        if busy:
            print(f"  ! {len(busy)} of {sum(r.median_s is not None for r in rows)} timed rows "
                  "ran while other processes were busy: rerun on a quiet machine.", file=out)
    compile_rows = []
    if "W7" in workloads:
        active = [s.key for s in systems]
        compile_rows = compile_time.run(active, threads, sizes.rows, sizes.cols)
        compile_time.report(compile_rows, (sizes.rows, sizes.cols), out)
    return {"meta": meta, "rows": [dataclasses.asdict(r) for r in rows],
            "compile": compile_rows}


def _parse_list(text: str, known: tuple, what: str) -> tuple:
    items = tuple(t.strip() for t in text.split(",") if t.strip() and t.strip() != "none")
    bad = [t for t in items if t not in known]
    if bad:
        raise SystemExit(f"unknown {what}: {', '.join(bad)} (known: {', '.join(known)})")
    return items


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark's options (shared with `python -m flowjit bench`)."""
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help="comma-separated among " + ",".join(WORKLOADS) + " (all)")
    parser.add_argument("--peers", default=",".join(PEER_KEYS),
                        help="comma-separated among " + ",".join(PEER_KEYS)
                        + " or 'none' (all); NumPy and flowjit always run, and may be named")
    parser.add_argument("--quick", action="store_true",
                        help="smaller sizes and, unless --repeats says, 3 repetitions")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")


def child_env(threads: int) -> dict:
    """The environment of the measuring process: thread counts, quiet TF, JAX on the CPU."""
    env = thread_env(threads)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    env.setdefault("JAX_PLATFORMS", "cpu")
    return env


def main(argv=None) -> int:
    """Command line: re-runs itself in a child with the thread environment, then measures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    add_timing_arguments(parser)
    parser.add_argument("--tuning", choices=("both", "default", "tuned"), default="both",
                        help="flowjit's process tuning: measure the default settings, then "
                        "NumPy and flowjit again with tune_process() (both), or one of them")
    args = parser.parse_args(argv)
    workloads = _parse_list(args.workloads, WORKLOADS, "workload")
    peers = _parse_list(args.peers, PEER_KEYS + ("numpy", "flowjit"), "peer")
    status = rerun_in_child("flowjit.benchmarks.compiler_workloads", argv, args.threads,
                            child_env(args.threads))
    if status is not None:
        return status
    pin_threads(args.threads)
    if args.tuning == "tuned":
        tune_process()   # before any kernel or peer starts a thread pool
    elif tuning_setting() == "tuned":
        raise SystemExit("FLOWJIT_TUNE_PROCESS is set: the default settings cannot be "
                         "measured in this process (unset it, or pass --tuning tuned)")
    repeats = args.repeats or (3 if args.quick else 7)
    result = run(workloads, peers, QUICK if args.quick else DEFAULT, repeats,
                 args.target_seconds, args.threads)
    if args.tuning == "both":
        tuned = run_tuned(args, [w for w in workloads if w in STEADY], sys.stdout)
        if tuned is not None:
            result["tuned"] = tuned
            print_tuning_summary(result["rows"], tuned["rows"], sys.stdout)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, default=float)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
