"""Row reductions jammed by `targets/cpu/row_jam.py`, a pass over the loop IR (JAM rows per
pass of the reduction loop, then a remainder loop): results equal NumPy's for every row
count (multiples of JAM, remainders, fewer rows than JAM), for sums, products with a
broadcast vector, maxima and integer sums, in 2-d and batched 3-d; and the generated source
is jammed.  Only the parallel version of a nest is jammed, so the rows are long enough for
it (the work is rows x cols).

One function computes all of them at once and never reads a size, so it compiles one kernel
per dtype and rank (sizes are run-time values in it).
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import flowjit
from flowjit import dtypes
from flowjit.compiler.core.ir import Combiner
from flowjit.compiler.loop_ir import (Accumulate, AccResult, Alloc, Call, IndexOpKind, Int, Let,
                                      Load, Loop, LoopKind, LoopProgram, LoopTag, Store, Var,
                                      index_op)
from flowjit.targets.cpu import render
from flowjit.targets.cpu.codegen import PARALLEL_MIN_WORK
from flowjit.targets.cpu.row_jam import JAM, jam_rows, jammed

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
    loop_ir = row_stats.lower(a, x).stages.text("loop IR")
    assert "parallel for i0_b in" in loop_ir


def _row(body_of_row, stop=Var("n")):
    """A row loop (tagged for jamming) over `stop` rows with statements `body_of_row`."""
    return Loop(LoopKind.PARALLEL, "i0", Int(0), stop, tuple(body_of_row),
                frozenset({LoopTag.ROWS_OF_REDUCTIONS}))


def _sum_row(stop=Var("m"), step=None):
    i0, r0 = Var("i0"), Var("r0")
    step = step or Accumulate(Combiner.ADD, "acc1", Var("v2"), r0, dtypes.float32)
    return [Let("acc1", Var("C0")),
            Loop(LoopKind.SERIAL, "r0", Int(0), stop, (Let("v2", Load("x", (i0, r0))), step)),
            Store("out", (i0,), AccResult(Combiner.ADD, "acc1", dtypes.float32))]


def test_rows_the_copies_cannot_share_are_left_alone():
    """On the loop IR: a loop whose bounds depend on the row, or whose body branches, is
    not jammed; a plain one is, with every bound name renamed per copy."""
    out = jammed(_row(_sum_row()))
    block, rest = out
    assert block.var == "i0_b" and block.loop_kind is LoopKind.PARALLEL
    assert block.stop == index_op(IndexOpKind.FLOORDIV, Var("n"), Int(JAM))
    assert Let(f"i0_j{JAM - 1}", index_op(IndexOpKind.ADD, Var("i0"), Int(JAM - 1))) in block.body
    reduction = next(s for s in block.body if isinstance(s, Loop))
    assert Accumulate(Combiner.ADD, "acc1_j1", Var("v2_j1"), Var("r0"), dtypes.float32) \
        in reduction.body
    assert Store("out", (Var(f"i0_j{JAM - 1}"),),
                 AccResult(Combiner.ADD, f"acc1_j{JAM - 1}", dtypes.float32)) in block.body
    assert rest.var == "i0" and rest.loop_kind is LoopKind.SERIAL and rest.body == _row(
        _sum_row()).body
    bounded = [Let("v3", index_op(IndexOpKind.ADD, Var("i0"), Int(1)))] + _sum_row(Var("v3"))
    assert jammed(_row(bounded)) is None
    branchy = Accumulate(Combiner.ARGMAX, "acc1", Var("v2"), Var("r0"), dtypes.float32)
    assert jammed(_row(_sum_row(step=branchy))) is None
    program = LoopProgram("k", ("x",), (("C0", "0.0"),), (
        Let("n", Int(8)), Let("m", Int(8)), Alloc("out", Call("empty_buffer", (Var("n"),))),
        _row(_sum_row())))
    source = render.render(jam_rows(program))
    assert f"for i0_b in prange(n // {JAM}):" in source
    assert f"for i0 in range(n // {JAM} * {JAM}, n):" in source
