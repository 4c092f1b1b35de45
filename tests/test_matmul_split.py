"""Large 2-D products split across the kernel's threads (targets/cpu/matmul_code.py), with
scipy's BLAS on one thread while a kernel runs (targets/cpu/blas_threads.py).

Every transpose combination, with generic sizes (decided at run time) and exact sizes
(decided at generation), above and below the split threshold, equals NumPy's product; the
generated source shows which split was chosen; with process tuning opted in, the BLAS
thread count comes back after a burst of calls (by default it is never changed).  One
jitted function holds all four transpose forms, so few kernels compile.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowjit
from flowjit.targets.cpu import blas_threads, matmul_code

RNG = np.random.default_rng(11)


def _products(a, b, at, bt):
    """a @ b, at.T @ b, a @ bt.T, at.T @ bt.T, each with an elementwise epilogue."""
    return (np.maximum(a @ b, 0.0), at.T @ b + 1.0, a @ bt.T * 2.0, at.T @ bt.T)


products_generic = flowjit.jit(_products)


@flowjit.jit
def products_exact(a, b, at, bt):
    """Reads a size, so it compiles per shape with every size a constant."""
    scale = a.shape[0] / a.shape[0]
    return tuple(p * scale for p in _products(a, b, at, bt))


def _operands(m, k, n, dtype):
    a = RNG.standard_normal((m, k)).astype(dtype)
    b = RNG.standard_normal((k, n)).astype(dtype)
    return a, b, np.ascontiguousarray(a.T), np.ascontiguousarray(b.T)


def _check(got, operands, dtype):
    want = _products(*operands)
    rtol = 2e-5 if dtype == np.float32 else 1e-12
    k = operands[0].shape[1]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * np.sqrt(k) * 4)


# (m, k, n): above SPLIT_MIN_WORK with a small output (reduction split for a.T @ b) and a
# large one (row split after copying the transpose), plus primes, a single row, and a
# product below the threshold
SHAPES = [(700, 97, 131), (53, 1031, 89), (1, 4099, 1031), (613, 67, 601), (9, 7, 5)]


@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_split_products_equal_numpy_generic_sizes(m, k, n, dtype):
    operands = _operands(m, k, n, dtype)
    _check(products_generic(*operands), operands, dtype)


@pytest.mark.parametrize("m,k,n", [(700, 97, 131), (53, 1031, 89), (9, 7, 5)])
def test_split_products_equal_numpy_exact_sizes(m, k, n):
    operands = _operands(m, k, n, np.float32)
    _check(products_exact(*operands), operands, np.float32)


def test_generated_source_splits_rows_and_reductions():
    source = products_generic.lower(*_operands(64, 64, 64, np.float32)).source
    assert f"for blk in prange({matmul_code.split_blocks()}):" in source
    assert "[lo:hi].T" in source           # a.T @ b: blocks of the reduction axis, partials
    assert "np.ascontiguousarray(" in source  # a.T @ b.T: transpose copied, rows split
    assert f">= {matmul_code.SPLIT_MIN_WORK}:" in source  # generic sizes: decided at run time
    small = products_exact.lower(*_operands(9, 7, 5, np.float32)).source
    assert "prange(" not in small and "np.dot(" in small  # exact, small and narrow: one BLAS call


_BURST = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, TESTS)
    import numpy as np
    import flowjit
    from flowjit.targets.cpu import blas_threads
    import test_matmul_split as t

    assert flowjit.config.process_tuned()
    functions = blas_threads._blas_thread_functions()
    if functions is None:
        print("SKIP scipy's BLAS is not an OpenBLAS threadpoolctl controls")
        sys.exit(0)
    get, put = functions
    blas_threads.restore_now()
    put(2)   # a count the kernel must leave alone once the burst is over
    blas_threads.RESTORE_DELAY_S = 0.2
    operands = t._operands(300, 200, 100, np.float32)
    t._check(t.products_generic(*operands), operands, np.float32)
    assert get() == 1            # still one thread right after the call: no spinning wake-up
    t._check(t.products_generic(*operands), operands, np.float32)
    deadline = time.monotonic() + 10
    while get() != 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert get() == 2            # the daemon restored it once the kernels went quiet
    t._check(t.products_generic(*operands), operands, np.float32)
    blas_threads.restore_now()   # and a benchmark can ask for it at once
    assert get() == 2
    print("OK")
""")


def test_blas_threads_come_back_after_a_burst_of_calls_when_tuned():
    """With process tuning opted in (a fresh process: FLOWJIT_TUNE_PROCESS=1), kernels run
    scipy's BLAS on one thread, and the count comes back after the last call."""
    tests = os.path.dirname(os.path.abspath(__file__))
    # the suite's kernel cache (the shared GEMM compiles once per cache: ~20 s)
    env = dict(os.environ, FLOWJIT_TUNE_PROCESS="1")
    out = subprocess.run([sys.executable, "-c", _BURST.replace("TESTS", repr(tests))],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    if out.stdout.startswith("SKIP"):
        pytest.skip(out.stdout[5:].strip())
    assert out.stdout.strip().endswith("OK")


def test_blas_threads_are_left_alone_by_default():
    functions = blas_threads._blas_thread_functions()
    if functions is None:
        pytest.skip("scipy's BLAS is not an OpenBLAS threadpoolctl controls")
    before = functions[0]()
    operands = _operands(300, 200, 100, np.float32)
    _check(products_generic(*operands), operands, np.float32)
    assert functions[0]() == before
    kernel = object()
    assert blas_threads.single_threaded_blas(kernel, "np.dot(a, b)  # prange(") is kernel


def _grams(a, b):
    """a @ a.T and a.T @ a (Gram products: one triangle, mirrored), and a @ b.T for contrast."""
    return a @ a.T + 1.0, a.T @ a, a @ b.T


grams = flowjit.jit(_grams)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, k", [(600, 300), (97, 131), (131, 97), (9, 8000), (2, 3)])
def test_gram_products_equal_numpy_and_are_symmetric(m, k, dtype):
    a = RNG.standard_normal((m, k)).astype(dtype)
    b = RNG.standard_normal((m, k)).astype(dtype)
    got = grams(a, b)
    want = _grams(a.astype(np.float64), b.astype(np.float64))
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for g, w in zip(got, want):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * np.sqrt(max(m, k)))
    np.testing.assert_array_equal(got[0], got[0].T)   # mirrored: exactly symmetric
    np.testing.assert_array_equal(got[1], got[1].T)


def test_gram_products_compute_one_triangle():
    a = RNG.standard_normal((300, 200))
    source = grams.lower(a, a).source
    # a @ a.T and a.T @ a by flowjit's GEMM in its symmetric mode (BLAS when
    # FLOWJIT_GEMM=blas)
    assert source.count("gram_product(") == 1 and source.count("gram_product_t(") == 1
    assert "gemm_parallel(in0, in1.T" in source    # a @ b.T: flowjit's GEMM, split in it


def test_gram_products_go_to_blas_when_asked(monkeypatch):
    monkeypatch.setenv("FLOWJIT_GEMM", "blas")
    a = RNG.standard_normal((130, 70))
    f = flowjit.jit(lambda a: a @ a.T * 2.0)
    np.testing.assert_allclose(f(a), a @ a.T * 2.0, rtol=1e-12, atol=1e-12)
    source = f.lower(a).source
    assert "gram_rows(" in source and "gram_product" not in source
