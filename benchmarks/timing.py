"""Shared timing helpers of the benchmarks: calibrated batches, interleaving, interference.

What every benchmark here measures the same way (see the project's benchmarking rules):

- `calibrate` finds how many calls of a variant take about `target_seconds` (one call when a
  single call is already that long), after a warm-up call;
- `time_batch` times one batch and reads `/proc/stat` around it, so it also returns how many
  cores *other* processes kept busy meanwhile and how many cores this process used (process
  CPU time / wall time: the threads actually used);
- `measure` times several variants in interleaved repetitions (A B C, then B C A, ...),
  retrying a batch (at most `MAX_RETRIES` times) that ran while more than
  `BUSY_ELSEWHERE_LIMIT` cores were busy elsewhere, and counts the retries.  Before each
  batch it lets this process go quiet (`settle`): runtimes measured in one process leave
  threads spinning after their calls (OpenBLAS ~0.1 s, OpenMP, XLA's pools), and those must
  not take the cores from the next variant's batch;
- `measure_single` times ONE call of each variant at a time, as a real program meets a
  kernel between other code: after the process went quiet (threads asleep) and a NumPy pass
  over a buffer twice the last-level cache (the inputs evicted); median per variant;
- `thread_env` is the environment that pins every runtime (OpenMP, BLAS, numba, numexpr,
  XLA) to one thread count; benchmarks run their measurements in a child process started with
  it, because most runtimes read these variables once, at import;
- `--native-blas` drops OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE from that environment: this
  project's machines set them (older OpenBLAS builds miscomputed on their CPU), which pins
  NumPy's and scipy's OpenBLAS to Haswell (AVX2) kernels; `blas_cores()` names the kernels
  each library runs, for the report's header.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Callable

BLAS_PIN_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
BUSY_ELSEWHERE_LIMIT = 0.25  # cores
MAX_RETRIES = 2

THREAD_ENV_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                   "NUMBA_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
                   "NUMEXPR_MAX_THREADS")


def thread_env(threads: int, base: dict | None = None) -> dict:
    """A copy of `base` (default os.environ) with every thread-count variable set to `threads`.

    XLA (JAX, TensorFlow) has no thread-count variable; for one thread its Eigen pool is turned
    off through XLA_FLAGS.  `FLOWJIT_BENCH_THREADS` tells the child the intended count, which
    it also enforces with CPU affinity (`pin_threads`).
    """
    env = dict(os.environ if base is None else base)
    for var in THREAD_ENV_VARS:
        env[var] = str(threads)
    env["FLOWJIT_BENCH_THREADS"] = str(threads)
    if threads == 1:
        flags = env.get("XLA_FLAGS", "")
        env["XLA_FLAGS"] = f"{flags} --xla_cpu_multi_thread_eigen=false".strip()
    return env


def pin_threads(threads: int) -> int:
    """Restrict this process to the first `threads` CPUs it may use; returns the CPUs kept.

    Thread-count variables cover most runtimes; affinity also bounds the ones that size their
    pools from the hardware (XLA's CPU client, for one).  Without `sched_setaffinity`
    (not Linux) nothing changes and os.cpu_count() is returned.
    """
    if not hasattr(os, "sched_getaffinity"):
        return os.cpu_count() or 1
    cpus = sorted(os.sched_getaffinity(0))
    if 0 < threads < len(cpus):
        os.sched_setaffinity(0, set(cpus[:threads]))
        return threads
    return len(cpus)


def _busy_cpu_seconds():
    """Seconds all CPUs spent busy (not idle/iowait) since boot, or None without /proc."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except OSError:
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def time_batch(fn: Callable[[], object], calls: int):
    """(seconds per call, cores busy elsewhere, cores this process used) for `calls` calls."""
    busy0, cpu0, t0 = _busy_cpu_seconds(), time.process_time(), time.perf_counter()
    for _ in range(calls):
        fn()
    wall = time.perf_counter() - t0
    own = time.process_time() - cpu0
    busy1 = _busy_cpu_seconds()
    elsewhere = 0.0 if busy0 is None else max(0.0, (busy1 - busy0 - own) / wall)
    return wall / calls, elsewhere, own / wall


def calibrate(fn: Callable[[], object], target_seconds: float) -> int:
    """Number of calls that takes about `target_seconds` (after a warm-up call)."""
    fn()
    calls = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - t0
        if elapsed >= target_seconds / 4 or calls >= 1 << 22:
            return max(1, int(calls * target_seconds / max(elapsed, 1e-9)))
        calls *= 4


class Measurement:
    """Per-call times of one variant over the repetitions."""

    def __init__(self, name: str):
        self.name = name
        self.times: list = []
        self.threads: list = []
        self.elsewhere: list = []  # cores other processes kept busy, per kept batch
        self.retries = 0
        self.calls = 0

    @property
    def median(self) -> float:
        """Median seconds per call."""
        return statistics.median(self.times)

    @property
    def median_threads(self) -> float:
        """Median cores used (process CPU time / wall time) over the batches."""
        return statistics.median(self.threads)


SETTLE_MAX_SECONDS = 0.5


def _restore_blas_threads() -> None:
    """Give scipy's BLAS back the thread count flowjit's kernels lowered (it comes back by
    itself after a delay; the wake-up spin it causes must not fall into the next batch)."""
    try:
        from flowjit.targets.cpu.blas_threads import restore_now
    except ImportError:
        return
    restore_now()


def settle(max_seconds: float = SETTLE_MAX_SECONDS) -> None:
    """Wait (at most `max_seconds`) until this process's threads stop using the CPU: idle
    for 10 ms means every spinning worker pool has gone to sleep. flowjit's pending restore
    of scipy's BLAS thread count happens first, so that its wake-up spin is waited out too."""
    _restore_blas_threads()
    deadline = time.perf_counter() + max_seconds
    while time.perf_counter() < deadline:
        cpu = time.process_time()
        time.sleep(0.01)
        if time.process_time() - cpu < 0.001:
            return


def measure(variants: dict, repeats: int, target_seconds: float) -> list:
    """Interleaved, calibrated timing of `variants` ({name: callable}); rotates the order.

    Returns one `Measurement` per variant, in the order of `variants`.
    """
    calls = {name: calibrate(fn, target_seconds) for name, fn in variants.items()}
    results = {name: Measurement(name) for name in variants}
    names = list(variants)
    for rep in range(repeats):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            m = results[name]
            m.calls = calls[name]
            for attempt in range(MAX_RETRIES + 1):
                settle()
                per_call, elsewhere, threads = time_batch(variants[name], calls[name])
                if elsewhere <= BUSY_ELSEWHERE_LIMIT or attempt == MAX_RETRIES:
                    break
                m.retries += 1
            m.times.append(per_call)
            m.threads.append(threads)
            m.elsewhere.append(elsewhere)
    return [results[name] for name in names]


def measure_single(variants: dict, repeats: int) -> dict:
    """{name: median seconds of one call}, each call timed alone after `settle()` and a NumPy
    sweep of twice the last-level cache; the variants interleaved and rotated as in
    `measure`."""
    import numpy as np

    from .workloads import last_level_cache_bytes

    sweep = np.ones(2 * last_level_cache_bytes() // 8)
    times = {name: [] for name in variants}
    names = list(variants)
    for rep in range(repeats):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            settle()
            sweep.sum()
            start = time.perf_counter()
            variants[name]()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def add_timing_arguments(parser) -> None:
    """The command-line options every timed benchmark shares: --threads, --repeats and
    --target-seconds (its defaults: all CPUs, 7 repetitions or 3 with --quick, 0.1 s)."""
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="threads for every system (all CPUs)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="interleaved repetitions (7; 3 with --quick)")
    parser.add_argument("--target-seconds", type=float, default=0.1,
                        help="calibrated duration of one timed batch (0.1)")
    add_blas_argument(parser)


def add_blas_argument(parser) -> None:
    """--native-blas (module docstring)."""
    parser.add_argument("--native-blas", action="store_true",
                        help="unset OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE for the measurement, so "
                        "NumPy's and scipy's OpenBLAS use the kernels for this CPU")


def blas_cores() -> str:
    """Which OpenBLAS kernels NumPy and scipy (whose BLAS numba calls) run, e.g.
    "numpy Haswell, scipy Haswell"; "unknown" where a library does not say."""
    import ctypes
    import glob

    names = []
    for label, module, symbol in (("numpy", "numpy", "scipy_openblas_get_corename64_"),
                                  ("scipy", "scipy", "scipy_openblas_get_corename")):
        core = "unknown"
        try:
            folder = os.path.dirname(__import__(module).__file__) + ".libs"
            for path in glob.glob(os.path.join(folder, "libscipy_openblas*.so*")):
                fn = getattr(ctypes.CDLL(path), symbol, None)
                if fn is not None:
                    fn.restype = ctypes.c_char_p
                    core = fn().decode()
        except (ImportError, OSError):
            pass
        names.append(f"{label} {core}")
    return ", ".join(names)


def rerun_in_child(module: str, argv, threads: int, env: dict | None = None) -> int | None:
    """Run `python -m module argv` with every runtime pinned to `threads` (most read their
    thread counts once, at import) and return its exit status; None when this process is
    already that child (`FLOWJIT_BENCH_THREADS` says so), which should then measure."""
    import subprocess
    import sys

    if os.environ.get("FLOWJIT_BENCH_THREADS") == str(threads):
        return None
    args = list(argv if argv is not None else sys.argv[1:])
    env = blas_env(env if env is not None else thread_env(threads), "--native-blas" in args)
    return subprocess.call([sys.executable, "-m", module, *args], env=env)


def blas_env(env: dict, native: bool) -> dict:
    """A copy of `env`, without OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE when `native`."""
    env = dict(env)
    for var in BLAS_PIN_VARS if native else ():
        env.pop(var, None)
    return env


def print_row_notes(rows, out) -> None:
    """The notes of measured rows, then a warning when other processes kept the machine
    busy during the batches (rows with `variant`, `note` and `busy_elsewhere`)."""
    for row in rows:
        if row.note:
            print(f"  note, {row.variant}: {row.note}", file=out)
    busy = max((r.busy_elsewhere for r in rows if r.busy_elsewhere is not None), default=0.0)
    if busy > BUSY_ELSEWHERE_LIMIT:
        print(f"  ! other processes kept up to {busy:.1f} cores busy during these batches "
              "(after retries): times and ratios are unreliable", file=out)
