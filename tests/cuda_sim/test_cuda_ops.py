"""The CUDA target equals the ops' reference kernels on every op it renders, on numba-cuda's
simulator (run by tests/test_cuda_target.py in a process with NUMBA_ENABLE_CUDASIM=1).

Every op with a lowering is built from its own sample cases (tests/samples, drawn
derandomized, as tests/test_targets.py does for the reference target) and run twice: op by
op with the reference kernels, and as clusters compiled by the CUDA target under the
compile-always policy with compiler failures raised (`clustering.STRICT`).  The op must
really run inside a CUDA-compiled cluster in some case, except the ops of `NOT_ON_CUDA`,
which the target does not render (each with its reason): those must not.
"""

import numpy as np
import pytest

import flowjit as tf
from flowjit.runtime import clustering
from flowjit.targets.cuda import build
from test_targets import EXACT, EXTRA_CASES, LOWERABLE, NOT_COMPILED, OFF, _build, _draw, _run

# one device (the host) compiling with the CUDA target: the simulated GPU is left out, so
# the one-device executor runs (tests/cuda_sim/test_cuda_devices.py places ops on it)
CUDA = tf.ConfigProto(jit=tf.JitOptions.always(target="cuda"), device_count={"GPU": 0})

# Ops whose every case lowers to something the CUDA target does not render (its
# capabilities), so their clusters run with the reference kernels instead.
NOT_ON_CUDA = {
    "Sort": "a LIBCALL (sorting)", "ArgSort": "a LIBCALL (sorting)",
    "MatrixInverse": "a LIBCALL (LAPACK)", "MatrixDeterminant": "a LIBCALL (LAPACK)",
    "MatrixSolve": "a LIBCALL (LAPACK)", "Cholesky": "a LIBCALL (LAPACK)",
}


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    monkeypatch.setattr(clustering, "STRICT", True)


def test_this_process_simulates():
    assert build.simulator()


def _compare(op_type, case, fetches, expected, got):
    for t, e, g in zip(fetches, expected, got):
        e, g = np.asarray(e), np.asarray(g)
        where = f"{op_type}: {t.name}, feeds {case.feeds}"
        assert (g.dtype, g.shape) == (e.dtype, e.shape), where
        if e.dtype.kind not in "fc" or op_type in EXACT:
            np.testing.assert_array_equal(g, e, err_msg=where)
        else:
            # sums in another order (block trees): a few ulp of the dtype
            tight = {np.float64: 1e-12, np.float32: 2e-6}.get(e.dtype.type, 1e-3)
            np.testing.assert_allclose(g, e, rtol=tight, atol=tight, equal_nan=True,
                                       err_msg=where)


@pytest.mark.parametrize("op_type", LOWERABLE)
def test_cuda_target_equals_the_ops_reference_kernels(op_type):
    compiled_cases = 0
    for case in _draw(op_type) + EXTRA_CASES.get(op_type, []):
        graph, fetches, feeds, init = _build(case)
        expected, _ = _run(graph, fetches, feeds, init, OFF)
        got, compiled = _run(graph, fetches, feeds, init, CUDA)
        _compare(op_type, case, fetches, expected, got)
        tested = [op for op in graph.get_operations() if op.type == op_type]
        compiled_cases += bool(tested) and all(op in compiled for op in tested)
    if op_type in NOT_ON_CUDA or op_type in NOT_COMPILED:
        assert compiled_cases == 0, f"{op_type} now compiles for CUDA: update NOT_ON_CUDA"
    else:
        assert compiled_cases, f"no case of {op_type} ran in a CUDA-compiled cluster"


def test_not_on_cuda_names_lowerable_ops():
    assert set(NOT_ON_CUDA) <= set(LOWERABLE)
