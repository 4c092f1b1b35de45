"""Every kernel of the NumPy corpus (tests/numpy_corpus.py: stencils, linear algebra, physics,
statistics, image filters, NN layers, loops with a carried dependence) under
`flowjit.jit(target="cuda")` on the simulator gives NumPy's results and mutates its arguments
as NumPy does; each compiles for CUDA except the kernels of `NOT_ON_CUDA`."""

import numpy as np
import pytest

import flowjit
import numpy_corpus
from flowjit.benchmarks.numpy_corpus import check_call, kernel_copy

NOT_ON_CUDA = {
    "power_iteration": "a loop variable may change shape (not compiled on the CPU either)",
    "gaussian_blur_sep": "converts a traced array to NumPy (plain Python on every target)",
    "fft_butterflies": "complex values (the CUDA target renders none)",
    "robust_scale": "a median: sorting is a LIBCALL",
    "ridge_regression": "np.linalg.solve is a LIBCALL",
}


@pytest.mark.parametrize("name", sorted(numpy_corpus.BY_NAME))
def test_corpus_kernel_on_cuda_equals_numpy(name):
    kernel = numpy_corpus.BY_NAME[name]
    args = kernel.make_args(np.random.default_rng(0), "small")
    ref_args = kernel_copy(args)
    ref = kernel.fn(*ref_args)
    jitted = flowjit.jit(kernel.fn, static_argnames=kernel.static_argnames, target="cuda",
                         measure_runs=0)
    _, message, _, _ = check_call(jitted, kernel, args, ref, ref_args)
    assert not message, message
    compiled = jitted.lower(*args).compiled
    assert compiled == (name not in NOT_ON_CUDA), f"{name}: compiled={compiled}"


def test_not_on_cuda_names_corpus_kernels():
    assert set(NOT_ON_CUDA) <= set(numpy_corpus.BY_NAME)
