"""Sessions (runtime/session.py, fetches.py, executor.py, config.py).

Covers every fetch structure, feeding any tensor (fed tensors cut off their producers), feed
errors, unfed placeholders, closed sessions, default and interactive sessions, run options
(timeouts, traces) and concurrent execution with real threads.  Test-only ops (counting,
sleeping, barrier, failing kernels) are defined here with `OpDef`s that are never registered.
"""

import collections
import threading
import time

import numpy as np
import pytest

import flowjit as tf
from source_lines import line_of
from flowjit.ops.registry import OpDef, Trait

# --- test-only ops ----------------------------------------------------------------------------

RUNS = collections.Counter()


def _same_as_input(op):
    return [(op.inputs[0].dtype, op.inputs[0].shape)]


def _count_kernel(ctx, inputs, attrs):
    RUNS[ctx.op.name] += 1
    return [inputs[0]]


def _sleep_kernel(ctx, inputs, attrs):
    time.sleep(attrs["seconds"])
    return [inputs[0]]


def _barrier_kernel(ctx, inputs, attrs):
    attrs["barrier"].wait()  # raises BrokenBarrierError unless the partner runs concurrently
    return [inputs[0]]


def _thread_kernel(ctx, inputs, attrs):
    attrs["threads"].add(threading.get_ident())
    time.sleep(0.01)
    return [inputs[0]]


COUNT = OpDef("TestCount", _same_as_input, _count_kernel, traits={Trait.STATEFUL})
# Blocking ops always get a pool thread; small non-blocking ops run inline.
SLEEP = OpDef("TestSleep", _same_as_input, _sleep_kernel,
              traits={Trait.STATEFUL, Trait.BLOCKING})
BARRIER = OpDef("TestBarrier", _same_as_input, _barrier_kernel,
                traits={Trait.STATEFUL, Trait.BLOCKING})
THREAD = OpDef("TestThread", _same_as_input, _thread_kernel,
               traits={Trait.STATEFUL, Trait.BLOCKING})
def _fail_kernel(ctx, inputs, attrs):
    raise ZeroDivisionError("kernel exploded")


FAIL = OpDef("TestFail", _same_as_input, _fail_kernel)


def _op(op_def, x, name=None, **attrs):
    x = tf.convert_to_tensor(x)
    return x.graph.create_op(op_def, [x], attrs, name or op_def.name).outputs[0]


def counted(x, name):
    RUNS[name] = 0
    return _op(COUNT, x, name=name)


def _line_of(marker: str) -> int:
    return line_of(__file__, marker)


# --- fetch structures -------------------------------------------------------------------------


def test_fetch_single_tensor_and_scalar_types():
    a = tf.constant([[1.0, 2.0]])
    s = tf.constant(3, dtype=tf.int64)
    with tf.Session() as sess:
        va = sess.run(a)
        vs = sess.run(s)
    assert isinstance(va, np.ndarray) and va.dtype == np.float32 and va.shape == (1, 2)
    assert type(vs) is np.int64 and vs == 3


def test_fetch_operation_gives_none():
    op = tf.no_op(name="train")
    with tf.Session() as sess:
        assert sess.run(op) is None
        assert sess.run([op, tf.constant(1)]) == [None, 1]


def test_fetch_by_names():
    tf.constant(7.0, name="y")
    tf.no_op(name="train")
    with tf.Session() as sess:
        assert sess.run("y:0") == 7.0
        assert sess.run("train") is None
        assert sess.run(["y:0", "train"]) == [7.0, None]


def test_fetch_nested_structures():
    Pair = collections.namedtuple("Pair", ["first", "second"])
    a, b, c = tf.constant(1), tf.constant(2.0), tf.constant([3, 4])
    op = tf.no_op()
    fetches = {"a": a, "rest": [b, (c, op)], "pair": Pair(a, {"deep": [b]}), "empty": []}
    with tf.Session() as sess:
        out = sess.run(fetches)
        ordered = sess.run(collections.OrderedDict([("z", a), ("y", b)]))
        tup = sess.run((a, [b]))
    assert set(out) == {"a", "rest", "pair", "empty"}
    assert out["a"] == 1 and out["rest"][0] == 2.0 and out["rest"][1][1] is None
    assert isinstance(out["rest"][1], tuple) and isinstance(out["rest"], list)
    np.testing.assert_array_equal(out["rest"][1][0], [3, 4])
    assert isinstance(out["pair"], Pair) and out["pair"].first == 1
    assert out["pair"].second == {"deep": [2.0]}
    assert out["empty"] == []
    assert isinstance(ordered, collections.OrderedDict) and list(ordered) == ["z", "y"]
    assert tup == (1, [2.0])


def test_duplicate_fetches_compute_once():
    x = counted(tf.constant(5.0), "count_dup")
    with tf.Session() as sess:
        v = sess.run([x, x, {"again": x}, "count_dup:0"])
    assert v == [5.0, 5.0, {"again": 5.0}, 5.0]
    assert RUNS["count_dup"] == 1


def test_fetch_variable_directly():
    v = tf.Variable([1, 2], name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v), [1, 2])
        np.testing.assert_array_equal(sess.run({"v": v})["v"], [1, 2])


@pytest.mark.parametrize("bad,error", [(None, TypeError), (3.5, TypeError),
                                       ("missing:0", KeyError), ("missing", KeyError),
                                       ([tf.no_op, 1], TypeError)])
def test_invalid_fetches(bad, error):
    with tf.Session() as sess:
        with pytest.raises(error):
            sess.run(bad)


def test_fetch_from_another_graph_is_rejected():
    g = tf.Graph()
    with g.as_default():
        other = tf.constant(1)
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="not an element of this graph"):
            sess.run(other)


def test_returned_arrays_are_independent_copies():
    c = tf.constant([1.0, 2.0])
    v = tf.Variable([5.0, 6.0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        out = sess.run(c)
        out[0] = 100.0
        np.testing.assert_array_equal(sess.run(c), [1.0, 2.0])
        val = sess.run(v)
        val[0] = 100.0
        np.testing.assert_array_equal(sess.run(v), [5.0, 6.0])


def test_only_needed_ops_run():
    x = counted(tf.constant(1.0), "needed")
    counted(tf.constant(2.0), "unrelated")
    with tf.Session() as sess:
        sess.run(x)
        sess.run(x)
    assert RUNS["needed"] == 2 and RUNS["unrelated"] == 0


# --- feeds ------------------------------------------------------------------------------------


def test_feed_placeholder_by_tensor_and_by_name():
    p = tf.placeholder(tf.float32, [None, 2], name="x")
    y = tf.identity(p)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {p: [[1, 2]]}), [[1, 2]])
        np.testing.assert_array_equal(sess.run(y, {"x:0": np.ones((3, 2))}), np.ones((3, 2)))
        assert sess.run(y, {p: np.zeros((0, 2))}).shape == (0, 2)
        assert sess.run(y, {p: [[1, 2]]}).dtype == np.float32


def test_feeding_an_intermediate_tensor_cuts_off_its_producers():
    p = tf.placeholder(tf.float32, name="never_fed")
    mid = counted(p, "producer")
    out = tf.identity(mid)
    with tf.Session() as sess:
        # The placeholder is not fed: had its consumer run, the placeholder would have failed.
        assert sess.run(out, {mid: 4.0}) == 4.0
        assert RUNS["producer"] == 0
        assert sess.run(out, {p: 2.0}) == 2.0
        assert RUNS["producer"] == 1


def test_feeding_a_constant_and_the_fetched_tensor():
    c = tf.constant(1.0)
    y = tf.identity(c)
    with tf.Session() as sess:
        assert sess.run(y, {c: 9.0}) == 9.0
        assert sess.run(y, {y: -1.0}) == -1.0
        assert sess.run(y) == 1.0


def test_feed_shape_mismatch_names_tensor_and_shapes():
    p = tf.placeholder(tf.float32, [2], name="pts")
    with tf.Session() as sess:
        with pytest.raises(ValueError, match=r"shape \(3,\).*'pts:0'.*\(2,\)"):
            sess.run(p, {p: [1.0, 2.0, 3.0]})
        with pytest.raises(ValueError, match="pts:0"):
            sess.run(p, {p: [[1.0, 2.0]]})


@pytest.mark.parametrize("value", [[1.5], np.array([True]), ["a"], np.array([1.0])])
def test_feed_dtype_mismatch_is_a_type_error(value):
    p = tf.placeholder(tf.int32, [1], name="ints")
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="ints:0"):
            sess.run(p, {p: value})


def test_feed_conversions_that_are_allowed():
    f = tf.placeholder(tf.float32)
    i = tf.placeholder(tf.int8)
    s = tf.placeholder(tf.string)
    b = tf.placeholder(tf.bool)
    with tf.Session() as sess:
        assert sess.run(f, {f: 3}) == 3.0 and type(sess.run(f, {f: 3})) is np.float32
        assert sess.run(i, {i: np.int64(5)}) == 5
        assert sess.run(s, {s: "text"}) == b"text"
        assert list(sess.run(s, {s: ["a", b"b"]})) == [b"a", b"b"]
        assert sess.run(b, {b: True}) is np.True_
        with pytest.raises(ValueError, match="out of range"):
            sess.run(i, {i: 300})
        with pytest.raises(TypeError, match="string"):
            sess.run(s, {s: 3})


def test_invalid_feed_arguments():
    p = tf.placeholder(tf.float32, name="p")
    op = tf.no_op(name="op")
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="feed_dict must be a dict"):
            sess.run(p, [(p, 1.0)])
        with pytest.raises(TypeError, match="flowjit Tensor"):
            sess.run(p, {p: tf.constant(1.0)})
        with pytest.raises(KeyError, match="missing"):
            sess.run(p, {"missing:0": 1.0})
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key"):
            sess.run(p, {op: 1.0})
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key"):
            sess.run(p, {"op": 1.0})


def test_unfed_placeholder_names_it_and_its_line():
    p = tf.placeholder(tf.float32, [None, 3], name="images")  # UNFED-MARKER
    y = tf.identity(p)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(y)
    err = info.value
    assert err.op is p.op and err.error_code == tf.errors.Code.INVALID_ARGUMENT
    text = str(err)
    assert "You must feed a value for placeholder tensor 'images'" in text
    assert "float32" in text and "[?,3]" in text
    assert f"{__file__}:{_line_of('UNFED-MARKER')}" in text


def test_placeholder_with_default_can_be_fed():
    p = tf.placeholder_with_default(np.float32(2.0), [])
    with tf.Session() as sess:
        assert sess.run(p) == 2.0
        assert sess.run(p, {p: 5.0}) == 5.0


# --- session lifetime and defaults -------------------------------------------------------------


def test_closed_session_raises_runtime_error():
    c = tf.constant(1)
    sess = tf.Session()
    assert sess.run(c) == 1
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(c)
    with tf.Session() as sess2:
        pass
    with pytest.raises(RuntimeError):
        sess2.run(c)


def test_session_usable_after_an_error():
    p = tf.placeholder(tf.float32)
    y = tf.identity(p)
    v = tf.Variable(3.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(y)
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(_op(FAIL, tf.constant(1.0)))
        assert sess.run(y, {p: 1.0}) == 1.0
        assert sess.run(v) == 3.0  # state survives the failed runs


def test_with_session_makes_graph_and_session_default():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(4)
    with tf.Session(graph=g) as sess:
        assert tf.get_default_graph() is g
        assert tf.get_default_session() is sess
        assert c.eval() == 4
    assert tf.get_default_graph() is not g
    assert tf.get_default_session() is None
    assert sess.graph is g


def test_as_default_and_eval():
    c = tf.constant(2.0)
    p = tf.placeholder(tf.float32)
    op = tf.no_op()
    sess = tf.Session()
    with pytest.raises(ValueError, match="No default session"):
        c.eval()
    with sess.as_default() as entered:
        assert entered is sess and tf.get_default_session() is sess
        assert c.eval() == 2.0
        assert p.eval({p: 3.0}) == 3.0
        assert op.run() is None
        inner = tf.Session()
        with inner.as_default():
            assert tf.get_default_session() is inner
        assert tf.get_default_session() is sess
        inner.close()
    assert tf.get_default_session() is None
    assert c.eval(session=sess) == 2.0
    sess.close()


def test_eval_with_a_session_of_another_graph_fails():
    c = tf.constant(1.0)
    sess = tf.Session(graph=tf.Graph())
    with pytest.raises(ValueError, match="graph is different"):
        c.eval(session=sess)
    sess.close()


def test_interactive_session():
    c = tf.constant([1, 2])
    v = tf.Variable(10)
    sess = tf.InteractiveSession()
    try:
        assert tf.get_default_session() is sess
        v.initializer.run()
        np.testing.assert_array_equal(c.eval(), [1, 2])
        assert v.eval() == 10
        tf.assign_add(v, 5).op.run()
        assert v.eval() == 15
    finally:
        sess.close()
    assert tf.get_default_session() is None


def test_session_properties():
    g = tf.Graph()
    sess = tf.Session(graph=g)
    assert sess.graph is g and sess.sess_str == ""
    assert any("CPU" in d.name for d in sess.list_devices())
    sess.close()


def test_default_session_is_per_thread():
    sess = tf.Session()
    seen = []
    with sess.as_default():
        t = threading.Thread(target=lambda: seen.append(tf.get_default_session()))
        t.start()
        t.join()
    assert seen == [None]
    sess.close()


# --- run options, metadata ------------------------------------------------------------------


@pytest.mark.parametrize("threads", [1, 2])
def test_timeout_raises_deadline_exceeded(threads):
    slow = _op(SLEEP, tf.constant(1.0), seconds=0.2)
    after = tf.identity(slow)
    config = tf.ConfigProto(inter_op_parallelism_threads=threads)
    with tf.Session(config=config) as sess:
        with pytest.raises(tf.errors.DeadlineExceededError) as info:
            sess.run(after, options=tf.RunOptions(timeout_in_ms=50))
        assert info.value.error_code == tf.errors.Code.DEADLINE_EXCEEDED
        assert sess.run(after, options=tf.RunOptions(timeout_in_ms=5000)) == 1.0


def test_timeout_on_the_last_op():
    slow = _op(SLEEP, tf.constant(1.0), seconds=0.2)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(slow, options=tf.RunOptions(timeout_in_ms=20))


def test_full_trace_fills_step_stats():
    a = tf.constant(1.0, name="a")
    b = tf.identity(a, name="b")
    meta = tf.RunMetadata()
    # constant folding would compute b when the plan is built: trace the ops themselves
    no_folding = tf.ConfigProto(graph_options=tf.GraphOptions(
        optimizer_options=tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0)))
    with tf.Session(config=no_folding) as sess:
        sess.run(b, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=meta)
        stats = {s.node_name: s for s in meta.step_stats}
        assert set(stats) == {"a", "b"}
        assert stats["b"].op_type == "Identity"
        assert all(0 <= s.start <= s.end for s in meta.step_stats)
        assert stats["a"].end <= stats["b"].start
        assert "us" in repr(stats["a"])
        untraced = tf.RunMetadata()
        sess.run(b, run_metadata=untraced)
        assert untraced.step_stats == []


def test_config_accepts_tf_fields():
    config = tf.ConfigProto(log_device_placement=True, allow_soft_placement=True,
                            gpu_options=tf.GPUOptions(allow_growth=True),
                            device_count={"GPU": 0}, intra_op_parallelism_threads=2)
    assert config.gpu_options.allow_growth and config.device_count == {"GPU": 0}
    with tf.Session(config=config) as sess:
        assert sess.run(tf.constant(1)) == 1


# --- concurrency ------------------------------------------------------------------------------


def test_inter_op_threads_run_independent_ops_concurrently():
    barrier = threading.Barrier(2, timeout=5)
    a = _op(BARRIER, tf.constant(1.0), barrier=barrier)
    b = _op(BARRIER, tf.constant(2.0), barrier=barrier)
    config = tf.ConfigProto(inter_op_parallelism_threads=2)
    with tf.Session(config=config) as sess:
        assert sess.run([a, b]) == [1.0, 2.0]  # would deadlock if run one after the other


def test_single_thread_runs_in_the_calling_thread():
    threads = set()
    outs = [_op(THREAD, tf.constant(float(i)), threads=threads) for i in range(4)]
    with tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=1)) as sess:
        sess.run(outs)
    assert threads == {threading.get_ident()}


def _wide_graph(width=16, depth=6):
    xs = [tf.placeholder(tf.float64, [5], name=f"x{i}") for i in range(width)]
    layer = xs
    for d in range(depth):
        layer = [layer[i] * float(d + 1) + layer[(i + 1) % width] for i in range(width)]
    total = layer[0]
    for t in layer[1:]:
        total = total + t
    return xs, layer, total


def test_parallel_results_equal_serial_results():
    xs, layer, total = _wide_graph()
    rng = np.random.default_rng(0)
    feeds = {x: rng.normal(size=5) for x in xs}
    results = []
    for threads in (1, 2, 4):
        with tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=threads)) as sess:
            results.append(sess.run([layer, total], feeds))
    for r in results[1:]:
        for a, b in zip(r[0], results[0][0]):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(r[1], results[0][1])


def test_parallel_run_reports_kernel_errors():
    good = [_op(SLEEP, tf.constant(1.0), seconds=0.01) for _ in range(3)]
    bad = _op(FAIL, tf.constant(1.0), name="broken")
    with tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=3)) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="broken"):
            sess.run(good + [bad])
        assert sess.run(good) == [1.0, 1.0, 1.0]


def test_one_session_used_from_many_threads():
    p = tf.placeholder(tf.float64, [3])
    y = tf.identity(tf.identity(p))
    errors, results = [], {}
    sess = tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=2))

    def worker(k):
        try:
            for j in range(20):
                v = sess.run(y, {p: [k, j, k * j]})
                assert list(v) == [k, j, k * j]
            results[k] = True
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sess.close()
    assert not errors and len(results) == 6


def test_fetched_values_never_alias_feeds_or_each_other():
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    same, view = tf.identity(x), tf.reshape(x, [3, 2])
    fed = np.arange(6, dtype=np.float32).reshape(2, 3)
    with tf.Session() as sess:
        out_same, out_view, out_x = sess.run([same, view, x], {x: fed})
    for out in (out_same, out_view, out_x):
        assert not np.shares_memory(out, fed)
    out_view[0, 0] = 99.0
    assert fed[0, 0] == 0.0 and out_same[0, 0] == 0.0


def test_large_independent_ops_go_to_the_pool_small_ones_stay_inline():
    big = tf.placeholder(tf.float64, [None], name="big")
    branches = [big * float(k) for k in range(1, 4)]
    meta = tf.RunMetadata()
    opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    value = np.arange(100_000, dtype=np.float64)
    with tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=2)) as sess:
        out = sess.run(branches, {big: value}, options=opts, run_metadata=meta)
        pooled = {s.thread for s in meta.step_stats if s.op_type == "Mul"}
        assert threading.get_ident() not in pooled or len(pooled) > 1
        sess.run(branches, {big: value[:8]}, options=opts, run_metadata=meta)
        small = {s.thread for s in meta.step_stats if s.op_type == "Mul"}
        assert small == {threading.get_ident()}
    for k, o in zip(range(1, 4), out):
        np.testing.assert_array_equal(o, value * k)
