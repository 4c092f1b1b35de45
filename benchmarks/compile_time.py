"""W7: compile time of W2 (softmax over the last axis), cold and warm, in fresh processes.

For each system a small script runs in a fresh Python process (with the same thread-count
environment as the steady-state benchmark): it imports NumPy and the system (the *import*
time, reported separately), makes the float32 input and converts it to the system's array,
then times from there to the first result returned (*first result*: tracing, compiling and
one run; JAX's result is waited for), and checks that result against a float64 reference.

*Cold* runs with an empty cache folder, *warm* in another fresh process with the folder the
cold run filled: `FLOWJIT_CACHE_DIR` for flowjit, `NUMBA_CACHE_DIR` with `@njit(cache=True)`
for numba, JAX's persistent compilation cache, `TORCHINDUCTOR_CACHE_DIR` for torch.compile.
NumPy compiles nothing and TensorFlow's XLA has no persistent cache, so they run once.
Each figure is one process, not a median: compile times vary by tens of percent.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

from ..progress import progress
from .timing import thread_env

_PRELUDE = """\
import json, os, sys, time
t_begin = time.perf_counter()
_threads = int(os.environ.get("FLOWJIT_BENCH_THREADS", "0"))
if hasattr(os, "sched_setaffinity") and 0 < _threads < len(os.sched_getaffinity(0)):
    os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:_threads]))
import numpy as np
"""

_EPILOGUE = """\
t_imported = time.perf_counter()
result = {"import_s": t_imported - t_begin}
import logging
class _Notes(logging.Handler):
    def emit(self, record):
        message = record.getMessage().removeprefix("flowjit.jit: ")
        result["note"] = (result.get("note", "") + " " + message).strip()
logging.getLogger("flowjit").addHandler(_Notes(logging.WARNING))
try:
    x = (np.random.default_rng(0).standard_normal((ROWS, COLS)) * 3.0).astype(np.float32)
    xn = prepare(x)
    t0 = time.perf_counter()
    out = first(xn)
    result["first_s"] = time.perf_counter() - t0
    out = np.asarray(to_numpy(out))
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    ref = e / e.sum(axis=-1, keepdims=True)
    err = np.abs(out - ref) / (1e-8 + 1e-5 * np.abs(ref))
    result["err"] = float(err.max()) if out.dtype == np.float32 else float("inf")
except Exception as exc:
    lines = str(exc).strip().splitlines()
    result["error"] = type(exc).__name__ + ": " + (lines[0] if lines else "")
    result["soft"] = isinstance(exc, (AttributeError, NotImplementedError, ImportError))
print("W7RESULT " + json.dumps(result))
"""


@dataclasses.dataclass(frozen=True)
class System:
    """How one system compiles W2 in a fresh process."""

    name: str
    peer: str           # the --peers key that enables it ("" = always)
    code: str           # imports + prepare(x) + first(xn) + to_numpy(out)
    cache_var: str = ""  # environment variable naming its cache folder ("" = no cache)


SYSTEMS = (
    System("numpy", "", """
prepare = to_numpy = lambda a: a
def first(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
"""),
    System("flowjit.jit", "flowjit", """
import flowjit as fj
prepare = to_numpy = lambda a: a
def first(x):
    return fj.jit(lambda t: fj.nn.softmax(t))(x)
""", "FLOWJIT_CACHE_DIR"),
    System("numba @njit(cache=True)", "numba", """
import importlib.util, numba
_spec = importlib.util.spec_from_file_location("numba_kernels", NUMBA_KERNELS)
_kernels = sys.modules["numba_kernels"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_kernels)
prepare = to_numpy = lambda a: a
def first(x):
    return numba.njit(cache=True)(_kernels.softmax)(x)
""", "NUMBA_CACHE_DIR"),
    System("jax.jit", "jax", """
import jax
jax.config.update("jax_platforms", "cpu")
if os.environ.get("BENCH_JAX_CACHE"):
    jax.config.update("jax_compilation_cache_dir", os.environ["BENCH_JAX_CACHE"])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
prepare, to_numpy = jax.device_put, np.asarray
def first(x):
    return jax.jit(lambda t: jax.nn.softmax(t, axis=-1))(x).block_until_ready()
""", "BENCH_JAX_CACHE"),
    System("torch.compile", "torch", """
import torch
prepare, to_numpy = torch.from_numpy, lambda t: t.numpy()
def first(x):
    return torch.compile(lambda t: torch.softmax(t, dim=-1), dynamic=False)(x)
""", "TORCHINDUCTOR_CACHE_DIR"),
    System("tf.function(xla)", "tensorflow", """
import tensorflow as tf
prepare, to_numpy = tf.constant, lambda t: t.numpy()
def first(x):
    return tf.function(lambda t: tf.nn.softmax(t, axis=-1), jit_compile=True)(x)
"""),
)


def script(system: System, rows: int, cols: int) -> str:
    """The Python source the fresh process runs for `system`."""
    kernels = os.path.join(os.path.dirname(os.path.abspath(__file__)), "numba_kernels.py")
    consts = f"ROWS, COLS, NUMBA_KERNELS = {rows}, {cols}, {kernels!r}\n"
    return _PRELUDE + consts + textwrap.dedent(system.code) + _EPILOGUE


def _run_once(path: str, env: dict, timeout: float) -> dict:
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, path], env=env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:g} s", "soft": False}
    wall = time.perf_counter() - t0
    for line in proc.stdout.splitlines():
        if line.startswith("W7RESULT "):
            result = json.loads(line[len("W7RESULT "):])
            result["process_s"] = wall
            return result
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit code {proc.returncode}: {tail[:160]}", "soft": False}


def run(peers, threads: int, rows: int = 4096, cols: int = 1024,
        timeout: float = 300.0) -> list:
    """Cold and warm first-result times of W2 for NumPy and the chosen `peers` (keys of
    `benchmarks/peers.py`, "flowjit" among them).

    Returns one dict per system: name, cold and warm result dicts (import_s, first_s,
    process_s, err, or error with soft=True when flowjit's JIT is not there yet).
    """
    rows_out = []
    base = thread_env(threads)
    base.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    base.setdefault("JAX_PLATFORMS", "cpu")
    chosen = [s for s in SYSTEMS if not s.peer or s.peer in peers]
    for system in progress(chosen, desc="W7 compile time", unit="system"):
        with tempfile.TemporaryDirectory(prefix="flowjit-w7-") as tmp:
            path = os.path.join(tmp, "w7_script.py")
            with open(path, "w") as f:
                f.write(script(system, rows, cols))
            env = dict(base)
            if system.cache_var:
                env[system.cache_var] = os.path.join(tmp, "cache")
                os.makedirs(env[system.cache_var])
            cold = _run_once(path, env, timeout)
            warm = None
            if system.cache_var and "error" not in cold:
                warm = _run_once(path, env, timeout)
        rows_out.append({"system": system.name, "cold": cold, "warm": warm,
                         "cache": system.cache_var or None})
    return rows_out


def _warm_cell(result) -> str:
    if result is None:
        return "   (no persistent cache)"
    if "error" in result:
        return f"   warm run failed: {result['error']}"
    return f" {result['import_s']:13.2f} {result['first_s']:10.3f}"


def report(rows: list, rows_cols: tuple, out) -> None:
    """Print W7's table."""
    print(f"\nW7 compile time of W2 softmax {rows_cols[0]}x{rows_cols[1]}: one fresh process "
          "per figure, seconds", file=out)
    header = (f"  {'system':<24} {'cold: import':>12} {'1st result':>10} "
              f"{'warm: import':>13} {'1st result':>10}  {'check':<6}")
    print(header, file=out)
    for row in rows:
        cold, warm = row["cold"], row["warm"]
        if "error" in cold:
            status = "unavailable" if cold.get("soft") else "FAILED"
            print(f"  {row['system']:<24} {status}: {cold['error']}", file=out)
            continue
        check = "ok" if cold.get("err", 1e9) <= 1.0 else "WRONG"
        print(f"  {row['system']:<24} {cold['import_s']:12.2f} {cold['first_s']:10.3f}"
              f"{_warm_cell(warm)}  {check}", file=out)
        if cold.get("note"):
            print(f"  note, {row['system']}: {cold['note']}", file=out)
    print("  import = NumPy + the system; 1st result = from the input ready to the first "
          "result returned (trace, compile, one run); warm = a new process reusing the cold "
          "run's cache folder.", file=out)
