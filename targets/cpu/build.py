"""Turning generated kernel source into a callable numba function.

Owns `build_kernel(source, name)`: the source is executed as a real module (its text is
registered with `linecache` so tracebacks and `inspect.getsource` show it) and the kernel is
compiled with `numba.njit(parallel=<uses prange>, error_model="numpy", nogil=True)`.
Compilation is lazy, on the first call, so building is cheap until the kernel runs.
"""

from __future__ import annotations

import hashlib
import linecache

import numba

NJIT_OPTIONS = dict(error_model="numpy", nogil=True)


def build_kernel(source: str, name: str = "kernel"):
    """Execute `source`, wrap its `name` function with numba and return the dispatcher."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    filename = f"<flowjit-kernel-{digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {"__name__": f"flowjit_kernel_{digest}"}
    exec(compile(source, filename, "exec"), namespace)
    parallel = "prange(" in source
    return numba.njit(parallel=parallel, **NJIT_OPTIONS)(namespace[name])
