"""The text every generated CUDA module starts with: imports, dtype constructors, launch
constants and the math functions the kernels call (docs/architecture.md, "The CUDA target").

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

def prelude(launch: LaunchShape, simulator: bool) -> str:
    """The module's opening text for `launch`, with the simulator's or the GPU's math."""
    return (_COMMON.format(threads=launch.threads, max_blocks=launch.max_blocks)
            + (_SIMULATOR_MATH if simulator else _GPU_MATH))
