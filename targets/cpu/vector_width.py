"""Full-width vectors for generated kernels: `wide_vectors()` and `widen(lines)`.

LLVM's tuning for Intel's AVX-512 server cores (skylake-avx512 through emeraldrapids)
prefers 256-bit vectors, so numba's loop vectorizer fills ymm registers and leaves half of
each zmm register unused, however compute-bound the loop. Measured on an Emerald Rapids,
2 threads, the W2 softmax kernel (4096x1024 float32, vectorized exp): 1.82 ms with
256-bit vectors, 1.40 ms with 512-bit ones.

`wide_vectors()` is an intrinsic that emits no instruction: while numba lowers the function
that calls it, it gives that LLVM function the attribute "prefer-vector-width"="512"
(what clang's -mprefer-vector-width=512 sets), which the X86 backend honours where the CPU
has AVX-512 and which has no effect elsewhere. Only generated kernels call it, so numba
code of the user's own keeps LLVM's default. numba compiles the body of each prange loop
as a function of its own (a gufunc), so `widen` puts the call at the top of the kernel and
at the top of every prange body of its source lines.
"""

from __future__ import annotations

import re

from numba import types
from numba.extending import intrinsic

ATTRIBUTE = '"prefer-vector-width"="512"'
_PRANGE_LOOP = re.compile(r"^(\s*)for\s.+\sin\s+prange\(.*\):\s*(#.*)?$")


@intrinsic
def wide_vectors(typingctx):
    """Ask LLVM for 512-bit vectors in the function being compiled (module docstring)."""

    def codegen(context, builder, signature, args):
        # llvmlite knows only LLVM's keyword attributes; a string attribute is written as
        # it appears in textual IR, past llvmlite's check of known names
        set.add(builder.function.attributes, ATTRIBUTE)
        return context.get_dummy_value()

    return types.none(), codegen


def widen(body: list) -> list:
    """`body` (source lines of a kernel's body, four spaces indented per level) with a
    `wide_vectors()` call first and first in every prange loop's body."""
    out = ["wide_vectors()"]
    for line in body:
        out.append(line)
        match = _PRANGE_LOOP.match(line)
        if match:
            out.append(f"{match.group(1)}    wide_vectors()")
    return out
