"""GraphDefs written by TensorFlow import into flowjit and compute TensorFlow's results;
flowjit's GraphDefs are TensorFlow's wire format (checked with TensorBoard's copy of
TensorFlow's messages, and with TensorFlow itself when it is installed).

The fixtures in fixtures/tf_graphs were written by tests/fixtures/record_tf_graphs.py with
TensorFlow 2.21's tf.compat.v1: for each, the binary GraphDef and the values TensorFlow
fetched at every training step.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
from google.protobuf import text_format

import flowjit as tf
from flowjit import errors
from flowjit.compiler.core.attr_values import tensor_array
from flowjit.compiler.core.graph_def import parse_graph_def
from flowjit.runtime import run_cli

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tf_graphs")
PROGRAMS = sorted(f[:-3] for f in os.listdir(HERE) if f.endswith(".pb"))


def _load(name, suffix=".pb"):
    with open(os.path.join(HERE, name + suffix), "rb") as f:
        return parse_graph_def(f.read())


def _run_recipe(graph, recipe):
    """Every step's fetched values, running the recorded recipe on `graph`."""
    out = []
    with tf.Session(graph=graph) as sess:
        sess.run(str(recipe["init"]), {k: recipe["init_feed:" + k]
                                       for k in recipe["init_feeds"]})
        feeds = {k: recipe["feed:" + k] for k in recipe["feeds"]}
        fetches = [str(f) for f in recipe["fetches"]]
        for _ in range(int(recipe["steps"])):
            out.append(sess.run(fetches + [str(recipe["train"])], feeds)[:-1])
    return out


def test_there_are_recorded_programs():
    assert {"mlp_adam", "softmax_regression_sgd", "relu_mlp_momentum",
            "while_loop_sum"} <= set(PROGRAMS)


@pytest.mark.parametrize("name", PROGRAMS)
def test_tensorflow_written_graph_trains_to_tensorflows_results(name):
    recipe = np.load(os.path.join(HERE, name + ".npz"))
    with tf.Graph().as_default() as g:
        tf.import_graph_def(_load(name), name="")
    got = _run_recipe(g, recipe)
    for step, values in enumerate(got):
        for j, value in enumerate(values):
            expected = recipe[f"fetch:{step}:{j}"]
            assert np.asarray(value).dtype == expected.dtype
            np.testing.assert_allclose(value, expected, rtol=2e-5, atol=2e-6,
                                       err_msg=f"{name} step {step} fetch {j}")


def test_text_and_binary_forms_are_the_same_graph():
    binary, text = _load("mlp_adam"), _load("mlp_adam", ".pbtxt")
    assert binary == text and len(binary.node) > 100
    # what TensorFlow wrote, written again, is what TensorFlow wrote
    assert text_format.MessageToString(binary) == \
        open(os.path.join(HERE, "mlp_adam.pbtxt")).read()


@pytest.mark.parametrize("name", ["softmax_regression_sgd", "mlp_adam"])
def test_reexported_tensorflow_graph_keeps_every_node_and_attr(name):
    original = _load(name)
    with tf.Graph().as_default() as g:
        tf.import_graph_def(original, name="")
    again = {n.name: n for n in g.as_graph_def().node}
    folded = 0
    for node in original.node:
        mine = again[node.name]
        if (node.op, mine.op) == ("Reshape", "Reshape") and \
                "_flowjit_op" in mine.attr:   # a broadcast gradient, folded to SumToShape
            folded += 1                       # and written out again as TensorFlow's ops
            assert list(mine.input) == [node.name + "/Sum", node.input[1]]
            assert g.get_operation_by_name(node.name).type == "SumToShape"
            continue
        assert (mine.op, list(mine.input)) == (node.op, list(node.input))
        for key, value in node.attr.items():
            if value.WhichOneof("value") == "tensor":   # the same array, maybe spelled
                np.testing.assert_array_equal(              # another way
                    tensor_array(mine.attr[key].tensor), tensor_array(value.tensor))
            elif key != "_output_shapes":
                assert mine.attr[key] == value, (node.name, key)
    assert folded == {"mlp_adam": 2, "softmax_regression_sgd": 0}[name]


def test_flowjit_graph_defs_parse_as_tensorflows_messages():
    graph_pb2 = pytest.importorskip("tensorboard.compat.proto.graph_pb2")
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        w = tf.Variable(np.arange(8, dtype=np.float32).reshape(4, 2), name="w")
        tf.nn.softmax(tf.matmul(x, w) + tf.constant([1.0, -1.0]), name="out")
    mine = g.as_graph_def(add_shapes=True)
    theirs = graph_pb2.GraphDef.FromString(mine.SerializeToString())
    assert text_format.MessageToString(theirs) == text_format.MessageToString(mine)
    assert theirs.SerializeToString(deterministic=True) == \
        mine.SerializeToString(deterministic=True)


def test_unknown_ops_and_attrs_are_named():
    graph_def = _load("while_loop_sum")
    graph_def.node[0].op = "NoSuchOp"
    with tf.Graph().as_default():
        with pytest.raises(errors.NotFoundError, match="NoSuchOp \\(node '"):
            tf.import_graph_def(graph_def)
    graph_def = _load("while_loop_sum")
    node = next(n for n in graph_def.node if n.op == "Less")
    node.attr["frobnicate"].i = 3
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"'while/Less' \(Less\) has attrs \['frobnicate'\]"):
            tf.import_graph_def(graph_def)


def test_python_m_flowjit_run_trains_a_tensorflow_written_graph(capsys):
    path = os.path.join(HERE, "mlp_adam.pb")
    assert run_cli.main([path, "--seed", "1", "--run", "init_all_vars_op",
                         "--feed", "x=@random:100x32", "--feed", "y=@random:100x8",
                         "--fetch", "cost", "--run", "train", "--steps", "5"]) == 0
    out = capsys.readouterr().out
    costs = [float(line.split("cost")[-1].strip(" =:")) for line in out.splitlines()
             if "cost" in line]
    assert len(costs) == 5 and costs[-1] < costs[0], out


_TF_ROUND_TRIP = """
import sys
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
graph_def = tf.GraphDef()
graph_def.ParseFromString(open(sys.argv[1], "rb").read())
with tf.Graph().as_default():
    tf.import_graph_def(graph_def, name="")
    with tf.Session() as sess:
        sess.run("init")
        feeds = {"x:0": np.load(sys.argv[2]), "y:0": np.load(sys.argv[3])}
        losses = [sess.run(["loss:0", "train"], feeds)[0] for _ in range(4)]
        out = sess.run("out:0", feeds)
np.save(sys.argv[4], np.array(losses))
np.save(sys.argv[5], out)
"""


def _model_for_tensorflow(optimizer):
    x = tf.placeholder(tf.float32, [None, 5], name="x")
    y = tf.placeholder(tf.float32, [None, 3], name="y")
    w = tf.Variable(np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3), name="w")
    b = tf.Variable(np.array([0.1, 0.2, 0.3], np.float32), name="b")
    h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), b))
    out = tf.nn.softmax(h * 2.0 - tf.reduce_max(h, axis=1, keepdims=True), name="out")
    loss = tf.reduce_mean(tf.square(out - y) + tf.reduce_sum(b * b), name="loss")
    optimizer.minimize(loss, name="train")
    tf.global_variables_initializer()


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adam"])
def test_tensorflow_trains_a_flowjit_written_training_graph(tmp_path, optimizer):
    """flowjit's gradients (SumToShape written as TensorFlow's four ops) and optimizers'
    updates run in TensorFlow and give flowjit's losses."""
    pytest.importorskip("tensorflow")
    make = {"sgd": lambda: tf.train.GradientDescentOptimizer(0.3),
            "momentum": lambda: tf.train.MomentumOptimizer(0.1, 0.9),
            "adam": lambda: tf.train.AdamOptimizer(0.05)}[optimizer]
    with tf.Graph().as_default() as g:
        _model_for_tensorflow(make())
    assert "SumToShape" in {op.type for op in g.get_operations()}
    tf.train.write_graph(g, str(tmp_path), "g.pb", as_text=False)
    rng = np.random.default_rng(0)
    feeds = {"x:0": rng.standard_normal((7, 5)).astype(np.float32),
             "y:0": rng.random((7, 3)).astype(np.float32)}
    np.save(tmp_path / "x.npy", feeds["x:0"])
    np.save(tmp_path / "y.npy", feeds["y:0"])
    subprocess.run([sys.executable, "-c", _TF_ROUND_TRIP, str(tmp_path / "g.pb"),
                    str(tmp_path / "x.npy"), str(tmp_path / "y.npy"),
                    str(tmp_path / "losses.npy"), str(tmp_path / "out.npy")], check=True,
                   timeout=300)
    with tf.Session(graph=g) as sess:
        sess.run("init")
        losses = [sess.run(["loss:0", "train"], feeds)[0] for _ in range(4)]
        out = sess.run("out:0", feeds)
    np.testing.assert_allclose(np.load(tmp_path / "losses.npy"), losses, rtol=1e-5)
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), out, rtol=1e-5, atol=1e-7)
    assert losses[-1] < losses[0]


def test_sum_to_shape_is_written_as_tensorflow_ops_and_read_back_as_one():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        b = tf.Variable(np.ones(3, np.float32), name="b")
        (grad,) = tf.gradients(tf.reduce_sum((x + b) * x), [b])
    graph_def = g.as_graph_def()
    types = [n.op for n in graph_def.node]
    assert "SumToShape" not in types and "BroadcastGradientArgs" in types
    with tf.Graph().as_default() as g2:
        tf.import_graph_def(graph_def, name="")
    assert sorted(op.type for op in g2.get_operations()) == \
        sorted(op.type for op in g.get_operations())
    feed = {"x:0": np.arange(6, dtype=np.float32).reshape(2, 3)}
    with tf.Session(graph=g) as a, tf.Session(graph=g2) as b2:
        a.run("b/Assign")
        b2.run("b/Assign")
        expected = a.run(grad, feed)
        np.testing.assert_array_equal(b2.run(grad.name, feed), expected)
    # with another node reading a helper, the helpers stay (the sum is still folded)
    helper = next(n for n in graph_def.node if n.op == "BroadcastGradientArgs")
    extra = graph_def.node.add(name="peek", op="Identity", input=[helper.name])
    extra.attr["T"].type = tf.int32.as_datatype_enum
    with tf.Graph().as_default() as g3:
        tf.import_graph_def(graph_def, name="")
    types = [op.type for op in g3.get_operations()]
    assert "SumToShape" in types and "BroadcastGradientArgs" in types
    with tf.Session(graph=g3) as c:
        c.run("b/Assign")
        np.testing.assert_array_equal(c.run(grad.name, feed), expected)


def test_the_signature_table_knows_every_registered_op_tensorflow_has():
    """compiler/core/tf_signatures_data.py is regenerated (record_tf_signatures.py) when an
    op is added: every registered op type is in it, or is one of flowjit's own."""
    from flowjit.compiler.core.tf_signatures_data import SIGNATURES
    from flowjit.ops import registry
    flowjit_only = {"ArgSort", "EnsureNonEmpty", "InputProducerEpoch", "Sort", "SumToShape"}
    registered = {d.name for d in registry.all_op_defs()}
    assert registered - set(SIGNATURES) == flowjit_only
    assert not set(SIGNATURES) - registered
