"""Differential tests of the array, shape, slicing and gather lowerings: `flowjit.jit`
(compiled) against the same function run by a plain Session (reference kernels).

numba compiles one kernel per signature (seconds each), so each area is ONE module-level jit
function returning many results (results of one shape are stacked so they share a loop
nest), called with hand-picked shapes (odd and prime sizes, empty dimensions, a size-1
signature where that changes the lowering, and one large input per area so the parallel
branch of each loop nest runs) and by a small hypothesis test that keeps the signature
(sizes 0 and >= 2).  Runtime errors are checked with shapes that break an op's condition:
the compiled function and the reference must both raise InvalidArgumentError.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowjit as tf
from flowjit.errors import InvalidArgumentError
from flowjit.ops import array_ops

pytestmark = pytest.mark.filterwarnings("ignore::Warning")  # numba's parallel diagnostics
SETTINGS = settings(max_examples=10, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
RNG = np.random.default_rng(7)


def _reference(fn, args):
    """fn run through a Session on placeholders like the ones tracing makes."""
    graph = tf.Graph()
    with graph.as_default():
        phs = [tf.placeholder(a.dtype, [1 if d == 1 else None for d in a.shape]) for a in args]
        out = fn(*phs)
        with tf.Session(graph=graph) as sess:
            return sess.run(out, dict(zip(phs, args)))


def _pairs(got, want, path="out"):
    if isinstance(want, dict):
        assert sorted(got) == sorted(want)
        for k in want:
            yield from _pairs(got[k], want[k], f"{path}.{k}")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want)):
            yield from _pairs(g, w, f"{path}[{i}]")
    else:
        yield path, got, np.asarray(want)


def check(f, *args):
    """f(*args) compiled equals the reference exactly: dtype, shape and values."""
    lowered = f.lower(*args)
    assert lowered.compiled, str(lowered)
    for path, got, want in _pairs(f(*args), _reference(f.fn, args)):
        assert isinstance(got, np.ndarray), path
        assert got.dtype == want.dtype, (path, got.dtype, want.dtype)
        assert got.shape == want.shape, (path, got.shape, want.shape)
        np.testing.assert_array_equal(got, want, err_msg=path)


def check_both_raise(f, *args):
    """The compiled function and the reference both raise InvalidArgumentError."""
    with pytest.raises(InvalidArgumentError):
        _reference(f.fn, args)
    with pytest.raises(InvalidArgumentError):
        f(*args)


def ints(*shape, low=-9, high=10, dtype=np.int32):
    return RNG.integers(low, high, size=shape).astype(dtype)


def floats(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def sizes(low=0, high=7, even=False):
    """Sizes keeping a no-size-1 signature: max(low, 2)..high, and 0 when low is 0."""
    least = max(low, 2)
    out = st.integers((least + 1) // 2, high // 2).map(lambda n: 2 * n) if even else \
        st.integers(least, high)
    return out | st.just(0) if low == 0 else out


# --- Reshape, Transpose, ConjugateTranspose, ExpandDims, Squeeze, ReverseV2 --------------------


def _conjugate_transpose(x, perm):
    p = tf.constant(perm, dtype=tf.int32)
    return array_ops.make_op(array_ops.CONJUGATE_TRANSPOSE, [x, p], {}, "ct").outputs[0]


@tf.jit
def arrays(x):  # x: (a, b, c) with b >= 1 and b * c even
    s = tf.shape(x)
    t = tf.transpose(x, [2, 0, 1])  # (c, a, b)
    same = tf.stack([
        t,
        tf.transpose(tf.transpose(x), [0, -1, 1]),          # default perm reverses
        _conjugate_transpose(x, [-1, 0, 1]),                 # real: a plain transpose
        tf.reverse(t, [0, -1]),
        tf.squeeze(tf.expand_dims(t, 1), [1]),
        tf.squeeze(tf.expand_dims(t, -1), axis=-1),
        tf.reshape(tf.reshape(t, [s[2], 1, s[0], -1]), [s[2], s[0], s[1]]),  # size-1 dims only
        tf.reshape(x, tf.stack([s[2], s[0], s[1]])),        # a real reshape: a view
    ])
    return {"same": same, "rows": tf.reshape(x, [s[0], -1]), "flat": tf.reshape(x, [-1]),
            "pairs": tf.reshape(x, [s[0], -1, 2]), "squeezed": tf.squeeze(x),
            "first_column": tf.squeeze(x[:, :1], [1])}


@pytest.mark.parametrize("shape", [(3, 5, 6), (0, 3, 4), (2, 3, 0), (70, 41, 30)])
def test_arrays_float32(shape):
    check(arrays, floats(*shape))


@pytest.mark.parametrize("shape", [(5, 1, 4), (0, 1, 2)])
def test_arrays_int32_with_size_one(shape):
    check(arrays, ints(*shape))


@SETTINGS
@given(st.tuples(sizes(), sizes(2), sizes(even=True)))
def test_arrays_hypothesis(shape):
    check(arrays, floats(*shape))


def test_array_errors():
    check_both_raise(arrays, floats(3, 0, 2))  # x[:, :1] has size 0: cannot squeeze it
    check_both_raise(arrays, floats(2, 3, 5))  # 15 elements per row: no pairs


def test_reshape_is_a_view_or_a_remap():
    x = floats(3, 4)
    assert "reshape(" in tf.jit(lambda x: tf.reshape(x, [-1]) + 1).lower(x).stage("dce")
    remapped = tf.jit(lambda x: tf.reshape(x, [1, tf.shape(x)[0], 1, -1]) + 1).lower(x)
    assert "reshape(" not in remapped.stage("dce")


# --- ConcatV2, Pack, Unpack, Split, SplitV ---------------------------------------------------


@tf.jit
def joins(x, y):  # x: (a, b, c) with c even and >= 3; y: (a, 3, c)
    return {"concat": tf.concat([x, y[:, :1], x], axis=-2),
            "stack": tf.stack([x, -x, x * 2], axis=-1),
            "unstack": tf.unstack(y, num=3, axis=1),
            "split": tf.split(x, 2, axis=-1),
            "split_v": tf.split(x, [1, -1, 2], axis=2)}


def _join_args(a, b, c):
    return ints(a, b, c), ints(a, 3, c)


@pytest.mark.parametrize("shape", [(3, 5, 4), (2, 0, 6), (0, 3, 4), (50, 50, 30)])
def test_joins(shape):
    check(joins, *_join_args(*shape))


@SETTINGS
@given(st.tuples(sizes(), sizes(), sizes(3, 12, even=True)))
def test_joins_hypothesis(shape):
    check(joins, *_join_args(*shape))


def test_join_errors():
    x, y = _join_args(2, 3, 4)
    check_both_raise(joins, x[:, :, :3], y[:, :, :3])  # 3 does not split in 2
    check_both_raise(joins, x, ints(2, 4, 4))  # unstack 3 of 4
    check_both_raise(joins, x, ints(3, 3, 4))  # concat: sizes of dimension 0 differ


# --- Fill, ZerosLike, OnesLike, Range, OneHot ------------------------------------------------


@tf.jit
def fills(x, v):  # x: (a, b) int32 in [-1, 6] with b >= 2; v: int32 scalar
    s = tf.shape(x)
    return {"same": tf.stack([x, tf.fill(s, 7), tf.fill(s, v), tf.zeros_like(x),
                              tf.ones_like(x)]),
            "fill_runtime": tf.fill(tf.stack([s[1] - 2, 3]), 2.5),
            "hot_last": tf.one_hot(x, 5, dtype=tf.int32),
            "hot_first": tf.one_hot(x, 4, on_value=3, off_value=-1, axis=0),
            "ranges": tf.stack([tf.range(3, 17, 4), tf.range(10, 2, -2)]),
            "float_range": tf.range(0.5, 3.1, 0.25)}


@pytest.mark.parametrize("shape", [(3, 5), (0, 7), (310, 230)])
def test_fills(shape):
    check(fills, ints(*shape, low=-1, high=7), np.array(4, np.int32))


@SETTINGS
@given(st.tuples(sizes(), sizes(2)), st.integers(-5, 5))
def test_fills_hypothesis(shape, v):
    check(fills, ints(*shape, low=-1, high=7), np.array(v, np.int32))


def test_fill_errors_and_runtime_range():
    check_both_raise(fills, ints(2, 0), np.array(1, np.int32))  # fill dims [-2, 3]
    f = tf.jit(lambda n: tf.range(n) * 2)  # a runtime limit: the size is computed in the kernel
    assert f.lower(np.array(5, np.int32)).compiled
    for n in (5, 0, 1):
        got = f(np.array(n, np.int32))
        np.testing.assert_array_equal(got, np.arange(n) * 2)
        assert got.dtype == np.int32
    with pytest.raises(tf.errors.InvalidArgumentError, match="Requires start <= limit"):
        f(np.array(-1, np.int32))


# --- Pad, PadV2, MirrorPad, Tile, BroadcastTo ------------------------------------------------


@tf.jit
def pads(x, y):  # x: (a, b) float32 with a >= 3, b >= 4; y: (d, 1, 5) int32
    s = tf.shape(x)
    p = [[1, 2], [3, 1]]
    target = tf.stack([3, s[0], s[1]])
    return {"same": tf.stack([tf.pad(x, p), tf.pad(x, p, constant_values=-7),
                              tf.pad(x, p, "REFLECT"), tf.pad(x, p, "symmetric")]),
            "tile": tf.tile(x, [2, 3]),
            "broadcast": tf.stack([tf.broadcast_to(x, target), tf.broadcast_to(x[:1], target)]),
            "pad_3d": tf.pad(y, [[0, 0], [2, 1], [1, 0]], constant_values=5),
            "tile_3d": tf.tile(y, tf.stack([1, tf.shape(y)[0], 2])),
            "broadcast_3d": tf.broadcast_to(y, tf.stack([2, tf.shape(y)[0], 4, 5]))}


def _pad_args(a, b, d):
    return floats(a, b), ints(d, 1, 5)


@pytest.mark.parametrize("shape", [(3, 4, 2), (5, 7, 0), (131, 163, 3)])
def test_pads(shape):
    check(pads, *_pad_args(*shape))


@SETTINGS
@given(st.tuples(st.integers(3, 9), st.integers(4, 9), sizes()))
def test_pads_hypothesis(shape):
    check(pads, *_pad_args(*shape))


def test_pad_errors():
    check_both_raise(pads, *_pad_args(2, 4, 2))  # REFLECT padding 2 > size 2 - 1
    check_both_raise(pads, *_pad_args(3, 3, 2))  # REFLECT padding 3 > size 3 - 1
    check_both_raise(pads, floats(3, 4), ints(2, 1, 3))  # broadcast of size 3 to 5


# --- Slice, StridedSlice, and Shape, ShapeN, Size, Rank ----------------------------------------


@tf.jit
def slices(x):  # x: (a, b, c) with a >= 2, b >= 2, c >= 5
    s = tf.shape(x)
    return {"slice": tf.slice(x, [1, 0, 2], [-1, 2, 3]),
            "slice_runtime": tf.slice(x, [1, 1, 0], tf.stack([s[0] - 2, -1, s[2]])),
            "strided": x[::-2, 1:, tf.newaxis, -1],
            "ellipsis": x[..., 3:-1],
            "shrink": x[-1],
            "steps": x[1:-1:2, ::3, 9:0:-3],
            "shape": s, "size": tf.size(x, out_type=tf.int64), "rank": tf.rank(x),
            "shape_n": tf.shape_n([x, x[0]], out_type=tf.int64)}


@pytest.mark.parametrize("shape", [(2, 2, 5), (7, 11, 13), (50, 40, 40)])
def test_slices(shape):
    check(slices, ints(*shape))


@SETTINGS
@given(st.tuples(st.integers(2, 9), st.integers(2, 9), st.integers(5, 13)))
def test_slices_hypothesis(shape):
    check(slices, ints(*shape))


def test_slice_errors():
    check_both_raise(slices, ints(2, 3, 4))  # Slice: begin 2 + size 3 > 4 elements
    check_both_raise(slices, ints(0, 2, 5))  # x[-1] of an empty dimension


# --- GatherV2, GatherNd -----------------------------------------------------------------------


@tf.jit
def gathers(x, i, j, k):  # x: (a, b, c); i: (n,) in [0, b); j: (2, 3) in [0, a); k: (a, 5)
    return {"axis1": tf.gather(x, i, axis=-2),
            "axis0": tf.gather(x, j),
            "batch": tf.gather(x, k, axis=1, batch_dims=1),
            "nd": tf.gather_nd(x, [[0, 1], [1, 0], [1, 1]])}


def _gather_args(a, b, c, n=4):
    return (floats(a, b, c), ints(n, low=0, high=b), ints(2, 3, low=0, high=a, dtype=np.int64),
            ints(a, 5, low=0, high=b))


@pytest.mark.parametrize("shape, n", [((2, 3, 5), 4), ((7, 2, 0), 3), ((40, 30, 60), 50)])
def test_gathers(shape, n):
    check(gathers, *_gather_args(*shape, n=n))


@SETTINGS
@given(st.tuples(st.integers(2, 7), st.integers(2, 7), sizes()), sizes())
def test_gathers_hypothesis(shape, n):
    check(gathers, *_gather_args(*shape, n=n))


def test_gather_out_of_range_indices_raise():
    x, i, j, k = _gather_args(3, 4, 5)
    for bad in (4, -1, 1000000):
        i2 = i.copy()
        i2[-1] = bad
        check_both_raise(gathers, x, i2, j, k)
    j2 = j.copy()
    j2[1, 2] = 3
    check_both_raise(gathers, x, i, j2, k)
    k2 = k.copy()
    k2[0, 0] = -2
    check_both_raise(gathers, x, i, j, k2)
    # nothing to gather from: every index is out of range
    check_both_raise(gathers, floats(2, 0, 5), np.zeros(4, np.int32), j % 2,
                     np.zeros((2, 5), np.int32))


def test_gather_nd_needs_known_index_depth():
    f = tf.jit(lambda x, i: tf.gather_nd(x, i))
    args = floats(3, 4), ints(5, 2, low=0, high=3)
    assert not f.lower(*args).compiled
    np.testing.assert_array_equal(f(*args), args[0][args[1][:, 0], args[1][:, 1]])


# --- fusion ----------------------------------------------------------------------------------


def test_transpose_slice_exp_fuse_into_one_loop_nest():
    f = tf.jit(lambda x: tf.exp(tf.transpose(x, [1, 0])[1:, ::2]))
    x = floats(5, 6)
    schedule = f.lower(x).stage("schedule")
    assert schedule.count("loop nest ") == 1, schedule
    assert "fused into" in schedule
    np.testing.assert_allclose(f(x), np.exp(x.T[1:, ::2]), rtol=1e-6)
