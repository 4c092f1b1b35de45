"""NumPy-corpus benchmark: unmodified NumPy kernels under NumPy, flowjit.jit, numba.njit and
pythran.

Owns the timing of the kernels of `tests/numpy_corpus.py` (stencils, linear algebra, physics,
statistics, image filters, small NN layers, loops with a carried dependence; the same source
for every system) at their "bench" sizes: NumPy runs the plain function,
`flowjit.jit(fn, static_argnames=...)`, `numba.njit(fn)` (serial; only where the record says
numba compiles the source) and pythran (ahead of time, serial, `-O3 -march=native`; only when
pythran is installed) the unchanged function.  pythran builds each kernel's source as a
module of its own with an export signature made from the arguments' dtypes and ranks
(`benchmarks/pythran_build.py`), cached by source hash in the benchmark's cache folder so a
second run builds nothing; a kernel pythran rejects is FAILED with pythran's reason, and the
build time (or "cached") is a note of its row.

Method (as `benchmarks/compiler_workloads.py`; measuring in `benchmarks/timing.py`):
- every variant's first and second calls (fresh copies of the same arguments) are checked
  against NumPy's: the results (structure, shape; values within the kernel's tolerance, NaN
  in the same places) and the arguments the kernel mutates; a wrong variant is reported
  WRONG and not timed, one that raises FAILED with the reason (the summary shows "x"), a
  different result dtype is reported as a note; the first call's time (compiling included,
  excluded from the steady-state figures) is reported as "1st call";
- mutating kernels whose repetition keeps the workload the same (a stencil sweep, an
  in-place update) are timed as-is, over and over on the same arrays; the ones marked
  `fresh` in the corpus (repetition changes the workload: a dying game of life, drifting
  orbits) get a fresh copy of their arguments per call, made before each batch, outside the
  timed region;
- the variants of a kernel are timed interleaved over `--repeats` repetitions of batches
  calibrated to `--target-seconds`; the table gives median and min..max per call, the ratio
  of medians to NumPy (time / NumPy's time: below 1 is faster), the cores used, and batches
  retried because other processes kept more than a quarter of a core busy;
- the summary gives each kernel's speedup (NumPy's time / the variant's time: above 1 is
  faster) and the geometric mean speedup of flowjit and of numba over the kernels both ran;
- every system gets the same thread count: the measuring runs in a child process whose
  environment sets the thread variables before any import, restricted by CPU affinity.

Run: `python -m flowjit.benchmarks.numpy_corpus [--quick] [--kernels a,b]
[--variants numpy,flowjit,numba,pythran] [--threads N] [--repeats N] [--json PATH]`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.util
import json
import math
import os
import platform
import signal
import statistics
import sys
import threading
import time

import numpy as np

from ..progress import progress
from . import pythran_build
from .compiler_workloads import _flowjit_warnings, _unit, _version
from .peers import describe
from .timing import (BUSY_ELSEWHERE_LIMIT, MAX_RETRIES, Measurement, calibrate, measure,
                     pin_threads, print_row_notes, rerun_in_child, settle, time_batch,
                     add_blas_argument, blas_cores)

VARIANTS = ("numpy", "flowjit", "numba", "pythran")
LABELS = {"numpy": "numpy", "flowjit": "flowjit.jit", "numba": "numba.njit",
          "pythran": "pythran"}
FRESH_POOL_BYTES = 256 << 20  # fresh argument copies prepared for one batch, at most


def load_corpus():
    """The `numpy_corpus` module of the tests folder (importable as `flowjit.tests`)."""
    try:
        from flowjit.tests import numpy_corpus
        return numpy_corpus
    except ImportError:
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "tests", "numpy_corpus.py")
        spec = importlib.util.spec_from_file_location("numpy_corpus", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module


@dataclasses.dataclass
class Row:
    """One variant of one kernel: its status and, when it ran correctly, its timings."""

    kernel: str
    variant: str
    status: str             # ok, WRONG, FAILED, unsupported
    reason: str = ""
    first_call_s: float | None = None
    error_vs_tolerance: float | None = None
    median_s: float | None = None
    min_s: float | None = None
    max_s: float | None = None
    ratio_to_numpy: float | None = None
    speedup: float | None = None   # NumPy's median / this median
    threads_used: float | None = None
    busy_elsewhere: float | None = None
    retries: int = 0
    calls_per_batch: int = 0
    note: str = ""


# --- checking ----------------------------------------------------------------------------------


def compare(got, ref, kernel, where: str = "result") -> tuple:
    """(message or "", worst |error| / tolerance, notes) of `got` against NumPy's `ref`.

    A message means wrong: another structure or shape, NaN elsewhere, values beyond the
    kernel's tolerance.  A different dtype only adds a note (numba computes float32 kernels
    with Python-float constants in float64).
    """
    if isinstance(ref, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(ref):
            return f"{where}: {type(got).__name__} instead of {len(ref)} values", math.inf, []
        worst, notes = 0.0, []
        for i, (g, r) in enumerate(zip(got, ref)):
            message, err, more = compare(g, r, kernel, f"{where}[{i}]")
            if message:
                return message, err, notes + more
            worst, notes = max(worst, err), notes + more
        return "", worst, notes
    if ref is None:
        return ("" if got is None else f"{where}: a value where NumPy returns None"), 0.0, []
    try:
        g, r = np.asarray(got), np.asarray(ref)
    except Exception as exc:  # noqa: BLE001 - not array-like
        return f"{where}: {describe(exc)}", math.inf, []
    if g.shape != r.shape:
        return f"{where}: shape {g.shape}, NumPy's {r.shape}", math.inf, []
    notes = [] if g.dtype == r.dtype else [f"{where} is {g.dtype}, NumPy's {r.dtype}"]
    if r.size == 0:
        return "", 0.0, notes
    rtol, atol = kernel.tolerance(r.dtype)
    g64, r64 = g.astype(np.float64), r.astype(np.float64)
    nan_g, nan_r = np.isnan(g64), np.isnan(r64)
    if not np.array_equal(nan_g, nan_r):
        return f"{where}: NaN in other places", math.inf, notes
    fin = ~nan_r
    err = np.abs(g64[fin] - r64[fin])
    same_inf = np.isinf(r64[fin]) & (g64[fin] == r64[fin])
    err[same_inf] = 0.0
    tol = atol + rtol * np.abs(r64[fin])
    ratio = np.divide(err, tol, out=np.where(err > 0, np.inf, 0.0), where=tol > 0)
    worst = float(np.max(ratio, initial=0.0))
    if worst > 1.0 or not np.isfinite(worst):
        return f"{where}: error {worst:.3g}x the tolerance", worst, notes
    return "", worst, notes


def check_call(call, kernel, args, ref, ref_args) -> tuple:
    """Run `call` on copies of `args`; compare result and mutated arguments with NumPy's
    (`ref`, `ref_args`); returns (seconds, message, worst error / tolerance, notes)."""
    work = kernel_copy(args)
    t0 = time.perf_counter()
    got = call(*work)
    seconds = time.perf_counter() - t0
    message, worst, notes = compare(got, ref, kernel)
    for i in kernel.mutates:
        if message:
            break
        message, err, more = compare(work[i], ref_args[i], kernel, f"argument {i}")
        worst, notes = max(worst, err), notes + more
    return seconds, message, worst, notes


def kernel_copy(args: tuple) -> tuple:
    """Fresh copies of the arrays of `args` (scalars passed through)."""
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


# --- the variants ------------------------------------------------------------------------------


def build_variant(variant: str, kernel, args: tuple = (), timeout: float | None = None):
    """(callable, "") for `variant` of `kernel`, or (None, why not); pythran's callable is
    built for arguments like `args` (within `timeout` seconds) and comes with a note,
    (callable, "", note).  Raises when the system rejects the kernel."""
    if variant == "numpy":
        return kernel.fn, ""
    if variant == "pythran":
        if not pythran_build.available():
            return None, "pythran is not installed (the bench extra)"
        fn, note = pythran_build.build(kernel.fn, args,
                                       timeout=timeout or pythran_build.BUILD_SECONDS)
        return fn, "", note
    if variant == "numba":
        if not kernel.numba_ok:
            return None, kernel.numba_note or "numba cannot compile this source"
        import numba
        return numba.njit(kernel.fn), ""
    if variant == "flowjit":
        import flowjit
        return flowjit.jit(kernel.fn, static_argnames=kernel.static_argnames), ""
    raise ValueError(f"unknown variant {variant!r}")


@contextlib.contextmanager
def time_limit(seconds: float | None):
    """Raise TimeoutError inside the block after `seconds` (a compiler that hangs or blows
    up on one kernel must not stop the others).  No limit when `seconds` is falsy, off the
    main thread, or without SIGALRM; time spent inside one C call ends at its return."""
    usable = seconds and hasattr(signal, "setitimer") and \
        threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def on_alarm(signum, frame):
        raise TimeoutError(f"took more than {seconds:g} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class _FreshCalls:
    """A no-argument callable for `timing`: each call runs `fn` on the next of a pool of
    fresh argument copies, prepared by `prepare(calls)` before a batch (untimed); when the
    pool is empty (warm-up, calibration) it copies on the spot."""

    def __init__(self, fn, args: tuple):
        self.fn, self.args, self.pool = fn, args, []
        nbytes = sum(a.nbytes for a in args if isinstance(a, np.ndarray))
        self.max_pool = max(1, FRESH_POOL_BYTES // max(nbytes, 1))

    def prepare(self, calls: int) -> None:
        """Make `calls` fresh copies of the arguments (outside the timed region)."""
        self.pool = [kernel_copy(self.args) for _ in range(calls)]

    def __call__(self):
        return self.fn(*(self.pool.pop() if self.pool else kernel_copy(self.args)))


def measure_fresh(variants: dict, repeats: int, target_seconds: float) -> list:
    """`timing.measure` for `_FreshCalls` variants: same calibration, rotation and retries,
    with each batch's argument copies made before the batch (batches capped so the copies
    fit in FRESH_POOL_BYTES)."""
    calls = {name: min(calibrate(fn, target_seconds), fn.max_pool)
             for name, fn in variants.items()}
    results = {name: Measurement(name) for name in variants}
    names = list(variants)
    for rep in range(repeats):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            m, fn = results[name], variants[name]
            m.calls = calls[name]
            for attempt in range(MAX_RETRIES + 1):
                fn.prepare(calls[name])
                settle()
                per_call, elsewhere, threads = time_batch(fn, calls[name])
                if elsewhere <= BUSY_ELSEWHERE_LIMIT or attempt == MAX_RETRIES:
                    break
                m.retries += 1
            fn.pool = []
            m.times.append(per_call)
            m.threads.append(threads)
            m.elsewhere.append(elsewhere)
    return [results[name] for name in names]


def run_kernel(kernel, variants, repeats: int, target_seconds: float, size: str = "bench",
               check_timeout: float | None = 300.0):
    """Check every variant of `kernel`, time the correct ones; one Row each.

    The checking calls of a compiled variant (its compile included) that take longer than
    `check_timeout` seconds together make it FAILED (TimeoutError).
    """
    args = kernel.make_args(np.random.default_rng(0), size)
    ref_args = kernel_copy(args)
    ref = kernel.fn(*ref_args)
    rows, timed = [], {}
    for variant in variants:
        row = Row(kernel.name, LABELS[variant], "ok")
        rows.append(row)
        try:
            call, why_not, *build_note = build_variant(variant, kernel, args, check_timeout)
        except Exception as exc:  # noqa: BLE001 - reported in the table
            row.status, row.reason = "FAILED", describe(exc)
            continue
        if call is None:
            row.status, row.reason = "unsupported", why_not
            continue
        try:
            with _flowjit_warnings() as warnings, \
                    time_limit(None if variant == "numpy" else check_timeout):
                row.first_call_s, message, worst, notes = check_call(call, kernel, args, ref,
                                                                     ref_args)
                if not message:  # the steady-state call must be right too (a JIT may switch)
                    _, message, worst2, _ = check_call(call, kernel, args, ref, ref_args)
                    worst = max(worst, worst2)
                    message = message and message + " (second call)"
        except Exception as exc:  # noqa: BLE001 - reported in the table
            row.status, row.reason = "FAILED", describe(exc)
            continue
        row.note = "; ".join(dict.fromkeys(build_note + notes + warnings))
        row.error_vs_tolerance = worst
        if message:
            row.status, row.reason = "WRONG", message
            continue
        # fresh: every call gets new copies (repeating the mutation changes the workload);
        # otherwise repeating the call on the same arrays keeps the workload the same
        own_args = kernel_copy(args)
        timed[row.variant] = (row, _FreshCalls(call, args) if kernel.fresh
                              else (lambda call=call, a=own_args: call(*a)))
    if timed:
        fns = {name: fn for name, (_, fn) in timed.items()}
        results = (measure_fresh if kernel.fresh else measure)(fns, repeats, target_seconds)
        for m in results:
            row = timed[m.name][0]
            row.median_s, row.min_s, row.max_s = m.median, min(m.times), max(m.times)
            row.threads_used, row.retries = m.median_threads, m.retries
            row.busy_elsewhere, row.calls_per_batch = statistics.median(m.elsewhere), m.calls
    base = next((r for r in rows if r.variant == "numpy" and r.median_s), None)
    for row in rows:
        if base is not None and row.median_s:
            row.ratio_to_numpy = row.median_s / base.median_s
            row.speedup = base.median_s / row.median_s
    return rows


# --- the report --------------------------------------------------------------------------------


def _fmt(seconds: float) -> str:
    scale, unit = _unit(seconds)
    return f"{seconds / scale:.3g} {unit}"


def describe_kernel(kernel, size: str = "bench") -> str:
    """One line: the kernel, its argument shapes and dtypes, how mutation is timed."""
    args = kernel.make_args(np.random.default_rng(0), size)
    parts = [f"{a.dtype}{list(a.shape)}" if isinstance(a, np.ndarray) else repr(a)
             for a in args]
    text = f"{kernel.name}({', '.join(parts)})"
    if kernel.mutates:
        names = kernel.fn.__code__.co_varnames
        how = "fresh copies per call" if kernel.fresh else "repeated on the same arrays"
        text += f"; mutates {', '.join(names[i] for i in kernel.mutates)} ({how})"
    return text


def print_kernel(kernel, rows: list, out, size: str = "bench") -> None:
    """The table of one kernel."""
    print(f"\n{describe_kernel(kernel, size)}", file=out)
    print(f"  {'variant':<12} {'median':>9} {'(min..max)':>17} {'ratio':>7} {'thr':>4} "
          f"{'1st call':>9} {'err':>7} {'retry':>5}", file=out)
    for row in rows:
        if row.status != "ok":
            err = "" if row.error_vs_tolerance in (None, math.inf) else \
                f" (err {row.error_vs_tolerance:.3g}x tol)"
            print(f"  {row.variant:<12} {row.status}: {row.reason}{err}", file=out)
            continue
        scale, unit = _unit(row.median_s)
        spread = f"({row.min_s / scale:.3g}..{row.max_s / scale:.3g})"
        print(f"  {row.variant:<12} {row.median_s / scale:6.3g} {unit:<2} {spread:>17} "
              f"{row.ratio_to_numpy or float('nan'):7.2f} {row.threads_used:4.1f} "
              f"{_fmt(row.first_call_s):>9} {row.error_vs_tolerance:7.2g} "
              f"{row.retries:5d}", file=out)
    print_row_notes(rows, out)


def geomean(values: list) -> float | None:
    """Geometric mean of positive values (None for none)."""
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summarize(rows: list) -> dict:
    """Geometric mean speedups: per variant over all the kernels it ran, flowjit and numba
    over the kernels both ran, and flowjit, numba and pythran over the kernels all three ran."""
    speed = {}
    for r in rows:
        if r.speedup:
            speed.setdefault(r.variant, {})[r.kernel] = r.speedup
    fj, nb = speed.get(LABELS["flowjit"], {}), speed.get(LABELS["numba"], {})
    py = speed.get(LABELS["pythran"], {})
    both = [k for k in fj if k in nb]
    all3 = [k for k in both if k in py]
    return {
        "geomean_speedup": {v: geomean(list(s.values())) for v, s in speed.items()},
        "kernels_run": {v: len(s) for v, s in speed.items()},
        "both_ran": both,
        "geomean_speedup_both": {LABELS["flowjit"]: geomean([fj[k] for k in both]),
                                 LABELS["numba"]: geomean([nb[k] for k in both])},
        "all_three_ran": all3,
        "geomean_speedup_all_three": {LABELS[v]: geomean([s[k] for k in all3])
                                      for v, s in (("flowjit", fj), ("numba", nb),
                                                   ("pythran", py))},
    }


def print_summary(rows: list, summary: dict, out) -> None:
    """Per-kernel speedups over NumPy and their geometric means."""
    kernels = list(dict.fromkeys(r.kernel for r in rows))
    variants = [v for v in dict.fromkeys(r.variant for r in rows) if v != "numpy"]
    cell = {(r.kernel, r.variant): r for r in rows}
    print("\nSummary: speedup = NumPy's time / the variant's time (above 1 = faster than "
          "NumPy; x = wrong or failed; - = unsupported or not run)", file=out)
    print(f"  {'kernel':<18} {'numpy':>9} " + " ".join(f"{v:>12}" for v in variants),
          file=out)
    for k in kernels:
        base = cell.get((k, "numpy"))
        texts = []
        for v in variants:
            r = cell.get((k, v))
            texts.append("-" if r is None or r.status == "unsupported" else
                         "x" if r.status != "ok" else f"{r.speedup:.3g}")
        base_text = _fmt(base.median_s) if base is not None and base.median_s else "x"
        print(f"  {k:<18} {base_text:>9} " + " ".join(f"{t:>12}" for t in texts), file=out)
    means = summary["geomean_speedup"]
    runs = summary["kernels_run"]
    print(f"  {'geomean (ran)':<18} {'':>9} " + " ".join(
        f"{means[v]:>8.2f} ({runs[v]:>2})" if means.get(v) else f"{'-':>12}"
        for v in variants), file=out)
    both, gm = summary["both_ran"], summary["geomean_speedup_both"]
    if both:
        print(f"  geometric mean speedup over the {len(both)} kernels both flowjit.jit and "
              f"numba.njit ran: flowjit.jit {gm[LABELS['flowjit']]:.2f}, numba.njit "
              f"{gm[LABELS['numba']]:.2f}", file=out)
    else:
        print("  no kernel ran under both flowjit.jit and numba.njit", file=out)
    all3, gm3 = summary["all_three_ran"], summary["geomean_speedup_all_three"]
    if all3:
        print(f"  over the {len(all3)} kernels flowjit.jit, numba.njit and pythran all ran: "
              + ", ".join(f"{v} {g:.2f}" for v, g in gm3.items()), file=out)


def run(kernels=None, variants=VARIANTS, repeats: int = 7, target_seconds: float = 0.1,
        threads: int | None = None, out=None, size: str = "bench",
        check_timeout: float | None = 300.0) -> dict:
    """Check and time `kernels` (names; all by default) under `variants` (NumPy always);
    print the tables to `out` (stdout); return the results.

    Returns {"meta": ..., "rows": [Row as dict, ...], "summary": summarize(rows)}.
    """
    out = out or sys.stdout
    corpus = load_corpus()
    chosen = [k for k in corpus.CORPUS if kernels is None or k.name in kernels]
    variants = ["numpy"] + [v for v in VARIANTS if v in variants and v != "numpy"]
    threads = threads or int(os.environ.get("FLOWJIT_BENCH_THREADS", "0")) or \
        (os.cpu_count() or 1)
    versions = {v: pythran_build.version() if v == "pythran" else _version(v)
                for v in variants}
    meta = dict(python=platform.python_version(), cpus=os.cpu_count(), threads=threads,
                repeats=repeats, target_seconds=target_seconds, size=size, versions=versions)
    print(f"flowjit NumPy-corpus benchmark; {os.cpu_count()} CPUs, {threads} thread(s) for "
          f"every system; {repeats} interleaved repetitions of ~{target_seconds:g} s batches; "
          f"{len(chosen)} kernels at size {size!r}", file=out)
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()), file=out)
    print(f"OpenBLAS kernels: {blas_cores()}", file=out)
    if "pythran" in variants and pythran_build.available():
        print(f"pythran: {' '.join(pythran_build.FLAGS)}, compiler.blas="
              f"{pythran_build.blas()}, modules cached in {pythran_build.cache_dir()}",
              file=out)
    rows = []
    with progress(chosen, desc="numpy corpus", unit="kernel") as bar:
        for kernel in bar:
            bar.set_postfix(kernel=kernel.name)
            kernel_rows = run_kernel(kernel, variants, repeats, target_seconds, size,
                                     check_timeout)
            with bar.printing(out):
                print_kernel(kernel, kernel_rows, out, size)
                out.flush()
            rows.extend(kernel_rows)
    summary = summarize(rows)
    if rows:
        print_summary(rows, summary, out)
        print("  ratio = time / NumPy's time; thr = cores used (CPU time / wall); 1st call "
              "includes compiling; err = worst |error| as a fraction of the tolerance; "
              "retry = batches retried because other processes were busy.", file=out)
        busy = [r for r in rows if (r.busy_elsewhere or 0.0) > BUSY_ELSEWHERE_LIMIT]
        if busy:
            print(f"  ! {len(busy)} of {sum(r.median_s is not None for r in rows)} timed rows "
                  "ran while other processes were busy: rerun on a quiet machine.", file=out)
    return {"meta": meta, "rows": [dataclasses.asdict(r) for r in rows], "summary": summary}


def _parse_list(text: str, known: tuple, what: str) -> tuple:
    items = tuple(t.strip() for t in text.split(",") if t.strip())
    bad = [t for t in items if t not in known]
    if bad:
        raise SystemExit(f"unknown {what}: {', '.join(bad)} (known: {', '.join(known)})")
    return items


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark's options (for `python -m flowjit bench numpy` too)."""
    add_blas_argument(parser)
    parser.add_argument("--kernels", default="",
                        help="comma-separated corpus kernel names (all)")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma-separated among " + ",".join(VARIANTS)
                        + " (all; NumPy always runs)")
    parser.add_argument("--quick", action="store_true",
                        help="unless --repeats/--target-seconds say, 3 repetitions of "
                        "~0.03 s batches")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="threads for every system (all CPUs)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="interleaved repetitions (7; 3 with --quick)")
    parser.add_argument("--target-seconds", type=float, default=None,
                        help="calibrated duration of one timed batch (0.1; 0.03 with --quick)")
    parser.add_argument("--check-timeout", type=float, default=300.0,
                        help="seconds a compiled variant may take for its two checking calls "
                        "(compiling included) before it is reported FAILED (300)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")


def main(argv=None) -> int:
    """Command line: re-runs itself in a child with the thread environment, then measures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    names = tuple(k.name for k in load_corpus().CORPUS)
    kernels = _parse_list(args.kernels, names, "kernel") or None
    variants = _parse_list(args.variants, VARIANTS, "variant")
    status = rerun_in_child("flowjit.benchmarks.numpy_corpus", argv, args.threads)
    if status is not None:
        return status
    pin_threads(args.threads)
    repeats = args.repeats or (3 if args.quick else 7)
    target = args.target_seconds or (0.03 if args.quick else 0.1)
    result = run(kernels, variants, repeats, target, args.threads,
                 check_timeout=args.check_timeout)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, default=float)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
