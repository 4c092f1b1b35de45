"""Steps over several devices: placement in a Session, Send/Recv partitions, the rendezvous
between devices, non-blocking Recv, errors that end the step everywhere, ALAP Recvs,
compressed transfers, and the parallel idioms (data and model parallelism) on two virtual
CPUs — each compared with the one-device run of the same graph."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import flowjit as tf
from flowjit.ops.registry import OpDef, Trait
from flowjit.runtime import clustering

TWO = {"CPU": 2}
# the runs every result is checked under: reference kernels, compiled (numba), and the
# reference target's compiled kernels
POLICIES = [False, "always", tf.JitOptions.always(target="reference")]


def _config(jit=False, **kwargs):
    return tf.ConfigProto(device_count=kwargs.pop("device_count", TWO), jit=jit, **kwargs)


def _same_as_input(op):
    t = op.inputs[0]
    return [(t.dtype, t.shape)]


def _fail_kernel(ctx, inputs, attrs):
    raise ValueError("device 0 broke")


def _wait_kernel(ctx, inputs, attrs):
    attrs["event"].wait(attrs.get("seconds", 10))
    attrs.get("finished", []).append(True)
    return [inputs[0]]


FAIL = OpDef("TestDeviceFail", _same_as_input, _fail_kernel)
WAIT = OpDef("TestDeviceWait", _same_as_input, _wait_kernel,
             traits={Trait.STATEFUL, Trait.BLOCKING})


def _op(op_def, x, name=None, **attrs):
    return x.graph.create_op(op_def, [x], attrs, name or op_def.name).outputs[0]


def _split_graph():
    """x -> (CPU:0) h = tanh(x @ w) -> (CPU:1) three readers of h, and y, z from them."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 5], name="x")
        with tf.device("/cpu:0"):
            w = tf.Variable(np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3), name="w")
            h = tf.tanh(tf.matmul(x, w), name="h")
        with tf.device("/device:CPU:1"):
            y = tf.reduce_sum(h * h + tf.sin(h) - tf.exp(h), name="y")
            z = tf.square(h, name="z")
        step = tf.assign_add(w, 0.1 * tf.ones_like(w))
        init = tf.global_variables_initializer()
    return g, x, y, z, step, init


def _run_split(config, feed):
    g, x, y, z, step, init = _split_graph()
    with tf.Session(graph=g, config=config) as sess:
        sess.run(init)
        first = sess.run([y, z], {x: feed})
        sess.run(step)
        second = sess.run([y, z], {x: feed})
    return first, second


@pytest.mark.parametrize("jit", POLICIES, ids=["never", "always", "reference"])
def test_two_devices_give_the_one_device_results(jit):
    feed = np.random.default_rng(0).normal(size=(7, 5)).astype(np.float32)
    want = _run_split(_config(jit, device_count={}, allow_soft_placement=True), feed)
    got = _run_split(_config(jit), feed)
    for (gy, gz), (wy, wz) in zip(got, want):
        np.testing.assert_allclose(gy, wy, rtol=1e-5)
        np.testing.assert_allclose(gz, wz, rtol=1e-5)


def test_compiled_clusters_never_span_devices(compiled_calls):
    g, x, y, z, step, init = _split_graph()
    with tf.Session(graph=g, config=_config("always")) as sess:
        sess.run(init)
        sess.run([y, z], {x: np.ones((2, 5), np.float32)})
        plan = list(sess._multi_plans.values())[-1]   # the step of [y, z]
        ran_on = set()
        for device_plan in plan.plans:
            for node in device_plan.nodes:
                if isinstance(node, clustering.ClusterStep):
                    assert {plan.placement[op] for op in node.ops} == {device_plan.device}
                    if node.name in compiled_calls:
                        ran_on.add(device_plan.device.name[-5:])
    assert ran_on == {"CPU:0", "CPU:1"}   # compiled kernels really ran, on both devices


def test_partition_graphs_send_a_tensor_once_per_device():
    g, x, y, z, step, init = _split_graph()
    meta = tf.RunMetadata()
    with tf.Session(graph=g, config=_config()) as sess:
        sess.run(init)
        sess.run([y, z], {x: np.ones((2, 5), np.float32)},
                 options=tf.RunOptions(output_partition_graphs=True), run_metadata=meta)
    cpu0, cpu1 = meta.partition_graphs
    assert {n.device for n in cpu0.node} == {"/job:localhost/replica:0/task:0/device:CPU:0"}
    assert {n.device for n in cpu1.node} == {"/job:localhost/replica:0/task:0/device:CPU:1"}
    sends = [n for n in cpu0.node if n.op == "_Send"]
    recvs = [n for n in cpu1.node if n.op == "_Recv"]
    # h has four readers on CPU:1 (Mul twice, Sin, Exp, Square) but crosses once
    assert len(sends) == len(recvs) == 1
    assert sends[0].attr["tensor_name"].s == recvs[0].attr["tensor_name"].s == b"h:0"
    assert sends[0].attr["recv_device"].s.endswith(b"CPU:1")
    readers = [n for n in cpu1.node if recvs[0].name in n.input]
    assert {n.op for n in readers} >= {"Mul", "Sin", "Exp", "Square"}
    assert not any(n.op in ("_Send", "_Recv") for n in cpu1.node if n.op == "_Send")


def test_control_edges_cross_devices_as_tokens():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            v = tf.Variable(1.0, name="v")
            bump = tf.assign_add(v, 10.0)
        with tf.device("/cpu:1"):
            with tf.control_dependencies([bump]):
                after = tf.identity(tf.constant(2.0), name="after")
            read = tf.identity(v.read_value() if hasattr(v, "read_value") else v + 0, name="r")
        init = tf.global_variables_initializer()
    meta = tf.RunMetadata()
    with tf.Session(graph=g, config=_config()) as sess:
        sess.run(init)
        assert sess.run(after, options=tf.RunOptions(output_partition_graphs=True),
                        run_metadata=meta) == 2.0
        assert sess.run(read) == 11.0      # the update ran before `after`
    names = [n.attr["tensor_name"].s.decode() for gd in meta.partition_graphs for n in gd.node
             if n.op == "_Recv"]
    assert names == ["^AssignAdd"]


def test_log_device_placement_prints_every_op(capsys):
    g, x, y, z, step, init = _split_graph()
    with tf.Session(graph=g, config=_config(log_device_placement=True)) as sess:
        sess.run(init)
        sess.run(y, {x: np.ones((1, 5), np.float32)})
    err = capsys.readouterr().err
    assert "h: (Tanh): /job:localhost/replica:0/task:0/device:CPU:0" in err
    assert "y: (Sum): /job:localhost/replica:0/task:0/device:CPU:1" in err


def test_one_device_session_checks_requests_like_tensorflow():
    g, x, y, z, step, init = _split_graph()
    with tf.Session(graph=g, config=_config(device_count={})) as sess:
        sess.run(init)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot assign a device"):
            sess.run(y, {x: np.ones((1, 5), np.float32)})
    soft = _config(device_count={}, allow_soft_placement=True)
    with tf.Session(graph=g, config=soft) as sess:
        sess.run(init)
        assert np.isfinite(sess.run(y, {x: np.ones((1, 5), np.float32)}))


def test_trace_names_each_node_and_its_device():
    g, x, y, z, step, init = _split_graph()
    meta = tf.RunMetadata()
    with tf.Session(graph=g, config=_config()) as sess:
        sess.run(init)
        sess.run(y, {x: np.ones((1, 5), np.float32)},
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=meta)
    where = {s.node_name: s.device[-5:] for s in meta.step_stats}
    assert where["h"] == "CPU:0" and where["y"] == "CPU:1"
    assert {s.op_type for s in meta.step_stats} >= {"_Send", "_Recv"}


# --- the rendezvous at work -------------------------------------------------------------------


def test_more_pending_recvs_than_threads_cannot_deadlock():
    """CPU:1 (one thread each here) waits for 12 values that CPU:0 computes from a value
    CPU:1 makes; Recvs that held a thread would leave none to make it."""
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:1"):
            seed = tf.constant(np.arange(4, dtype=np.float64), name="seed")
            made = tf.identity(seed * 2.0, name="made")
        with tf.device("/cpu:0"):
            parts = [tf.add(made, float(i), name=f"part{i}") for i in range(12)]
        with tf.device("/cpu:1"):
            total = tf.add_n(parts, name="total")
    config = _config(device_count={"CPU": 2}, inter_op_parallelism_threads=1)
    with tf.Session(graph=g, config=config) as sess:
        got = sess.run(total, options=tf.RunOptions(timeout_in_ms=30000))
    np.testing.assert_allclose(got, 12 * 2 * np.arange(4) + sum(range(12)))


def test_recv_before_send_and_send_before_recv_in_a_step():
    """CPU:1's Recv is waiting long before CPU:0 sends (CPU:0 blocks on an event); the
    second value is sent before CPU:1 asks for it."""
    g = tf.Graph()
    event = threading.Event()
    with g.as_default():
        with tf.device("/cpu:0"):
            slow = _op(WAIT, tf.constant(3.0), event=event)
            early = tf.constant(4.0, name="early")
        with tf.device("/cpu:1"):
            gate = _op(WAIT, tf.constant(1.0), event=event, name="gate")
            out = slow * gate + early
    timer = threading.Timer(0.2, event.set)
    timer.start()
    with tf.Session(graph=g, config=_config()) as sess:
        assert sess.run(out, options=tf.RunOptions(timeout_in_ms=30000)) == 7.0
    timer.join(5)


def _failing_graph():
    g = tf.Graph()
    with g.as_default():
        flag = tf.placeholder(tf.bool, [], name="flag")
        with tf.device("/cpu:0"):
            x = tf.constant(np.ones(3), name="x")
            broken = tf.cond(flag, lambda: _op(FAIL, x * 1.0), lambda: x * 2.0)
            ok = tf.identity(x * 5.0, name="ok")
        with tf.device("/cpu:1"):
            far = tf.reduce_sum(broken + ok, name="far")
    return g, flag, far


def test_a_failing_device_ends_the_step_everywhere_and_the_session_goes_on():
    g, flag, far = _failing_graph()
    box = {}

    def step():
        with tf.Session(graph=g, config=_config()) as sess:
            try:
                sess.run(far, {flag: True}, options=tf.RunOptions(timeout_in_ms=20000))
            except tf.errors.OpError as e:
                box["error"] = e
            box["after"] = sess.run(far, {flag: False})

    worker = threading.Thread(target=step)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "the step hung"
    assert type(box["error"]) is tf.errors.InvalidArgumentError   # not a timeout
    assert "device 0 broke" in str(box["error"])
    assert box["after"] == 21.0


def test_the_deadline_aborts_every_device():
    g = tf.Graph()
    event = threading.Event()
    finished = []
    with g.as_default():
        with tf.device("/cpu:0"):
            stuck = _op(WAIT, tf.constant(1.0), event=event, seconds=30, finished=finished)
        with tf.device("/cpu:1"):
            out = stuck + 1.0
    with tf.Session(graph=g, config=_config()) as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(out, options=tf.RunOptions(timeout_in_ms=100))
        assert finished == []      # raised at the deadline, not when the stuck op ended
        event.set()
        assert sess.run(out) == 2.0


# --- ALAP Recvs and compression ---------------------------------------------------------------


def _memory_graph(n=4, size=20000):
    """CPU:0 makes n big tensors at once; CPU:1 runs a chain that needs the k-th only at
    its k-th stage: Recvs started at once hold all n on CPU:1."""
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            bigs = [tf.fill([size], float(k + 1), name=f"big{k}") for k in range(n)]
        with tf.device("/cpu:1"):
            acc = tf.zeros([size], tf.float32)
            for k in range(n):
                for j in range(6):
                    acc = tf.sin(acc + 0.5, name=f"stage{k}_{j}")
                acc = acc + bigs[k]
            out = tf.reduce_sum(acc, name="out")
    return g, out


def _peak(scheduling):
    g, out = _memory_graph()
    config = _config(placement=tf.PlacementOptions(recv_scheduling=scheduling))
    with tf.Session(graph=g, config=config) as sess:
        value = sess.run(out)
        return value, sess._devices[1].allocator.peak


def test_alap_recvs_lower_the_receivers_peak_memory():
    alap_value, alap_peak = _peak(tf.RecvScheduling.ALAP)
    asap_value, asap_peak = _peak(tf.RecvScheduling.ASAP)
    assert alap_value == pytest.approx(asap_value, rel=1e-6)
    big = 20000 * 4
    assert asap_peak >= 4 * big            # all four arrived at the start
    assert alap_peak <= asap_peak - 2 * big


@pytest.mark.parametrize("edges", [True, ["h:0"]])
def test_compressed_transfers_round_through_float16(edges):
    feed = np.random.default_rng(1).normal(size=(3, 5)).astype(np.float32)
    g, x, y, z, step, init = _split_graph()
    config = _config(placement=tf.PlacementOptions(compress_transfers=edges))
    with tf.Session(graph=g, config=config) as sess:
        sess.run(init)
        got, h = sess.run([z, g.get_tensor_by_name("h:0")], {x: feed})
    np.testing.assert_array_equal(got, np.square(h.astype(np.float16).astype(np.float32)))
    assert not np.array_equal(got, np.square(h))   # it really was rounded


# --- the parallel idioms (2015 paper §7) ------------------------------------------------------


def _data_parallel(config, replicas):
    """Linear regression, the batch split over `replicas` devices, gradients averaged and
    applied once per step."""
    rng = np.random.default_rng(3)
    xs = rng.normal(size=(64, 6)).astype(np.float32)
    ys = (xs @ np.arange(1, 7, dtype=np.float32) + 0.5)[:, None]
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 6])
        y = tf.placeholder(tf.float32, [None, 1])
        with tf.device("/cpu:0"):
            w = tf.Variable(tf.zeros([6, 1]), name="w")
            b = tf.Variable(tf.zeros([1]), name="b")
        grads = []
        for k, (xk, yk) in enumerate(zip(tf.split(x, replicas), tf.split(y, replicas))):
            with tf.device(f"/cpu:{k}"):
                loss = tf.reduce_mean(tf.square(tf.matmul(xk, w) + b - yk))
                grads.append(tf.gradients(loss, [w, b]))
        with tf.device("/cpu:0"):
            mean = [tf.add_n([gr[i] for gr in grads]) / replicas for i in range(2)]
            train = tf.train.GradientDescentOptimizer(0.1).apply_gradients(
                list(zip(mean, [w, b])))
        init = tf.global_variables_initializer()
    with tf.Session(graph=g, config=config) as sess:
        sess.run(init)
        for _ in range(30):
            sess.run(train, {x: xs, y: ys})
        return sess.run([w, b])


@pytest.mark.parametrize("jit", [False, "always"], ids=["never", "always"])
def test_synchronous_data_parallelism_equals_one_device(jit):
    want = _data_parallel(_config(jit, device_count={}, allow_soft_placement=True), 2)
    got = _data_parallel(_config(jit), 2)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert abs(float(got[1][0]) - 0.5) < 0.3    # it trained


def _model_parallel(config):
    rng = np.random.default_rng(4)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, [None, 8])
        with tf.device("/cpu:0"):
            w1 = tf.Variable(rng.normal(size=(8, 16)) * 0.3, name="w1")
            h = tf.nn.relu(tf.matmul(x, w1))
        with tf.device("/cpu:1"):
            w2 = tf.Variable(rng.normal(size=(16, 1)) * 0.3, name="w2")
            out = tf.matmul(h, w2)
            loss = tf.reduce_mean(tf.square(out - 1.0))
        train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
        init = tf.global_variables_initializer()
    feed = {x: rng.normal(size=(10, 8))}
    with tf.Session(graph=g, config=config) as sess:
        sess.run(init)
        losses = [sess.run([train, loss], feed)[1] for _ in range(10)]
        return losses, sess.run(w2)


def test_model_parallelism_equals_one_device():
    want = _model_parallel(_config(device_count={}, allow_soft_placement=True))
    got = _model_parallel(_config())
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    assert got[0][-1] < got[0][0]


def test_variables_stay_with_their_update_ops():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:1"):
            v = tf.Variable(np.zeros(3), name="v")
        bump = tf.assign_add(v, np.ones(3))      # no scope: goes where v is
        init = tf.global_variables_initializer()
    meta = tf.RunMetadata()
    with tf.Session(graph=g, config=_config(log_device_placement=False)) as sess:
        sess.run(init)
        sess.run(bump, options=tf.RunOptions(output_partition_graphs=True),
                 run_metadata=meta)
        np.testing.assert_array_equal(sess.run(v), np.ones(3))
    (only,) = meta.partition_graphs
    assert {n.device[-5:] for n in only.node} == {"CPU:1"}


@pytest.mark.parametrize("jit", [False, "always"], ids=["never", "always"])
def test_while_loop_on_another_device(jit):
    g = tf.Graph()
    with g.as_default():
        n = tf.placeholder(tf.int32, [])
        with tf.device("/cpu:0"):
            start = tf.constant(np.linspace(0, 1, 5), name="start") * 2.0
        with tf.device("/cpu:1"):
            _, out = tf.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x * 0.5 + 1.0),
                                   [tf.constant(0), start])
        with tf.device("/cpu:0"):
            final = tf.reduce_sum(out)
    want = np.linspace(0, 1, 5) * 2.0
    for _ in range(6):
        want = want * 0.5 + 1.0
    with tf.Session(graph=g, config=_config(jit)) as sess:
        np.testing.assert_allclose(sess.run(final, {n: 6}), want.sum())
        np.testing.assert_allclose(sess.run(final, {n: 0}), (np.linspace(0, 1, 5) * 2).sum())


# --- dequeues that wait without a thread ------------------------------------------------------


def test_a_waiting_dequeue_holds_no_thread():
    """On CPU:1 (one thread) a dequeue is started before the enqueue that feeds it, in the
    same step: a dequeue that held the device's only thread would wait forever."""
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:1"):
            q = tf.FIFOQueue(4, [tf.float64], shapes=[[3]])
            got = q.dequeue()
            put = q.enqueue([tf.constant(np.arange(3.0)) * 2.0])
        with tf.device("/cpu:0"):
            total = tf.reduce_sum(got)
    config = _config(device_count={"CPU": 2})
    with tf.Session(graph=g, config=config) as sess:
        value, _ = sess.run([total, put], options=tf.RunOptions(timeout_in_ms=30000))
        assert value == 6.0
        sess.run(q.close())
        with pytest.raises(tf.errors.OutOfRangeError, match="closed"):
            sess.run(total, options=tf.RunOptions(timeout_in_ms=30000))


def test_a_failing_step_withdraws_its_waiting_dequeue():
    g = tf.Graph()
    with g.as_default():
        flag = tf.placeholder(tf.bool, [])
        with tf.device("/cpu:1"):
            q = tf.FIFOQueue(4, [tf.float64], shapes=[[]])
            got = q.dequeue()
        with tf.device("/cpu:0"):
            broken = tf.cond(flag, lambda: _op(FAIL, tf.constant(1.0, tf.float64)),
                             lambda: tf.constant(2.0, tf.float64))
            both = got + broken
        put = q.enqueue([tf.constant(5.0, tf.float64)])
    with tf.Session(graph=g, config=_config()) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="device 0 broke"):
            sess.run(both, {flag: True}, options=tf.RunOptions(timeout_in_ms=30000))
        sess.run(put)                # the withdrawn dequeue took nothing: the next one gets it
        assert sess.run(both, {flag: False}) == 7.0


def test_explain_names_each_clusters_device():
    g, x, y, z, step, init = _split_graph()
    with tf.Session(graph=g, config=_config("always")) as sess:
        sess.run(init)
        sess.run([y, z], {x: np.ones((2, 5), np.float32)})
        text = sess.explain()
    assert "on /job:localhost/replica:0/task:0/device:CPU:0: cluster" in text
    assert "on /job:localhost/replica:0/task:0/device:CPU:1: cluster" in text
