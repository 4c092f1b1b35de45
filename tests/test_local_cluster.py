"""In-process clusters (runtime/local_cluster.py): `flowjit.distributed.LocalCluster` and
`tf.train.Server` targets give a Session one device per task; a TF 1.x program with
`/job:ps` and `/job:worker` device blocks trains across them with the single-process
results, every task gets its partition, and bad targets are explained."""

import numpy as np
import pytest

import flowjit as tf

CLUSTER = {"ps": ["ps0:2222"], "worker": ["w0:2222", "w1:2222"]}


def _data():
    rng = np.random.RandomState(0)
    xs = rng.normal(size=(32, 5)).astype(np.float32)
    ys = (xs @ rng.normal(size=(5, 1))).astype(np.float32)
    return xs, ys


def ps_linear_model():
    """In the default graph: placeholders x [None, 5] and y [None, 1], and on the ps task
    the global step and a linear model's w and b (zeros)."""
    x = tf.placeholder(tf.float32, [None, 5], name="x")
    y = tf.placeholder(tf.float32, [None, 1], name="y")
    with tf.device("/job:ps/task:0"):
        step = tf.train.get_or_create_global_step()
        w = tf.Variable(tf.zeros([5, 1]), name="w")
        b = tf.Variable(tf.zeros([1]), name="b")
    return x, y, step, w, b


def sync_replicas(target, placed: bool, steps: int = 12):
    """Synchronous data parallelism by hand: the parameters on the ps task, one replica
    per worker task on half of the batch, the averaged gradients applied on the ps task.
    `placed=False` builds the same graph without device blocks (the single-process run)."""
    xs, ys = _data()

    def on(name):
        return tf.device(name if placed else None)

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 5], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        with on("/job:ps/task:0"):
            w = tf.Variable(tf.zeros([5, 1]), name="w")
            b = tf.Variable(tf.zeros([1]), name="b")
        losses, grads = [], []
        for k in range(2):
            with on(f"/job:worker/task:{k}"):
                rows = slice(16 * k, 16 * (k + 1))
                loss = tf.reduce_mean(tf.square(tf.matmul(x[rows], w) + b - y[rows]))
                grads.append(tf.gradients(loss, [w, b]))
                losses.append(loss)
        with on("/job:ps/task:0"):
            averaged = [(grads[0][i] + grads[1][i]) / 2 for i in range(2)]
            train = tf.group(tf.assign_sub(w, 0.1 * averaged[0]),
                             tf.assign_sub(b, 0.1 * averaged[1]))
        total = tf.add_n(losses)
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            trace = [sess.run([train, total], {x: xs, y: ys})[1] for _ in range(steps)]
            meta = tf.RunMetadata()
            sess.run(total, {x: xs, y: ys},
                     options=tf.RunOptions(output_partition_graphs=True), run_metadata=meta)
            devices = [sorted({n.device for n in g.node}) for g in meta.partition_graphs]
            ops = [sorted({n.op for n in g.node}) for g in meta.partition_graphs]
            return np.array(trace), sess.run([w, b]), devices, ops, sess.list_devices()


def test_program_across_three_tasks_matches_one_process():
    with tf.distributed.LocalCluster(CLUSTER, backend="threads") as cluster:
        trace, params, devices, ops, listed = sync_replicas(
            cluster.task_target("worker", 0), placed=True)
    want_trace, want_params, _, _, _ = sync_replicas("", placed=False)
    assert trace[-1] < trace[0] / 4            # it trains
    np.testing.assert_allclose(trace, want_trace, rtol=1e-6)
    for got, want in zip(params, want_params):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert [d.name for d in listed] == [
        "/job:worker/replica:0/task:0/device:CPU:0", "/job:ps/replica:0/task:0/device:CPU:0",
        "/job:worker/replica:0/task:1/device:CPU:0"]
    assert sorted(d[0] for d in devices) == sorted(d.name for d in listed)
    assert all(len(d) == 1 for d in devices)       # one partition per task
    assert all("_Send" in o or "_Recv" in o for o in ops)      # every task exchanges
    assert any("_Send" in o for o in ops) and any("_Recv" in o for o in ops)


def test_servers_of_one_cluster_share_it_and_place_free_ops_on_their_task():
    cluster = tf.train.ClusterSpec(CLUSTER)
    worker1 = tf.train.Server(cluster, job_name="worker", task_index=1,
                               backend="threads")
    worker0 = tf.train.Server(cluster, job_name="worker", task_index=0,
                               backend="threads")
    assert worker1.target.rsplit("/", 2)[0] == worker0.target.rsplit("/", 2)[0]
    with tf.Graph().as_default():
        with tf.device(tf.train.replica_device_setter(cluster=cluster)):
            v = tf.Variable(3.0, name="v")
        doubled = tf.multiply(v, 2.0, name="doubled")   # no request: the session's task
        for server, task in ((worker1, 1), (worker0, 0)):
            with tf.Session(server.target) as sess:
                assert sess.sess_str == server.target
                sess.run(tf.global_variables_initializer())
                meta = tf.RunMetadata()
                got = sess.run(doubled, options=tf.RunOptions(output_partition_graphs=True),
                               run_metadata=meta)
                assert got == 6.0
                owner = [g for g in meta.partition_graphs
                         if any(n.name == "doubled" for n in g.node)]
                assert owner[0].node[0].device.startswith(f"/job:worker/replica:0/task:{task}")
    worker0.join()   # returns at once


def test_error_on_one_task_ends_the_step_and_the_session_goes_on():
    """A reshape on worker 1 fails for a fed size; the step fails on every task with its
    error, and the next step runs."""
    with tf.distributed.LocalCluster(CLUSTER, backend="threads") as cluster, \
            tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        with tf.device("/job:worker/task:1"):
            y = tf.reshape(x * 2, [2, 2])
        with tf.device("/job:ps/task:0"):
            z = y + 1
        with tf.Session(cluster.target) as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="[Rr]eshape"):
                sess.run(z, {x: np.ones(3, np.float32)})
            np.testing.assert_array_equal(sess.run(z, {x: np.ones(4, np.float32)}),
                                          np.full((2, 2), 3.0))


def test_bad_targets_are_explained():
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match="LocalCluster"):
            tf.Session("grpc://localhost:2222")
        cluster = tf.distributed.LocalCluster(CLUSTER, backend="threads")
        target = cluster.target
        cluster.shutdown()
        with pytest.raises(tf.errors.InvalidArgumentError, match="shut down"):
            tf.Session(target)
    with tf.distributed.LocalCluster(CLUSTER, backend="threads") as cluster, \
            tf.Graph().as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match="does not have"):
            tf.Session(cluster.target + "/job:chief/task:0")
        with pytest.raises(ValueError, match="No task with index 5"):
            cluster.task_target("worker", 5)
    with pytest.raises(ValueError, match="job_name must be given"):
        tf.train.Server(CLUSTER)
    with pytest.raises(ValueError, match="at least one task"):
        tf.distributed.LocalCluster({"ps": []})


def test_local_server_is_one_task():
    server = tf.train.Server.create_local_server()
    with tf.Graph().as_default():
        c = tf.constant(2.0) * 3.0
        with tf.Session(server.target) as sess:
            assert sess.run(c) == 6.0
            assert [d.name for d in sess.list_devices()] == [
                "/job:localhost/replica:0/task:0/device:CPU:0"]


def test_sessions_of_a_cluster_share_its_variables():
    """Between-graph replication: each worker builds its own graph and Session; the
    variables are the cluster's, by name, so the chief's initialization and every worker's
    updates are seen by all (as clients of a TensorFlow cluster see them)."""
    with tf.distributed.LocalCluster(CLUSTER, backend="threads") as cluster:
        def worker(k):
            graph = tf.Graph()
            with graph.as_default():
                with tf.device(tf.train.replica_device_setter(cluster=cluster.cluster_spec)):
                    v = tf.Variable(10.0, name="v")
                    bump = tf.assign_add(v, float(k + 1))
                init = tf.global_variables_initializer()
            return tf.Session(cluster.task_target("worker", k), graph=graph), v, bump, init

        s0, v0, bump0, init0 = worker(0)
        s1, v1, bump1, init1 = worker(1)
        s0.run(init0)                       # the chief initializes
        assert s1.run(v1) == 10.0           # the other worker sees it without initializing
        s1.run(bump1)
        s0.run(bump0)
        assert s0.run(v0) == s1.run(v1) == 13.0
        s1.close()
        assert s0.run(v0) == 13.0           # closing one client leaves the variables
        s0.close()
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        with tf.Session() as sess:          # a plain Session has its own
            sess.run(tf.global_variables_initializer())
            assert sess.run(v) == 1.0


def _loop_then_cond(target):
    """A while loop and a cond after it on worker 1, reading a variable of the ps task
    (the tasks import the graph, so both run as control-flow regions there)."""
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(3.0, name="v")
        with tf.device("/job:worker/task:1"):
            _, power = tf.while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, a * v),
                                     [tf.constant(0), tf.constant(1.0)])
            out = tf.cond(power > 100.0, lambda: power - 1.0, lambda: power + 1.0)
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            return sess.run([power, out], options=tf.RunOptions(timeout_in_ms=20000))


def test_control_flow_runs_on_a_task():
    with tf.distributed.LocalCluster(CLUSTER, backend="threads") as cluster:
        assert _loop_then_cond(cluster.target) == [243.0, 242.0]


def test_queue_ops_stay_with_their_queue():
    """A queue's handle is the queue itself: its dequeue runs on the queue's task, and a
    request for another task is a colocation error naming both ops."""
    with tf.distributed.LocalCluster(CLUSTER, backend="threads") as cluster, \
            tf.Graph().as_default():
        with tf.device("/job:worker/task:1"):
            q = tf.FIFOQueue(10, tf.float32, shapes=[], name="q")
            fill = q.enqueue_many([[1.0, 2.0, 3.0]])
            first = q.dequeue()
        with tf.device("/job:worker/task:0"):
            doubled = first * 2
            misplaced = q.dequeue(name="misplaced")
        with tf.Session(cluster.target) as sess:
            sess.run(fill)
            assert sess.run(doubled) == 2.0
            with pytest.raises(tf.errors.InvalidArgumentError, match="'misplaced', 'q'"):
                sess.run(misplaced)


def test_checkpoint_of_variables_on_several_tasks(tmp_path):
    with tf.distributed.LocalCluster(CLUSTER, backend="threads") as cluster, \
            tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            a = tf.Variable([1.0, 2.0], name="a")
        with tf.device("/job:worker/task:1"):
            b = tf.Variable(5.0, name="b")
        saver = tf.train.Saver()
        with tf.Session(cluster.target) as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "m"))
            sess.run([tf.assign(a, [0.0, 0.0]), tf.assign(b, 0.0)])
            saver.restore(sess, path)
            got = sess.run([a, b])
    np.testing.assert_array_equal(got[0], [1.0, 2.0])
    assert got[1] == 5.0


def _sharded_adam(target, placed):
    """A two-layer model whose variables are spread over two ps tasks round-robin by
    replica_device_setter, trained by Adam from worker 0; returns the losses and the
    devices of the variables."""
    rng = np.random.RandomState(3)
    xs = rng.normal(size=(16, 6)).astype(np.float32)
    ys = rng.normal(size=(16, 2)).astype(np.float32)
    with tf.Graph().as_default():
        setter = tf.train.replica_device_setter(ps_tasks=2) if placed else None
        with tf.device(setter):
            w1 = tf.Variable(rng.normal(size=(6, 4)).astype(np.float32), name="w1")
            b1 = tf.Variable(np.zeros(4, np.float32), name="b1")
            w2 = tf.Variable(rng.normal(size=(4, 2)).astype(np.float32), name="w2")
            b2 = tf.Variable(np.zeros(2, np.float32), name="b2")
            loss = tf.reduce_mean(tf.square(
                tf.matmul(tf.tanh(tf.matmul(xs, w1) + b1), w2) + b2 - ys))
            train = tf.train.AdamOptimizer(0.05).minimize(loss)
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([loss, train])[0] for _ in range(6)]
        return losses, [v.op.device for v in (w1, b1, w2, b2)]


def test_variables_sharded_over_two_ps_tasks():
    spec = {"ps": ["ps0:1", "ps1:1"], "worker": ["w0:1"]}
    with tf.distributed.LocalCluster(spec, backend="threads") as cluster:
        got, devices = _sharded_adam(cluster.task_target("worker", 0), placed=True)
        stats = cluster.task_stats()
    want, _ = _sharded_adam("", placed=False)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert devices == ["/job:ps/task:0", "/job:ps/task:1"] * 2
    for task in ("/job:ps/replica:0/task:0", "/job:ps/replica:0/task:1"):
        assert stats[task]["steps"] >= 6 and stats[task]["sent"] > 0 \
            and stats[task]["received"] > 0      # weights out, gradients in
