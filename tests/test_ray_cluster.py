"""Clusters on Ray (runtime/ray_backend.py): every task a process of its own.

One local Ray cluster (ps + 2 workers, on loopback) serves the module.  A TF 1.x program
with /job:ps and /job:worker device blocks trains across the three processes with the
single-process results; an error on one task ends the step on every task; a killed
worker process is recovered from the last checkpoint without a step applied twice;
SyncReplicasOptimizer's between-graph replicas make the single-process updates;
asynchronous replicas converge; and a cluster leaves no process behind."""

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import flowjit as tf
from test_local_cluster import CLUSTER, _loop_then_cond, sync_replicas
from test_sync_replicas import check_one_update_per_step
from test_monitored_session import checkpointed_training

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def cluster():
    with tf.distributed.LocalCluster(CLUSTER, backend="ray") as c:
        yield c


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            state = [line for line in f if line.startswith("State:")][0]
    except (FileNotFoundError, IndexError):
        return False
    return "Z" not in state.split()[1]


def test_program_on_three_processes_matches_one_process(cluster):
    pids = {cluster.task_pid(job, i) for job, i in (("ps", 0), ("worker", 0), ("worker", 1))}
    assert len(pids) == 3 and os.getpid() not in pids
    trace, params, devices, ops, listed = sync_replicas(cluster.task_target("worker", 0),
                                                        placed=True)
    want_trace, want_params, _, _, _ = sync_replicas("", placed=False)
    assert trace[-1] < trace[0] / 4
    np.testing.assert_allclose(trace, want_trace, rtol=1e-6)
    for got, want in zip(params, want_params):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert sorted(d[0] for d in devices) == sorted(d.name for d in listed)
    assert all("_Send" in o or "_Recv" in o for o in ops)


def test_error_on_one_task_ends_the_step_on_every_task(cluster):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        with tf.device("/job:worker/task:1"):
            y = tf.reshape(x * 2, [2, 2], name="bad_reshape")
        with tf.device("/job:ps/task:0"):
            z = y + 1
        with tf.Session(cluster.target) as sess:
            started = time.monotonic()
            with pytest.raises(tf.errors.InvalidArgumentError, match="bad_reshape") as info:
                sess.run(z, {x: np.ones(3, np.float32)})
            assert time.monotonic() - started < 10      # the ps task did not hang
            assert "test_ray_cluster.py" in str(info.value)   # the user's line
            np.testing.assert_array_equal(sess.run(z, {x: np.ones(4, np.float32)}),
                                          np.full((2, 2), 3.0))


def test_control_flow_and_queues_across_processes(cluster):
    assert _loop_then_cond(cluster.target) == [243.0, 242.0]
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:1"):
            q = tf.FIFOQueue(10, tf.float32, shapes=[3], name="q")
            fill = q.enqueue_many([np.arange(9, dtype=np.float32).reshape(3, 3)])
            row = q.dequeue()
        with tf.device("/job:ps/task:0"):
            total = tf.reduce_sum(row)
        with tf.Session(cluster.target) as sess:
            sess.run(fill)
            assert [sess.run(total) for _ in range(3)] == [3.0, 12.0, 21.0]


def test_killed_worker_is_recovered_from_the_last_checkpoint(cluster, tmp_path):
    killed = []

    def kill(step):
        if step == 12 and not killed:
            pid = cluster.task_pid("worker", 1)   # a process this test's cluster started
            os.kill(pid, 9)
            killed.append(pid)

    ended, params, recoveries = checkpointed_training(
        cluster.task_target("worker", 0), str(tmp_path / "ray"), 20, kill)
    want_ended, want_params, none = checkpointed_training("", str(tmp_path / "one"), 20)
    assert not none and want_ended == list(range(1, 21))
    assert killed and not _alive(killed[0])
    assert cluster.task_pid("worker", 1) != killed[0]          # Ray restarted the task
    assert len(recoveries) == 1
    assert isinstance(recoveries[0].error, tf.errors.UnavailableError)
    assert recoveries[0].checkpoint.endswith("model.ckpt-10")
    assert recoveries[0].global_step == 10
    # steps 11 and 12 ran again after the restore, visibly; none was applied twice:
    assert ended == list(range(1, 13)) + list(range(11, 21))
    for got, want in zip(params, want_params):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_sync_replicas_between_graphs_on_ray(cluster):
    check_one_update_per_step(cluster)


def test_asynchronous_replicas_converge_on_ray():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
    try:
        import replicas
    finally:
        sys.path.pop(0)
    result = replicas.train(workers=2, steps=200, backend="ray")
    assert result["loss"] < 1e-3
    assert sum(result["steps"]) >= 200 and min(result["steps"]) > 20


def test_servers_in_two_processes_make_one_cluster(cluster, tmp_path):
    """A ps process runs `tf.train.Server(spec, "ps", 0).join()`; this process makes the
    worker's server and trains through it: the ps task is found by name in the shared Ray
    cluster, and it ends with the process that owns it."""
    spec = {"ps": ["ps0:1"], "worker": ["w0:1"]}
    script = tmp_path / "ps_task.py"
    script.write_text(textwrap.dedent(f"""
        import flowjit as tf
        server = tf.train.Server({spec!r}, job_name="ps", task_index=0)
        print("READY", flush=True)
        server.join()
    """))
    env = dict(os.environ, RAY_ADDRESS=ray.get_runtime_context().gcs_address)
    ps_process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, env=env,
                                  cwd=str(tmp_path))
    try:
        assert ps_process.stdout.readline().strip() == "READY"
        server = tf.train.Server(spec, job_name="worker", task_index=0)
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(5.0, name="shared_v")
                bump = tf.assign_add(v, 1.0)
            with tf.device("/job:worker/task:0"):
                doubled = v * 2.0
            with tf.Session(server.target) as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(bump)
                assert sess.run(doubled) == 12.0
        ps_pid = server._cluster.task_pid("ps", 0)
        assert ps_pid not in (os.getpid(), ps_process.pid)
    finally:
        ps_process.terminate()
        ps_process.wait(60)
    deadline = time.monotonic() + 30
    while _alive(ps_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(ps_pid)           # the task ended with the process that owned it
    server._cluster.shutdown()


def test_a_cluster_leaves_no_process_behind(tmp_path):
    """A script starts its own Ray instance and cluster, runs a step and shuts down; every
    process it started (the tasks and Ray's own) is gone afterwards."""
    script = tmp_path / "one_cluster.py"
    script.write_text(textwrap.dedent("""
        import os, sys
        import flowjit as tf
        with tf.distributed.LocalCluster({"ps": ["a:1"], "worker": ["b:1"]}) as cluster:
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(2.0)
            with tf.device("/job:worker/task:0"):
                y = v * 3.0
            with tf.Session(cluster.target) as sess:
                sess.run(tf.global_variables_initializer())
                assert sess.run(y) == 6.0
            tasks = [cluster.task_pid("ps", 0), cluster.task_pid("worker", 0)]
            children = os.popen(f"ps -o pid= --ppid {os.getpid()}").read().split()
        print("PIDS", *tasks, *children)
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr[-3000:]
    pids = [int(p) for p in out.stdout.split("PIDS", 1)[1].split()]
    assert len(pids) >= 3          # two tasks and Ray's own processes
    deadline = time.monotonic() + 20
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in pids if _alive(p)]
