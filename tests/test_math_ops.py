"""Semantics of the elementwise math ops beyond the generated per-op samples.

Covers TensorFlow's strict operand typing, the Python operators (reflected ones too),
truediv's integer-to-float rule, integer division by zero, numerically delicate kernels
(sigmoid, round, cast), `where` in both forms, `clip_by_value`, `add_n`, shape inference
with unknown dimensions and the dtype errors.  Literal expectations marked "TF" were
recorded from TensorFlow 2.21 running TF1 graphs.
"""

import warnings

import numpy as np
import pytest

import flowjit as tf
from flowjit.ops import math_ops
from flowjit.ops.registry import Trait


def run(fetches, feed_dict=None):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy RuntimeWarnings must not leak from kernels
        with tf.Session() as sess:
            return sess.run(fetches, feed_dict)


# --- strict typing -------------------------------------------------------------------------


def test_two_tensors_of_different_dtypes_are_a_type_error_naming_both():
    x = tf.constant([1, 2], tf.int32)
    y = tf.constant([1.0, 2.0], tf.float32)
    with pytest.raises(TypeError, match="int32") as info:
        tf.add(x, y)
    assert "float32" in str(info.value)
    with pytest.raises(TypeError, match="float32"):
        _ = y * x


def test_python_float_with_int_tensor_is_a_type_error():
    x = tf.constant([1, 2])
    with pytest.raises(TypeError):
        _ = x + 1.5
    with pytest.raises(TypeError):
        _ = 1.5 * x
    with pytest.raises(TypeError):
        tf.equal(x, 1.5)


def test_python_int_with_float_tensor_takes_the_tensor_dtype():
    x = tf.constant([1.5, 2.5], tf.float32)
    y = x + 1
    assert y.dtype == tf.float32
    np.testing.assert_array_equal(run(y), np.array([2.5, 3.5], np.float32))


def test_numpy_float64_array_with_float32_tensor_gives_float32():
    x = tf.constant([1.0, 2.0], tf.float32)
    y = np.array([0.5, 0.25]) + x
    assert y.dtype == tf.float32
    assert run(y).dtype == np.float32
    np.testing.assert_allclose(run(y), [1.5, 2.25])


def test_int64_numpy_values_out_of_int32_range_are_rejected():
    x = tf.constant([1], tf.int32)
    with pytest.raises(TypeError):
        tf.add(x, np.array([2**40]))


# --- operators -----------------------------------------------------------------------------


def test_operators_and_reflected_operators():
    x = tf.constant([1.0, 2.0, 4.0])
    i = tf.constant([7, -7, 8])
    b = tf.constant([True, False, True])
    c = tf.constant([True, True, False])
    got = run([2 - x, np.ones(3) * x, 1 / x, x ** 2, 2 ** x, -x, abs(-x), 17 // i, 17 % i,
               i // 2, i % 3, x < 2, x <= 2, x > 2, x >= 2, ~b, b & c, b | c, b ^ c])
    want = [[1, 0, -2], [1, 2, 4], [1, 0.5, 0.25], [1, 4, 16], [2, 4, 16], [-1, -2, -4],
            [1, 2, 4], [2, -3, 2], [3, -4, 1], [3, -4, 4], [1, 2, 2],
            [True, False, False], [True, True, False], [False, False, True],
            [False, True, True], [False, True, False], [True, False, False],
            [True, True, True], [False, True, True]]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_operator_op_types():
    x = tf.constant([1.0])
    assert (x - 1).op.type == "Sub"
    assert (1 - x).op.type == "Sub"
    assert (x // 2).op.type == "FloorDiv"
    assert (x % 2).op.type == "FloorMod"
    assert (x ** 2).op.type == "Pow"
    assert (-x).op.type == "Neg"
    assert (x / 2).op.type == "RealDiv"


def test_tensor_equality_keeps_identity_semantics():
    x = tf.constant([1.0])
    assert (x == x) is True
    assert tf.equal(x, x).dtype == tf.bool


# --- truediv and friends -------------------------------------------------------------------


@pytest.mark.parametrize("dtype,want", [
    (tf.int8, tf.float32), (tf.uint8, tf.float32), (tf.int16, tf.float32),
    (tf.uint16, tf.float32), (tf.int32, tf.float64), (tf.int64, tf.float64),
    (tf.uint32, tf.float64), (tf.uint64, tf.float64), (tf.float16, tf.float16),
    (tf.float32, tf.float32), (tf.float64, tf.float64), (tf.complex64, tf.complex64)])
def test_truediv_result_dtypes(dtype, want):
    x = tf.constant([3, 6], dtype)
    y = x / tf.constant([2, 4], dtype)
    assert y.dtype == want
    value = run(y)
    assert value.dtype == want.np_dtype
    np.testing.assert_allclose(value, [1.5, 1.5])


def test_int_truediv_casts_then_uses_realdiv_in_a_truediv_scope():
    y = tf.truediv(tf.constant([1, 2]), tf.constant([4, 4]))
    assert y.op.type == "RealDiv" and y.op.name == "truediv"
    assert [t.op.type for t in y.op.inputs] == ["Cast", "Cast"]
    assert all(t.op.name.startswith("truediv/") for t in y.op.inputs)
    np.testing.assert_array_equal(run(y), [0.25, 0.5])


def test_truediv_rejects_bool():
    with pytest.raises(TypeError, match="bool"):
        tf.truediv(tf.constant([True]), tf.constant([True]))


def test_div_is_python2_division_and_divide_is_truediv():
    i = tf.constant([-7, 7])
    assert tf.div(i, 2).op.type == "FloorDiv"
    np.testing.assert_array_equal(run(tf.div(i, 2)), [-4, 3])  # TF
    f = tf.constant([-7.0, 7.0])
    np.testing.assert_array_equal(run(tf.div(f, 2.0)), [-3.5, 3.5])
    d = tf.divide(i, tf.constant([2, 2]))
    assert d.dtype == tf.float64
    np.testing.assert_array_equal(run(d), [-3.5, 3.5])  # TF


@pytest.mark.parametrize("fn,dtype", [
    (fn, dtype) for fn in (tf.floordiv, tf.floormod, tf.mod, tf.truncatediv, tf.truncatemod)
    for dtype in (tf.int32, tf.int64, tf.uint8)
    if not (fn is tf.truncatemod and dtype is tf.uint8)])  # TruncateMod has no uint8
def test_integer_division_by_zero_is_an_invalid_argument(fn, dtype):
    y = fn(tf.constant([7, 7], dtype), tf.constant([2, 0], dtype))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
        run(y)


def test_division_by_zero_check_only_applies_to_computed_elements():
    empty = tf.constant(np.zeros((0, 2), np.int32))
    assert run(tf.floordiv(empty, tf.constant([0, 1]))).shape == (0, 2)


def test_float_division_semantics_match_tensorflow():
    x = tf.constant([-7.0, 7.0, 5.0])
    y = tf.constant([2.0, 0.0, -3.0])
    fd, fm, td, tm, rd = run([x // y, x % y, tf.truncatediv(x, y), tf.truncatemod(x, y), x / y])
    np.testing.assert_array_equal(fd, [-4, np.inf, -2])  # TF
    np.testing.assert_array_equal(fm, [1, np.nan, -1])  # TF
    np.testing.assert_array_equal(td, [-3, np.inf, -1])
    np.testing.assert_array_equal(tm, [-1, np.nan, 2])
    np.testing.assert_array_equal(rd, np.float32([-3.5, np.inf, -5 / 3.0]))
    a = tf.constant([5.0, -5.0, 1.0])
    b = tf.constant([np.inf, np.inf, -np.inf])
    q, r = run([a // b, a % b])
    np.testing.assert_array_equal(q, [0.0, -0.0, -0.0])  # TF: floor(x / y), not NumPy's -1
    np.testing.assert_array_equal(r, [5.0, np.inf, -np.inf])  # TF


def test_integer_truncation_ops():
    x = tf.constant([-7, 7, -7, 7])
    y = tf.constant([2, 2, -2, -2])
    td, tm, fd, fm = run([tf.truncatediv(x, y), tf.truncatemod(x, y), x // y, x % y])
    np.testing.assert_array_equal(td, [-3, 3, 3, -3])
    np.testing.assert_array_equal(tm, [-1, 1, -1, 1])
    np.testing.assert_array_equal(fd, [-4, 3, 3, -4])
    np.testing.assert_array_equal(fm, [1, 1, -1, -1])


def test_integer_negative_power_is_an_invalid_argument():
    with pytest.raises(tf.errors.InvalidArgumentError, match="negative integer powers"):
        run(tf.pow(tf.constant([2, 3]), tf.constant([-1, 2])))
    np.testing.assert_array_equal(run(tf.pow(tf.constant([2, 3]), 2)), [4, 9])


def test_float_edge_values_give_ieee_results_without_warnings():
    x = tf.constant([0.0, -1.0, 1e30], tf.float32)
    log, sqrt, exp, recip = run([tf.log(x), tf.sqrt(x), tf.exp(x * 1e10), tf.reciprocal(x)])
    np.testing.assert_array_equal(log[:2], [-np.inf, np.nan])
    assert np.isnan(sqrt[1])
    assert exp[2] == np.inf
    assert recip[0] == np.inf
    assert np.isnan(run(tf.constant(0.0) / 0.0))


def test_integer_overflow_wraps_without_warnings():
    big = tf.constant([2**31 - 1], tf.int32)
    np.testing.assert_array_equal(run(big + 1), [-2**31])
    np.testing.assert_array_equal(run(tf.pow(tf.constant([10]), 12)), [-727379968])  # TF


def test_maximum_and_minimum_propagate_nan():
    a = tf.constant([np.nan, 1.0])
    b = tf.constant([1.0, np.nan])
    mx, mn = run([tf.maximum(a, b), tf.minimum(a, b)])
    assert np.isnan(mx).all() and np.isnan(mn).all()  # TF


# --- unary kernels -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [tf.float16, tf.float32, tf.float64])
def test_sigmoid_is_stable_at_extreme_values(dtype):
    x = tf.constant([-1e4, -1000.0, -90.0, 0.0, 90.0, 1000.0, 1e4] if dtype != tf.float16
                    else [-6e4, -100.0, -20.0, 0.0, 20.0, 100.0, 6e4], dtype)
    y = run(tf.sigmoid(x))
    assert y.dtype == dtype.np_dtype
    assert np.all(np.isfinite(y))
    np.testing.assert_allclose(y[[0, 1, 3, 5, 6]], [0, 0, 0.5, 1, 1], atol=1e-7)
    assert 0 <= y[2] < 1e-8 if dtype != tf.float16 else y[2] < 1e-3


def test_sigmoid_float16_matches_tensorflow():
    got = run(tf.sigmoid(tf.constant([0.5, -100.0, 100.0], tf.float16)))
    np.testing.assert_array_equal(got, np.array([0.6226, 0.0, 1.0], np.float16))  # TF


def test_round_is_half_to_even():
    x = tf.constant([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 2.6])
    np.testing.assert_array_equal(run(tf.round(x)), [-2, -2, -0.0, 0, 2, 2, 4, 3])
    i = tf.constant([1, 2])
    assert tf.round(i) is i  # TensorFlow returns integer tensors unchanged


def test_float16_inputs_give_float16_outputs():
    x = tf.constant([0.5, 1.0], tf.float16)
    for fn in (tf.sqrt, tf.exp, tf.log, tf.sigmoid, tf.erf, tf.tanh, tf.floor, tf.rsqrt,
               tf.square, tf.abs, tf.negative, tf.sign, tf.round):
        y = fn(x)
        assert y.dtype == tf.float16
        assert run(y).dtype == np.float16
    np.testing.assert_array_equal(run(tf.erf(tf.constant([0.5], tf.float16))),
                                  np.array([0.5205], np.float16))  # TF


def test_sign_and_complex_abs():
    np.testing.assert_array_equal(run(tf.sign(tf.constant([-0.0, np.nan, 2.0, -3.0]))),
                                  [0, np.nan, 1, -1])  # TF
    np.testing.assert_allclose(run(tf.sign(tf.constant([3 + 4j, 0j]))), [0.6 + 0.8j, 0])
    a = tf.abs(tf.constant([3 + 4j]))
    assert a.op.type == "ComplexAbs" and a.dtype == tf.float64
    np.testing.assert_array_equal(run(a), [5.0])


def test_predicates():
    x = tf.constant([np.nan, np.inf, -np.inf, 1.0])
    nan, inf, fin = run([tf.is_nan(x), tf.is_inf(x), tf.is_finite(x)])
    np.testing.assert_array_equal(nan, [True, False, False, False])
    np.testing.assert_array_equal(inf, [False, True, True, False])
    np.testing.assert_array_equal(fin, [False, False, False, True])


# --- cast ----------------------------------------------------------------------------------


def test_cast_truncates_toward_zero():
    x = tf.constant([-1.7, -0.5, 0.5, 1.7, 2.999])
    np.testing.assert_array_equal(run(tf.cast(x, tf.int32)), [-1, 0, 0, 1, 2])
    np.testing.assert_array_equal(run(tf.cast(1.7, tf.int64)), 1)


def test_cast_to_bool_and_from_complex():
    f2b = tf.cast(tf.constant([0.0, 0.1, np.nan, -2.0]), tf.bool)
    c2f = tf.cast(tf.constant([1 + 2j]), tf.float32)
    c2b = tf.cast(tf.constant([0 + 2j, 1 + 0j]), tf.bool)
    b2f = tf.cast(tf.constant([True, False]), tf.float32)
    got = run([f2b, c2f, c2b, b2f])
    np.testing.assert_array_equal(got[0], [False, True, True, True])  # TF
    np.testing.assert_array_equal(got[1], [1.0])  # TF: imaginary part dropped
    np.testing.assert_array_equal(got[2], [False, True])  # TF
    np.testing.assert_array_equal(got[3], [1.0, 0.0])


def test_cast_op_attrs_and_identity_shortcut():
    x = tf.constant([1, 2])
    y = tf.cast(x, tf.float32)
    assert y.op.type == "Cast"
    assert y.op.get_attr("SrcT") == tf.int32 and y.op.get_attr("DstT") == tf.float32
    assert tf.cast(x, tf.int32) is x
    assert tf.cast(x, "float64").dtype == tf.float64
    assert tf.cast(tf.constant(70000), tf.float16).dtype == tf.float16
    assert run(tf.cast(tf.constant([70000]), tf.float16))[0] == np.inf  # TF


def test_to_dtype_helpers():
    x = tf.constant([1.5, -2.5])
    for fn, dtype, name in [(tf.to_float, tf.float32, "ToFloat"),
                            (tf.to_double, tf.float64, "ToDouble"),
                            (tf.to_int32, tf.int32, "ToInt32"),
                            (tf.to_int64, tf.int64, "ToInt64")]:
        y = fn(tf.constant([1, -2], tf.int16))
        assert y.dtype == dtype and y.op.name.startswith(name)
    np.testing.assert_array_equal(run(tf.to_int32(x)), [1, -2])


def test_cast_between_strings_and_numbers_is_a_type_error():
    with pytest.raises(TypeError, match="string"):
        tf.cast(tf.constant(["1"]), tf.int32)
    with pytest.raises(TypeError, match="string"):
        tf.cast(tf.constant([1]), tf.string)


# --- where ---------------------------------------------------------------------------------


def test_where_v2_broadcasts_all_three_operands():
    cond = tf.constant([[True], [False], [True]])
    x = tf.constant([[1.0, 2.0, 3.0, 4.0]])
    out = tf.where_v2(cond, x, 0.0)
    assert out.op.type == "SelectV2"
    assert out.shape.as_list() == [3, 4]
    np.testing.assert_array_equal(run(out), [[1, 2, 3, 4], [0, 0, 0, 0], [1, 2, 3, 4]])
    vec = tf.where_v2(tf.constant([True, False]), tf.constant([[1, 2], [3, 4]]), -1)
    np.testing.assert_array_equal(run(vec), [[1, -1], [3, -1]])  # TF: broadcasts on columns


def test_where_v2_shape_and_type_errors():
    with pytest.raises(ValueError):
        tf.where_v2(tf.constant([True, False, True]), tf.constant([1.0, 2.0]), 0.0)
    with pytest.raises(TypeError):
        tf.where_v2(tf.constant([True]), tf.constant([1.0]), tf.constant([1]))
    with pytest.raises(TypeError):
        tf.where_v2(tf.constant([1, 0]), tf.constant([1.0, 2.0]), 0.0)
    with pytest.raises(ValueError, match="both"):
        tf.where_v2(tf.constant([True]), x=tf.constant([1.0]))
    c = tf.placeholder(tf.bool, [None])
    out = tf.where_v2(c, tf.constant([1.0, 2.0]), 0.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="broadcastable"):
        run(out, {c: np.array([True, False, True])})


def test_where_is_tf1_select():
    m = tf.constant([[1, 2], [3, 4]])
    rows = tf.where(tf.constant([True, False]), m, -m)
    assert rows.op.type == "Select" and rows.shape.as_list() == [2, 2]
    np.testing.assert_array_equal(run(rows), [[1, 2], [-3, -4]])  # TF: a vector picks rows
    np.testing.assert_array_equal(run(tf.where(tf.constant(False), m, -m)), [[-1, -2], [-3, -4]])
    same = tf.where(tf.constant([[True, False], [False, True]]), m, -m)
    np.testing.assert_array_equal(run(same), [[1, -2], [-3, 4]])
    with pytest.raises(ValueError):
        tf.where(tf.constant([True, False]), tf.constant([1, 2]), 0)  # x, y of two shapes
    with pytest.raises(ValueError):
        tf.where(tf.constant([True, False, True]), m, m)
    with pytest.raises(ValueError):
        tf.where(tf.constant([[True, False]]), tf.constant(np.ones((1, 2, 2))),
                 tf.constant(np.ones((1, 2, 2))))


def test_where_runtime_errors_with_unknown_shapes():
    c = tf.placeholder(tf.bool, None)
    x = tf.placeholder(tf.int32, None)
    y = tf.placeholder(tf.int32, None)
    out = tf.where(c, x, y)
    two = np.array([[1, 2], [3, 4]], np.int32)
    np.testing.assert_array_equal(run(out, {c: [True, False], x: two, y: -two}),
                                  [[1, 2], [-3, -4]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="batches"):
        run(out, {c: [True, False, True], x: two, y: two})
    with pytest.raises(tf.errors.InvalidArgumentError, match="same size and shape"):
        run(out, {c: [True, False], x: [1, 2], y: [5, 6, 7]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="at least a vector"):
        run(out, {c: [True], x: 1, y: 2})


def test_where_with_one_argument_returns_coordinates():
    cond = tf.constant([[True, False], [True, True]])
    idx = tf.where(cond)
    assert idx.op.type == "Where" and idx.dtype == tf.int64
    assert idx.shape.as_list() == [None, 2]
    np.testing.assert_array_equal(run(idx), [[0, 0], [1, 0], [1, 1]])
    numeric = run(tf.where(tf.constant([[1.0, 0.0], [0.0, 2.0]])))
    np.testing.assert_array_equal(numeric, [[0, 0], [1, 1]])  # TF: non-zero counts as true
    unknown = tf.where(tf.placeholder(tf.bool))
    assert unknown.shape.as_list() == [None, None]
    assert run(tf.where(tf.constant(True))).shape == (1, 0)


# --- clip_by_value, add_n ------------------------------------------------------------------


def test_clip_by_value():
    t = tf.constant([[1.0, 5.0], [2.0, np.nan]])
    got = run(tf.clip_by_value(t, 1.5, tf.constant([4.0, 3.0])))
    np.testing.assert_array_equal(got, [[1.5, 3.0], [2.0, np.nan]])
    np.testing.assert_array_equal(run(tf.clip_by_value(tf.constant([1.0, 5.0]), 4.0, 2.0)),
                                  [4.0, 4.0])  # TF: min above max gives min
    np.testing.assert_array_equal(run(tf.clip_by_value(tf.constant([1, 5]), 2, 3)), [2, 3])
    with pytest.raises(ValueError):
        tf.clip_by_value(tf.constant([1.0, 5.0]), tf.constant([[4.0, 1.0], [2.0, 2.0]]), 2.0)
    with pytest.raises(TypeError):
        tf.clip_by_value(tf.constant([1.0]), tf.constant(0), tf.constant(1))


def test_add_n():
    a = tf.constant([1.0, 2.0])
    assert tf.add_n([a]) is a
    np.testing.assert_array_equal(run(tf.add_n([a, a, [0.5, 0.5]])), [2.5, 4.5])
    with pytest.raises(ValueError):
        tf.add_n([])
    with pytest.raises(ValueError):
        tf.add_n([a, tf.constant([1.0, 2.0, 3.0])])
    with pytest.raises(TypeError):
        tf.add_n([a, tf.constant([1, 2])])
    p = tf.placeholder(tf.float32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match="same size and shape"):
        run(tf.add_n([a, p]), {p: np.ones(3, np.float32)})


def test_add_n_does_not_mutate_its_inputs():
    p = tf.placeholder(tf.float32, [2])
    value = np.array([1.0, 2.0], np.float32)
    run(tf.add_n([p, p]), {p: value})
    np.testing.assert_array_equal(value, [1.0, 2.0])


# --- shapes, dtypes, traits ----------------------------------------------------------------


def test_broadcast_shape_inference_with_unknown_dims():
    a = tf.placeholder(tf.float32, [None, 3])
    assert (a + tf.constant([1.0, 2.0, 3.0])).shape.as_list() == [None, 3]
    assert (a * tf.placeholder(tf.float32, [4, 1, 1])).shape.as_list() == [4, None, 3]
    assert (a - tf.placeholder(tf.float32)).shape.ndims is None
    assert tf.less(a, 1.0).shape.as_list() == [None, 3]
    with pytest.raises(ValueError, match="broadcast"):
        _ = a + tf.constant([1.0, 2.0])


def test_runtime_broadcast_error_names_both_shapes():
    a = tf.placeholder(tf.float32, [None])
    b = tf.placeholder(tf.float32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[3\] vs. \[2\]"):
        run(a + b, {a: np.ones(3, np.float32), b: np.ones(2, np.float32)})


@pytest.mark.parametrize("make,dtype,allowed", [
    (tf.sqrt, tf.int32, "float32"), (tf.exp, tf.int32, "float32"),
    (tf.sigmoid, tf.int64, "float64"), (tf.erf, tf.complex64, "float32"),
    (tf.floor, tf.int32, "float32"), (tf.abs, tf.uint8, "int32"),
    (tf.negative, tf.bool, "int32"), (tf.logical_not, tf.float32, "bool"),
    (tf.is_nan, tf.int32, "float32"), (tf.square, tf.bool, "float32"),
])
def test_disallowed_unary_dtypes(make, dtype, allowed):
    x = tf.constant(np.zeros(2, dtype.np_dtype))
    with pytest.raises(TypeError, match=dtype.name) as info:
        make(x)
    assert allowed in str(info.value)


@pytest.mark.parametrize("make,value", [
    (tf.less, [True]), (tf.add, [True]), (tf.logical_and, [1.0]), (tf.atan2, [1]),
    (tf.maximum, [True]), (tf.subtract, ["a"]), (tf.floormod, [1 + 1j]),
])
def test_disallowed_binary_dtypes(make, value):
    x = tf.constant(value)
    with pytest.raises(TypeError, match="not in list of allowed values"):
        make(x, x)


def test_equal_accepts_strings_and_bools():
    s = tf.constant(["a", "b"])
    b = tf.constant([True, False])
    eq, ne, beq = run([tf.equal(s, "a"), tf.not_equal(s, "a"), tf.equal(b, True)])
    np.testing.assert_array_equal(eq, [True, False])
    np.testing.assert_array_equal(ne, [False, True])
    np.testing.assert_array_equal(beq, [True, False])
    np.testing.assert_array_equal(run(tf.add(s, "!")), [b"a!", b"b!"])


def test_logical_xor_is_built_from_and_or_not():
    x = tf.constant([True, True, False, False])
    y = tf.constant([True, False, True, False])
    z = tf.logical_xor(x, y)
    assert z.op.type == "LogicalAnd"
    np.testing.assert_array_equal(run(z), [False, True, True, False])


def test_variables_work_as_operands():
    v = tf.Variable([1.0, 2.0])
    y = v * 2 + tf.sqrt(v)
    total = tf.add_n([v, [1, 1], v])  # the list's plain values take the variable's dtype
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), [3.0, 4.0 + np.sqrt(2.0)])
        np.testing.assert_array_equal(sess.run(total), [3.0, 5.0])


def test_traits():
    by_name = {d.name: d for d in math_ops.OP_DEFS}
    for name in ("Add", "Mul", "Maximum", "Minimum", "Equal", "NotEqual", "LogicalAnd",
                 "LogicalOr", "AddN", "SquaredDifference"):
        assert by_name[name].has(Trait.COMMUTATIVE), name
    for name in ("Sub", "RealDiv", "FloorDiv", "Pow", "Less", "Atan2"):
        assert not by_name[name].has(Trait.COMMUTATIVE), name
    for name, d in by_name.items():
        assert d.has(Trait.ELEMENTWISE) == (name not in ("Where", "Select")), name


def test_public_names_exist_for_the_operators_module():
    for name in ("add", "subtract", "multiply", "truediv", "floordiv", "floormod", "pow",
                 "logical_and", "logical_or", "logical_xor", "less", "less_equal", "greater",
                 "greater_equal", "negative", "abs", "logical_not"):
        assert callable(getattr(math_ops, name)), name
        assert name in math_ops.__all__
