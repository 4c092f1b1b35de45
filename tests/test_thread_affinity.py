"""With process tuning opted in, the omp layer's workers are pinned to one CPU each; the
caller's thread is not.  By default nothing is pinned.

Each case runs in a fresh process (pinning happens once per process, when the first
parallel kernel starts the thread pool) and reports every thread's CPU mask.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from flowjit.targets.cpu import thread_affinity

WORKER = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import flowjit

    before = sorted(os.sched_getaffinity(0))
    f = flowjit.jit(lambda x: np.tanh(x) * 2.0 + 1.0)
    x = np.linspace(-3, 3, 1_000_003).astype(np.float32)
    ok = bool(np.allclose(f(x), np.tanh(x) * 2.0 + 1.0, rtol=1e-6, atol=1e-6))
    from flowjit.targets.cpu import thread_affinity
    masks = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            masks[tid] = sorted(os.sched_getaffinity(int(tid)))
        except OSError:
            pass
    print("RESULT " + json.dumps({
        "ok": ok, "before": before, "main": sorted(os.sched_getaffinity(0)),
        "pinned": {str(k): v for k, v in thread_affinity.pinned_workers().items()},
        "masks": masks, "layer": os.environ.get("NUMBA_THREADING_LAYER"),
        "spin": os.environ.get("GOMP_SPINCOUNT")}))
""")

needs_cpus = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="worker pinning needs Linux and at least 2 CPUs")


def run_worker(**env_changes) -> dict:
    """The WORKER's report, run with FLOWJIT_TUNE_PROCESS=1 unless `env_changes` says."""
    env = dict(os.environ, **{"FLOWJIT_TUNE_PROCESS": "1", **env_changes})
    for var in ("OMP_PROC_BIND", "GOMP_CPU_AFFINITY", "OMP_PLACES", "GOMP_SPINCOUNT"):
        if var not in env_changes:
            env.pop(var, None)
    out = subprocess.run([sys.executable, "-c", WORKER], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


@needs_cpus
def test_workers_get_distinct_cpus_and_the_caller_keeps_its_mask():
    result = run_worker(NUMBA_THREADING_LAYER="omp", NUMBA_NUM_THREADS="2")
    assert result["ok"]
    assert result["main"] == result["before"]          # the user's thread is untouched
    pinned = result["pinned"]
    assert set(pinned) == {"1"}                        # the one worker of 2 threads
    cpu = pinned["1"]
    assert cpu in result["before"] and cpu != result["before"][0]
    single = [mask for mask in result["masks"].values() if mask == [cpu]]
    assert len(single) == 1                            # exactly one thread bound there
    assert result["spin"] == thread_affinity.SPIN_COUNT  # libgomp's spin-wait is bounded


@needs_cpus
def test_a_spin_count_of_the_users_is_kept():
    result = run_worker(NUMBA_THREADING_LAYER="omp", NUMBA_NUM_THREADS="2",
                        GOMP_SPINCOUNT="12345")
    assert result["ok"] and result["spin"] == "12345" and set(result["pinned"]) == {"1"}


@needs_cpus
@pytest.mark.parametrize("env", [{"FLOWJIT_TUNE_PROCESS": "0"}, {"OMP_PROC_BIND": "false"}])
def test_nothing_is_pinned_by_default_or_when_the_user_binds(env):
    result = run_worker(NUMBA_THREADING_LAYER="omp", NUMBA_NUM_THREADS="2", **env)
    assert result["ok"]
    assert result["pinned"] == {}
    assert all(mask == result["before"] for mask in result["masks"].values())
    if env.get("FLOWJIT_TUNE_PROCESS") == "0":
        assert result["spin"] is None      # nor is libgomp's spin-wait set


@needs_cpus
def test_other_threading_layers_are_left_alone():
    result = run_worker(NUMBA_THREADING_LAYER="workqueue", NUMBA_NUM_THREADS="2")
    assert result["ok"]
    assert result["pinned"] == {}
    assert all(mask == result["before"] for mask in result["masks"].values())


@needs_cpus
def test_workers_are_pinned_when_kernels_run_through_numba_too():
    """With the disk cache off, kernels run through numba's dispatcher, which starts the
    thread pool itself; the pool is still started (and pinned) by flowjit first."""
    result = run_worker(NUMBA_THREADING_LAYER="omp", NUMBA_NUM_THREADS="2",
                        FLOWJIT_CACHE_DIR="off")
    assert result["ok"]
    assert set(result["pinned"]) == {"1"} and result["main"] == result["before"]
    assert result["spin"] == thread_affinity.SPIN_COUNT


LATE = textwrap.dedent("""
    import json, os
    import numpy as np
    import flowjit

    f = flowjit.jit(lambda x: np.tanh(x) * 2.0 + 1.0)
    x = np.linspace(-3, 3, 1_000_003).astype(np.float32)
    f(x)                                   # the pool starts untuned
    from flowjit.targets.cpu import thread_affinity
    untuned = thread_affinity.pinned_workers()
    report = flowjit.config.tune_process()
    print("RESULT " + json.dumps({"untuned": untuned, "report": report["pinned"],
                                  "pinned": thread_affinity.pinned_workers()}))
""")


@needs_cpus
def test_a_late_opt_in_pins_the_pool_already_running():
    env = dict(os.environ, NUMBA_THREADING_LAYER="omp", NUMBA_NUM_THREADS="2")
    for var in ("OMP_PROC_BIND", "GOMP_CPU_AFFINITY", "OMP_PLACES", "FLOWJIT_TUNE_PROCESS"):
        env.pop(var, None)
    out = subprocess.run([sys.executable, "-c", LATE], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    result = json.loads(line[len("RESULT "):])
    assert result["untuned"] == {}
    assert set(result["pinned"]) == {"1"} and result["report"] == result["pinned"]
