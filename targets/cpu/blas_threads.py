"""One thread pool per kernel: scipy's OpenBLAS runs single-threaded while a kernel runs.

numba's `np.dot` calls the OpenBLAS bundled with scipy.  Its worker threads spin for a
while after each call, taking the cores from the kernel's own `prange` loops that follow
(measured on the W5 training step: its elementwise loop nests ran 2-3x slower after a
matmul).  Kernels therefore split large products themselves (matmul_code.py) and call BLAS
on one thread: `single_threaded_blas(kernel)` wraps a kernel that calls BLAS so that
scipy's OpenBLAS is set to one thread for the call and restored after it (~0.5 us), leaving
the user's own scipy calls as they were.  NumPy's own BLAS is another library and is not
touched.  Without a scipy OpenBLAS that exports the thread-count functions (another BLAS
vendor) kernels are returned unwrapped.
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading

_lock = threading.Lock()
_state = {"depth": 0, "saved": 1}
_functions: list = []   # [(get, set)] once looked up; empty list entry None = unavailable


def _blas_thread_functions():
    """(get_num_threads, set_num_threads) of scipy's bundled OpenBLAS, or None."""
    if _functions:
        return _functions[0]
    found = None
    try:
        import scipy
        import scipy.linalg.cython_blas  # noqa: F401 - loads the library numba calls

        folder = os.path.dirname(scipy.__file__) + ".libs"
        for path in sorted(glob.glob(os.path.join(folder, "libscipy_openblas*.so*"))):
            lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | ctypes.RTLD_LOCAL)
            get = getattr(lib, "scipy_openblas_get_num_threads", None)
            put = getattr(lib, "scipy_openblas_set_num_threads", None)
            if get is not None and put is not None:
                get.restype, get.argtypes = ctypes.c_int, []
                put.restype, put.argtypes = None, [ctypes.c_int]
                found = (get, put)
                break
    except (ImportError, OSError):
        found = None
    _functions.append(found)
    return found


def _enter(functions):
    get, put = functions
    with _lock:
        if _state["depth"] == 0:
            _state["saved"] = get()
            put(1)
        _state["depth"] += 1


def _leave(functions):
    with _lock:
        _state["depth"] -= 1
        if _state["depth"] == 0:
            functions[1](_state["saved"])


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
    """`kernel`, wrapped to run scipy's BLAS on one thread if its `source` calls BLAS and
    has parallel loops (the two pools only fight when both are there; a kernel of small
    static sizes has no `prange` and is called without the ~1 us wrapper)."""
    if ("np.dot(" not in source and "gram_rows(" not in source) or "prange(" not in source:
        return kernel
    functions = _blas_thread_functions()
    if functions is None:
        return kernel
    return _SingleThreadedBlas(kernel, functions)
