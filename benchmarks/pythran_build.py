"""Ahead-of-time pythran builds of NumPy-corpus kernels, for `benchmarks/numpy_corpus.py`.

Owns turning one corpus kernel (a plain NumPy function of `tests/numpy_corpus.py`) into a
native module with pythran: the kernel's source, unchanged, in a module of its own that
imports NumPy as `np`, with a `#pythran export` line whose argument types come from the
arguments it will be called with (array dtype and rank, Python int/float/bool/complex); the
module is built with `-O3 -march=native` in a temporary folder and kept in the benchmark's
cache folder under a name that hashes the module's source, the flags and the pythran,
NumPy and Python versions, so a second run imports it without building.  A kernel that
pythran rejects raises `PythranRejected` with pythran's own reason, and the rejection is
cached too (a second run does not retry it).

The cache folder is `$FLOWJIT_BENCH_CACHE_DIR/pythran`, by default
`$XDG_CACHE_HOME/flowjit/bench/pythran` (`~/.cache/...`).  pythran is an optional comparison
system (the `bench` extra): `available()` says whether it is importable, and nothing here
imports it otherwise.  pythran builds with g++ (or `$CXX`); the build runs in a child
process (`python -m pythran.run`) with a time limit.

Matrix products: pythran calls a CBLAS for `@`/`np.dot` of float arrays.  With the
`scipy-openblas64` package (in the `bench` extra: the OpenBLAS build NumPy's wheels bundle) the
modules link it (`compiler.blas=scipy-openblas`); without it they use pythran's own loops
(`compiler.blas=none`): pythran's default, a system `libblas` with `cblas.h`, fails on a
machine without the BLAS headers.  `blas()` says which.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time

import numpy as np

FLAGS = ("-O3", "-march=native")
BUILD_SECONDS = 600.0   # a build that takes longer is reported as a failure


class PythranRejected(Exception):
    """pythran did not build the kernel; the message is pythran's reason."""


def available() -> bool:
    """Whether pythran is importable (it is never imported here)."""
    return importlib.util.find_spec("pythran") is not None


def version() -> str:
    """pythran's version, or "-" when it is not installed."""
    try:
        from importlib.metadata import version as dist_version
        return dist_version("pythran")
    except Exception:  # noqa: BLE001 - not installed
        return "-"


def blas() -> str:
    """pythran's `compiler.blas` setting for the builds: `scipy-openblas` when the
    `scipy_openblas64` package is importable, else `none` (pythran's own loops)."""
    return "scipy-openblas" if importlib.util.find_spec("scipy_openblas64") else "none"


def cache_dir() -> str:
    """The folder of built modules (created on demand)."""
    base = os.environ.get("FLOWJIT_BENCH_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "flowjit", "bench")
    return os.path.join(base, "pythran")


def export_type(value) -> str:
    """pythran's name of the type of one argument: `float64[:,:]` for a 2-D float64 array,
    `int`/`float`/`bool`/`complex` for Python scalars, the dtype name for NumPy scalars."""
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            raise PythranRejected("0-d array arguments have no pythran export type")
        return f"{_dtype_name(value.dtype)}[{','.join(':' * value.ndim)}]"
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, np.generic):
        return _dtype_name(value.dtype)
    for kind in (int, float, complex):
        if isinstance(value, kind):
            return kind.__name__
    raise PythranRejected(f"no pythran export type for a {type(value).__name__} argument")


def _dtype_name(dtype) -> str:
    dtype = np.dtype(dtype)
    return "bool" if dtype == np.bool_ else dtype.name


def module_source(fn, args: tuple) -> str:
    """The pythran module of `fn`: its source (dedented, decorators kept out) after an
    export line for `args`' types and `import numpy as np`."""
    source = textwrap.dedent(inspect.getsource(fn))
    source = source[source.index("def "):]
    types = ", ".join(export_type(a) for a in args)
    return f"#pythran export {fn.__name__}({types})\nimport numpy as np\n\n\n{source}"


def module_name(fn, source: str) -> str:
    """A module name unique to the source, the flags and the versions of the toolchain."""
    key = "\n".join([source, " ".join(FLAGS), blas(), version(), np.__version__,
                     sys.version, os.environ.get("CXX", "")])
    return f"corpus_{fn.__name__}_{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def build(fn, args: tuple, folder: str | None = None, timeout: float = BUILD_SECONDS):
    """(the compiled function, a note) for `fn` called with arguments like `args`: the
    note says how long the build took or that the module came from the cache.  Raises
    PythranRejected (pythran's reason) when pythran cannot build it, now or in an earlier
    run."""
    folder = folder or cache_dir()
    os.makedirs(folder, exist_ok=True)
    source = module_source(fn, args)
    name = module_name(fn, source)
    target = os.path.join(folder, name + sysconfig.get_config_var("EXT_SUFFIX"))
    rejected = os.path.join(folder, name + ".rejected")
    if os.path.exists(rejected):
        with open(rejected) as f:
            raise PythranRejected(f.read().strip() + " (cached)")
    if os.path.exists(target):
        return getattr(_load(name, target), fn.__name__), "pythran module cached"
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="flowjit-pythran-") as tmp:
        path = os.path.join(tmp, name + ".py")
        with open(path, "w") as f:
            f.write(source)
        built = os.path.join(tmp, os.path.basename(target))
        cmd = [sys.executable, "-m", "pythran.run", *FLAGS, "--config",
               f"compiler.blas={blas()}", path, "-o", built]
        try:
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            raise PythranRejected(f"pythran took more than {timeout:g} s to build it") \
                from None
        if proc.returncode != 0 or not os.path.exists(built):
            reason = rejection_reason(proc.stderr + proc.stdout, path)
            with open(rejected, "w") as f:
                f.write(reason)
            raise PythranRejected(reason)
        os.replace(built, target)   # atomic: a concurrent run sees all of it or nothing
    seconds = time.perf_counter() - t0
    return getattr(_load(name, target), fn.__name__), \
        f"pythran build {seconds:.1f} s (blas={blas()})"


def _load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_NOISE = re.compile(r"^(WARNING|INFO|Traceback|  File |\s*\^|\s*$)")


def rejection_reason(output: str, path: str) -> str:
    """The line of pythran's output that says why: its own error ("... error: ...",
    "PythranSyntaxError: ..."), else the first compiler error, else the last line."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", output).replace(path, "<kernel>")
    text = re.sub(r"\S+\.cpp:\d+:\d+:", "<generated C++>:", text)  # g++ on pythran's C++
    text = re.sub(r"\{anonymous\}::pythonic::(types::)?", "", text)
    lines = [ln.strip() for ln in text.splitlines() if not _NOISE.match(ln)]
    for pattern in (r"Pythran\w*Error|pythran\.\w+\.\w+Error", r"\berror:", r"Error\b"):
        found = [ln for ln in lines if re.search(pattern, ln)]
        if found:
            line = found[0]
            break
    else:
        line = lines[-1] if lines else "pythran failed without a message"
    line = re.sub(r"^CRITICAL:?\s*", "", line)
    return line if len(line) <= 200 else line[:197] + "..."
