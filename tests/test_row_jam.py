"""Row reductions jammed by `targets/cpu/row_jam.py` (JAM rows per pass of the reduction
loop, then a remainder loop): results equal NumPy's for every row count (multiples of JAM,
remainders, fewer rows than JAM), for sums, products with a broadcast vector, maxima and
integer sums, in 2-d and batched 3-d; and the generated source is jammed.  Only the parallel
version of a nest is jammed, so the rows are long enough for it (the work is rows x cols).

One function computes all of them at once and never reads a size, so it compiles one kernel
per dtype and rank (sizes are run-time values in it).
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import flowjit
from flowjit.targets.cpu.codegen import PARALLEL_MIN_WORK
from flowjit.targets.cpu.row_jam import JAM, jammed

LONG = PARALLEL_MIN_WORK   # a row this long makes any nest parallel


@flowjit.jit
def row_stats(a, x):
    """Row reductions over the last axis; each is a loop nest of its own."""
    return (a @ x, np.sum(a * a, axis=-1), np.max(a, axis=-1),
            np.sum(a.astype(np.int64), axis=-1))


def _reference(a, x):
    return (a @ x, np.sum(a * a, axis=-1), np.max(a, axis=-1),
            np.sum(a.astype(np.int64), axis=-1))


def _check(a, x):
    got = row_stats(a, x)
    want = _reference(a, x)
    scale = float(np.abs(a).max(initial=1.0)) ** 2 * a.shape[-1]
    tol = 1e-5 if a.dtype == np.float32 else 1e-12
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, (k, g.shape, w.shape, g.dtype)
        if k >= 2:   # max and integer sums are exact
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol * scale)


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 3 * JAM + 3), cols=st.integers(LONG, LONG + 70),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))
def test_row_reductions_equal_numpy_for_every_row_count(rows, cols, dtype, seed):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((rows, cols)) * 4).round(1).astype(dtype)
    x = rng.standard_normal(cols).astype(dtype)
    _check(a, x)


@settings(max_examples=10, deadline=None)
@given(batch=st.integers(1, 3), rows=st.integers(1, 2 * JAM + 1),
       cols=st.integers(LONG, LONG + 20),
       seed=st.integers(0, 2**16))
def test_batched_row_reductions_equal_numpy(batch, rows, cols, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((batch, rows, cols)).round(1)
    _check(a, rng.standard_normal(cols))


def test_large_matvec_runs_jammed_and_in_parallel():
    """Many rows (split between threads) with a remainder row equal NumPy's too, and the
    generated source jams JAM rows per reduction pass."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4 * JAM * 100 + 3, 301))
    x = rng.standard_normal(301)
    _check(a, x)
    source = row_stats.lower(a, x).source
    assert f"i0_j{JAM - 1} = i0 + {JAM - 1}" in source
    assert "for i0_b in prange(" in source
    assert f"// {JAM} * {JAM}, " in source   # the remainder loop


def test_rows_the_copies_cannot_share_are_left_alone():
    """On the generated text: a loop whose bounds depend on the row, or whose body branches,
    is not jammed; a plain one is, with every assigned name renamed per copy."""
    header = "for i0 in prange(n):"
    plain = ["acc1 = C0", "for r0 in range(m):", "    v2 = x[i0, r0]",
             "    acc1 = radd(acc1, v2)", "out[i0] = acc1"]
    lines = jammed(header, "i0", "n", [], plain)
    assert lines[0] == f"for i0_b in prange((n) // {JAM}):"
    assert "        acc1_j1 = radd(acc1_j1, v2_j1)" in lines
    assert "    out[i0_j3] = acc1_j3" in lines
    assert lines.count("    for r0 in range(m):") == 2   # the jammed loop and the remainder's
    bounded = ["v3 = i0 + 1", "acc1 = C0", "for r0 in range(v3):", "    v2 = x[i0, r0]",
               "    acc1 = radd(acc1, v2)", "out[i0] = acc1"]
    assert jammed(header, "i0", "n", [], bounded) is None
    branchy = ["acc1 = C0", "for r0 in range(m):", "    v2 = x[i0, r0]",
               "    if v2 > acc1:", "        acc1 = v2", "out[i0] = acc1"]
    assert jammed(header, "i0", "n", [], branchy) is None
