"""Generated kernels ask LLVM for full-width (512-bit) vectors (targets/cpu/vector_width.py)."""

import re

import llvmlite.binding as ll
import numpy as np
from numba import typeof

import flowjit
from flowjit.targets.cpu.build import build_kernel
from flowjit.compiler.loop_ir import (If, IndexOpKind, Int, Let, Loop, LoopKind, LoopProgram,
                                      Store, Var, index_op)
from flowjit.targets.cpu import render
from flowjit.targets.cpu.vector_width import ATTRIBUTE, WIDE, widen


def test_widen_calls_first_in_the_kernel_and_in_every_parallel_loop_body():
    store = Store("a", (Var("i0"),), Int(1))
    body = (Let("x", Int(1)),
            Loop(LoopKind.PARALLEL, "i0", Int(0), Var("n"), (store,)),
            If(index_op(IndexOpKind.GT, Var("n"), Int(2)), (
                Loop(LoopKind.PARALLEL, "t0", Int(0), Var("n"), (store,)),)),
            Loop(LoopKind.SERIAL, "i0", Int(0), Var("n"), (store,)))
    program = LoopProgram("k", ("a",), (("n", "3"),), body)
    out = widen(program)
    assert out.body[0] == WIDE and out.body[1:2] == body[:1]
    assert out.body[2].body == (WIDE, store)
    assert out.body[3].then[0].body == (WIDE, store)
    assert out.body[4] == body[3]   # serial loops are left alone
    source = render.render(out)
    assert source.count("wide_vectors()") == 3
    assert "    for i0 in prange(n):\n        wide_vectors()\n" in source


def _chain(x):
    return np.tanh(x * 1.7 + 0.3) * np.exp(-x * x) + np.sqrt(np.abs(x))


def test_kernel_functions_carry_the_attribute_and_use_wide_registers():
    f = flowjit.jit(_chain)
    x = np.linspace(-4, 4, 300_001, dtype=np.float32)
    np.testing.assert_allclose(f(x), _chain(x), rtol=2e-6, atol=2e-6)
    source = f.lower(x).source
    assert source.count("prange(") == source.count("    wide_vectors()") - 1 >= 1
    kernel = build_kernel(source)
    kernel.compile((typeof(x),))
    llvm = "\n".join(kernel.inspect_llvm().values())
    assert ATTRIBUTE in llvm
    asm = "\n".join(kernel.inspect_asm().values())
    packed = re.findall(r"\bv(?:mul|add|fmadd\d+|fnmadd\d+)ps\s+%([xyz])mm", asm)
    assert packed, "no packed float32 arithmetic"
    if "+avx512f" in ll.get_host_cpu_features().flatten():
        assert "z" in packed, "AVX-512 host, yet no 512-bit arithmetic"
    else:
        assert "z" not in packed
