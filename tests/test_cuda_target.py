"""The CUDA target (targets/cuda): every kind of kernel builds to PTX for sm_90 without a GPU,
the simulator suite (tests/cuda_sim) passes in a process of its own, the CPU path never
imports numba-cuda, and without a GPU `/gpu:0` ops fall back to the CPU only when soft
placement allows it.  Tests needing a real GPU carry the `gpu` marker.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import flowjit
from flowjit.targets.cuda import build

pytestmark = pytest.mark.skipif(not build.installed(), reason="numba-cuda is not installed "
                                "(pip install -e '.[cuda]')")
TESTS = Path(__file__).parent


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _recurrence(x, n):
    h = x
    i = 0
    while i < n:
        h = np.tanh(h * 0.9 + x) * 1.1
        i += 1
    return h


def _scatter(table, ids, rows):
    table[ids] = rows
    return table


RNG = np.random.default_rng(0)
F32 = RNG.standard_normal((8, 16)).astype(np.float32)
KINDS = {
    # name: (function, arguments, PTX fragments the kernels must contain)
    "elementwise": (lambda x, y: np.tanh(x) * y + np.exp(-y), (F32, F32), ["ld.global", "st.global"]),
    "row softmax": (_softmax, (F32,), ["shfl.sync.down", "bar.sync"]),
    "split sum": (lambda x: x.sum(), (RNG.standard_normal(100),), ["shfl.sync.down"]),
    "argmax": (lambda x: np.argmax(x, axis=1), (F32,), ["bar.sync"]),
    "bool any": (lambda x: (x > 0).any(axis=0), (F32,), []),
    "integer ops": (lambda a, b: (a << (b & 7)) ^ (a // (b | 1)) % 7,
                    (np.arange(12, dtype=np.int32), np.arange(12, dtype=np.int32)), []),
    "float functions": (lambda x: np.round(x) + np.arctan2(x, 1.5) + np.maximum(x, 0.25),
                        (F32,), []),
    "matmul": (lambda a, b: a @ b, (F32, F32.T.copy()), ["fma.rn.f32", ".shared"]),
    "batched transposed matmul": (lambda a, b: np.swapaxes(a, 1, 2) @ b,
                                  (RNG.standard_normal((2, 5, 3)), RNG.standard_normal((2, 5, 4))),
                                  ["fma.rn.f64"]),
    "transpose": (lambda x: x.T.copy(), (F32,), [".shared"]),
    "while loop": (_recurrence, (F32[0], np.array(3)), ["_w"]),
    "scatter": (_scatter, (np.zeros((6, 3)), np.array([1, 4, 1]), np.ones((3, 3))), []),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kernel_kind_builds_to_ptx_for_sm90(kind):
    fn, args, fragments = KINDS[kind]
    lowered = flowjit.jit(fn, target="cuda", measure_runs=0).lower(*args)
    assert lowered.compiled, str(lowered)
    ptx = lowered.stage("ptx")
    heads = [line for line in ptx.splitlines() if line.startswith("// ---- ")]
    assert heads, ptx[:500]
    assert ptx.count(".target sm_90") == len(heads)
    assert ptx.count(".entry") >= len(heads)
    for fragment in fragments:
        assert fragment in ptx, f"{kind}: no {fragment!r} in its PTX"


def test_simulator_suite_passes_in_its_own_process():
    """tests/cuda_sim needs NUMBA_ENABLE_CUDASIM=1 from the start of the process (numba-cuda
    reads it once), so it runs as a pytest of its own; its failures are shown here."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
         "-W", "ignore::RuntimeWarning", str(TESTS / "cuda_sim")],
        cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=1200)
    tail = (result.stdout + result.stderr)[-6000:]
    assert result.returncode == 0, tail
    assert " passed" in result.stdout and " failed" not in result.stdout, tail


def test_the_cpu_path_never_imports_numba_cuda():
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import flowjit as tf
        f = tf.jit(lambda x: np.exp(x).sum(), measure_runs=0)
        f(np.ones(10))
        g = tf.Graph()
        with g.as_default():
            y = tf.constant([1.0, 2.0]) * 3.0
        with tf.Session(graph=g, config=tf.ConfigProto(device_count={"GPU": 0})) as s:
            s.run(y)
        print("numba_cuda" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env={k: v for k, v in os.environ.items()
                                           if k != "NUMBA_ENABLE_CUDASIM"})
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.gpu
def test_kernels_on_a_real_gpu_equal_numpy():
    from numba import cuda

    if build.simulator() or not cuda.is_available():
        pytest.skip("needs a GPU (numba-cuda finds none)")
    fn, args, _ = KINDS["row softmax"]
    got = flowjit.jit(fn, target="cuda", measure_runs=0)(*args)
    np.testing.assert_allclose(got, fn(*args), rtol=1e-5, atol=1e-6)


def test_calling_a_cuda_kernel_without_a_gpu_says_what_to_do():
    from numba import cuda

    if build.simulator() or cuda.is_available():
        pytest.skip("this process has a GPU or the simulator")
    fn, args, _ = KINDS["elementwise"]
    lowered = flowjit.jit(fn, target="cuda", measure_runs=0).lower(*args)
    kernel = lowered.entry.cluster.kernel if hasattr(lowered.entry, "cluster") else \
        lowered.entry.compiled.cluster.kernel
    with pytest.raises(RuntimeError, match="NUMBA_ENABLE_CUDASIM=1"):
        kernel(*args)


def test_without_numba_cuda_the_cuda_target_says_what_to_install(monkeypatch):
    from flowjit.runtime import targets

    monkeypatch.setattr(targets.cuda_build, "installed", lambda: False)
    with pytest.raises(ImportError, match=r"flowjit\[cuda\]"):
        targets.get_target("cuda")
