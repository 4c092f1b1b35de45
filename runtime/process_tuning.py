"""The one switch for flowjit's process-wide tuning: `tune_process()` / FLOWJIT_TUNE_PROCESS=1.

flowjit is a guest in the user's process (docs/architecture.md, "Manners in the user's
process"): by default it changes no other library's state, no thread's CPU mask and no
environment variable.  Some tuning that does is measurably faster on machines with few cores
(README, "The compiler"; `python -m flowjit bench compiler` shows both settings), so the
user may opt in, once per process, with `flowjit.config.tune_process()` (also
`flowjit.tune_process()`) or by starting the process with FLOWJIT_TUNE_PROCESS=1 (read when
flowjit is imported).  What it turns on, all in the CPU target:

- GOMP_SPINCOUNT=20000 unless set (libgomp reads it when it loads, so it only takes effect
  when the switch comes before the first parallel kernel), and the omp threading layer's
  workers pinned to one CPU each (targets/cpu/thread_affinity.py); nothing when the user
  binds threads (OMP_PROC_BIND, OMP_PLACES, GOMP_CPU_AFFINITY) or off Linux;
- the idle spin of every loaded OpenBLAS bounded to 2**20 cycles, unless
  OPENBLAS_THREAD_TIMEOUT is set (targets/cpu/openblas_spin.py);
- scipy's OpenBLAS set to one thread, through threadpoolctl, while a kernel that calls BLAS
  from parallel loops runs (targets/cpu/blas_threads.py); kernels built before the switch
  are not wrapped.

It cannot be undone in the same process; a process started without it is untouched.
"""

from __future__ import annotations

import os

from ..targets.cpu import native, openblas_spin, thread_affinity

ENV_VAR = "FLOWJIT_TUNE_PROCESS"


def tune_process() -> dict:
    """Opt in to flowjit's process-wide tuning (module docstring): pin the OpenMP workers of
    kernels, bound libgomp's and OpenBLAS's spin-waits, and run scipy's BLAS on one thread
    inside parallel kernels.  Call it once, before the first kernel runs (or set
    FLOWJIT_TUNE_PROCESS=1).  Returns what took effect now: {"gomp_spincount": the value in
    the environment, "openblas": {library: (spin cycles before, after) or None where left
    alone}, "pinned": {worker: cpu} of a thread pool already running}; later steps (the
    thread pool starting, scipy's OpenBLAS loading) apply it as they happen."""
    thread_affinity.enable_tuning()
    thread_affinity.bound_spinning()
    return {"gomp_spincount": os.environ.get("GOMP_SPINCOUNT"),
            "openblas": openblas_spin.bound_openblas_spinning(),
            "pinned": native.tune_running_threads()}


def process_tuned() -> bool:
    """Whether this process opted in to the tuning (tune_process() or the variable)."""
    return thread_affinity.tuning_enabled()


def tune_from_environment() -> bool:
    """Call tune_process() when FLOWJIT_TUNE_PROCESS is 1/true/yes/on; flowjit's import does
    this.  Returns whether the variable asked for it."""
    if os.environ.get(ENV_VAR, "").strip().lower() not in ("1", "true", "yes", "on"):
        return False
    tune_process()
    return True


tune_from_environment()
