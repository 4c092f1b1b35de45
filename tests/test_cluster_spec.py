"""`tf.train.ClusterSpec` and `tf.train.replica_device_setter` against TensorFlow.

The programs live in `fixtures/tf1_cluster.py`; `fixtures/record_tf1.py tf1_cluster` ran
them under TensorFlow 2.21's `tensorflow.compat.v1` and stored `fixtures/tf1_cluster.npz`:
ClusterSpec's answers (and the exception types of bad queries), and the device each op of
a graph built under replica device setters gets.  flowjit must give the same strings.
"""

import numpy as np
import pytest

import flowjit as tf
from conftest import assert_like_recorded, load_recorded_programs, recorded_result

PROGRAMS, RECORDED = load_recorded_programs("tf1_cluster")


def test_fixture_covers_every_program():
    recorded = {k.split(":")[0] for k in RECORDED if not k.startswith("_meta")}
    assert recorded == set(PROGRAMS.PROGRAMS)


@pytest.mark.parametrize("name", sorted(PROGRAMS.PROGRAMS))
def test_program_matches_tensorflow(name):
    want_structure, want = recorded_result(RECORDED, name)
    got_structure, got = PROGRAMS.run_program(tf, name)
    assert_like_recorded(name, got_structure, got, want_structure, want, {})


def test_empty_job_has_no_tasks():
    """TensorFlow's job_tasks fails on a job without tasks (max() of nothing); flowjit
    answers the question: no addresses."""
    spec = tf.train.ClusterSpec({"ps": [], "worker": ["w:1"]})
    assert spec.job_tasks("ps") == []
    assert spec.num_tasks("ps") == 0
    assert spec.device_names() == ["/job:worker/task:0"]


def test_bad_arguments_are_explained():
    with pytest.raises(ValueError, match="ps_tasks"):
        tf.train.replica_device_setter(ps_tasks=-1)
    with pytest.raises(TypeError, match="ps_strategy must be callable"):
        tf.train.replica_device_setter(ps_tasks=2, ps_strategy=3)
    with pytest.raises(ValueError, match="No such job in cluster: 'chief'"):
        tf.train.ClusterSpec({"ps": ["a:1"]}).num_tasks("chief")


def test_device_function_sees_the_op_and_inner_scopes():
    """A device function gets the op being created, its device set by inner scopes."""
    seen = []

    def record(op):
        seen.append((op.type, op.device))
        return "/job:worker/task:1"

    with tf.Graph().as_default():
        with tf.device(record):
            with tf.device("/cpu:0"):
                c = tf.constant(1.0, name="c")
    assert seen == [("Const", "/device:CPU:0")]
    assert c.op.device == "/job:worker/task:1"
