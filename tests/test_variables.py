"""Variables (ops/variables.py, runtime/state.py): state that lives in a Session."""

import threading

import numpy as np
import pytest

import flowjit as tf


def test_variable_ops_and_names():
    v = tf.Variable([1.0, 2.0], name="v")
    names = [op.name for op in tf.get_default_graph().get_operations()]
    assert names == ["v/initial_value", "v", "v/Assign", "v/read"]
    assert v.name == "v:0" and v.op.name == "v" and v.op.type == "VariableV2"
    assert v.initializer.name == "v/Assign" and v.initializer.type == "Assign"
    assert v.value().name == "v/read:0" and v.initial_value.name == "v/initial_value:0"
    assert v.dtype == tf.float32 and v.shape.as_list() == [2] and v.get_shape() == v.shape
    assert v.graph is tf.get_default_graph() and v.device == ""
    assert repr(v) == "<tf.Variable 'v:0' shape=(2,) dtype=float32_ref>"
    assert tf.Variable(0).name == "Variable:0" and tf.Variable(0).name == "Variable_1:0"
    with tf.name_scope("layer"):
        assert tf.Variable(0, name="w").name == "layer/w:0"


def test_values_persist_across_runs_and_are_separate_per_session():
    v = tf.Variable(10)
    inc = tf.assign_add(v, 1)
    s1, s2 = tf.Session(), tf.Session()
    s1.run(v.initializer)
    s2.run(v.initializer)
    assert [s1.run(inc) for _ in range(3)] == [11, 12, 13]
    assert s2.run(inc) == 11
    assert s1.run(v) == 13 and s2.run(v) == 11
    s1.close()
    s2.close()
    with tf.Session() as s3:
        with pytest.raises(tf.errors.FailedPreconditionError):
            s3.run(v)


def test_assign_methods_and_functions():
    v = tf.Variable([1.0, 2.0], name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v.assign([5.0, 6.0])), [5.0, 6.0])
        np.testing.assert_array_equal(sess.run(v.assign_add([1.0, 1.0])), [6.0, 7.0])
        np.testing.assert_array_equal(sess.run(v.assign_sub([2.0, 3.0])), [4.0, 4.0])
        np.testing.assert_array_equal(sess.run(tf.assign(v, [0.0, 1.0])), [0.0, 1.0])
        np.testing.assert_array_equal(sess.run(tf.assign_add(v, [1.0, 1.0])), [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(tf.assign_sub(v, [1.0, 1.0])), [0.0, 1.0])
        op = v.assign([9.0, 9.0], read_value=False)
        assert isinstance(op, tf.Operation) and op.type == "Assign"
        assert sess.run(op) is None
        np.testing.assert_array_equal(sess.run(v), [9.0, 9.0])
        assert v.assign_add([0.0, 0.0], read_value=False).type == "AssignAdd"
        assert v.assign_sub([0.0, 0.0], read_value=False).type == "AssignSub"
    assert tf.assign(v, [1.0, 1.0], name="set").op.name == "set"


def test_assign_ops_work_on_the_variable_tensor():
    v = tf.Variable(3)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(tf.assign_add(v.op.outputs[0], 2)) == 5
    with pytest.raises(TypeError, match="Variable"):
        tf.assign(tf.constant(1), 2)
    with pytest.raises(TypeError, match="l-value"):
        tf.get_default_graph().create_op(tf.assign(v, 1).op.op_def,
                                         [tf.identity(v), tf.constant(1)],
                                         {"validate_shape": True, "use_locking": False})


def test_read_value_and_snapshot():
    v = tf.Variable(1.0)
    snapshot = v.value()
    with tf.control_dependencies([tf.assign(v, 2.0)]):
        after = v.read_value()
    assert after.op.type == "Identity" and after.op.name == "read"
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(snapshot) == 1.0
        assert sess.run(after) == 2.0
        assert sess.run(snapshot) == 2.0


def test_read_after_assign_add_sees_new_value():
    v = tf.Variable(0)
    update = v.assign_add(3)
    with tf.control_dependencies([update]):
        read = tf.identity(v)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(read) == 3
        assert sess.run(read) == 6


def test_uninitialized_read_names_the_variable():
    v = tf.Variable([1, 2], name="weights")
    y = tf.identity(v, name="reader")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError) as info:
            sess.run(y)
        err = info.value
        assert "Attempting to use uninitialized value weights" in str(err)
        assert "reader" in str(err) and err.op is v.op
        assert err.error_code == tf.errors.Code.FAILED_PRECONDITION
        with pytest.raises(tf.errors.FailedPreconditionError, match="weights"):
            sess.run(v)
        with pytest.raises(tf.errors.FailedPreconditionError, match="weights"):
            sess.run(v.assign_add([1, 1]))
        assert not sess.run(tf.is_variable_initialized(v))
        sess.run(v.initializer)
        assert sess.run(tf.is_variable_initialized(v))


def test_initialized_value_for_dependent_variables():
    v = tf.Variable([1.0, 2.0], name="v")
    w = tf.Variable(v.initialized_value(), name="w")
    doubled = tf.Variable(v.initialized_value() * 2.0, name="doubled")
    with tf.Session() as sess:
        # Only w's initializer is run: v's initializer runs first by control dependency.
        sess.run(w.initializer)
        np.testing.assert_array_equal(sess.run(w), [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(doubled), [2.0, 4.0])


def test_initial_value_kinds():
    from_numpy = tf.Variable(np.arange(6, dtype=np.float64).reshape(2, 3))
    from_python = tf.Variable([[1, 2]])
    from_float = tf.Variable(1.5)
    from_tensor = tf.Variable(tf.constant([True, False]))
    from_callable = tf.Variable(lambda: tf.constant(7, dtype=tf.int64), name="lazy")
    with_dtype = tf.Variable(5, dtype=tf.float32)
    assert from_numpy.dtype == tf.float64 and from_numpy.shape.as_list() == [2, 3]
    assert from_python.dtype == tf.int32 and from_python.shape.as_list() == [1, 2]
    assert from_float.dtype == tf.float32
    assert from_tensor.dtype == tf.bool
    assert from_callable.dtype == tf.int64
    assert from_callable.initial_value.op.name.startswith("lazy/")  # built inside its scope
    assert with_dtype.dtype == tf.float32
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b, c, d, e, f = sess.run([from_numpy, from_python, from_float, from_tensor,
                                     from_callable, with_dtype])
    np.testing.assert_array_equal(a, np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(b, [[1, 2]])
    assert c == 1.5 and list(d) == [True, False] and e == 7 and f == 5.0
    assert type(f) is np.float32


def test_initial_value_errors():
    with pytest.raises(ValueError, match="initial_value"):
        tf.Variable()
    with pytest.raises(TypeError, match="int32"):
        tf.Variable(tf.constant(1), dtype=tf.float32)
    with pytest.raises(TypeError):
        tf.Variable(1.5, dtype=tf.int32)


def test_variable_from_another_graphs_tensor_lives_in_that_graph():
    g = tf.Graph()
    with g.as_default():
        init = tf.constant(3.0)
    v = tf.Variable(init)
    assert v.graph is g
    assert g.get_collection(tf.GraphKeys.GLOBAL_VARIABLES) == [v]
    assert tf.global_variables() == []


def test_variables_ignore_enclosing_control_dependencies():
    c = tf.Variable(1)
    with tf.control_dependencies([c.assign(3)]):
        d = tf.Variable(7)
    assert d.initializer.control_inputs == () and d.op.control_inputs == ()


def test_collections_and_initializers():
    a = tf.Variable(1, name="a")
    b = tf.Variable(2, name="b", trainable=False)
    with tf.name_scope("scope"):
        c = tf.Variable(3, name="c")
    local = tf.Variable(4, name="local", collections=[tf.GraphKeys.LOCAL_VARIABLES],
                        trainable=False)
    assert tf.global_variables() == [a, b, c] == tf.all_variables()
    assert tf.trainable_variables() == [a, c] and not b.trainable and a.trainable
    assert tf.global_variables(scope="scope") == [c]
    assert tf.trainable_variables(scope="scope") == [c]
    assert tf.local_variables() == [local]
    init_some = tf.variables_initializer([a, b])
    assert init_some.type == "NoOp" and init_some.name == "init"
    assert tf.initialize_variables([c]).name == "init_1"
    assert tf.variables_initializer([]).type == "NoOp"
    with tf.Session() as sess:
        sess.run(init_some)
        assert sess.run([a, b]) == [1, 2]
        assert not sess.run(tf.is_variable_initialized(c))
        sess.run(tf.local_variables_initializer())
        assert sess.run(local) == 4
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run([a, b, c]) == [1, 2, 3]
        assert not sess.run(tf.is_variable_initialized(local))
    with tf.Session() as sess:
        sess.run(tf.initialize_all_variables())
        assert sess.run(c) == 3


def test_assign_shape_and_dtype_checks():
    v = tf.Variable([1.0, 2.0], name="v")
    with pytest.raises(ValueError, match=r"\(3,\).*variable 'v'"):
        tf.assign(v, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="variable 'v'"):
        tf.assign_add(v, [1.0])
    with pytest.raises(TypeError, match="int32"):
        tf.assign(v, tf.constant([1, 2]))
    with pytest.raises(TypeError):
        tf.assign(v, [1.5j, 2.0])


def test_validate_shape_false_allows_new_shapes():
    v = tf.Variable(np.zeros(2), validate_shape=False, name="flex")
    assert v.shape.ndims is None
    grow = tf.assign(v, np.ones(3), validate_shape=False)
    bad_add = tf.assign_add(v, np.ones(2))
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(grow), np.ones(3))
        assert sess.run(v).shape == (3,)
        with pytest.raises(tf.errors.InvalidArgumentError, match="variable"):
            sess.run(bad_add)


def test_placeholder_shaped_assign_is_checked_at_run_time():
    v = tf.Variable([1.0, 2.0])
    p = tf.placeholder(tf.float32)
    a = tf.assign(v, p)
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
            sess.run(a, {p: [1.0, 2.0, 3.0]})
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])  # the failed assign changed nothing


def test_feeding_a_variable_and_assigning_to_a_fed_one():
    v = tf.Variable(1.0)
    y = tf.identity(v)
    a = tf.assign(v, 5.0)
    with tf.Session() as sess:
        assert sess.run(y, {v: 3.0}) == 3.0  # no initializer needed: the read is fed
        with pytest.raises(tf.errors.InvalidArgumentError, match="fed"):
            sess.run(a, {v: 3.0})


def test_eval_load_and_shape_argument():
    v = tf.Variable([0, 0], name="v")
    with tf.Session() as sess:
        v.load([4, 5], sess)
        np.testing.assert_array_equal(v.eval(sess), [4, 5])
        with sess.as_default():
            v.load([6, 7])
            np.testing.assert_array_equal(v.eval(), [6, 7])
    s = tf.Variable(tf.placeholder_with_default([1.0, 2.0], [None]), shape=[None])
    assert s.shape.as_list() == [None]


def test_returned_values_do_not_alias_variable_state():
    v = tf.Variable(np.zeros(3))
    with tf.Session() as sess:
        sess.run(v.initializer)
        out = sess.run(v)
        out[:] = 5.0
        np.testing.assert_array_equal(sess.run(v), np.zeros(3))
        assigned = sess.run(tf.assign(v, np.ones(3)))
        assigned[:] = 9.0
        np.testing.assert_array_equal(sess.run(v), np.ones(3))


def test_concurrent_assign_add_from_many_threads():
    v = tf.Variable(0, dtype=tf.int64)
    inc = tf.assign_add(v, np.int64(1))
    sess = tf.Session()
    sess.run(v.initializer)

    def work():
        for _ in range(50):
            sess.run(inc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sess.run(v) == 200
    sess.close()


def test_variable_operators_read_the_value():
    v = tf.Variable(3.0)
    y = v * 2.0 + 1.0
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(y) == 7.0
        sess.run(v.assign(0.5))
        assert sess.run(y) == 2.0
