"""Array and shape ops beyond the generated per-op samples: shape tensors and partially known
static shapes, auto-packing, TensorFlow's dtype rules (range, one_hot, stack), errors at
construction and at run time, and unknown-rank inputs.  Literal expected values were
recorded from TensorFlow 1.x (tf.compat.v1) where noted.
"""

import numpy as np
import pytest

import flowjit as tf
from flowjit.errors import InvalidArgumentError
from flowjit.ops.conversion import static_value


def run(fetches, feeds=None):
    with tf.Session() as sess:
        return sess.run(fetches, feeds)


def ops_of_type(op_type):
    return [op for op in tf.get_default_graph().get_operations() if op.type == op_type]


# --- reshape ---------------------------------------------------------------------------------


def test_reshape_with_minus_one_infers_the_missing_dimension():
    x = tf.constant(np.arange(24.0).reshape(2, 3, 4))
    y = tf.reshape(x, [4, -1])
    assert y.shape.as_list() == [4, 6]
    np.testing.assert_array_equal(run(y), np.arange(24.0).reshape(4, 6))


def test_reshape_to_shape_tensor_pieces_keeps_known_dims():
    x = tf.placeholder(tf.float32, [None, 6])
    y = tf.reshape(x, [tf.shape(x)[0], 2, 3])
    assert y.shape.as_list() == [None, 2, 3]
    z = tf.reshape(x, [-1, 2, 3])
    assert z.shape.as_list() == [None, 2, 3]
    value = np.arange(12, dtype=np.float32).reshape(2, 6)
    np.testing.assert_array_equal(run(y, {x: value}), value.reshape(2, 2, 3))


def test_reshape_auto_packs_a_list_holding_a_tensor():
    x = tf.placeholder(tf.float32, [None, 2, 3])
    y = tf.reshape(x, [tf.shape(x)[0], -1])
    packs = ops_of_type("Pack")
    assert len(packs) == 1 and packs[0].outputs[0].dtype == tf.int32
    assert y.shape.ndims == 2
    value = np.arange(18, dtype=np.float32).reshape(3, 2, 3)
    assert run(y, {x: value}).shape == (3, 6)


def test_auto_packing_converts_python_ints_to_the_tensors_dtype():
    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.reshape(x, [tf.shape(x, out_type=tf.int64)[0], -1, 2])
    pack = ops_of_type("Pack")[0]
    assert [t.dtype for t in pack.inputs] == [tf.int64] * 3
    assert run(y, {x: np.zeros((3, 4), np.float32)}).shape == (3, 2, 2)


def test_reshape_with_fully_known_input_folds_shape_pieces():
    x = tf.zeros([5, 2, 3])
    y = tf.reshape(x, [tf.shape(x)[0], -1])
    assert y.shape.as_list() == [5, 6]


def test_reshape_to_another_tensors_shape_and_a_tensorshape():
    x = tf.placeholder(tf.float32, [4, 3])
    target = tf.zeros([2, 6])
    assert tf.reshape(x, tf.shape(target)).shape.as_list() == [2, 6]
    assert tf.reshape(x, target.shape).shape.as_list() == [2, 6]
    with pytest.raises(ValueError, match="partially known"):
        tf.reshape(x, tf.placeholder(tf.float32, [None, 12]).shape)


def test_reshape_shape_from_a_fed_tensor_has_known_rank_only():
    x = tf.placeholder(tf.float32, [4, 6])
    s = tf.placeholder(tf.int32, [3])
    y = tf.reshape(x, s)
    assert y.shape.as_list() == [None, None, None]
    out = run(y, {x: np.zeros((4, 6), np.float32), s: [2, -1, 3]})
    assert out.shape == (2, 4, 3)


def test_reshape_element_count_mismatch_is_a_value_error_naming_both_shapes():
    with pytest.raises(ValueError, match=r"shape \[3,4\] with 12 elements to shape \[5,2\]"):
        tf.reshape(tf.zeros([3, 4]), [5, 2])
    with pytest.raises(ValueError, match="not a multiple of 5"):
        tf.reshape(tf.zeros([3, 4]), [5, -1])
    with pytest.raises(ValueError, match="Only one input size may be -1"):
        tf.reshape(tf.placeholder(tf.float32), [-1, -1])
    with pytest.raises(TypeError, match="int32, int64"):
        tf.reshape(tf.zeros([4]), [2.0, 2.0])


def test_reshape_mismatch_at_run_time_names_both_shapes():
    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.reshape(x, [5, 2])
    with pytest.raises(InvalidArgumentError, match=r"shape \[3,4\] with 12 elements"):
        run(y, {x: np.zeros((3, 4), np.float32)})


def test_reshape_minus_one_beside_zero_sized_dims_follows_tensorflow():
    # TF leaves zero sizes out of both products: (0, 3) -> [-1, 0] gives (3, 0).
    assert run(tf.reshape(tf.zeros([0, 3]), [-1, 0])).shape == (3, 0)
    assert run(tf.reshape(tf.zeros([0, 3]), [-1, 0, 5])).shape == (0, 0, 5)
    x = tf.placeholder(tf.float32, [None, 3])
    with pytest.raises(InvalidArgumentError, match="to shape"):
        run(tf.reshape(x, [-1, 0]), {x: np.zeros((2, 3), np.float32)})


def test_reshape_of_unknown_rank_input():
    x = tf.placeholder(tf.float32)
    y = tf.reshape(x, [2, -1])
    assert y.shape.as_list() == [2, None]
    assert run(y, {x: np.zeros((3, 2, 2), np.float32)}).shape == (2, 6)


# --- transpose, expand_dims, squeeze, reverse ---------------------------------------------------


def test_transpose_default_perm_and_negative_perm():
    x = np.arange(24).reshape(2, 3, 4)
    assert tf.transpose(x).shape.as_list() == [4, 3, 2]
    y = tf.transpose(tf.constant(x), [-1, 0, 1])
    assert y.shape.as_list() == [4, 2, 3]
    np.testing.assert_array_equal(run(y), x.transpose(2, 0, 1))


def test_transpose_of_unknown_rank_reverses_at_run_time():
    x = tf.placeholder(tf.float32)
    y = tf.transpose(x)
    assert y.shape.ndims is None
    value = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    np.testing.assert_array_equal(run(y, {x: value}), value.T)


def test_transpose_errors():
    with pytest.raises(ValueError, match="Dimension must be 2 but is 3"):
        tf.transpose(tf.zeros([2, 3]), [0, 1, 2])
    with pytest.raises(ValueError, match="not a permutation"):
        tf.transpose(tf.zeros([2, 3]), [0, 0])
    p = tf.placeholder(tf.int32, [2])
    with pytest.raises(InvalidArgumentError, match="permutation"):
        run(tf.transpose(tf.zeros([2, 3]), p), {p: [1, 1]})


def test_conjugate_transpose_only_for_complex():
    c = tf.constant(np.array([[1 + 2j, 3 - 1j]], np.complex64))
    y = tf.transpose(c, conjugate=True)
    assert y.op.type == "ConjugateTranspose"
    np.testing.assert_array_equal(run(y), [[1 - 2j], [3 + 1j]])
    assert tf.transpose(tf.zeros([2, 1]), conjugate=True).op.type == "Transpose"


def test_expand_dims_axis_dim_and_errors():
    x = tf.zeros([2, 3])
    assert tf.expand_dims(x, -1).shape.as_list() == [2, 3, 1]
    assert tf.expand_dims(x, dim=0).shape.as_list() == [1, 2, 3]
    assert tf.expand_dims(x, [1]).shape.as_list() == [2, 1, 3]
    with pytest.raises(ValueError, match=r"not in the interval \[-3, 2\]"):
        tf.expand_dims(x, 3)
    with pytest.raises(ValueError, match="Cannot specify both"):
        tf.expand_dims(x, 0, dim=0)
    with pytest.raises(ValueError, match="Must specify an axis"):
        tf.expand_dims(x)
    assert tf.expand_dims(x, tf.placeholder(tf.int32, [])).shape.as_list() == [None] * 3
    assert tf.expand_dims(tf.placeholder(tf.float32), 0).shape.ndims is None


def test_squeeze_errors_and_unknown_dims():
    with pytest.raises(ValueError, match=r"Can not squeeze dim\[1\], expected a dimension "
                                         r"of 1, got 3"):
        tf.squeeze(tf.zeros([2, 3]), [1])
    with pytest.raises(ValueError, match=r"squeeze_dims\[0\] = 2 is not in the valid range"):
        tf.squeeze(tf.zeros([2, 1]), [2])
    with pytest.raises(ValueError, match="Cannot specify both"):
        tf.squeeze(tf.zeros([2, 1]), 1, squeeze_dims=1)
    x = tf.placeholder(tf.float32, [None, 1, 3])
    assert tf.squeeze(x).shape.ndims is None  # whether dim 0 is 1 is known only at run time
    assert tf.squeeze(x, [0]).shape.as_list() == [1, 3]
    assert tf.squeeze(x, 1).shape.as_list() == [None, 3]
    y = tf.squeeze(x, [0])
    with pytest.raises(InvalidArgumentError, match=r"Can not squeeze dim\[0\]"):
        run(y, {x: np.zeros((2, 1, 3), np.float32)})


def test_reverse_axes():
    x = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(run(tf.reverse(x, [-1])), x[:, ::-1])
    np.testing.assert_array_equal(run(tf.reverse_v2(x, [0, 1])), x[::-1, ::-1])
    with pytest.raises(ValueError, match="specified more than once"):
        tf.reverse(x, [1, -1])
    with pytest.raises(ValueError, match="out of valid range"):
        tf.reverse(x, [2])


# --- concat, stack, unstack, split ---------------------------------------------------------


def test_concat_static_shapes_and_python_values():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.float32, [2, None])
    assert tf.concat([x, y], 0).shape.as_list() == [None, 3]
    assert tf.concat([x, y], -1).shape.as_list() == [2, None]
    mixed = tf.concat([tf.zeros([2]), [1, 2]], 0)
    assert mixed.dtype == tf.float32
    np.testing.assert_array_equal(run(mixed), [0, 0, 1, 2])
    assert tf.concat([tf.zeros([2])], 0).op.type == "Identity"  # as in TensorFlow


def test_concat_errors():
    with pytest.raises(TypeError, match=r"have types \[float32, int32\] that don't all match"):
        tf.concat([tf.zeros([2, 3]), tf.zeros([2, 3], tf.int32)], 0)
    with pytest.raises(ValueError, match="must be equal, but are 3 and 4"):
        tf.concat([tf.zeros([2, 3]), tf.zeros([2, 4])], 0)
    with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1"):
        tf.concat([tf.zeros([2, 3]), tf.zeros([2])], 0)
    with pytest.raises(ValueError, match="Can't concatenate scalars"):
        tf.concat([tf.zeros([]), tf.zeros([])], 0)
    x = tf.placeholder(tf.float32)
    z = tf.concat([x, tf.zeros([3, 3])], 1)
    assert z.shape.as_list() == [3, None]
    with pytest.raises(InvalidArgumentError, match=r"shape\[0\] = \[2, 3\] vs. shape\[1\] = "
                                                   r"\[3, 3\]"):
        run(z, {x: np.zeros((2, 3), np.float32)})


def test_stack_constants_tensors_and_errors():
    assert tf.stack([1, 2]).op.type == "Const"  # TensorFlow folds constant lists
    packed = tf.stack([tf.constant(1, tf.int64), -1])
    assert packed.op.type == "Pack" and packed.dtype == tf.int64
    assert tf.stack([tf.zeros([2]), tf.zeros([2])], axis=-1).shape.as_list() == [2, 2]
    with pytest.raises(ValueError, match=r"axis` = 2 not in range \[-2, 2\)"):
        tf.stack([tf.zeros([2]), tf.zeros([2])], axis=2)
    with pytest.raises(ValueError, match="Shapes of all inputs must match"):
        tf.stack([tf.zeros([2]), tf.zeros([3])])
    with pytest.raises(TypeError, match="don't all match"):
        tf.stack([tf.zeros([2]), tf.zeros([2], tf.int32)])
    unknown = tf.stack([tf.placeholder(tf.float32), tf.placeholder(tf.float32, [None, 2])], 1)
    assert unknown.shape.as_list() == [None, 2, 2]


def test_unstack_num_rules():
    parts = tf.unstack(tf.zeros([2, 3]), axis=-1)
    assert len(parts) == 3 and parts[0].shape.as_list() == [2]
    with pytest.raises(ValueError, match="Cannot infer argument `num`"):
        tf.unstack(tf.placeholder(tf.float32, [None, 3]))
    with pytest.raises(ValueError, match="Dimension must be 3 but is 2"):
        tf.unstack(tf.zeros([2, 3]), num=3)
    assert tf.unstack(tf.zeros([0, 2])) == []
    x = tf.placeholder(tf.float32, [None, 3])
    parts = tf.unstack(x, num=3)
    with pytest.raises(InvalidArgumentError, match="must equal 3"):
        run(parts, {x: np.zeros((2, 3), np.float32)})
    y = tf.placeholder(tf.float32)
    assert [p.shape.ndims for p in tf.unstack(y, num=2)] == [None, None]


def test_split_equal_and_sized_parts():
    a, b, c = tf.split(tf.zeros([6, 2]), 3)
    assert a.op.type == "Split" and a.shape.as_list() == [2, 2]
    parts = tf.split(tf.range(7), [2, -1, 1])
    assert parts[0].op.type == "SplitV"
    assert [p.shape.as_list() for p in parts] == [[2], [4], [1]]
    # Values recorded from TensorFlow.
    assert [p.tolist() for p in run(parts)] == [[0, 1], [2, 3, 4, 5], [6]]
    sizes = tf.placeholder(tf.int32, [None])
    fed = tf.split(tf.zeros([6, 2]), sizes, num=2)
    assert [p.shape.as_list() for p in fed] == [[None, 2], [None, 2]]
    out = run(fed, {sizes: [4, 2]})
    assert [o.shape for o in out] == [(4, 2), (2, 2)]


def test_split_errors():
    with pytest.raises(ValueError, match="evenly divisible by 3 but is 7"):
        tf.split(tf.zeros([7, 2]), 3)
    with pytest.raises(ValueError, match=r"Can't split axis of size 6 into pieces of size "
                                         r"\[1, 2\]"):
        tf.split(tf.zeros([6, 2]), [1, 2])
    with pytest.raises(ValueError, match="only have one -1"):
        tf.split(tf.zeros([6, 2]), [-1, -1, 2])
    with pytest.raises(ValueError, match="Cannot infer argument `num`"):
        tf.split(tf.zeros([6, 2]), tf.placeholder(tf.int32, [None]))
    with pytest.raises(ValueError, match="Rank-0 tensors are not supported"):
        tf.split(tf.zeros([6, 2]), tf.constant(2))
    with pytest.raises(ValueError, match=r"split_dim = 2 is not in the valid range"):
        tf.split(tf.zeros([6, 2]), 3, axis=2)
    x = tf.placeholder(tf.float32)
    parts = tf.split(x, 3)
    with pytest.raises(InvalidArgumentError, match=r"shape \[7, 2\] along axis 0 into 3"):
        run(parts, {x: np.zeros((7, 2), np.float32)})


# --- fill, zeros, ones, *_like ------------------------------------------------------------


def test_zeros_and_ones_are_constants_when_small_and_fill_otherwise():
    assert tf.zeros([2, 3]).op.type == "Const"
    big = tf.ones([2000], tf.bool)
    assert big.op.type == "Fill" and big.shape.as_list() == [2000]
    assert run(big).all()
    n = tf.placeholder(tf.int32, [])
    z = tf.zeros(tf.stack([n, 2]), tf.int64)
    assert z.op.type == "Fill" and z.shape.as_list() == [None, 2] and z.dtype == tf.int64
    assert run(z, {n: 3}).shape == (3, 2)
    assert run(tf.zeros(tf.constant(2))).shape == (2,)
    assert run(tf.zeros([2], tf.string)).tolist() == [b"", b""]
    with pytest.raises(TypeError, match="Expected string"):
        tf.ones([2], tf.string)


def test_fill_checks():
    assert run(tf.fill([2], "a")).tolist() == [b"a", b"a"]
    with pytest.raises(ValueError, match="non-negative"):
        tf.fill([2, -3], 5)
    with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
        tf.fill([2, 3], [5])
    d = tf.placeholder(tf.int32, [2])
    with pytest.raises(InvalidArgumentError, match="non-negative"):
        run(tf.fill(d, 1.0), {d: [2, -1]})


def test_zeros_like_and_ones_like():
    known = tf.zeros_like(tf.ones([2, 3]), dtype=tf.int32)
    assert known.op.type == "Const" and known.dtype == tf.int32
    x = tf.placeholder(tf.float32, [None, 3])
    assert tf.zeros_like(x).op.type == "ZerosLike"
    assert tf.ones_like(x).op.type == "OnesLike"
    changed = tf.zeros_like(x, dtype=tf.int64)
    assert changed.op.type == "Fill" and changed.shape.as_list() == [None, 3]
    assert tf.ones_like(tf.ones([2]), optimize=False).op.type == "OnesLike"
    value = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(run(tf.ones_like(x, dtype=tf.bool), {x: value}),
                                  np.ones((2, 3), bool))
    with pytest.raises(TypeError):
        tf.ones_like(tf.placeholder(tf.string, [None]))
    s = tf.placeholder(tf.string, [None])
    assert run(tf.zeros_like(s), {s: np.array([b"a"], object)}).tolist() == [b""]


# --- range -------------------------------------------------------------------------------------


def test_range_dtype_inference():
    assert tf.range(5).dtype == tf.int32
    assert tf.range(1, 5.0).dtype == tf.float32
    assert tf.range(tf.constant(1, tf.int64), 5).dtype == tf.int64
    assert tf.range(tf.constant(1, tf.int64), 5.0).dtype == tf.float32
    wide = tf.range(tf.constant(1), tf.constant(5.0, tf.float64))
    assert wide.dtype == tf.float64
    np.testing.assert_array_equal(run(wide), [1.0, 2.0, 3.0, 4.0])
    assert tf.range(5, dtype=tf.float64).dtype == tf.float64
    assert tf.range(tf.constant(5), dtype=tf.int64).dtype == tf.int64  # cast, as in TF
    with pytest.raises(TypeError):
        tf.range(5.5, dtype=tf.int32)
    with pytest.raises(TypeError, match="got uint8"):
        tf.range(tf.constant(1, tf.uint8), 5)


def test_range_values_and_static_length():
    r = tf.range(10, 1, -3)
    assert r.shape.as_list() == [3]
    assert run(r).tolist() == [10, 7, 4]  # recorded from TensorFlow
    f = tf.range(0.1, 1.0, 0.3)
    assert f.shape.as_list() == [3]
    np.testing.assert_allclose(run(f), [0.10000000149011612, 0.4000000059604645,
                                        0.7000000476837158], rtol=1e-7)
    assert tf.range(tf.placeholder(tf.int32, [])).shape.as_list() == [None]


def test_range_errors():
    with pytest.raises(ValueError, match="Requires delta != 0"):
        tf.range(0, 5, 0)
    with pytest.raises(ValueError, match="Requires start <= limit when delta > 0"):
        tf.range(5, 0)
    with pytest.raises(ValueError, match="Requires start >= limit when delta < 0"):
        tf.range(0, 5, -2)
    with pytest.raises(ValueError, match="rank 0"):
        tf.range([1, 2])
    d = tf.placeholder(tf.int32, [])
    with pytest.raises(InvalidArgumentError, match="Requires delta != 0"):
        run(tf.range(0, 5, d), {d: 0})


# --- one_hot ----------------------------------------------------------------------------------

# Recorded from TensorFlow: one_hot([[0, 2], [-1, 3]], 3, on_value=5, off_value=-1, axis=a).
ONE_HOT_TF = {
    -1: [[[5, -1, -1], [-1, -1, 5]], [[-1, -1, -1], [-1, -1, -1]]],
    0: [[[5, -1], [-1, -1]], [[-1, -1], [-1, -1]], [[-1, 5], [-1, -1]]],
    1: [[[5, -1], [-1, -1], [-1, 5]], [[-1, -1], [-1, -1], [-1, -1]]],
    2: [[[5, -1, -1], [-1, -1, 5]], [[-1, -1, -1], [-1, -1, -1]]],
}


@pytest.mark.parametrize("axis", sorted(ONE_HOT_TF))
def test_one_hot_axis_variants_match_tensorflow(axis):
    y = tf.one_hot([[0, 2], [-1, 3]], 3, on_value=5, off_value=-1, axis=axis)
    assert y.dtype == tf.int32
    assert y.shape.as_list() == list(np.array(ONE_HOT_TF[axis]).shape)
    assert run(y).tolist() == ONE_HOT_TF[axis]


def test_one_hot_dtype_rules_and_errors():
    assert tf.one_hot([0, 2], 3).dtype == tf.float32
    assert tf.one_hot([0, 2], 3, on_value=5.0).dtype == tf.float32
    assert tf.one_hot([0, 2], 3, off_value=-1).dtype == tf.int32
    assert tf.one_hot([0, 2], 3, on_value=1, dtype=tf.float64).dtype == tf.float64
    assert tf.one_hot([0, 2], 3, dtype=tf.int64).dtype == tf.int64
    with pytest.raises(TypeError, match="of on_value does not match dtype int32 of off_value"):
        tf.one_hot([0, 2], 3, on_value=1.0, off_value=0)
    with pytest.raises(TypeError, match="not in list of allowed values"):
        tf.one_hot(tf.constant([0.0, 2.0]), 3)
    with pytest.raises(ValueError, match="depth must be non-negative"):
        tf.one_hot([0, 2], -1)
    with pytest.raises(ValueError, match="axis must be -1 or in"):
        tf.one_hot([[0, 2]], 3, axis=-2)
    unknown = tf.one_hot([0, 2], tf.placeholder(tf.int32, []))
    assert unknown.shape.as_list() == [2, None]
    assert tf.one_hot(tf.placeholder(tf.int32), 4).shape.ndims is None


# --- pad, tile, broadcast_to --------------------------------------------------------------------


def test_pad_modes_match_tensorflow():
    x = tf.reshape(tf.range(6), [2, 3])
    reflect = tf.pad(x, [[1, 1], [2, 2]], "reflect")
    symmetric = tf.pad(x, [[2, 1], [3, 0]], "Symmetric")
    assert reflect.op.type == symmetric.op.type == "MirrorPad"
    assert reflect.shape.as_list() == [4, 7]
    assert run(reflect).tolist() == [[5, 4, 3, 4, 5, 4, 3], [2, 1, 0, 1, 2, 1, 0],
                                     [5, 4, 3, 4, 5, 4, 3], [2, 1, 0, 1, 2, 1, 0]]
    assert run(symmetric).tolist() == [[5, 4, 3, 3, 4, 5], [2, 1, 0, 0, 1, 2],
                                       [2, 1, 0, 0, 1, 2], [5, 4, 3, 3, 4, 5],
                                       [5, 4, 3, 3, 4, 5]]


def test_pad_constant_picks_pad_or_padv2():
    x = tf.ones([2, 3])
    assert tf.pad(x, [[1, 0], [0, 2]]).op.type == "Pad"
    v2 = tf.pad(x, [[1, 0], [0, 2]], constant_values=5.5)
    assert v2.op.type == "PadV2"
    assert run(v2)[0].tolist() == [5.5] * 5
    assert run(tf.pad(tf.constant([["a"]]), [[1, 0], [0, 1]])).tolist() == [[b"", b""],
                                                                          [b"a", b""]]
    with pytest.raises(TypeError):
        tf.pad(tf.ones([2], tf.int32), [[1, 1]], constant_values=5.5)


def test_pad_errors():
    with pytest.raises(ValueError, match="Paddings must be non-negative"):
        tf.pad(tf.ones([2, 3]), [[-1, 0], [0, 2]])
    with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
        tf.pad(tf.ones([2, 3]), [[1, 0]])
    with pytest.raises(ValueError, match="REFLECT paddings must be no greater than the "
                                         "dimension size minus 1"):
        tf.pad(tf.ones([2, 3]), [[2, 0], [0, 0]], "REFLECT")
    with pytest.raises(ValueError, match="SYMMETRIC paddings must be no greater"):
        tf.pad(tf.ones([2, 3]), [[3, 0], [0, 0]], "SYMMETRIC")
    with pytest.raises(ValueError, match="expected to be one of"):
        tf.pad(tf.ones([2, 3]), [[0, 0], [1, 1]], "WRAP")
    x = tf.placeholder(tf.float32)
    y = tf.pad(x, [[2, 0], [0, 0]], "REFLECT")
    assert y.shape.as_list() == [None, None]
    with pytest.raises(InvalidArgumentError, match="REFLECT paddings"):
        run(y, {x: np.ones((2, 3), np.float32)})


def test_tile_and_broadcast_to():
    x = tf.reshape(tf.range(6), [2, 3])
    assert run(tf.tile(x, [2, 2])).tolist() == [[0, 1, 2, 0, 1, 2], [3, 4, 5, 3, 4, 5],
                                                [0, 1, 2, 0, 1, 2], [3, 4, 5, 3, 4, 5]]
    with pytest.raises(ValueError, match="multiples has 1 entries"):
        tf.tile(x, [2])
    with pytest.raises(ValueError, match="non-negative"):
        tf.tile(x, [2, -1])
    n = tf.placeholder(tf.int32, [])
    assert tf.tile(tf.placeholder(tf.float32, [None, 3]), [2, 2]).shape.as_list() == [None, 6]
    assert tf.tile(tf.zeros([2, 3]), tf.stack([n, 2])).shape.as_list() == [None, 6]
    assert tf.tile(tf.placeholder(tf.float32), [1, 2]).shape.as_list() == [None, None]
    b = tf.broadcast_to(tf.zeros([3, 1]), [2, 3, 4])
    assert b.shape.as_list() == [2, 3, 4]
    with pytest.raises(ValueError, match="but are 2 and 4"):
        tf.broadcast_to(tf.zeros([3, 2]), [2, 3, 4])
    p = tf.placeholder(tf.float32)
    with pytest.raises(InvalidArgumentError, match=r"shape \[3, 2\] to shape \[3, 4\]"):
        run(tf.broadcast_to(p, [3, 4]), {p: np.zeros((3, 2), np.float32)})


# --- shape ops ---------------------------------------------------------------------------------


def test_shape_ops_fold_statically_only_when_shapes_are_known():
    x = tf.zeros([4, 2])
    s = tf.shape(x, out_type=tf.int64)
    assert s.op.type == "Shape" and s.dtype == tf.int64
    assert static_value(s).tolist() == [4, 2] and static_value(s).dtype == np.int64
    assert static_value(tf.size(x)).item() == 8
    assert static_value(tf.rank(x)).item() == 2
    p = tf.placeholder(tf.float32, [None, 2])
    assert static_value(tf.shape(p)) is None
    assert tf.shape(p).shape.as_list() == [2]
    assert static_value(tf.rank(p)) is None  # SHAPE_ONLY folding needs full shapes
    assert tf.shape(tf.placeholder(tf.float32)).shape.as_list() == [None]
    with pytest.raises(TypeError, match="out_type"):
        tf.shape(x, out_type=tf.float32)


def test_shape_n_and_run_time_values():
    a = tf.placeholder(tf.float32, [None])
    b = tf.placeholder(tf.float32)
    sa, sb = tf.shape_n([a, b])
    assert sa.shape.as_list() == [1] and sb.shape.ndims == 1
    out = run([sa, sb, tf.size(b), tf.rank(b)],
              {a: np.zeros(3, np.float32), b: np.zeros((2, 0, 4), np.float32)})
    assert [o.tolist() for o in out] == [[3], [2, 0, 4], 0, 3]


def test_zeros_and_ones_take_a_shape_list_holding_tensors():
    x = tf.placeholder(tf.float32, [None, 3])
    z = tf.zeros([tf.shape(x)[0], 2])
    o = tf.ones([tf.shape(x)[0], 2], tf.int32)
    with tf.Session() as sess:
        zv, ov = sess.run([z, o], {x: np.ones((4, 3), np.float32)})
    assert zv.dtype == np.float32 and ov.dtype == np.int32
    np.testing.assert_array_equal(zv, np.zeros((4, 2)))
    np.testing.assert_array_equal(ov, np.ones((4, 2)))
