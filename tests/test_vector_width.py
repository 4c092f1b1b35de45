"""Generated kernels ask LLVM for full-width (512-bit) vectors (targets/cpu/vector_width.py)."""

import re

import llvmlite.binding as ll
import numpy as np
from numba import typeof

import flowjit
from flowjit.targets.cpu.build import build_kernel
from flowjit.targets.cpu.vector_width import ATTRIBUTE, widen


def test_widen_calls_first_in_the_kernel_and_in_every_prange_body():
    body = ["x = 1", "for i0 in prange(n):", "    a[i0] = 1",
            "if n > 2:", "    for t0 in prange(4 * m):  # parts", "        b[t0] = 2",
            "for i in range(n):", "    c[i] = 3", "y = 'for q in prange(3):'"]
    out = widen(body)
    assert out[0] == "wide_vectors()"
    assert out[out.index("for i0 in prange(n):") + 1] == "    wide_vectors()"
    assert out[out.index("    for t0 in prange(4 * m):  # parts") + 1] == "        wide_vectors()"
    assert out.count("wide_vectors()") == 1 and len(out) == len(body) + 3
    assert [ln for ln in out if "wide_vectors" not in ln] == body


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
