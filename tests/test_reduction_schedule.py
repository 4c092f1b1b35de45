"""Reductions over a leading axis (column reductions, e.g. a bias gradient `x.sum(axis=0)`)
fused with elementwise consumers: results equal NumPy's, and the generated loops read the
reduced array contiguously (rows outside, the last axis inside) whether shapes are exact
(the code reads a size, as `value_and_grad` does) or generic.

Each jitted function computes several reductions at once, so only a few kernels compile:
one per shape for the exact-size functions, one per "which sizes are 1" for the others.
"""

import re

import numpy as np
import pytest

import flowjit
from flowjit.compiler.core.ir import NodeKind
from flowjit.compiler.schedule import is_column_reduction

RNG = np.random.default_rng(7)
F32 = np.float32


def _stats(x, w, n):
    """Sum, max and mean over axis 0, each consumed by elementwise code (an Adam-like update
    and a variance from a second column reduction that reads the first one's mean)."""
    s = np.sum(x, axis=0)
    mx = np.max(x, axis=0)
    mu = np.sum(x, axis=0) / n
    var = np.sum((x - mu) * (x - mu), axis=0) / n
    upd = w - F32(0.01) * s / (np.sqrt(mu * mu) + F32(1e-3))
    return upd, mx * w + s, mu, var


@flowjit.jit
def stats_exact(x, w):
    """Reads a size: compiled per shape, with every size a constant."""
    return _stats(x, w, F32(x.shape[0]))


@flowjit.jit
def stats_generic(x, w, n):
    """Never reads a size: one kernel for all shapes (runtime sizes)."""
    return _stats(x, w, n)


@flowjit.jit
def weighted_3d(x, v, c):
    """Column reductions of a 3-d array (over axis 0, over axes 0 and 1) and one weighted by
    a per-row vector and a scalar, each with a consumer."""
    n = F32(x.shape[0])
    a = np.sum(x, axis=0) / n + c
    b = np.max(x, axis=(0, 1)) - c
    y = x[:, 0, :]
    d = np.sum(y * v[:, None] * c, axis=0) * F32(2)
    return a, b, d


def assert_close(got, want, scale):
    """Same dtype and shape; float32 within 1e-5 relative plus 1e-5 of `scale` (the size of
    the cancelling sums), as tests/test_lower_reductions_nn.py compares."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale)


def _numpy_stats(x, w):
    return _stats(x, w, F32(x.shape[0]))


# (300, 257): parallel chunks of rows; (37, 4099): several column blocks, each in row chunks;
# (5, 16411): one task per column block, accumulating straight into the result
SHAPES = [(13, 17), (1, 7), (7, 1), (1, 1), (31, 5), (300, 257), (37, 4099), (5, 16411)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("exact", [True, False], ids=["exact", "generic"])
def test_axis0_reductions_with_consumers_match_numpy(shape, exact):
    x = (RNG.standard_normal(shape) * 3).astype(F32)
    w = RNG.standard_normal(shape[1:]).astype(F32)
    got = stats_exact(x, w) if exact else stats_generic(x, w, np.array(shape[0], F32))
    jf = stats_exact if exact else stats_generic
    args = (x, w) if exact else (x, w, np.array(shape[0], F32))
    assert jf.lower(*args).compiled
    scale = float(np.abs(x).sum(axis=0).max()) * 100  # upd divides by |mu| + 1e-3
    for g, want in zip(got, _numpy_stats(x, w)):
        assert_close(g, want, scale)


@pytest.mark.parametrize("shape", [(5, 3, 11), (1, 2, 1), (23, 1, 4)])
def test_3d_and_weighted_column_reductions_match_numpy(shape):
    x = RNG.standard_normal(shape).astype(F32)
    v = RNG.standard_normal(shape[0]).astype(F32)
    c = F32(1.5)
    got = weighted_3d(x, v, c)
    assert weighted_3d.lower(x, v, c).compiled
    want = (np.sum(x, axis=0) / F32(shape[0]) + c, np.max(x, axis=(0, 1)) - c,
            np.sum(x[:, 0, :] * v[:, None] * c, axis=0) * F32(2))
    for g, w in zip(got, want):
        assert_close(g, w, float(np.abs(x).sum()) * 4)


# --- structure ---------------------------------------------------------------------------------


def enclosing_loops(source: str, line_no: int) -> list:
    """Loop variables of the `for` (and `while <var> ...`) statements enclosing line
    `line_no`, outermost first."""
    lines = source.splitlines()
    indent = len(lines[line_no]) - len(lines[line_no].lstrip())
    loops = []
    for text in reversed(lines[:line_no]):
        depth = len(text) - len(text.lstrip())
        if depth < indent and text.strip():
            indent = depth
            m = re.match(r"\s*(?:for (\w+) in |while (\w+) )", text)
            if m:
                loops.append(m.group(1) or m.group(2))
    return loops[::-1]


def reduction_loads(source: str, array: str = "in0") -> list:
    """Line numbers of the loads of `array` that index a reduction variable (`r<k>`)."""
    return [k for k, text in enumerate(source.splitlines())
            if re.search(rf"= {array}\[[^]]*\br\d+\b", text)]


def assert_contiguous_reads(lowered):
    """Every load of input 0 at a reduction index has an output axis (`i<k>`) as its last,
    contiguous index, and the loop over that axis is the innermost loop around the load,
    inside the reduction loops (unrolled rows run in a `while r0 ...` loop; indices may be
    cast to unsigned)."""
    source = re.sub(r"np\.uint64\((\w+)\)", r"\1", lowered.source)
    loads = reduction_loads(source)
    assert loads, source
    for k in loads:
        load = source.splitlines()[k]
        last = re.search(r", (\w+)\]$", load)
        assert last and re.fullmatch(r"i\d+", last.group(1)), load
        loops = enclosing_loops(source, k)
        assert loops[-1] == last.group(1) and "r0" in loops[:-1], (load, loops, source)


@pytest.mark.parametrize("exact", [True, False], ids=["exact", "generic"])
def test_axis0_reduction_inner_loop_is_the_contiguous_axis(exact):
    x = RNG.standard_normal((300, 257)).astype(F32)
    w = RNG.standard_normal(257).astype(F32)
    lowered = stats_exact.lower(x, w) if exact else stats_generic.lower(x, w, np.array(300, F32))
    assert_contiguous_reads(lowered)
    schedule = lowered.entry.cluster.schedule
    reduces = [m for g in schedule.groups for m in g.members if m.kind is NodeKind.REDUCE]
    assert len(reduces) == 3  # sum (shared by the mean), max, variance
    for g in schedule.groups:
        if any(m.kind is NodeKind.REDUCE for m in g.members):
            # a column reduction is a loop nest of its own; its consumers run in a later one
            assert len(g.members) == 1, lowered.stage("schedule")
            assert is_column_reduction(g.members[0], schedule.resolved[id(g.members[0])])
    assert "column reduction" in lowered.stage("schedule")
    # tasks of row chunks x column blocks, in parallel
    assert re.search(r"for t0 in prange\(nparts\d+ \* nblocks\d+\):", lowered.source)


def test_3d_and_weighted_reductions_read_contiguously():
    x = RNG.standard_normal((5, 3, 11)).astype(F32)
    lowered = weighted_3d.lower(x, RNG.standard_normal(5).astype(F32), F32(1.5))
    assert_contiguous_reads(lowered)


def test_last_axis_reduction_keeps_rows_outside():
    """A row reduction (over the contiguous axis) is no column reduction: one loop nest over
    rows with its consumer, the reduction loop innermost."""
    f = flowjit.jit(lambda x, w: np.sum(x, axis=1) * w + F32(x.shape[1]))
    x = RNG.standard_normal((9, 14)).astype(F32)
    w = RNG.standard_normal(9).astype(F32)
    assert_close(f(x, w), np.sum(x, axis=1) * w + F32(14), 100)
    lowered = f.lower(x, w)
    schedule = lowered.entry.cluster.schedule
    assert len(schedule.groups) == 1, lowered.stage("schedule")
    assert not is_column_reduction(schedule.groups[0].members[0],
                                   schedule.resolved[id(schedule.groups[0].members[0])])
    for k in reduction_loads(lowered.source):
        assert enclosing_loops(lowered.source, k)[-1] == "r0"


def _broadcast_checks(ids, lo):
    """Full AND/MAX/OR reductions of values broadcast along a constant axis of 6."""
    wide = ids[:, None] + np.zeros((1, 6), dtype=ids.dtype)
    return np.all(wide >= lo), np.max(wide * 2), np.any(wide == 3)


@pytest.mark.parametrize("n", [1, 5, 70000])
def test_idempotent_full_reductions_skip_axes_their_values_repeat_along(n):
    """all/any/max of a value that does not vary along a (constant, non-empty) axis do not
    loop over that axis (reduce_nests._repeat_axes); results equal NumPy's either way."""
    f = flowjit.jit(_broadcast_checks)
    ids = RNG.integers(-2, 9, n)
    for lo in (-3, 0):
        got = f(ids, lo)
        want = _broadcast_checks(ids, lo)
        assert [bool(g) if g.dtype == bool else int(g) for g in got] == \
            [bool(w) if np.asarray(w).dtype == bool else int(w) for w in want]
    source = f.lower(ids, 0).source
    assert "for r1 in" not in source


def test_column_blocks_of_a_wide_reduction_vectorize():
    """A column sum over more than one block of columns (17000 > 8 COL_BLOCKs: no partial
    rows to combine) loops from the block's start `c0`: its loads index unsigned, and its
    adds are vector instructions (with signed indices numba's negative-index wraparound
    kept LLVM from vectorizing).  Exact sizes generate that branch only."""
    from numba import typeof

    from flowjit.targets.cpu.build import build_kernel
    from flowjit.targets.cpu.reduce_nests import COL_BLOCK

    f = flowjit.jit(lambda x: np.sum(x.reshape(x.shape[0], x.shape[1]), axis=0))
    x = RNG.standard_normal((10, 17000)).astype(F32)
    assert x.shape[1] > 8 * COL_BLOCK
    assert_close(f(x), np.sum(x, axis=0), float(np.abs(x).sum()))
    source = f.lower(x).source
    assert "range(c0, " in source and "np.uint64(" in source and "i0 in range(C0)" not in source
    kernel = build_kernel(source)
    kernel.compile((typeof(x),))
    llvm = "\n".join(kernel.inspect_llvm().values())
    assert re.search(r"fadd reassoc nsz <\d+ x float>", llvm), "the column blocks did not vectorize"
