"""The GPU device type: how many there are and which ops have a GPU kernel (docs/
architecture.md, "The CUDA target").

GPUs are counted through numba-cuda (`numba.cuda.gpus` when `cuda.is_available()`); under
numba-cuda's simulator (the user's NUMBA_ENABLE_CUDASIM=1) that is one simulated device, so
GPU placement, Send/Recv between host and GPU and the CUDA target's kernels all run on a
machine without a GPU.  numba-cuda is imported only when someone asks for GPUs.

An op has a GPU kernel unless it must run on the host: sorting and LAPACK routines (the
CUDA target renders no library calls), queues and other blocking ops, py_func, and ops on
strings.  A GPU device's clusters compile with the CUDA target (`TARGETS`); its ops not in a
cluster run their NumPy kernels on host copies of their inputs.  Values crossing between the
host and a GPU partition go through the Send/Recv pairs of every cross-device edge.
"""

from __future__ import annotations

import functools
import importlib.util

from ..ops.registry import Trait
from ..targets.target import TargetKind

TARGETS = (TargetKind.CUDA, TargetKind.REFERENCE)

HOST_ONLY = frozenset({
    "Sort", "ArgSort", "TopKV2", "MatrixInverse", "MatrixDeterminant", "MatrixSolve",
    "Cholesky", "Qr", "SelfAdjointEigV2", "Svd", "PyFunc", "PyFuncStateless",
    "EagerPyFunc"})


@functools.lru_cache(maxsize=1)
def gpu_count() -> int:
    """GPUs numba-cuda sees (0 without the package or a driver; 1 on its simulator)."""
    if importlib.util.find_spec("numba_cuda") is None:
        return 0
    try:
        from numba import cuda

        return len(cuda.gpus) if cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - no driver, no device: the same to a listing
        return 0


def supports(op) -> bool:
    """Whether `op` has a GPU kernel (module docstring)."""
    if op.type in HOST_ONLY or Trait.BLOCKING in op.op_def.traits:
        return False
    return not any(t.dtype.name == "string" for t in list(op.inputs) + list(op.outputs))
