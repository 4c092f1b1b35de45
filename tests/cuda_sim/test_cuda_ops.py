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
from test_targets import LOWERABLE, NOT_COMPILED, check_op_compiles_like_its_kernels

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


@pytest.mark.parametrize("op_type", LOWERABLE)
def test_cuda_target_equals_the_ops_reference_kernels(op_type):
    # sums in another order (block trees): a few ulp of the dtype
    check_op_compiles_like_its_kernels(op_type, CUDA, set(NOT_ON_CUDA) | NOT_COMPILED,
                                       {np.float64: 1e-12, np.float32: 2e-6})


def test_not_on_cuda_names_lowerable_ops():
    assert set(NOT_ON_CUDA) <= set(LOWERABLE)
