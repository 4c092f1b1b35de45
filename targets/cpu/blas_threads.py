"""One thread pool per kernel: scipy's OpenBLAS runs single-threaded while kernels run.

numba's `np.dot` calls the OpenBLAS bundled with scipy.  Its worker threads spin for a
while after each call, taking the cores from the kernel's own `prange` loops that follow
(measured on the W5 training step: its elementwise loop nests ran 2-3x slower after a
matmul).  Kernels therefore split large products themselves (matmul_code.py) and call BLAS
on one thread: `single_threaded_blas(kernel)` wraps a kernel that calls BLAS so that
scipy's OpenBLAS is set to one thread while it runs.  NumPy's own BLAS is another library
and is not touched.  The thread count is read and set through threadpoolctl (the supported
interface to BLAS thread pools), never by calling into the library directly; without a
scipy OpenBLAS that threadpoolctl can control, kernels are returned unwrapped.

Changing a library's thread count is process-wide tuning, so kernels are wrapped only once
the user opted in (`flowjit.config.tune_process()` or FLOWJIT_TUNE_PROCESS=1;
thread_affinity.tuning_enabled(); docs/architecture.md, "Manners in the user's process"):
by default scipy's BLAS keeps the user's thread count throughout.  flowjit does not keep
threadpoolctl's "controlling thread" after a change, and while the user's own
`threadpool_limits` holds it, threadpoolctl leaves flowjit's changes undone.

The user's thread count comes back RESTORE_DELAY_S after the last such kernel returns, from
a daemon thread, not at each return: raising OpenBLAS's thread count wakes its workers,
which then spin for ~0.1 s of CPU, and a restore after every call made the next call's
loops share a core with that spinner (the `mlp` corpus kernel: 2.2 ms typical, every few
calls 4.5 ms; with the restore deferred, 2.2 ms throughout).  A scipy BLAS call of the
user's own made within that delay runs on one thread; `restore_now()` ends the delay at
once (benchmarks call it before timing anything else).  A forked child restores at once.
"""

from __future__ import annotations

import os
import threading
import time

from . import thread_affinity

RESTORE_DELAY_S = 0.5

_lock = threading.Lock()
_wake = threading.Condition(_lock)
# depth: kernels running now; lowered: scipy's BLAS is at one thread, `saved` to come back;
# last: when the last kernel returned (time.monotonic); restorer: the daemon thread
_state = {"depth": 0, "lowered": False, "saved": 1, "last": 0.0, "restorer": None}
_functions: list = []   # [(get, set)] once looked up; empty list entry None = unavailable


def _blas_thread_functions():
    """(get_num_threads, set_num_threads) of scipy's bundled OpenBLAS through threadpoolctl,
    or None where threadpoolctl finds none."""
    if _functions:
        return _functions[0]
    found = None
    try:
        import scipy  # lazy: scipy loads only when this path runs
        import scipy.linalg.cython_blas  # noqa: F401 - loads the library numba calls
        from threadpoolctl import ThreadpoolController

        folder = os.path.realpath(os.path.dirname(scipy.__file__) + ".libs") + os.sep
        for lib in ThreadpoolController().select(internal_api="openblas").lib_controllers:
            if os.path.realpath(lib.filepath).startswith(folder):
                found = (lib.get_num_threads, _setter(lib))
                break
        from .openblas_spin import bound_openblas_spinning
        bound_openblas_spinning()   # scipy's OpenBLAS may have loaded just now (if tuned)
    except (ImportError, OSError):
        found = None
    _functions.append(found)
    return found


def _setter(lib):
    """set_num_threads of threadpoolctl's controller `lib`, giving up the "controlling
    thread" that threadpoolctl >= 3.6 gives the first thread to set a count, so that the
    user's own `threadpool_limits` in another thread keeps working."""
    release = getattr(type(lib), "clear_controlling_thread", None)

    def put(count: int) -> None:
        lib.set_num_threads(count)
        if release is not None:
            release()
    return put


def _enter(functions):
    get, put = functions
    with _lock:
        if not _state["lowered"]:
            _state["saved"] = get()
            put(1)
            _state["lowered"] = True
            _start_restorer()
        _state["depth"] += 1


def _leave(functions):
    with _lock:
        _state["depth"] -= 1
        _state["last"] = time.monotonic()


def _start_restorer():
    """Start the daemon thread that restores the thread count (caller holds the lock)."""
    thread = _state["restorer"]
    if thread is not None and thread.is_alive():
        _wake.notify()
        return
    thread = threading.Thread(target=_restore_when_idle, name="flowjit-blas-restore",
                              daemon=True)
    _state["restorer"] = thread
    thread.start()


def _restore_when_idle():
    """Daemon loop: restore once no kernel has run for RESTORE_DELAY_S, then wait again."""
    with _lock:
        while True:
            if not _state["lowered"]:
                _wake.wait()
                continue
            idle = time.monotonic() - _state["last"]
            if _state["depth"] == 0 and idle >= RESTORE_DELAY_S:
                _restore_locked()
            else:
                _wake.wait(RESTORE_DELAY_S - idle if _state["depth"] == 0 and idle > 0
                           else RESTORE_DELAY_S)


def _restore_locked():
    functions = _functions[0] if _functions else None
    if _state["lowered"] and functions is not None:
        functions[1](_state["saved"])
    _state["lowered"] = False


def restore_now() -> None:
    """Give scipy's BLAS its thread count back now, unless a kernel is running (then it comes
    back RESTORE_DELAY_S after the last one returns). Benchmarks call it before timing."""
    with _lock:
        if _state["depth"] == 0:
            _restore_locked()


def _after_fork_in_child():
    # the restorer thread does not exist in the child: restore at once, start afresh
    global _lock, _wake
    _lock = threading.Lock()
    _wake = threading.Condition(_lock)
    _state["depth"] = 0
    _state["restorer"] = None
    _restore_locked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _SingleThreadedBlas:
    """A kernel called with scipy's OpenBLAS on one thread (same call interface)."""

    def __init__(self, kernel, functions):
        self.kernel = kernel
        self._functions = functions
        if hasattr(kernel, "call_trusted"):
            self.call_trusted = self._call_trusted

    def __call__(self, *arrays):
        _enter(self._functions)
        try:
            return self.kernel(*arrays)
        finally:
            _leave(self._functions)

    def _call_trusted(self, arrays):
        _enter(self._functions)
        try:
            return self.kernel.call_trusted(arrays)
        finally:
            _leave(self._functions)

    def __getattr__(self, name):  # source, signatures, ... of the wrapped kernel
        return getattr(self.kernel, name)


def single_threaded_blas(kernel, source: str):
    """`kernel`, wrapped to run scipy's BLAS on one thread if process tuning is on and its
    `source` calls BLAS and has parallel loops (the two pools only fight when both are
    there; a kernel of small static sizes has no `prange` and is called without the ~1 us
    wrapper)."""
    if not thread_affinity.tuning_enabled():
        return kernel   # the default: the user's BLAS thread count is left alone
    calls_blas = "np.linalg." in source or any(
        f"{name}(" in source for name in ("np.dot", "matmul_into", "gram_rows"))
    if not calls_blas or "prange(" not in source:
        return kernel
    functions = _blas_thread_functions()
    if functions is None:
        return kernel
    return _SingleThreadedBlas(kernel, functions)
