"""GraphDef serialization (TensorFlow's protobuf, binary and text), import_graph_def,
train.write_graph and gfile."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from google.protobuf import text_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowjit as tf
from flowjit import errors, gfile, train
from flowjit.compiler.core.attr_values import from_attr_value, tensor_array, to_attr_value
from flowjit.compiler.core.graph_def import (DecodeError, GraphDef, NodeDef, node_attrs,
                                             node_def_for, parse_graph_def, parse_text)
from flowjit.compiler.graph_import import import_graph_def
from flowjit.compiler.core.shapes import TensorShape
from flowjit.ops import registry
from samples import all_samples

SAMPLES = all_samples()

CONSTANTS = {
    "f16": np.array([1.5, -2.25, 65504.0], np.float16),
    "f32": np.array([[1.0, 2.5], [3.25, -4.0]], np.float32),
    "f64": np.array([np.pi, 1e-300, -1e300], np.float64),
    "i8": np.array([-128, 0, 127], np.int8),
    "i16": np.array([-32768, 32767], np.int16),
    "i32": np.array(-7, np.int32),
    "i64": np.array([-2**63, 2**63 - 1], np.int64),
    "u8": np.array([0, 255], np.uint8),
    "u16": np.array([65535], np.uint16),
    "u32": np.array([2**32 - 1], np.uint32),
    "u64": np.array([2**64 - 1, 0], np.uint64),
    "c64": np.array([1 + 2j, -3.5j], np.complex64),
    "c128": np.array([[1e-200 - 1j]], np.complex128),
    "b": np.array([True, False, True]),
    "s": np.array([b"hello", b"", b"\x00\xff\x80 bytes"], dtype=object),
    "s0": np.array(b"scalar", dtype=object),
    "empty": np.zeros((0, 3), np.float32),
    "empty_s": np.empty((2, 0), dtype=object),
    "special": np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], np.float64),
    "special32": np.array([np.nan, -np.inf, -0.0], np.float32),
    "special16": np.array([np.nan, np.inf, -0.0], np.float16),
    "cnan": np.array([complex(np.nan, -0.0), complex(-np.inf, 1)], np.complex128),
}


def _same_array(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype == object:
        assert all(type(x) is type(y) and x == y for x, y in zip(a.ravel(), b.ravel()))
    else:
        assert a.tobytes() == b.tobytes()  # bit-exact: NaN payloads, -0.0


def _build_rich_graph():
    """A graph with every attr kind the core ops use; returns the graph and its tensors."""
    g = tf.Graph()
    with g.as_default():
        consts = {k: tf.constant(v, name=k) for k, v in CONSTANTS.items()}
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        tf.placeholder(tf.int64, None, name="unknown_rank")
        tf.placeholder(tf.string, [], name="scalar_string")
        v = tf.Variable(np.arange(6, dtype=np.float64).reshape(2, 3), name="v")
        with tf.control_dependencies([v.initializer]):
            after = tf.identity(consts["f32"], name="after_init")
        with tf.name_scope("scope"):
            y = tf.identity(x, name="y")
        with tf.device("/cpu:0"):
            tf.placeholder_with_default(consts["f32"], [None, 2], name="pwd")
        init = tf.global_variables_initializer()
    return g, dict(consts=consts, x=x, v=v, after=after, y=y, init=init)


def _same_value(a, b):
    assert type(a) is type(b), (a, b)
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same_value(x, y)
    elif isinstance(a, np.ndarray):
        _same_array(a, b)
    elif isinstance(a, float):
        assert np.float32(a).tobytes() == np.float32(b).tobytes()
    elif isinstance(a, TensorShape):
        assert a.dims == b.dims
    else:
        assert a == b


def _assert_graph_defs_exact(a: GraphDef, b: GraphDef):
    assert [n.name for n in a.node] == [n.name for n in b.node]
    for na, nb in zip(a.node, b.node):
        assert (na.op, list(na.input), na.device) == (nb.op, list(nb.input), nb.device)
        va, vb = node_attrs(na), node_attrs(nb)
        assert sorted(va) == sorted(vb)
        for key in va:
            _same_value(va[key], vb[key])
    assert a == b


@pytest.mark.parametrize("form", ["binary", "text"])
def test_round_trip_is_exact(form):
    g, _ = _build_rich_graph()
    gd = g.as_graph_def()
    assert isinstance(gd, GraphDef) and gd.versions.producer > 0
    data = gd.SerializeToString() if form == "binary" else text_format.MessageToString(gd)
    back = parse_graph_def(data.encode() if form == "text" else data)
    _assert_graph_defs_exact(gd, back)
    consts = {n.name: tensor_array(n.attr["value"].tensor) for n in back.node
              if n.op == "Const" and n.name in CONSTANTS}
    for name, value in CONSTANTS.items():
        _same_array(value, consts[name])
        assert not consts[name].flags.writeable   # constants are read-only
    if form == "text":
        assert parse_text(data) == gd
        assert 'op: "VariableV2"' in data and 'input: "^v/Assign"' in data
        assert "type: DT_FLOAT" in data


def test_node_def_inputs_follow_tensorflow_conventions():
    g, t = _build_rich_graph()
    gd = g.as_graph_def()
    nodes = {n.name: n for n in gd.node}
    assert list(nodes["v/Assign"].input) == ["v", "v/initial_value"]
    assert list(nodes["after_init"].input) == ["f32", "^v/Assign"]
    assert list(nodes["init"].input) == ["^v/Assign"]
    assert nodes["pwd"].device == "/device:CPU:0"   # canonical, as TensorFlow writes it
    assert nodes["unknown_rank"].attr["shape"].shape.unknown_rank
    assert [d.size for d in nodes["x"].attr["shape"].shape.dim] == [-1, 3]
    assert t["x"].op.node_def.attr["dtype"].type == tf.float32.as_datatype_enum
    assert list(node_def_for(t["y"].op).input) == ["x"]
    assert t["y"].op.node_def == nodes["scope/y"]
    # the type attrs TensorFlow's definitions need are written even where flowjit's ops
    # do not store them
    assert nodes["v/Assign"].attr["T"].type == tf.float64.as_datatype_enum
    assert nodes["scope/y"].attr["T"].type == tf.float32.as_datatype_enum


# value, what it decodes to (None: itself)
ATTR_VALUES = [
    (None, None), (True, None), (False, None), (0, None), (-3, None), (2**62, None),
    (1.5, None), (-0.0, None), (float("nan"), None), (float("inf"), None),
    (0.1, float(np.float32(0.1))),                      # AttrValue.f is 32-bit
    ("text ünïcode", None), ("", None), (b"\x00\xff", None), (b"ok", "ok"),
    (tf.float16, None), (tf.string, None),
    (TensorShape([None, 2]), None), (TensorShape(None), None), (TensorShape([]), None),
    (np.float32(1.25), 1.25), (np.int64(-5), -5), (np.complex64(1j), np.array(1j, np.complex64)),
    ([1, 2], None), ((3, 4), [3, 4]), ([], None), ((), []), (["a", "b"], None),
    ([tf.int32, tf.bool], None), ([[1, None], []], None), ([0.5, -2.0], None),
    (np.arange(5, dtype=np.int16), None), (np.array([[b"a"], [b"b"]], dtype=object), None),
]


@pytest.mark.parametrize("value, decoded", ATTR_VALUES)
def test_every_attr_kind_round_trips_with_its_type(value, decoded):
    av = to_attr_value(value)
    back = from_attr_value(type(av).FromString(av.SerializeToString()))
    expected = value if decoded is None else decoded
    if isinstance(expected, float) and np.isnan(expected):
        assert isinstance(back, float) and np.isnan(back)
    else:
        _same_value(expected, back)


def test_dtype_names_are_written_as_types_where_tensorflow_expects_types():
    assert to_attr_value(["float32", "int64"], "list(type)").list.type[:] == [1, 9]
    assert to_attr_value("float32", "type").type == 1
    assert to_attr_value("float32").s == b"float32"


def test_unserializable_attr_is_a_clear_type_error():
    with tf.Graph().as_default() as g:
        g.create_op(registry.lookup("NoOp"), [], {"fn": lambda: 1}, "bad")
    with pytest.raises(TypeError, match=r"Node 'bad'.*attr 'fn'.*function"):
        g.as_graph_def()
    with pytest.raises(TypeError, match="mixing kinds"):
        to_attr_value([1, "a"])
    with pytest.raises(TypeError, match="no flowjit dtype|datetime64"):
        to_attr_value(np.zeros(2, "datetime64[s]"))


@pytest.mark.parametrize("op_type", sorted(SAMPLES))
@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_registered_op_survives_serialization(op_type, data):
    """Each op's sample graph, written and re-imported, has the same ops and results."""
    case = data.draw(SAMPLES[op_type])
    with tf.Graph().as_default() as g:
        fetches = case.build()
    names = [t.name for t in fetches]
    gd = g.as_graph_def()
    for form in (gd.SerializeToString(), text_format.MessageToString(gd).encode()):
        with tf.Graph().as_default() as g2:
            import_graph_def(parse_graph_def(form), name="")
        # the same nodes; a while loop's gradient adds control inputs to a NextIteration
        # built before them, so the re-imported graph may list that node later
        assert sorted(n.SerializeToString(deterministic=True) for n in g2.as_graph_def().node) \
            == sorted(n.SerializeToString(deterministic=True) for n in gd.node)
        for name in names:
            a, b = g.get_tensor_by_name(name), g2.get_tensor_by_name(name)
            assert a.dtype is b.dtype and a.shape.dims == b.shape.dims, name
    if case.expected is None:
        return  # random values: structure only
    feeds = {k + ":0": v for k, v in case.feeds.items()}
    for x, y in zip(_values_by_name(g, names, feeds), _values_by_name(g2, names, feeds)):
        np.testing.assert_array_equal(x, y)


# --- malformed data ------------------------------------------------------------------------------


def _small_binary():
    with tf.Graph().as_default() as g:
        tf.constant([1.0, 2.0], name="c")
        tf.placeholder(tf.int32, [None], name="p")
    return g.as_graph_def().SerializeToString()


@pytest.mark.parametrize("data", [
    b"\x89PNG\r\n\x1a\n....", b"\x0a\xff\xff\xff", b"node { name: ", b"nodes {}",
    b"\xff\xfe not text",
])
def test_malformed_data_raises_decode_error(data):
    with pytest.raises(DecodeError):
        parse_graph_def(data)


def test_truncated_binary_is_detected_inside_a_node():
    data = _small_binary()
    for n in range(2, 12):          # cut inside the first node's length-delimited bytes
        with pytest.raises(DecodeError):
            parse_graph_def(data[:n])


def test_newer_graph_def_version_is_refused():
    gd = parse_graph_def(_small_binary())
    gd.versions.min_consumer = 10**6
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="needs a reader of GraphDef version"):
            import_graph_def(gd)


# --- import_graph_def --------------------------------------------------------------------------


def _values_by_name(graph, names, feed=None, init=None):
    with tf.Session(graph=graph) as sess:
        if init:
            sess.run(init)
        return sess.run(names, feed)


def test_reimported_graph_computes_the_same_values_by_name():
    g, _ = _build_rich_graph()
    names = [f"{k}:0" for k in CONSTANTS] + ["v/read:0", "after_init:0", "scope/y:0", "pwd:0"]
    feed = {"x:0": np.ones((2, 3), np.float32)}
    expected = _values_by_name(g, names, feed, init="init")
    with tf.Graph().as_default() as g2:
        assert import_graph_def(GraphDef.FromString(g.as_graph_def().SerializeToString()),
                                name="") is None
    got = _values_by_name(g2, names, feed, init="init")
    for a, b in zip(expected, got):
        _same_array(a, b)
    assert g2.get_tensor_by_name("scope/y:0").shape.as_list() == [None, 3]
    assert g2.get_operation_by_name("pwd").device == "/device:CPU:0"
    _assert_graph_defs_exact(g.as_graph_def(), g2.as_graph_def())  # re-export is identical


def test_prefix_input_map_and_return_elements():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None], name="x")
        tf.identity(x, name="y")
        with tf.control_dependencies([x.op]):
            tf.no_op(name="train")
    gd = g.as_graph_def()
    with tf.Graph().as_default():
        c = tf.constant([3.0, 4.0], name="c")
        y, train_op = import_graph_def(gd, input_map={"x:0": c},
                                       return_elements=["y:0", "train"])
        assert y.name == "import/y:0" and train_op.name == "import/train"
        assert [o.name for o in train_op.control_inputs] == ["import/x"]
        y1, = import_graph_def(gd, input_map={"x": [5.0]}, return_elements=["y:0"])
        assert y1.name == "import_1/y:0"
        with tf.name_scope("outer"):
            y2, = import_graph_def(gd, name="net", input_map={"x:0": c},
                                   return_elements=["y:0"])
        assert y2.name == "outer/net/y:0"
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(y), [3.0, 4.0])
            np.testing.assert_array_equal(sess.run(y1), [5.0])
            np.testing.assert_array_equal(sess.run("outer/net/y:0"), [3.0, 4.0])
        with pytest.raises(ValueError, match=r"passed int32 from .* expected float32"):
            import_graph_def(gd, input_map={"x:0": tf.constant(1)})
        with pytest.raises(ValueError, match=r"not found in graph_def: \['q:0'\]"):
            import_graph_def(gd, input_map={"q:0": c})
        with pytest.raises(ValueError, match="return tensor 'nope:0' not found"):
            import_graph_def(gd, return_elements=["nope:0"])
        with pytest.raises(ValueError, match="'y' has 1 outputs"):
            import_graph_def(gd, return_elements=["y:3"])


def test_nodes_in_any_order_and_control_input_mapping():
    with tf.Graph().as_default() as g:
        a = tf.constant(2.0, name="a")
        b = tf.identity(a, name="b")
        with tf.control_dependencies([a.op]):
            tf.identity(b, name="c")
    gd = g.as_graph_def()
    gd.node.reverse()
    with tf.Graph().as_default() as g2:
        marker = tf.no_op(name="marker")
        c, = import_graph_def(gd, return_elements=["c:0"], name="r",
                              input_map={"^a": marker})
        assert [o.name for o in c.op.control_inputs] == ["marker"]
        assert c.eval(session=tf.Session()) == 2.0
        assert [o.name for o in g2.get_operations()] == ["marker", "r/a", "r/b", "r/c"]


def _node(name, op, inputs=(), **attrs):
    node = NodeDef(name=name, op=op, input=list(inputs))
    for key, value in attrs.items():
        node.attr[key].CopyFrom(to_attr_value(value))
    return node


def _graph_def(*nodes):
    gd = GraphDef()
    gd.node.extend(nodes)
    return gd


def test_invalid_graph_defs_leave_the_graph_untouched():
    def const(name, inputs=()):
        return _node(name, "Const", inputs, value=np.array(1.0, np.float32), dtype=tf.float32)

    cases = [
        (_graph_def(const("a"), _node("u", "NoSuchOp"), _node("w", "Other")),
         errors.NotFoundError, "NoSuchOp \\(node 'u'\\), Other \\(node 'w'\\)"),
        (_graph_def(_node("i", "Identity", ["missing:0"])), ValueError,
         "'missing' that is not in the graph_def"),
        (_graph_def(_node("p", "Identity", ["q"]), _node("q", "Identity", ["p"])),
         ValueError, "cycle"),
        (_graph_def(const("a"), const("a")), ValueError, "two nodes named 'a'"),
        (_graph_def(const("bad name")), ValueError, "invalid node name"),
        (_graph_def(const("existing")), ValueError, "already has operations"),
        (_graph_def(_node("c", "Const", value=np.array(1.0, np.float32), dtype=tf.float32,
                          colour="red")), ValueError,
         "node 'c' \\(Const\\) has attrs \\['colour'\\] that neither"),
    ]
    with tf.Graph().as_default() as g:
        tf.constant(0, name="existing")
        for gd, exc, message in cases:
            with pytest.raises(exc, match=message):
                import_graph_def(gd, name="")
            assert [o.name for o in g.get_operations()] == ["existing"]
        with pytest.raises(TypeError, match="must be a GraphDef"):
            import_graph_def(b"bytes")


def test_add_shapes_records_and_refines_shapes():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        tf.identity(x, name="y")
    gd = g.as_graph_def(add_shapes=True)
    node = [n for n in gd.node if n.name == "y"][0]
    assert from_attr_value(node.attr["_output_shapes"]) == [[None, 2]]
    node.attr["_output_shapes"].CopyFrom(to_attr_value([[5, 2]]))
    with tf.Graph().as_default():
        y, = import_graph_def(parse_text(str(gd)), return_elements=["y:0"])
        assert y.shape.as_list() == [5, 2]
        assert "_output_shapes" not in y.op.attrs


# --- write_graph and gfile -------------------------------------------------------------------


def test_write_graph_is_atomic(tmp_path, monkeypatch):
    g, _ = _build_rich_graph()
    logdir = tmp_path / "new" / "dir"
    path = train.write_graph(g, str(logdir), "g.pbtxt")
    assert path == os.path.join(str(logdir), "g.pbtxt")
    assert os.listdir(logdir) == ["g.pbtxt"]
    with gfile.GFile(path) as f:
        text = f.read()
    assert isinstance(text, str) and parse_text(text) == g.as_graph_def(add_shapes=True)
    binary = train.write_graph(g.as_graph_def(), str(logdir), "g.pbtxt", as_text=False)
    with gfile.GFile(binary, "rb") as f:
        assert GraphDef.FromString(f.read()) == g.as_graph_def()
    before = open(path, "rb").read()
    with tf.Graph().as_default() as bad:
        bad.create_op(registry.lookup("NoOp"), [], {"x": object()}, "bad")
    with pytest.raises(TypeError):
        train.write_graph(bad, str(logdir), "g.pbtxt")

    def failing_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(errors.OpError, match="No space left"):
        train.write_graph(g, str(logdir), "g.pbtxt", as_text=False)
    monkeypatch.undo()
    assert open(path, "rb").read() == before
    assert os.listdir(logdir) == ["g.pbtxt"]  # no temporary file left behind


def test_gfile_wrappers(tmp_path):
    d = str(tmp_path)
    f = gfile.GFile(os.path.join(d, "missing"))  # lazy, like TensorFlow's
    with pytest.raises(errors.NotFoundError, match="missing"):
        f.read()
    p = os.path.join(d, "a.txt")
    with gfile.Open(p, "w") as f:
        f.write("hello\n")
        f.write(b"w\xc3\xb6rld\n")
    with gfile.GFile(p) as f:
        assert list(f) == ["hello\n", "wörld\n"]
    with gfile.GFile(p, "rb") as f:
        assert f.read(3) == b"hel" and f.tell() == 3 and f.readline() == b"lo\n"
        assert f.size() == 13
    assert gfile.Exists(p) and not gfile.IsDirectory(p)
    gfile.MakeDirs(os.path.join(d, "x", "y"))
    gfile.MakeDirs(os.path.join(d, "x", "y"))
    gfile.MkDir(os.path.join(d, "x"))
    with pytest.raises(errors.NotFoundError):
        gfile.MkDir(os.path.join(d, "no", "parent"))
    assert gfile.ListDirectory(d) == ["a.txt", "x"]  # the failed lazy read made no file
    assert gfile.Glob(os.path.join(d, "*.txt")) == [p]
    gfile.Copy(p, os.path.join(d, "b.txt"))
    with pytest.raises(errors.AlreadyExistsError):
        gfile.Copy(p, os.path.join(d, "b.txt"))
    with pytest.raises(errors.AlreadyExistsError):
        gfile.Rename(p, os.path.join(d, "b.txt"))
    gfile.Rename(p, os.path.join(d, "b.txt"), overwrite=True)
    assert not gfile.Exists(p) and gfile.Stat(os.path.join(d, "b.txt")).length == 13
    with pytest.raises(errors.FailedPreconditionError):
        gfile.Remove(os.path.join(d, "x"))
    with pytest.raises(errors.NotFoundError):
        gfile.Remove(p)
    with pytest.raises(errors.NotFoundError):
        gfile.ListDirectory(os.path.join(d, "nope"))
    gfile.DeleteRecursively(os.path.join(d, "x"))
    gfile.Remove(os.path.join(d, "b.txt"))
    assert gfile.ListDirectory(d) == []
    with pytest.raises(ValueError, match="closed"):
        f.read()


# --- a fresh process reads what another wrote ---------------------------------------------------

_BUILD = """
import numpy as np, flowjit as tf
v = tf.Variable(np.array([1.5, -2.0, 3.25]), name="v")
x = tf.placeholder(tf.float64, [3], name="x")
s = tf.constant(np.array([b"a", b"\\xff"], dtype=object), name="s")
out = tf.identity((v + x) * tf.constant(2.0, tf.float64), name="out")
init = tf.global_variables_initializer()
"""

_WRITER = _BUILD + """
import sys
from flowjit import train
train.write_graph(tf.get_default_graph(), sys.argv[1], "g.pbtxt", as_text=True)
train.write_graph(tf.get_default_graph().as_graph_def(), sys.argv[1], "g.pb", as_text=False)
"""

_READER = """
import sys, pickle, numpy as np, flowjit as tf
from flowjit import gfile
from google.protobuf import text_format
results = {}
for name in ("g.pbtxt", "g.pb"):
    with tf.Graph().as_default() as g:
        with gfile.GFile(sys.argv[1] + "/" + name, "rb") as f:
            gd = tf.GraphDef()
            if name.endswith(".pbtxt"):
                text_format.Merge(f.read().decode(), gd)
            else:
                gd.ParseFromString(f.read())
        tf.import_graph_def(gd, name="")
        with tf.Session() as sess:
            sess.run("init")
            results[name] = sess.run(["out:0", "s:0"], {"x:0": np.array([1.0, 2.0, 3.0])})
sys.stdout.buffer.write(pickle.dumps(results))
"""


def test_fresh_processes_write_and_read(tmp_path):
    import pickle

    env = dict(os.environ, PYTHONHASHSEED="0")
    subprocess.run([sys.executable, "-c", textwrap.dedent(_WRITER), str(tmp_path)],
                   check=True, env=env, timeout=120)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_READER), str(tmp_path)],
                          check=True, capture_output=True, env=env, timeout=120)
    results = pickle.loads(proc.stdout)
    scope = {}
    exec(textwrap.dedent(_BUILD), scope)  # the same program, run in this process
    with tf.Session() as sess:
        sess.run(scope["init"])
        expected = sess.run(scope["out"], {scope["x"]: np.array([1.0, 2.0, 3.0])})
    np.testing.assert_array_equal(expected, [5.0, 0.0, 12.5])
    for name in ("g.pbtxt", "g.pb"):
        out, s = results[name]
        assert out.dtype == np.float64
        np.testing.assert_array_equal(out, expected)
        assert list(s) == [b"a", b"\xff"]
