"""`flowjit.client.timeline`: a step's RunMetadata as a Chrome trace (Trace Event Format)."""

import json

import numpy as np
import pytest

import flowjit as tf
from flowjit.client import timeline

FULL = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)


def _traced(config, two_devices=False):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        with tf.device("/cpu:0"):
            a = tf.tanh(x, name="a") * 2.0
        with tf.device("/cpu:1" if two_devices else "/cpu:0"):
            b = tf.reduce_sum(tf.exp(a, name="e"), name="total")
    meta = tf.RunMetadata()
    with tf.Session(graph=g, config=config) as sess:
        sess.run(b, {x: np.ones((4, 3), np.float32)}, options=FULL, run_metadata=meta)
    return g, meta


def _events(meta, graph=None, **kwargs):
    trace = json.loads(timeline.Timeline(meta.step_stats, graph).generate_chrome_trace_format(
        **kwargs))
    return trace["traceEvents"]


def test_every_traced_node_is_one_complete_event_in_microseconds():
    g, meta = _traced(tf.ConfigProto(jit=False))
    events = _events(meta, g)
    complete = [e for e in events if e["ph"] == "X"]
    assert sorted(e["args"]["name"] for e in complete) == \
        sorted(s.node_name for s in meta.step_stats)
    by_name = {s.node_name: s for s in meta.step_stats}
    for e in complete:
        s = by_name[e["args"]["name"]]
        assert e["name"] == s.op_type and e["dur"] >= 0
        assert e["ts"] == pytest.approx(s.start * 1e6)
        assert e["dur"] == pytest.approx((s.end - s.start) * 1e6, abs=1e-6)
    names = [e for e in events if e["ph"] == "M" and e["name"] == "process_name"]
    assert [e["args"]["name"] for e in names] == [
        "/job:localhost/replica:0/task:0/device:CPU:0 Compute"]


def test_dataflow_arrows_join_traced_producers_to_consumers():
    g, meta = _traced(tf.ConfigProto(jit=False))
    events = _events(meta, g)
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts and starts.keys() == finishes.keys()
    assert any(e["name"] == "a:0" for e in starts.values())
    for k, s in starts.items():
        assert s["ts"] <= finishes[k]["ts"] + 1e-6   # a consumer starts after its producer
    assert not [e for e in _events(meta, g, show_dataflow=False) if e["ph"] in "sf"]
    assert not [e for e in _events(meta) if e["ph"] in "sf"]   # no graph: no arrows


def test_one_process_per_device_with_send_and_recv():
    g, meta = _traced(tf.ConfigProto(jit=False, device_count={"CPU": 2}), two_devices=True)
    events = _events(meta, g)
    processes = {e["pid"]: e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "process_name"}
    assert sorted(processes.values()) == [
        f"/job:localhost/replica:0/task:0/device:CPU:{i} Compute" for i in (0, 1)]
    kinds = {e["name"] for e in events if e["ph"] == "X"}
    assert {"_Send", "_Recv"} <= kinds
    threads = {(e["pid"], e["tid"]) for e in events if e["ph"] == "X"}
    named = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert threads <= named


def test_compiled_clusters_appear_as_one_event_each():
    g, meta = _traced(tf.ConfigProto(jit=tf.JitOptions.always()))
    complete = [e for e in _events(meta, g) if e["ph"] == "X"]
    assert any(e["name"] == "Cluster" for e in complete)
    assert json.loads(timeline.Timeline([]).generate_chrome_trace_format()) == \
        {"traceEvents": [], "displayTimeUnit": "ns"}


def test_plot_step_stats_draws_a_lane_per_thread_and_writes_a_png(tmp_path):
    from flowjit.client.timeline_plot import plot_step_stats
    from flowjit.runtime.config import NodeStats
    stats = [NodeStats("cluster_0", "Cluster", 0.0, 2e-4, 11, "/device:CPU:0"),
             NodeStats("compile cluster_0 (cpu, optimized)", "Compile", 1e-5, 1.5e-4, 12,
                       "/device:CPU:0", category="Compile"),
             NodeStats("h_recv", "_Recv", 0.0, 3e-4, 11, "/device:CPU:1"),
             NodeStats("relu", "Relu", 2e-4, 2.5e-4, 13, "/device:CPU:1")]
    path = tmp_path / "step.png"
    fig = plot_step_stats(stats, path, title="four events")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "device:CPU:0 thread 0", "device:CPU:1 transfers", "device:CPU:0 thread 2",
        "device:CPU:1 thread 3"]
    assert len(ax.collections) == 4 and ax.get_title() == "four events"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["step.png"]   # no temporary file left
