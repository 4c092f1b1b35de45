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
from hypothesis import given, settings
from hypothesis import strategies as st

import flowjit
import flowjit as tf

RNG = np.random.default_rng(11)


def _close(got, want, dtype):
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))


def _four_products(ta, tb):
    """One kernel per pair of transpose flags with all four kinds of product: matrix-vector,
    vector-matrix, dot and outer (operands stored transposed where a flag says so)."""
    def products(a, v, u, b, c, r):
        mm = lambda x, y: tf.matmul(x, y, transpose_a=ta, transpose_b=tb)  # noqa: E731
        return mm(a, v), mm(u, b), mm(u, v), mm(c, r)
    return tf.jit(products)


_products = {(ta, tb): _four_products(ta, tb) for ta in (False, True) for tb in (False, True)}


def _operand(rows, cols, transposed, dtype=np.float32):
    x = RNG.standard_normal((rows, cols)).astype(dtype)
    return x.T.copy() if transposed else x


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 37), st.integers(2, 41), st.integers(2, 29), st.booleans(),
       st.booleans())
def test_unit_dim_products_match_numpy(m, n, k, ta, tb):
    """(m, k) @ (k, 1), (1, k) @ (k, n), (1, k) @ (k, 1) and (m, 1) @ (1, n), each operand
    passed transposed when its flag is set."""
    logical = [(m, k), (k, 1), (1, k), (k, n), (m, 1), (1, n)]
    flags = [ta, tb, ta, tb, ta, tb]
    args = [_operand(*shape, t) for shape, t in zip(logical, flags)]
    views = [x.T if t else x for x, t in zip(args, flags)]
    got = _products[ta, tb](*args)
    want = (views[0] @ views[1], views[2] @ views[3], views[2] @ views[1],
            views[4] @ views[5])
    for g, w in zip(got, want):
        assert g.dtype == np.float32 and g.shape == w.shape
        _close(g, w, np.float32)


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
    from flowjit.targets.cpu.parallel_budget import MAX_PARALLEL_NESTS

    def many(a, v):
        # over a list: a Python loop, unrolled while tracing (a `range` loop would become
        # one compiled loop: compiler/autograph.py), so each step is a loop nest
        for _ in [0] * (MAX_PARALLEL_NESTS + 2):
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


def test_unit_dim_products_of_unit_matrices():
    """Every operand with unit dims: (1, 3) @ (3, 1), (1, 1) @ (1, 1), in float64."""
    a, v = RNG.standard_normal((1, 3)), RNG.standard_normal((3, 1))
    one = RNG.standard_normal((1, 1))
    got = _products[False, False](a, v, a, v, one, one)
    for g, w in zip(got, (a @ v, a @ v, a @ v, one @ one)):
        _close(g, w, np.float64)
