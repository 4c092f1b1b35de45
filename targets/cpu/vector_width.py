"""Full-width vectors for generated kernels: the `wide_vectors()` intrinsic and `widen`, a
CPU pass over the loop IR that calls it.

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
as a function of its own (a gufunc), so `widen` puts the call first in the kernel and
first in the body of every PARALLEL loop of the loop program.
"""

from __future__ import annotations

import dataclasses

from numba import types
from numba.extending import intrinsic

from ...compiler.loop_ir import Call, Do, LoopKind, LoopProgram, StmtKind
from ...compiler.loop_walk import map_body

ATTRIBUTE = '"prefer-vector-width"="512"'
WIDE = Do(Call("wide_vectors"))


@intrinsic
def wide_vectors(typingctx):
    """Ask LLVM for 512-bit vectors in the function being compiled (module docstring)."""

    def codegen(context, builder, signature, args):
        # llvmlite knows only LLVM's keyword attributes; a string attribute is written as
        # it appears in textual IR, past llvmlite's check of known names
        set.add(builder.function.attributes, ATTRIBUTE)
        return context.get_dummy_value()

    return types.none(), codegen


def widen(program: LoopProgram) -> LoopProgram:
    """`program` with a `wide_vectors()` call first in its body and first in the body of
    every parallel loop (each becomes a function of its own)."""
    def one(s):
        if s.kind is StmtKind.LOOP and s.loop_kind is LoopKind.PARALLEL:
            return (dataclasses.replace(s, body=(WIDE,) + s.body),)
        return (s,)
    return dataclasses.replace(program, body=(WIDE,) + map_body(program.body, one))
