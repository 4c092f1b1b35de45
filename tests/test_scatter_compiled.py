"""Compiled row scatters (ops/scatter_ops.py lowering, targets/cpu/scatter_code.py) and
in-place updates of donated `flowjit.jit` arguments (ir.Program.donated, plan_memory).

`a[ids] = v` / `a[ids] -= v` with a traced index array compiles to a SCATTER; when `a` is an
argument the function mutates, the kernel writes its rows straight into the caller's array
(no copy of the table), unless another argument shares its memory. Results and final
argument contents equal NumPy's, a bad index raises before anything is written, and a TF1
`tensor_scatter_nd_update` runs compiled in a Session with the reference interpreter's result.
"""

import numpy as np
import pytest

import flowjit as tf
from flowjit.errors import InvalidArgumentError

RNG = np.random.default_rng(5)


def sgd_rows(table, ids, grads, lr):
    table[ids] -= lr * grads


def assign_rows(a, ids, v):
    b = a * 2.0
    b[ids] = v
    return b


def sum_then_update(a, b, ids):
    s = b.sum()
    a[ids] -= 1.0
    return s


sgd_rows_jit = tf.jit(sgd_rows)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_argument_rows_are_updated_in_place(dtype):
    table = RNG.standard_normal((50, 7)).astype(dtype)
    ids = RNG.permutation(50)[:9]
    grads = RNG.standard_normal((9, 7)).astype(dtype)
    want = table.copy()
    sgd_rows(want, ids, grads, 0.1)
    before = table.ctypes.data
    sgd_rows_jit(table, ids, grads, 0.1)
    np.testing.assert_array_equal(table, want)
    assert table.ctypes.data == before
    lowered = sgd_rows_jit.lower(table, ids, grads, 0.1)
    assert "return (in0,)" in lowered.source           # the argument's own array
    assert "in place (donated)" in lowered.stages.text("schedule")


def test_local_scatter_with_repeated_and_negative_indices_matches_numpy():
    a = RNG.standard_normal((11, 3))
    ids = np.array([4, -1, 0, 4, 10])          # 4 twice: the last write wins, as in NumPy
    v = RNG.standard_normal((5, 3))
    np.testing.assert_array_equal(tf.jit(assign_rows)(a, ids, v), assign_rows(a, ids, v))
    one_d = RNG.standard_normal(11)
    np.testing.assert_array_equal(tf.jit(assign_rows)(one_d, ids, v[:, 0]),
                                  assign_rows(one_d, ids, v[:, 0]))


def test_a_bad_index_raises_and_leaves_the_argument_unchanged():
    table = RNG.standard_normal((6, 2))
    keep = table.copy()
    with pytest.raises(InvalidArgumentError, match="index"):
        sgd_rows_jit(table, np.array([1, 6]), np.ones((2, 2)), 0.5)
    np.testing.assert_array_equal(table, keep)


def test_an_argument_sharing_memory_with_another_is_not_overwritten_early():
    a = np.arange(12.0).reshape(4, 3)
    ids = np.array([2, 0])
    f = tf.jit(sum_then_update)
    want_a = a.copy()
    want = sum_then_update(want_a, want_a, ids)
    got = f(a, a, ids)
    assert got == want
    np.testing.assert_array_equal(a, want_a)


def test_a_strided_argument_is_updated_through_its_copy():
    base = RNG.standard_normal((20, 8))
    view = base[::2, ::2]
    want_base = base.copy()
    ids = np.array([0, 3, 9])
    grads = RNG.standard_normal((3, 4))
    sgd_rows(want_base[::2, ::2], ids, grads, 1.0)
    sgd_rows_jit(view, ids, grads, 1.0)
    np.testing.assert_array_equal(base, want_base)


def test_tensor_scatter_nd_update_compiles_in_a_session():
    graph = tf.Graph()
    with graph.as_default():
        t = tf.placeholder(tf.float32, [None, 4])
        idx = tf.placeholder(tf.int64, [None, 1])
        upd = tf.placeholder(tf.float32, [None, 4])
        out = tf.tensor_scatter_nd_update(t * 3.0, idx, upd) + 1.0
    feeds = {t: RNG.standard_normal((9, 4)).astype(np.float32),
             idx: np.array([[8], [2], [2]]), upd: RNG.standard_normal((3, 4)).astype(np.float32)}
    results = []
    for jit_on in (True, False):
        config = tf.ConfigProto()
        if not jit_on:
            config.graph_options.optimizer_options.global_jit_level = \
                tf.OptimizerOptions.OFF
        with tf.Session(graph=graph, config=config) as sess:
            results.append(sess.run(out, feeds))
    np.testing.assert_array_equal(results[0], results[1])
    want = feeds[t] * np.float32(3.0)
    want[[8, 2, 2]] = feeds[upd]
    np.testing.assert_array_equal(results[0], want + np.float32(1.0))


def test_a_read_only_argument_is_refused_before_any_write():
    table = np.frombuffer(np.arange(12.0).tobytes(), dtype=np.float64).reshape(6, 2)
    assert not table.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        sgd_rows_jit(table, np.array([1, 2]), np.ones((2, 2)), 0.5)
    np.testing.assert_array_equal(table, np.arange(12.0).reshape(6, 2))


def rank_k_update(c, a, alpha):
    c += alpha * (a @ a.T)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_whole_array_update_of_a_donated_argument_is_written_in_place(dtype):
    """`c += ...` on an argument: the last loop nest reads c only at its own index, so it
    writes the caller's array directly (no output buffer, no copy back); an argument that
    shares c's memory gets a private copy first, so the result is still NumPy's."""
    f = tf.jit(rank_k_update)
    a = RNG.standard_normal((37, 11)).astype(dtype)
    c = RNG.standard_normal((37, 37)).astype(dtype)
    want = c.copy()
    rank_k_update(want, a, 0.5)
    before = c.ctypes.data
    f(c, a, 0.5)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    assert c.ctypes.data == before
    assert "input 0's array (donated)" in f.lower(c, a, 0.5).stage("schedule")
    shared = RNG.standard_normal((37, 37)).astype(dtype)
    view = shared.reshape(-1)[:37 * 11].reshape(37, 11)   # a is c's first rows' memory
    expected = shared.copy()
    rank_k_update(expected, view.copy(), 0.5)
    f(shared, view, 0.5)
    np.testing.assert_allclose(shared, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("repeated", [False, True], ids=["distinct", "repeated"])
def test_large_scatters_run_in_parallel_only_on_distinct_rows(repeated):
    """Above the parallel threshold the rows are checked for repeats first: distinct rows are
    written by all threads, repeated ones in order, so the last write of a row wins as in
    NumPy (a parallel copy could let an earlier one win)."""
    table = RNG.standard_normal((3000, 32)).astype(np.float32)
    ids = RNG.permutation(3000)[:2500]
    if repeated:
        # 1000 rows written twice, the later value must win; the later writes sit at the
        # start of the second half, which a second thread would reach first
        ids[1250:2250] = ids[250:1250]
    v = RNG.standard_normal((2500, 32)).astype(np.float32)
    want = assign_rows(table, ids, v)
    got = _assign_rows_jit(table, ids, v)
    np.testing.assert_array_equal(got, want)
    source = _assign_rows_jit.lower(table, ids, v).source
    assert "seen" in source and "for r in prange(" in source


_assign_rows_jit = tf.jit(assign_rows)
