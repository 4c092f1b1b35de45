"""Each worker of the kernels' OpenMP thread pool runs on a CPU of its own.

The `omp` threading layer's workers spin between parallel regions (libgomp's default wait
policy), and so does the calling thread at the barrier that ends each region.  When the
scheduler puts a worker and the calling thread on the same CPU while the other CPUs are
idle, the one spinning holds that CPU until its time slice ends (4 ms at HZ=250) while the
other, which it waits for, cannot run; the idle CPUs pull one of them over only at a tick.
A kernel with many short parallel regions then runs at the speed of one core or worse.
Measured here (2 vCPUs, /proc/<tid>/schedstat around each timed batch): in the slow
batches the calling thread and the worker each waited 4–8 ms on a run queue per 16 ms
batch while one CPU sat idle; `mlp`, `syrk_update` and `symm_from_lower` of the NumPy corpus
ran 2–7x slower than their own fastest batches.

`pin_workers(layer, threads)` runs one parallel region in which worker k (k = 1 ..
threads-1; the OpenMP thread number) restricts itself to the k-th CPU of the process's
affinity mask (modulo its size).  The calling thread (k = 0) is left as it is: it is the
user's thread, and a mask set on it would be inherited by every thread and child process it
starts later.  Workers pinned to distinct CPUs can no longer pile up on one CPU with each
other, and a calling thread that lands on a worker's CPU is the only thread the scheduler
can move, so it moves it, though only at a balancing tick.  `bound_spinning()` therefore
also shortens libgomp's spin-wait (GOMP_SPINCOUNT), so that a thread sharing a CPU with the
one it waits for yields it within ~0.5 ms.  OMP_PROC_BIND, OMP_PLACES or
GOMP_CPU_AFFINITY, when set, mean the user binds threads and this module does nothing.
Other threading layers (workqueue, tbb) sleep instead of spinning and are left alone.
libgomp keeps one worker pool per calling thread: kernels called from other threads (the
Session's inter-op pool) get workers that are not pinned.

All of this is process-wide tuning, so it is off by default: it runs only once the user
opted in (`flowjit.config.tune_process()` or FLOWJIT_TUNE_PROCESS=1: runtime/
process_tuning.py calls `enable_tuning()` here; docs/architecture.md, "Manners in the
user's process").  This module holds that switch for the whole CPU target: openblas_spin.py
and blas_threads.py ask it too.
"""

from __future__ import annotations

import ctypes
import os

_BODY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                         ctypes.c_void_p)
_PARALLEL_FOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                 ctypes.c_size_t, ctypes.c_int)
_pinned: dict = {}   # {"cpus": {thread number: cpu}} once pinned
_tuning = {"on": False}   # the process-tuning switch (off: flowjit changes nothing here)
SPIN_COUNT = "20000"  # libgomp's spins before a waiting thread sleeps (its default: 300000)


def enable_tuning() -> None:
    """Turn the CPU target's process-wide tuning on (runtime/process_tuning.py calls this
    when the user opts in); it cannot be turned off again in the same process."""
    _tuning["on"] = True


def tuning_enabled() -> bool:
    """Whether the user opted in to process-wide tuning (off by default)."""
    return _tuning["on"]


def bound_spinning() -> None:
    """Shorten libgomp's spin-wait (GOMP_SPINCOUNT, unless set) before it is loaded: a thread
    that shares a CPU with the one it waits for gives the CPU up after ~0.5 ms instead of a
    whole time slice.  This covers what pinning cannot: the calling thread itself landing on
    a worker's CPU, until the scheduler moves it.  A libgomp
    already loaded by another library keeps the setting it read."""
    if wanted():
        os.environ.setdefault("GOMP_SPINCOUNT", SPIN_COUNT)


def wanted() -> bool:
    """Whether worker pinning is on: tuning opted in, Linux, no user binding in effect."""
    if not _tuning["on"] or not hasattr(os, "sched_setaffinity"):
        return False
    return not any(os.environ.get(v) for v in ("OMP_PROC_BIND", "GOMP_CPU_AFFINITY",
                                               "OMP_PLACES"))


def pin_workers(layer, threads: int) -> dict:
    """Pin the OpenMP workers of numba's threading-layer module `layer` (omppool) to one CPU
    each; returns {thread number: cpu} of the workers pinned ({} when nothing was done)."""
    if _pinned or not wanted() or threads < 2:
        return dict(_pinned.get("cpus", {}))
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return {}
    thread_number = ctypes.CFUNCTYPE(ctypes.c_int)(layer.get_thread_id)
    chosen: dict = {}

    def body(args, dims, steps, data):
        k = thread_number()
        if k > 0:
            cpu = cpus[k % len(cpus)]
            try:
                os.sched_setaffinity(0, {cpu})
                chosen[k] = cpu
            except OSError:
                pass

    callback = _BODY(body)
    dims = (ctypes.c_size_t * 1)(threads)
    steps = (ctypes.c_size_t * 1)(0)
    # one iteration per thread (static schedule); ctypes drops the GIL for the call and
    # each thread's callback takes it back, so the bodies run one after another
    _PARALLEL_FOR(layer.parallel_for)(ctypes.cast(callback, ctypes.c_void_p), None, dims,
                                      steps, None, 0, 0, threads)
    _pinned["cpus"] = dict(chosen)
    return dict(chosen)


def pinned_workers() -> dict:
    """{OpenMP thread number: cpu} of the workers pinned in this process ({} if none)."""
    return dict(_pinned.get("cpus", {}))
