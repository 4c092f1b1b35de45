"""The text every generated CUDA module starts with: imports, dtype constructors, launch
constants, the math functions the kernels call and the host helpers `run` calls (docs/architecture.md, "The CUDA target").

Two flavours of the same names: on a GPU the math functions are libdevice's (through
numba-cuda's `math` support and `numba.cuda.libdevice`); under numba-cuda's simulator, whose
kernels run as plain Python, they are NumPy's (Python's `math` raises where CUDA returns NaN
or infinity).  Kernel bodies are identical in both.  Warp shuffles are used only on a GPU:
the simulator has none, so its block reductions run the shared-memory tree to the end.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class LaunchShape:
    """Compile-time launch constants of one module."""

    threads: int          # threads per block (a power of two)
    max_blocks: int       # grid-stride kernels launch at most this many blocks
    shuffles: bool        # finish block reductions with warp shuffles
    mm_block: int         # a matmul block computes mm_block x mm_block outputs
    mm_k: int             # ... over slices of mm_k along the reduced axis
    mm_reg: int           # each thread computes mm_reg x mm_reg of them


GPU_LAUNCH = LaunchShape(threads=256, max_blocks=4096, shuffles=True, mm_block=64, mm_k=16,
                         mm_reg=4)
SIMULATOR_LAUNCH = LaunchShape(threads=16, max_blocks=4, shuffles=False, mm_block=8, mm_k=4,
                               mm_reg=2)

_COMMON = '''
import math
import numpy as np
from numba import cuda

b1, i1, i2, i4, i8 = np.bool_, np.int8, np.int16, np.int32, np.int64
u1, u2, u4, u8 = np.uint8, np.uint16, np.uint32, np.uint64
f2, f4, f8 = np.float16, np.float32, np.float64
_NAN = float("nan")
_INF = float("inf")
TPB = {threads}
MAX_BLOCKS = {max_blocks}
'''

_GPU_MATH = '''
from numba.cuda import libdevice
_sqrt, _exp, _expm1, _log, _log1p = math.sqrt, math.exp, math.expm1, math.log, math.log1p
_tanh, _erf, _sin, _cos, _tan = math.tanh, math.erf, math.sin, math.cos, math.tan
_atan2, _isnan, _isinf, _fmod_raw = math.atan2, math.isnan, math.isinf, math.fmod
_floor, _ceil, _rint = libdevice.floor, libdevice.ceil, libdevice.rint
'''

_SIMULATOR_MATH = '''
_sqrt, _exp, _expm1, _log, _log1p = np.sqrt, np.exp, np.expm1, np.log, np.log1p
_tanh, _sin, _cos, _tan = np.tanh, np.sin, np.cos, np.tan
_atan2, _isnan, _isinf, _fmod_raw = np.arctan2, np.isnan, np.isinf, np.fmod
_floor, _ceil, _rint = np.floor, np.ceil, np.rint
_erf = math.erf
'''

# the host side: copies in, buffers, outputs, while loops' modules, launch sizes
HOST_HELPERS = '''

def _to_device(x, stream):
    """A flat device array of `x` (a host array is copied, a device array reshaped)."""
    if hasattr(x, "copy_to_host"):   # a device array (the simulator's too)
        return x.reshape(x.size) if x.ndim != 1 else x
    x = np.ascontiguousarray(x)
    if x.size == 0:   # loads clamped into an empty tensor read a zero (values discarded)
        return cuda.to_device(np.zeros(1, x.dtype), stream=stream)
    return cuda.to_device(x.reshape(x.size), stream=stream)


def _buffer(n, dtype, stream):
    """A flat device buffer of n elements (an empty one: one zero, see _to_device)."""
    if n == 0:
        return cuda.to_device(np.zeros(1, dtype), stream=stream)
    return cuda.device_array(n, dtype=dtype, stream=stream)


def _shaped(buf, shape):
    """A flat buffer as an output of `shape` (an empty output: an empty array)."""
    size = 1
    for s in shape:
        size *= s
    if size == 0:
        return cuda.device_array(shape, dtype=buf.dtype)
    return buf.reshape(shape) if buf.size == size else buf[:size].reshape(shape)


def _load(source):
    """The `run` function of a while loop's condition or body module."""
    scope = {"__name__": "flowjit_cuda_kernel"}
    exec(compile(source, "<flowjit cuda kernel>", "exec"), scope)
    return scope["run"]


def _flat(array):
    """A device array as a flat buffer (an empty one: one zero, see _to_device)."""
    if array.size == 0:
        return cuda.to_device(np.zeros(1, array.dtype))
    return array.reshape(array.size) if array.ndim != 1 else array


def _truth(array):
    """The value of a one-element device array, on the host."""
    return bool(array.copy_to_host().reshape(-1)[0])


def _blocks(n, per_block):
    return max(1, min(MAX_BLOCKS, (n + per_block - 1) // per_block))
'''


def prelude(launch: LaunchShape, simulator: bool) -> str:
    """The module's opening text for `launch`, with the simulator's or the GPU's math."""
    return (_COMMON.format(threads=launch.threads, max_blocks=launch.max_blocks)
            + (_SIMULATOR_MATH if simulator else _GPU_MATH))
