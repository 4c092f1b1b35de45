"""tf.summary ops and FileWriter event files, read back with TensorBoard's own loader."""

import io
import json
import os
import struct

import numpy as np
import pytest

import flowjit as tf
from flowjit import errors
from flowjit.client.timeline import Timeline
from flowjit.ops.summary_ops import histogram_proto

event_accumulator = pytest.importorskip(
    "tensorboard.backend.event_processing.event_accumulator")

_ALL = {"images": 0, "histograms": 0, "scalars": 0, "tensors": 0, "compressedHistograms": 0}


def _accumulator(logdir):
    acc = event_accumulator.EventAccumulator(str(logdir), size_guidance=_ALL)
    acc.Reload()
    return acc


def _train_with_summaries(logdir, steps=4):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(np.full((3, 1), 0.5, np.float32), name="w")
        with tf.name_scope("train"):
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
            tf.summary.scalar("loss", loss)
        tf.summary.histogram("weights", w)
        tf.summary.image("pixels", tf.reshape(tf.range(2 * 4 * 5 * 3, dtype=tf.float32),
                                              [2, 4, 5, 3]), max_outputs=2)
        tf.summary.text("note", tf.constant("step *done*"))
        merged = tf.summary.merge_all()
        update = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
    feed = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    losses = []
    with tf.summary.FileWriter(logdir, g) as writer, tf.Session(graph=g) as sess:
        sess.run(init)
        for step in range(steps):
            meta = tf.RunMetadata()
            summary, value, _ = sess.run(
                [merged, loss, update], {x: feed},
                options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                run_metadata=meta)
            writer.add_summary(summary, global_step=step)
            writer.add_run_metadata(meta, f"step{step}", global_step=step)
            losses.append(float(value))
        weights = sess.run(w)
    return g, losses, weights


def test_tensorboard_reads_scalars_histograms_images_text_graph_and_run_metadata(tmp_path):
    g, losses, weights = _train_with_summaries(tmp_path)
    acc = _accumulator(tmp_path)
    tags = acc.Tags()
    assert tags["scalars"] == ["train/loss"] and tags["histograms"] == ["weights"]
    assert sorted(tags["images"]) == ["pixels/image/0", "pixels/image/1"]
    assert tags["graph"] and tags["run_metadata"] == [f"step{i}" for i in range(4)]
    scalars = acc.Scalars("train/loss")
    assert [e.step for e in scalars] == [0, 1, 2, 3]
    np.testing.assert_allclose([e.value for e in scalars], losses, rtol=1e-6)
    assert losses[-1] < losses[0]
    histo = acc.Histograms("weights")[-1].histogram_value
    assert histo.num == 3 and sum(histo.bucket) == 3
    assert histo.min <= weights.min() and histo.max >= weights.max()
    image = acc.Images("pixels/image/1")[0]
    assert (image.width, image.height) == (5, 4)
    from PIL import Image
    pixels = np.asarray(Image.open(io.BytesIO(image.encoded_image_string)))
    expected = np.arange(60, 120, dtype=np.float64).reshape(4, 5, 3) * (255.0 / 119.0)
    np.testing.assert_array_equal(pixels, np.round(expected).astype(np.uint8))
    text = acc.Tensors("note")[0].tensor_proto
    assert list(text.string_val) == [b"step *done*"]
    assert acc.SummaryMetadata("note").plugin_data.plugin_name == "text"
    graph = acc.Graph()
    names = {n.name for n in graph.node}
    assert names == {n.name for n in g.as_graph_def().node}   # (SumToShape: 4 TF nodes)
    assert {op.name for op in g.get_operations()} <= names
    stats = acc.RunMetadata("step2").step_stats.dev_stats
    assert stats and stats[0].node_stats and stats[0].node_stats[0].all_start_micros > 1e15


def test_event_file_framing_and_names(tmp_path):
    writer = tf.summary.FileWriter(tmp_path / "logs", filename_suffix=".v1")
    writer.add_session_log(tf.SessionLog(status=tf.SessionLog.START), 7)
    writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="manual", simple_value=2.5)]),
                       7)
    writer.flush()
    name = os.path.basename(writer.event_file_path)
    assert name.startswith("events.out.tfevents.") and name.endswith(".v1")
    data = open(writer.event_file_path, "rb").read()
    records = []
    while data:
        (length,) = struct.unpack("<Q", data[:8])
        records.append(tf.Event.FromString(data[12:12 + length]))
        data = data[16 + length:]
    assert records[0].file_version == "brain.Event:2"
    assert records[1].session_log.status == tf.SessionLog.START
    assert records[2].summary.value[0].simple_value == 2.5 and records[2].step == 7
    writer.close()
    with pytest.raises(RuntimeError, match="closed"):
        writer.add_summary(tf.Summary(), 1)
    writer.reopen()
    writer.add_summary(tf.Summary(), 8)
    writer.close()
    assert [e.step for e in _accumulator(tmp_path / "logs").Scalars("manual")] == [7]


def test_events_wait_in_the_queue_until_flushed(tmp_path):
    writer = tf.summary.FileWriter(tmp_path, max_queue=100, flush_secs=1000)
    size = os.path.getsize(writer.event_file_path)
    writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="a", simple_value=1.0)]), 1)
    assert os.path.getsize(writer.event_file_path) == size
    writer.flush()
    assert os.path.getsize(writer.event_file_path) > size
    writer.close()


def test_histogram_buckets_count_every_value():
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.standard_normal(500) * 10, [0.0, -0.0, 1e-15, 3e5]])
    proto = histogram_proto(values)
    assert proto.num == values.size and sum(proto.bucket) == values.size
    assert proto.min == values.min() and proto.max == values.max()
    np.testing.assert_allclose(proto.sum, values.sum())
    np.testing.assert_allclose(proto.sum_squares, np.dot(values, values))
    limits = np.array(proto.bucket_limit)
    assert np.all(np.diff(limits) > 0)
    # each value is counted in the first bucket whose right edge is >= it
    edges = np.concatenate([[-np.inf], limits])
    counts = [np.sum((values > lo) & (values <= hi)) for lo, hi in zip(edges[:-1], edges[1:])]
    assert counts == list(proto.bucket)
    assert histogram_proto(np.zeros(0)).num == 0


def test_summary_errors_name_the_summary():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="'loss' needs a scalar"):
            tf.summary.scalar("loss", tf.zeros([2]))
        with pytest.raises(TypeError, match="'t' needs strings"):
            tf.summary.text("t", tf.zeros([2]))
        with pytest.raises(ValueError, match="4-D"):
            tf.summary.image("im", tf.zeros([2, 2]))
        bad = tf.summary.histogram("h", tf.constant([1.0, np.nan]))
        assert tf.summary.merge_all() is not None
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError, match="Nan or Inf .* h"):
                sess.run(bad)
            a = tf.summary.scalar("same", 1.0, collections=[])
            with pytest.raises(errors.InvalidArgumentError, match="Duplicate tag"):
                sess.run(tf.summary.merge([a, a]))
        with pytest.raises(TypeError, match="Summary or the bytes"):
            tf.summary.FileWriter.add_summary(object.__new__(tf.summary.FileWriter), 3.0)


def test_merge_all_is_none_without_summaries():
    with tf.Graph().as_default():
        assert tf.summary.merge_all() is None


def test_full_trace_has_compile_events_and_chrome_trace(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOWJIT_CACHE_DIR", str(tmp_path / "cache"))   # compile for real
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None], name="x")
        y = tf.reduce_sum(tf.exp(x) * 3.0 + tf.sin(x) * tf.cos(x), name="y")
    meta = tf.RunMetadata()
    config = tf.ConfigProto(jit=tf.JitOptions.always())
    with tf.Session(graph=g, config=config) as sess:
        sess.run(y, {x: np.linspace(0, 1, 257, dtype=np.float32)},
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=meta)
    compiles = [s for s in meta.step_stats if s.category == "Compile"]
    ops = [s for s in meta.step_stats if s.category == "Op"]
    assert len(compiles) == 1 and compiles[0].node_name.startswith("compile cluster_")
    assert ops and all(s.end >= s.start for s in meta.step_stats)
    cluster = next(s for s in ops if s.op_type == "Cluster")
    assert cluster.start <= compiles[0].start and compiles[0].end <= cluster.end + 1e-3
    trace = json.loads(Timeline(meta.step_stats, g).generate_chrome_trace_format())
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert {e["cat"] for e in events} == {"Op", "Compile"}
    assert len(events) == len(meta.step_stats)
    with tf.summary.FileWriter(tmp_path / "logs") as writer:
        writer.add_run_metadata(meta, "traced")
    stats = _accumulator(tmp_path / "logs").RunMetadata("traced").step_stats
    names = {n.node_name for d in stats.dev_stats for n in d.node_stats}
    assert names == {s.node_name for s in meta.step_stats}
