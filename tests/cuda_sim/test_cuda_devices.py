"""A TF 1.x graph placed partly on /gpu:0 runs end to end on the simulated GPU, with Send/Recv
between the host and the GPU partition, and gives the CPU's results."""

import numpy as np
import pytest

import flowjit as tf
from flowjit.runtime.targets import TargetKind

GPU = "/job:localhost/replica:0/task:0/device:GPU:0"


def _graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        y = tf.placeholder(tf.int32, [None], name="y")
        with tf.device("/cpu:0"):
            w = tf.Variable(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), name="w")
        with tf.device("/gpu:0"):
            logits = tf.nn.relu(tf.matmul(x, w) + 0.5)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=y, logits=logits))
            grad = tf.gradients(loss, [w])[0]
        with tf.device("/cpu:0"):
            step = tf.assign_sub(w, 0.1 * grad)
            ranked = tf.sort(tf.reshape(logits, [-1]))
        init = tf.global_variables_initializer()
    return g, x, y, loss, step, ranked, init


def _train(config, steps=3):
    g, x, y, loss, step, ranked, init = _graph()
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((6, 4)).astype(np.float32)
    yv = rng.integers(0, 3, 6).astype(np.int32)
    out = []
    with tf.Session(graph=g, config=config) as sess:
        sess.run(init)
        opts = tf.RunOptions(output_partition_graphs=True)
        meta = tf.RunMetadata()
        for _ in range(steps):
            out.append(sess.run([loss, step, ranked], {x: xv, y: yv}, options=opts,
                                run_metadata=meta))
        plan_nodes = [n for p in sess._multi_plans.values() for n in p.nodes()]
    return out, meta, plan_nodes


def test_graph_on_the_gpu_gives_the_cpu_results_through_send_and_recv():
    on_gpu, meta, nodes = _train(tf.ConfigProto(jit=tf.JitOptions.always()))
    on_cpu, _, _ = _train(tf.ConfigProto(jit=False, device_count={"GPU": 0},
                                         allow_soft_placement=True))
    for got, want in zip(on_gpu, on_cpu):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    devices = {gd.node[0].device for gd in meta.partition_graphs}
    assert GPU in devices and len(meta.partition_graphs) == 2
    gpu_part = next(gd for gd in meta.partition_graphs if gd.node[0].device == GPU)
    kinds = {n.op for n in gpu_part.node}
    assert {"_Send", "_Recv", "MatMul"} <= kinds
    cuda_clusters = [n for n in nodes if getattr(n, "options", None) is not None
                     and n.options.target is TargetKind.CUDA]
    assert cuda_clusters and all(n.kernels.compiled_runs > 0 for n in cuda_clusters)


def test_host_only_op_on_the_gpu_needs_soft_placement():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/gpu:0"):
            s = tf.sort(tf.constant([3.0, 1.0, 2.0]))
    with tf.Session(graph=g) as sess:
        with pytest.raises(Exception, match="Sort"):
            sess.run(s)
    with tf.Session(graph=g, config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        np.testing.assert_array_equal(sess.run(s), [1.0, 2.0, 3.0])


def test_the_simulated_gpu_is_listed():
    names = [d.name for d in tf.config.list_logical_devices("GPU")]
    assert names == [GPU]


def test_values_stay_in_gpu_memory_between_gpu_clusters(monkeypatch):
    """Cluster 2 on the GPU reads cluster 1's output in place and the sorted copy the CPU
    sends back as device arrays: the Recv on the GPU copied it there (on the device's copy
    stream); both clusters launch on the device's compute stream."""
    from flowjit.runtime import gpu_values
    from flowjit.targets.cuda import target as cuda_target

    calls, launched_on = [], []
    original = cuda_target._Kernel.on_device

    def spy(self, *arrays, stream=0):
        calls.append([gpu_values.is_device_array(a) for a in arrays])
        launched_on.append(stream)
        return original(self, *arrays, stream=stream)

    monkeypatch.setattr(cuda_target._Kernel, "on_device", spy)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [3, 4], name="x")
        with tf.device("/gpu:0"):
            a = tf.tanh(x) * 2.0
        with tf.device("/cpu:0"):
            s = tf.sort(a)
        with tf.device("/gpu:0"):
            b = tf.reduce_sum(s * a, axis=1)
    xv = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    with tf.Session(graph=g, config=tf.ConfigProto(jit=tf.JitOptions.always())) as sess:
        got = sess.run(b, {x: xv})
    av = np.tanh(xv) * 2.0
    np.testing.assert_allclose(got, (np.sort(av) * av).sum(axis=1), rtol=1e-5)
    assert isinstance(got, np.ndarray)
    assert len(calls) == 2 and calls[1] == [True, True], calls
    gpu = next(d for d in sess._devices if d.device_type.name == "GPU")
    assert launched_on == [gpu_values.streams(gpu).compute] * 2   # the device's own stream


def test_a_variable_updated_on_the_gpu_lives_there_and_saves(tmp_path):
    """Training with the variable and its update on /gpu:0: after the first step the
    variable's value is a device array in the session state (the next step reads it in
    place); fetches and a checkpoint get host copies; results equal a CPU-only run."""
    from flowjit.runtime import gpu_values

    def train(config):
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.float32, [None, 3], name="x")
            with tf.device("/gpu:0"):
                w = tf.Variable(np.ones((3, 2), np.float32), name="w")
                loss = tf.reduce_sum(tf.square(tf.matmul(x, w) - 1.0))
                step = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
            init = tf.global_variables_initializer()
            saver = tf.train.Saver()
        xv = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
        with tf.Session(graph=g, config=config) as sess:
            sess.run(init)
            losses = [sess.run([loss, step], {x: xv})[0] for _ in range(3)]
            stored = sess._state.variables["w"]
            final = sess.run(w)
            path = saver.save(sess, str(tmp_path / config.__class__.__name__ / "m"))
            sess.run(tf.assign(w, np.zeros((3, 2), np.float32)))
            saver.restore(sess, path)
            restored = sess.run(w)
        return losses, final, restored, stored

    losses, final, restored, stored = train(tf.ConfigProto(jit=tf.JitOptions.always()))
    cpu_losses, cpu_final, _, cpu_stored = train(tf.ConfigProto(jit=False, device_count={"GPU": 0},
                                                       allow_soft_placement=True))
    np.testing.assert_allclose(losses, cpu_losses, rtol=1e-5)
    np.testing.assert_allclose(final, cpu_final, rtol=1e-5)
    assert isinstance(final, np.ndarray) and isinstance(restored, np.ndarray)
    np.testing.assert_array_equal(restored, final)
    assert gpu_values.is_device_array(stored) and isinstance(cpu_stored, np.ndarray)


def test_row_scatter_updates_of_a_variable_compile_for_the_gpu(monkeypatch):
    """tf.scatter_add / scatter_sub of a small variable on /gpu:0 (repeated rows add up) run
    as the CUDA target's ordered scatter kernel in its adding form (ops/variable_scatter_ops.py)."""
    from flowjit.targets.cuda import library_text

    adding, original = [], library_text.scatter_kernel

    def spy(name, add=False):
        adding.append(add)
        return original(name, add)

    monkeypatch.setattr(library_text, "scatter_kernel", spy)
    g = tf.Graph()
    with g.as_default():
        with tf.device("/gpu:0"):
            v = tf.Variable(np.arange(15.0).reshape(5, 3), name="v")
            u = tf.placeholder(tf.float64, [4, 3], name="u")
            added = tf.scatter_add(v, tf.constant([4, 1, 4, 4]), u * 2.0)
            subtracted = tf.scatter_sub(v, tf.constant([0, 0]), u[:2] * 1.0)
    with tf.Session(graph=g, config=tf.ConfigProto(jit=tf.JitOptions.always())) as sess:
        sess.run(v.initializer)
        first = sess.run(added, {"u:0": np.ones((4, 3))})
        second = sess.run(subtracted, {"u:0": np.ones((4, 3))})
    expected = np.arange(15.0).reshape(5, 3)
    np.add.at(expected, [4, 1, 4, 4], 2.0)
    np.testing.assert_array_equal(first, expected)
    expected[0] -= 2.0
    np.testing.assert_array_equal(second, expected)
    assert adding.count(True) == 2
