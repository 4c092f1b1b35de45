"""Products with a static size-1 dimension, and the schedule and code decisions around them.

- A matrix-vector, vector-matrix, dot or outer product (`ops/matmul_ops._unit_dim_product`)
  is a sum over k or an elementwise multiply of the compiler's own: no BLAS call, results
  as NumPy's for every transpose flag;
- a producer read broadcast inside a loop it does not vary along (`A @ (y / s)` as a sum
  over k) is materialized, not recomputed at every step (`schedule._recomputed_along`);
- when a kernel has more loop nests than get a parallel version, the ones with the most work
  get it (`codegen.generate_source`).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowjit
import flowjit as tf

RNG = np.random.default_rng(11)


def _close(got, want, dtype):
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))


_products = {(ta, tb): tf.jit(lambda a, b, ta=ta, tb=tb: tf.matmul(a, b, transpose_a=ta,
                                                                   transpose_b=tb))
             for ta in (False, True) for tb in (False, True)}


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["mv", "vm", "dot", "outer"]), st.integers(1, 37), st.integers(1, 41),
       st.booleans(), st.booleans(), st.sampled_from([np.float32, np.float64]))
def test_unit_dim_products_match_numpy(kind, p, q, ta, tb, dtype):
    m, n, k = {"mv": (p, 1, q), "vm": (1, p, q), "dot": (1, 1, q), "outer": (p, q, 1)}[kind]
    a = RNG.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = RNG.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    got = _products[ta, tb](a, b)
    want = (a.T if ta else a) @ (b.T if tb else b)
    assert got.dtype == dtype and got.shape == want.shape
    _close(got, want, dtype)


def test_numpy_vector_products_are_loops_of_their_own():
    @flowjit.jit
    def products(a, x, y):
        return a @ x, y @ a, x @ y, np.outer(x, y), np.tanh(a @ x + 1.0)

    a = RNG.standard_normal((23, 23))
    x, y = RNG.standard_normal(23), RNG.standard_normal(23)
    got = products(a, x, y)
    want = (a @ x, y @ a, x @ y, np.outer(x, y), np.tanh(a @ x + 1.0))
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w)
        _close(g, w, np.float64)
    source = products.lower(a, x, y).source
    assert "np.dot(" not in source and "gemm_parallel(" not in source
    assert "radd(" in source


def test_broadcast_division_is_not_recomputed_in_the_product():
    """`a @ (y / s)`: the division runs once per element of y, in a loop nest before the
    product, not once per element of a."""
    @flowjit.jit
    def step(a, x):
        y = a @ x
        return a @ (y / np.sqrt(np.sum(y * y)))

    a = RNG.standard_normal((31, 31))
    x = RNG.standard_normal(31)
    y = a @ x
    _close(step(a, x), a @ (y / np.sqrt(np.sum(y * y))), np.float64)
    lowered = step.lower(a, x)
    assert "materialized, not fused into" in lowered.stage("schedule")
    source = lowered.source
    for block in source.split("# loop nest ")[1:]:
        if "radd(acc" in block and "/" in block:
            # a sum over k holding a division: it must not sit inside the k loop
            inner = block.split("for r0 in range(")[1] if "for r0 in range(" in block else ""
            assert " / " not in inner.split("\n    # ")[0], block


def test_nests_with_the_most_work_run_in_parallel():
    """More candidate nests than MAX_PARALLEL_NESTS: the large ones (n x n, at the end of
    the kernel) are parallel, small ones (n) before them are not."""
    from flowjit.targets.cpu.codegen import MAX_PARALLEL_NESTS

    def many(a, v):
        for _ in range(MAX_PARALLEL_NESTS + 2):
            v = np.sqrt(v * v + 1.0)      # one small loop nest each (materialized: sqrt)
            v = v - np.max(v)
        return np.tanh(a * v) + 1.0, np.exp(a - v[:, None])

    f = flowjit.jit(many)
    a = RNG.standard_normal((9, 9))
    v = RNG.standard_normal(9)
    want = many(a, v)
    for g, w in zip(f(a, v), want):
        _close(g, w, np.float64)
    source = f.lower(a, v).source
    nests = source.split("# loop nest ")[1:]
    assert len([n for n in nests if "prange(" in n]) <= MAX_PARALLEL_NESTS
    large = [n for n in nests if "in0.shape[0] * in0.shape[1]" in n.split("\n")[3]
             or "in0.shape[0] * in0.shape[1]" in n]
    assert large and all("prange(" in n for n in large), source


@pytest.mark.parametrize("shape", [(1, 5), (5, 1), (1, 1)])
def test_unit_dim_products_of_unit_matrices(shape):
    """Both operands with unit dims (a (1, k) @ (k, 1) dot, a (n, 1) @ (1, m) outer)."""
    m, n = shape
    a = RNG.standard_normal((m, 3)).astype(np.float32)
    b = RNG.standard_normal((3, n)).astype(np.float32)
    _close(_products[False, False](a, b), a @ b, np.float32)
