"""MetaGraphDefs: Saver.save writes `<prefix>.meta`; train.import_meta_graph rebuilds the
graph and its collections and returns a Saver, so another program resumes training."""

import os

import numpy as np
import pytest
from google.protobuf import text_format

import flowjit as tf

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tf_graphs")
FEED = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)


def _build():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(np.array([[0.5], [-0.25], [1.0]], np.float32), name="w")
    steps = tf.Variable(0, trainable=False, name="steps")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 2.0), name="loss")
    train = tf.group(tf.train.GradientDescentOptimizer(0.2).minimize(loss),
                     tf.assign_add(steps, 1), name="train")
    tf.add_to_collection("train_op", train)
    tf.add_to_collection("loss", loss)
    tf.add_to_collection("notes", "a string")
    tf.add_to_collection("sizes", 7)
    return x, loss, train


def test_save_import_restore_resumes_training_exactly(tmp_path):
    with tf.Graph().as_default():
        x, loss, train = _build()
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run(train, {x: FEED})
            prefix = saver.save(sess, str(tmp_path / "model"), global_step=3)
            uninterrupted = []
            for _ in range(3):
                uninterrupted.append(sess.run([loss, train], {x: FEED})[0])
    assert os.path.exists(prefix + ".meta")
    with tf.Graph().as_default() as g:
        saver = tf.train.import_meta_graph(prefix + ".meta")
        (loss,), (train,) = tf.get_collection("loss"), tf.get_collection("train_op")
        assert tf.get_collection("notes") == [b"a string"] and tf.get_collection("sizes") == [7]
        assert [v.name for v in tf.trainable_variables()] == ["w:0"]
        assert [v.name for v in tf.global_variables()] == ["w:0", "steps:0"]
        assert tf.trainable_variables()[0] is tf.global_variables()[0]  # one object
        with tf.Session() as sess:
            saver.restore(sess, prefix)
            assert sess.run("steps:0") == 3
            resumed = [sess.run([loss, train], {"x:0": FEED})[0] for _ in range(3)]
            assert sess.run("steps:0") == 6
        assert g.get_operation_by_name("w/Assign") is tf.global_variables()[0].initializer
    np.testing.assert_array_equal(resumed, uninterrupted)


def test_export_with_scope_text_form_and_clear_devices(tmp_path):
    with tf.Graph().as_default():
        with tf.device("/cpu:0"):
            _build()
        path = str(tmp_path / "g.meta")
        meta = tf.train.export_meta_graph(path, as_text=True, clear_devices=True)
    assert all(n.device == "" for n in meta.graph_def.node)
    text = open(path).read()
    assert 'key: "train_op"' in text and "node_list" in text
    parsed = text_format.Parse(text, type(meta)())
    assert parsed == meta
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(path, import_scope="restored")
        assert saver is not None
        assert tf.get_collection("train_op")[0].name == "restored/train"
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(tf.get_collection("train_op")[0], {"restored/x:0": FEED})
            assert sess.run("restored/steps:0") == 1


def test_graph_without_variables_gives_no_saver():
    with tf.Graph().as_default():
        tf.identity(tf.constant(1.0), name="one")
        meta = tf.train.export_meta_graph()
    with tf.Graph().as_default():
        assert tf.train.import_meta_graph(meta) is None
        assert tf.Session().run("one:0") == 1.0


def test_tensorflow_written_meta_graph_trains():
    recipe = np.load(os.path.join(HERE, "softmax_regression_sgd.npz"))
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(os.path.join(HERE, "softmax_regression_sgd.meta"))
        assert sorted(v.op.name for v in tf.trainable_variables()) == ["b", "w"]
        assert saver is not None
        train = tf.get_collection("train_op")[0]   # (TensorFlow's minimize adds it too)
        feeds = {k: recipe["feed:" + k] for k in recipe["feeds"]}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(int(recipe["steps"])):
                loss = sess.run(["loss:0", train], feeds)[0]
                np.testing.assert_allclose(loss, recipe[f"fetch:{step}:0"], rtol=2e-5)


def test_unreadable_meta_graph_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.meta"
    bad.write_bytes(b"\xff\xfe\x00 not a meta graph")
    with tf.Graph().as_default():
        with pytest.raises(Exception, match="not a MetaGraphDef"):
            tf.train.import_meta_graph(str(bad))
