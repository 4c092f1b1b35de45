"""flowjit changes no process-wide state by default; `tune_process()` opts in to its tuning.

Each case runs in a fresh process: it snapshots what other libraries and the OS keep
process-wide (threadpoolctl's thread counts per library, the environment, every thread's CPU
mask, OpenBLAS's private spin bound `thread_timeout`), imports flowjit, runs a jitted
function with a matrix product and elementwise work (BLAS and parallel loops), and
snapshots again (docs/architecture.md, "Manners in the user's process").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import flowjit
from flowjit.targets.cpu import openblas_spin, thread_affinity

_TARGET_DIR = os.path.dirname(openblas_spin.__file__)

# Environment variables flowjit may set for reasons of its own: none.  (It used to turn off
# numba's message colouring at import; tests/test_kernel_cache.py checks that the cache
# writer no longer swaps sys.stdout without it.)  Everything must come out as it went in.
SET_AT_IMPORT = ()

_SNAPSHOT = """
import importlib, json, os, sys, types
import numpy as np
import scipy.linalg.cython_blas  # noqa: F401 - the user's process has scipy's BLAS too
from threadpoolctl import threadpool_info

def _spin_reader():
    # openblas_spin.py's own code, loaded without importing flowjit (reads only)
    if "flowjit" in sys.modules:
        from flowjit.targets.cpu import openblas_spin
        return openblas_spin
    probe = types.ModuleType("_probe")
    probe.__path__ = [TARGET_DIR]
    sys.modules["_probe"] = probe
    return importlib.import_module("_probe.openblas_spin")

def snapshot():
    masks = {}
    for tid in os.listdir("/proc/self/task") if os.path.isdir("/proc/self/task") else ():
        try:
            masks[tid] = sorted(os.sched_getaffinity(int(tid)))
        except OSError:
            pass
    return {"blas": {i["filepath"]: i["num_threads"] for i in threadpool_info()},
            "apis": {i["filepath"]: i["internal_api"] for i in threadpool_info()},
            "env": dict(os.environ),
            "main_mask": sorted(os.sched_getaffinity(0))
                         if hasattr(os, "sched_getaffinity") else None,
            "masks": masks, "spin": _spin_reader().thread_timeouts()}
"""

_WORKLOAD = """
def run_jitted():
    import flowjit
    f = flowjit.jit(lambda a, b: np.tanh(a @ b) * 2.0 + 1.0)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((384, 256)).astype(np.float32)
    b = rng.standard_normal((256, 320)).astype(np.float32)
    expected = np.tanh(a.astype(np.float64) @ b) * 2.0 + 1.0
    for _ in range(3):
        assert np.allclose(f(a, b), expected, rtol=1e-4, atol=1e-4)
    flowjit.wait_for_cache_writes()
"""


@pytest.fixture(scope="module")
def kernel_cache(tmp_path_factory):
    """One kernel cache for this module's child processes: the first compiles the workload
    (and the shared GEMM, ~20 s) through numba, the others load what it stored."""
    return tmp_path_factory.mktemp("manners_cache")


def _run(body: str, cache_dir, **env_changes) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in SET_AT_IMPORT and not k.startswith(
        ("GOMP_", "OMP_", "OPENBLAS_THREAD_TIMEOUT", "FLOWJIT_TUNE"))}
    env.update(FLOWJIT_CACHE_DIR=str(cache_dir), **env_changes)
    code = (_SNAPSHOT.replace("TARGET_DIR", repr(_TARGET_DIR)) + _WORKLOAD
            + textwrap.dedent(body))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


_DEFAULT = """
before = snapshot()
import flowjit
run_jitted()
after = snapshot()
from flowjit.targets.cpu import native
print("RESULT " + json.dumps({"before": before, "after": after,
                              "numba_imported": "numba" in sys.modules,
                              "tuned": flowjit.config.process_tuned()}))
"""


def _assert_untouched(got: dict) -> None:
    before, after = got["before"], got["after"]
    assert not got["tuned"]
    for path, threads in before["blas"].items():        # NumPy's and scipy's BLAS
        assert after["blas"].get(path) == threads, (path, before["blas"], after["blas"])
    for path, threads in after["blas"].items():         # loaded since: libgomp, say
        if path not in before["blas"] and after["apis"][path] == "openmp":
            assert "OMP_NUM_THREADS" in before["env"] or threads == len(before["main_mask"])
    env_before = {k: v for k, v in before["env"].items() if k not in SET_AT_IMPORT}
    env_after = {k: v for k, v in after["env"].items() if k not in SET_AT_IMPORT}
    assert env_after == env_before
    assert "GOMP_SPINCOUNT" not in after["env"]
    assert after["main_mask"] == before["main_mask"]
    # no thread of the process (kernel workers, BLAS workers) got a mask of its own
    assert all(mask == before["main_mask"] for mask in after["masks"].values())
    assert after["spin"] == before["spin"]


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="needs Linux")
def test_default_settings_leave_the_process_as_they_found_it(kernel_cache):
    # the module's first child: the cache is empty
    cold = _run(_DEFAULT, kernel_cache)                # compiles through numba
    assert cold["numba_imported"]
    _assert_untouched(cold)
    warm = _run(_DEFAULT, kernel_cache)                # cached: the native loader, no numba
    assert not warm["numba_imported"]
    _assert_untouched(warm)
    if not cold["before"]["spin"]:
        pytest.skip("no OpenBLAS with a readable thread_timeout here (the rest was checked)")


_TUNED = """
before = snapshot()
import flowjit
report = None
if not flowjit.config.process_tuned():
    report = flowjit.config.tune_process()
run_jitted()
after = snapshot()
from flowjit.targets.cpu import blas_threads, thread_affinity
probe = None
functions = blas_threads._blas_thread_functions()
if functions is not None:
    inside = []
    wrapped = blas_threads.single_threaded_blas(
        lambda: inside.append(functions[0]()), "np.dot(a, b)  # prange(")
    blas_threads.restore_now()   # the workload's kernels may have left it lowered
    outside = functions[0]()
    wrapped()
    blas_threads.restore_now()
    probe = {"wrapped": wrapped is not None and hasattr(wrapped, "kernel"),
             "outside": outside, "inside": inside, "restored": functions[0]()}
print("RESULT " + json.dumps({"before": before, "after": after, "report": report,
                              "tuned": flowjit.config.process_tuned(),
                              "pinned": thread_affinity.pinned_workers(), "probe": probe},
                             default=str))
"""


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="needs Linux")
@pytest.mark.parametrize("how", ["environment", "call"])
def test_tune_process_turns_the_tuning_on(kernel_cache, how):
    env = {"FLOWJIT_TUNE_PROCESS": "1"} if how == "environment" else {}
    got = _run(_TUNED, kernel_cache, NUMBA_THREADING_LAYER="omp", **env)
    before, after = got["before"], got["after"]
    assert got["tuned"]
    assert (got["report"] is None) == (how == "environment")
    assert after["env"].get("GOMP_SPINCOUNT") == thread_affinity.SPIN_COUNT
    assert after["main_mask"] == before["main_mask"]   # the caller's thread is never pinned
    skipped = []
    if len(before["main_mask"]) >= 2:
        assert got["pinned"], "no OpenMP worker was pinned"
        assert all(cpu in before["main_mask"] for cpu in got["pinned"].values())
    else:
        skipped.append("pinning needs 2 CPUs")
    numpy_blas = [p for p in before["spin"] if "numpy" in p]
    if numpy_blas:
        path = numpy_blas[0]
        assert after["spin"][path] == min(before["spin"][path], openblas_spin.SPIN_CYCLES)
    else:
        skipped.append("NumPy's OpenBLAS has no readable thread_timeout here")
    probe = got["probe"]
    if probe is None or probe["outside"] < 2:
        skipped.append("scipy's BLAS is not an OpenBLAS threadpoolctl controls with 2+ threads")
    else:
        assert probe["wrapped"] and probe["inside"] == [1]
        assert probe["restored"] == probe["outside"]
    if skipped:
        pytest.skip("checked the rest; " + "; ".join(skipped))


def test_this_test_process_is_not_tuned():
    """Nothing in flowjit's import or the suite's set-up opts in on its own."""
    assert not flowjit.config.process_tuned() or os.environ.get("FLOWJIT_TUNE_PROCESS")
    assert thread_affinity.tuning_enabled() == flowjit.config.process_tuned()
