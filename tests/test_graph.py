"""The graph model (compiler/core/graph.py), static shapes (compiler/core/shapes.py) and dtypes.

Covers unique names and name scopes, lookups by name and their errors, collections,
control dependencies, devices, creation sites, Tensor/Operation APIs, default graphs,
TensorShape/Dimension (TensorFlow 1.x API) and `as_dtype`.
"""

import pickle
import sys
import threading

import numpy as np
import pytest

import flowjit as tf
from source_lines import line_of
from flowjit.compiler.core.shapes import broadcast_shape, scalar, unknown_shape


def _line_of(marker: str) -> int:
    return line_of(__file__, marker)


# --- names and name scopes --------------------------------------------------------------------


def test_default_and_explicit_names_are_made_unique():
    assert tf.constant(1).op.name == "Const"
    assert tf.constant(1).op.name == "Const_1"
    assert tf.constant(1, name="c").op.name == "c"
    assert tf.constant(1, name="c").op.name == "c_1"
    assert tf.constant(1, name="c").op.name == "c_2"
    assert tf.placeholder(tf.float32).op.name == "Placeholder"


def test_unique_names_skip_names_already_taken():
    tf.constant(1, name="c_1")
    assert tf.constant(1, name="c").op.name == "c"
    assert tf.constant(1, name="c").op.name == "c_2"


def test_names_are_unique_ignoring_case():
    tf.constant(1, name="w")
    assert tf.constant(1, name="W").op.name == "W_1"


def test_tensor_names_use_output_index():
    c = tf.constant([1.0], name="k")
    assert c.name == "k:0" and c.value_index == 0 and c.op.outputs == (c,)


def test_name_scope_prefixes_and_nests():
    with tf.name_scope("layer") as scope:
        assert scope == "layer/"
        assert tf.get_default_graph().get_name_scope() == "layer"
        with tf.name_scope("inner") as inner:
            assert inner == "layer/inner/"
            assert tf.constant(1).op.name == "layer/inner/Const"
        assert tf.constant(1, name="w").op.name == "layer/w"
    assert tf.get_default_graph().get_name_scope() == ""
    assert tf.constant(1).op.name == "Const"


def test_reentering_a_scope_name_makes_a_new_scope():
    with tf.name_scope("a") as s1:
        tf.constant(1)
    with tf.name_scope("a") as s2:
        c = tf.constant(1)
    assert (s1, s2) == ("a/", "a_1/")
    assert c.op.name == "a_1/Const"


def test_scope_name_with_trailing_slash_is_used_verbatim():
    with tf.name_scope("a") as scope:
        first = tf.constant(1)
    with tf.name_scope(scope) as again:
        second = tf.constant(1)
        third = tf.constant(1, name="other")
    assert again == "a/"
    assert (first.op.name, second.op.name, third.op.name) == ("a/Const", "a/Const_1",
                                                            "a/other")


def test_name_scope_none_or_empty_resets_to_root():
    with tf.name_scope("outer"):
        with tf.name_scope(None) as s:
            assert s == ""
            assert tf.constant(1).op.name == "Const"
        with tf.name_scope("") as s:
            assert s == ""
            assert tf.constant(1).op.name == "Const_1"
        assert tf.constant(1).op.name == "outer/Const"


def test_scope_and_op_names_share_one_namespace():
    tf.constant(1, name="x")
    with tf.name_scope("x") as s:
        assert s == "x_1/"


def test_name_scope_default_name_and_values_pick_graph():
    g = tf.Graph()
    with g.as_default():
        t = tf.constant(1.0)
    with tf.name_scope(None, default_name="dflt", values=[t]) as s:
        assert s == "dflt/"
        assert g.get_name_scope() == "dflt"
        assert tf.get_default_graph().get_name_scope() == ""


@pytest.mark.parametrize("bad", ["bad name", "-x", "a:b"])
def test_invalid_scope_and_op_names(bad):
    with pytest.raises(ValueError, match="not a valid"):
        with tf.name_scope(bad):
            pass
    with pytest.raises(ValueError, match="not a valid"):
        tf.constant(1, name=bad)


def test_name_scopes_are_per_thread():
    seen = {}

    def other():
        seen["scope"] = tf.get_default_graph().get_name_scope()

    g = tf.get_default_graph()
    with tf.name_scope("main_only"):
        with g.as_default():
            t = threading.Thread(target=other)
            t.start()
            t.join()
    assert seen["scope"] == ""


# --- lookups ----------------------------------------------------------------------------------


def test_get_tensor_and_operation_by_name():
    g = tf.get_default_graph()
    with tf.name_scope("s"):
        c = tf.constant(2.0, name="c")
    assert g.get_tensor_by_name("s/c:0") is c
    assert g.get_operation_by_name("s/c") is c.op
    assert "s/c" in g and "c" not in g
    assert g.as_graph_element("s/c:0") is c
    assert g.as_graph_element("s/c") is c.op
    assert g.as_graph_element(c) is c


def test_lookup_errors():
    g = tf.get_default_graph()
    tf.constant(1, name="x")
    with pytest.raises(ValueError, match="Operation name"):
        g.get_tensor_by_name("x")
    with pytest.raises(KeyError, match="has 1 outputs"):
        g.get_tensor_by_name("x:1")
    with pytest.raises(KeyError, match="'nope'"):
        g.get_tensor_by_name("nope:0")
    with pytest.raises(ValueError, match="x:a"):
        g.get_tensor_by_name("x:a")
    with pytest.raises(KeyError, match="not in the graph"):
        g.get_operation_by_name("nope")
    with pytest.raises(TypeError, match="strings"):
        g.get_operation_by_name(3)
    with pytest.raises(TypeError):
        g.as_graph_element(3.5)
    with pytest.raises(ValueError, match="Operation"):
        g.as_graph_element(g.get_operation_by_name("x"), allow_operation=False)
    with pytest.raises(ValueError, match="Tensor"):
        g.as_graph_element(g.get_tensor_by_name("x:0"), allow_tensor=False)


def test_elements_of_another_graph_are_rejected():
    g = tf.Graph()
    with g.as_default():
        other = tf.constant(1.0)
    with pytest.raises(ValueError, match="not an element of this graph"):
        tf.get_default_graph().as_graph_element(other)
    with pytest.raises(ValueError, match="different graph"):
        with tf.control_dependencies([other]):
            pass
    with pytest.raises(ValueError, match="same graph"):
        tf.get_default_graph().create_op(other.op.op_def, [other], {}, "bad")


def test_get_operations_in_creation_order():
    a = tf.constant(1)
    b = tf.placeholder(tf.int32)
    c = tf.identity(b)
    assert tf.get_default_graph().get_operations() == [a.op, b.op, c.op]
    assert c.op.inputs == (b,)
    assert b.consumers() == [c.op]
    assert a.consumers() == []


# --- collections ------------------------------------------------------------------------------


def test_collections():
    g = tf.get_default_graph()
    tf.add_to_collection("things", 1)
    g.add_to_collections(["things", "more"], 2)
    g.add_to_collections("solo", 3)
    assert tf.get_collection("things") == [1, 2]
    assert g.get_collection("more") == [2]
    assert g.get_collection("solo") == [3]
    assert g.get_collection("missing") == []
    copy = tf.get_collection("things")
    copy.append(99)
    assert tf.get_collection("things") == [1, 2]  # get_collection returns a copy
    ref = tf.get_collection_ref("things")
    ref.append(5)
    assert tf.get_collection("things") == [1, 2, 5]  # the ref is the live list
    assert tf.get_collection_ref("fresh") == [] and "fresh" in g.get_all_collection_keys()
    assert g.get_all_collection_keys() == sorted(g.get_all_collection_keys())
    g.clear_collection("things")
    assert g.get_collection("things") == []


def test_collection_scope_filter_matches_name_prefix():
    with tf.name_scope("enc"):
        a = tf.constant(1, name="a")
    with tf.name_scope("dec"):
        b = tf.constant(1, name="b")
    for t in (a, b, "no name attribute"):
        tf.add_to_collection("c", t)
    assert tf.get_collection("c", scope="enc") == [a]
    assert tf.get_collection("c", scope="dec/b") == [b]
    assert tf.get_collection("c", scope="e|d") == [a, b]


def test_graph_keys_values_match_tensorflow():
    assert tf.GraphKeys.GLOBAL_VARIABLES == "variables"
    assert tf.GraphKeys.VARIABLES == "variables"
    assert tf.GraphKeys.TRAINABLE_VARIABLES == "trainable_variables"
    assert tf.GraphKeys.UPDATE_OPS == "update_ops"


# --- control dependencies ---------------------------------------------------------------------


def test_control_dependencies_attach_and_nest():
    a = tf.no_op(name="a")
    b = tf.constant(1.0, name="b")
    with tf.control_dependencies([a]):
        c = tf.constant(1.0, name="c")
        with tf.control_dependencies([b]):  # a tensor stands for its op
            d = tf.constant(1.0, name="d")
    e = tf.constant(1.0, name="e")
    assert c.op.control_inputs == (a,)
    assert set(d.op.control_inputs) == {a, b.op}
    assert e.op.control_inputs == ()


def test_control_dependencies_none_clears_outer_ones():
    a = tf.no_op()
    with tf.control_dependencies([a]):
        with tf.control_dependencies(None):
            free = tf.constant(1.0)
            b = tf.no_op()
            with tf.control_dependencies([b]):
                only_b = tf.constant(1.0)
        again = tf.constant(1.0)
    assert free.op.control_inputs == ()
    assert only_b.op.control_inputs == (b,)
    assert again.op.control_inputs == (a,)


def test_control_dependency_on_a_data_input_is_not_duplicated():
    x = tf.placeholder(tf.float32)
    with tf.control_dependencies([x, x.op]):
        y = tf.identity(x)
    assert y.op.control_inputs == ()


def test_control_inputs_must_be_ops_or_tensors():
    with pytest.raises(TypeError, match="Control inputs"):
        with tf.control_dependencies([42]):
            pass


def test_control_dependencies_order_execution():
    v = tf.Variable(1.0)
    inc = tf.assign_add(v, 5.0)
    with tf.control_dependencies([inc]):
        after = tf.identity(v)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(after) == 6.0
        assert sess.run(after) == 11.0
        assert sess.run(v) == 11.0


def test_group_runs_all_inputs():
    v = tf.Variable(0.0)
    w = tf.Variable(0.0)
    g = tf.group(tf.assign(v, 1.0), [tf.assign(w, 2.0)], name="both")
    assert g.name == "both" and g.type == "NoOp" and len(g.control_inputs) == 2
    with tf.Session() as sess:
        sess.run(g)
        assert sess.run([v, w]) == [1.0, 2.0]


# --- devices and creation sites -------------------------------------------------------------


def test_device_is_recorded_and_nests():
    with tf.device("/cpu:0"):
        a = tf.constant(1)
        with tf.device("/gpu:1"):
            b = tf.constant(1)
        with tf.device(None):
            c = tf.constant(1)
    d = tf.constant(1)
    # canonical names, as TensorFlow records them
    assert (a.device, b.device, c.device, d.device) == ("/device:CPU:0", "/device:GPU:1", "",
                                                        "")
    assert a.op.device == "/device:CPU:0"


def test_device_function_sees_the_op():
    seen = []

    def chooser(op):
        seen.append(op)
        return "/device:CPU:3"

    with tf.device(chooser):
        t = tf.constant(1)
    assert t.device == "/device:CPU:3" and len(seen) == 1


def test_creation_site_points_at_user_line():
    t = tf.constant(3.0, name="site")  # CREATION-SITE-MARKER
    line = _line_of("CREATION-SITE-MARKER")
    filename, lineno, fn = t.op.traceback[0]
    assert filename == __file__ and lineno == line
    assert fn == "test_creation_site_points_at_user_line"
    assert t.op.creation_site == f"{__file__}:{line} in {fn}"


def test_creation_site_skips_library_frames():
    def helper():
        return tf.identity(tf.placeholder(tf.float32))  # HELPER-SITE-MARKER

    t = helper()
    assert t.op.traceback[0][1] == _line_of("HELPER-SITE-MARKER")
    assert t.op.traceback[1][2] == "test_creation_site_skips_library_frames"
    for filename, _, _ in t.op.traceback:
        assert "/ops/" not in filename and "/compiler/" not in filename


# --- Tensor and Operation API -----------------------------------------------------------------


def test_tensor_properties_and_repr():
    p = tf.placeholder(tf.float32, [None, 3], name="inp")
    assert p.dtype == tf.float32 and p.graph is tf.get_default_graph()
    assert p.shape.as_list() == [None, 3] and p.get_shape() == p.shape
    assert repr(p) == "<tf.Tensor 'inp:0' shape=(?, 3) dtype=float32>"
    assert repr(p.op) == "<tf.Operation 'inp' type=Placeholder>"


def test_tensor_identity_semantics_and_hashing():
    a = tf.constant(1.0)
    b = tf.constant(1.0)
    assert a == a and not (a == b) and a != b
    d = {a: 1, b: 2}
    assert d[a] == 1 and d[b] == 2


def test_tensor_refuses_python_conversions():
    t = tf.constant([1.0, 2.0])
    with pytest.raises(TypeError, match="bool"):
        bool(t)
    with pytest.raises(TypeError, match="iterable"):
        iter(t)
    with pytest.raises(TypeError, match="len"):
        len(t)
    with pytest.raises(TypeError, match="NumPy"):
        np.asarray(t)


def test_set_shape_refines_and_rejects():
    p = tf.placeholder(tf.float32, [None, None])
    p.set_shape([2, None])
    p.set_shape([None, 3])
    assert p.shape.as_list() == [2, 3]
    with pytest.raises(ValueError, match=r"not compatible"):
        p.set_shape([4, 3])
    q = tf.placeholder(tf.float32)
    q.set_shape([5])
    assert q.shape.as_list() == [5]


def test_operation_attrs():
    p = tf.placeholder(tf.int64, [2], name="p")
    op = p.op
    assert op.type == "Placeholder" and op.name == "p"
    assert op.get_attr("dtype") == tf.int64
    assert op.get_attr("shape").as_list() == [2]
    attrs = op.attrs
    attrs["dtype"] = None
    assert op.get_attr("dtype") == tf.int64  # attrs is a copy
    with pytest.raises(ValueError, match="no attr named 'missing'"):
        op.get_attr("missing")
    assert op.values() == op.outputs == (p,)
    assert op.op_def.name == "Placeholder"


def test_no_op_has_no_outputs():
    op = tf.no_op(name="nothing")
    assert op.outputs == () and op.type == "NoOp" and op.name == "nothing"


# --- graphs ----------------------------------------------------------------------------------


def test_graphs_are_separate_and_nest_as_default():
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default() as entered:
        assert entered is g1 and tf.get_default_graph() is g1
        a = tf.constant(1)
        with g2.as_default():
            b = tf.constant(1)
            assert tf.get_default_graph() is g2
        assert tf.get_default_graph() is g1
    assert a.graph is g1 and b.graph is g2
    assert a.op.name == b.op.name == "Const"
    assert tf.get_default_graph().get_operations() == []


def test_default_graph_stack_is_per_thread():
    g = tf.Graph()
    seen = []
    with g.as_default():
        t = threading.Thread(target=lambda: seen.append(tf.get_default_graph()))
        t.start()
        t.join()
    assert seen[0] is not g and seen[0] is tf.get_default_graph()


def test_reset_default_graph():
    old = tf.get_default_graph()
    tf.constant(1)
    tf.reset_default_graph()
    assert tf.get_default_graph() is not old
    assert tf.get_default_graph().get_operations() == []
    with tf.Graph().as_default():
        with pytest.raises(AssertionError):
            tf.reset_default_graph()


def test_finalized_graph_cannot_grow():
    g = tf.Graph()
    with g.as_default():
        tf.constant(1)
        g.finalize()
        assert g.finalized
        with pytest.raises(RuntimeError, match="finalized"):
            tf.constant(2)


def test_version_counts_ops():
    g = tf.Graph()
    assert g.version == 0
    with g.as_default():
        tf.constant(1)
        tf.no_op()
    assert g.version == 2


def test_seed_attribute_defaults_to_none():
    assert tf.Graph().seed is None


# --- TensorShape and Dimension ----------------------------------------------------------------


def test_tensorshape_tf1_api():
    s = tf.TensorShape([2, None, 4])
    assert s[0].value == 2 and s[1].value is None
    assert isinstance(s[0], tf.Dimension)
    assert s.as_list() == [2, None, 4] and s.dims == (2, None, 4)
    assert s.ndims == 3 and s.rank == 3 and len(s) == 3
    assert [d.value for d in s] == [2, None, 4]
    assert s[1:].as_list() == [None, 4]
    assert int(s[2]) == 4
    assert not s.is_fully_defined() and s.num_elements() is None
    assert tf.TensorShape([2, 3]).num_elements() == 6
    assert tf.TensorShape([]).num_elements() == 1 and scalar() == tf.TensorShape([])
    assert str(s) == "(2, ?, 4)" and str(tf.TensorShape([3])) == "(3,)"
    assert repr(s) == "TensorShape([2, None, 4])"


def test_tensorshape_from_ints_dimensions_and_minus_one():
    assert tf.TensorShape(3).as_list() == [3]
    assert tf.TensorShape([tf.Dimension(2), np.int64(5), -1]).as_list() == [2, 5, None]
    with pytest.raises(ValueError):
        tf.TensorShape([-2])
    with pytest.raises(TypeError):
        tf.TensorShape([2.5])


def test_unknown_rank_shape():
    u = tf.TensorShape(None)
    assert u.ndims is None and u.dims is None and not u
    assert str(u) == "<unknown>"
    assert u[0].value is None and u[1:] == unknown_shape()
    with pytest.raises(ValueError, match="as_list"):
        u.as_list()
    with pytest.raises(ValueError):
        len(u)
    with pytest.raises(ValueError):
        iter(u)
    assert u.is_compatible_with([1, 2, 3])
    assert u.merge_with([1, None]).as_list() == [1, None]
    assert tf.TensorShape([1]).merge_with(u).as_list() == [1]
    assert u.concatenate([2]).ndims is None
    assert unknown_shape(2).as_list() == [None, None]


def test_shape_merge_and_compatibility():
    s = tf.TensorShape([2, None])
    assert s.merge_with([None, 3]).as_list() == [2, 3]
    assert s.is_compatible_with([2, 5]) and not s.is_compatible_with([3, 5])
    assert not s.is_compatible_with([2]) and not s.is_compatible_with([2, 1, 1])
    with pytest.raises(ValueError, match="not compatible"):
        s.merge_with([3, 3])
    with pytest.raises(ValueError):
        s.assert_is_compatible_with([2, 2, 2])
    assert s.with_rank(2) == s
    with pytest.raises(ValueError):
        s.with_rank(3)
    assert s.concatenate([7]).as_list() == [2, None, 7]


def test_shape_equality_is_structural():
    assert tf.TensorShape([None]) == tf.TensorShape([None])
    assert tf.TensorShape([1, 2]) == [1, 2] and tf.TensorShape([1, 2]) != [2, 1]
    assert hash(tf.TensorShape([1, 2])) == hash(tf.TensorShape((1, 2)))
    assert tf.TensorShape(None) != tf.TensorShape([])


def test_dimension_api():
    d, u = tf.Dimension(3), tf.Dimension(None)
    assert d == 3 and d != 4 and (u == 3) is None and (u != 3) is None
    assert (d + 1).value == 4 and (2 * d).value == 6 and (d - 1).value == 2
    assert (d // 2).value == 1 and (d + u).value is None and (1 + d).value == 4
    assert d.merge_with(u).value == 3 and u.merge_with(5).value == 5
    assert d.is_compatible_with(u) and not d.is_compatible_with(4)
    with pytest.raises(ValueError):
        d.merge_with(4)
    with pytest.raises(TypeError):
        int(u)
    with pytest.raises(ValueError):
        tf.Dimension(-1)
    assert str(u) == "?" and repr(d) == "Dimension(3)"
    assert [10, 20, 30, 40][d] == 40  # a known Dimension indexes like an int


def test_broadcast_shape():
    assert broadcast_shape([2, 1, 3], [4, 1]).as_list() == [2, 4, 3]
    assert broadcast_shape([None, 3], [5, 1]).as_list() == [5, 3]
    assert broadcast_shape([], [2]).as_list() == [2]
    assert broadcast_shape(tf.TensorShape(None), [2]).ndims is None
    with pytest.raises(ValueError, match="broadcasting"):
        broadcast_shape([2, 3], [4, 3])


# --- dtypes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value,expected", [
    ("float32", tf.float32), ("float", tf.float32), ("double", tf.float64),
    ("half", tf.float16), ("int64", tf.int64), ("bool", tf.bool), ("string", tf.string),
    (np.float32, tf.float32), (np.dtype("int16"), tf.int16), (np.uint8, tf.uint8),
    (np.complex128, tf.complex128), (np.bool_, tf.bool), (bool, tf.bool), (bytes, tf.string),
    (str, tf.string), (object, tf.string), (1, tf.float32), (3, tf.int32), (9, tf.int64),
    (19, tf.float16), (tf.int8, tf.int8),
])
def test_as_dtype(value, expected):
    assert tf.as_dtype(value) is expected


@pytest.mark.parametrize("bad", ["flot", 1000, np.dtype("datetime64[s]"), [1]])
def test_as_dtype_rejects(bad):
    with pytest.raises(TypeError):
        tf.as_dtype(bad)


def test_dtype_equality_with_numpy_and_names():
    assert tf.float32 == np.float32 and tf.float32 == "float32"
    assert tf.float32 != np.float64 and tf.float32 != "nonsense" and tf.float32 != None  # noqa
    assert tf.half is tf.float16 and tf.double is tf.float64
    assert len({tf.float32, tf.as_dtype("float32"), tf.as_dtype(np.float32)}) == 1
    assert pickle.loads(pickle.dumps(tf.int16)) is tf.int16
    assert str(tf.float32) == "<dtype: 'float32'>" and repr(tf.float32) == "tf.float32"


def test_dtype_properties():
    assert tf.float16.is_floating and not tf.int32.is_floating
    assert tf.int32.is_integer and tf.uint64.is_integer and not tf.bool.is_integer
    assert tf.uint8.is_unsigned and not tf.int8.is_unsigned
    assert tf.complex64.is_complex and tf.complex64.real_dtype is tf.float32
    assert tf.complex128.real_dtype is tf.float64 and tf.float32.real_dtype is tf.float32
    assert tf.bool.is_bool and not tf.bool.is_numeric and not tf.string.is_numeric
    assert tf.int8.min == -128 and tf.uint16.max == 65535 and tf.float16.max == 65504.0
    assert tf.float64.size == 8 and tf.int16.size == 2
    assert tf.float32.as_numpy_dtype is np.float32 and tf.float32.np_dtype == np.dtype("float32")
    assert tf.int32.as_datatype_enum == 3 and tf.float32.base_dtype is tf.float32
    assert tf.int32.is_compatible_with(np.int32) and not tf.int32.is_compatible_with(tf.int64)
    with pytest.raises(TypeError):
        _ = tf.string.min


def test_module_exports_tf1_dtype_names():
    mod = sys.modules["flowjit"]
    for name in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                 "uint16", "uint32", "uint64", "bool", "complex64", "complex128", "string"):
        assert isinstance(getattr(mod, name), tf.DType), name
