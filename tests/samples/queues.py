"""Samples for ops/queue_ops.py: each builds a queue, puts the drawn array in and takes it
out again in one run (control dependencies order the ops), so the result is the array
itself (stacked, or padded with zeros, where the op batches)."""

import numpy as np
from hypothesis import strategies as st

import flowjit as tf

from . import OpCase
from .strategies import arrays, shapes

DTYPES = (np.float32, np.float64, np.int32, np.int64, np.bool_)


@st.composite
def _round_trip(draw, kind):
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(shapes(max_dims=2))
    x = draw(arrays(dtype, shape))

    def build():
        xp = tf.placeholder(dtype, shape, name="x")
        if kind == "shuffle":
            q = tf.RandomShuffleQueue(4, 0, [dtype], shapes=[shape], seed=3)
        else:
            q = tf.FIFOQueue(4, [dtype], shapes=[shape])
        with tf.control_dependencies([q.enqueue([xp])]):
            return [q.dequeue()]

    return OpCase(build, {"x": x}, lambda f: [f["x"]])


@st.composite
def _many(draw, op):
    dtype = draw(st.sampled_from(DTYPES))
    inner = draw(shapes(max_dims=2))
    n = draw(st.integers(1, 4))
    x = draw(arrays(dtype, (n,) + tuple(inner)))

    def build():
        xp = tf.placeholder(dtype, (n,) + tuple(inner), name="x")
        q = tf.FIFOQueue(8, [dtype], shapes=[inner])
        enq = q.enqueue_many([xp])
        with tf.control_dependencies([enq]):
            if op == "size":
                return [q.size()]
            if op == "many":
                return [q.dequeue_many(n)]
            with tf.control_dependencies([q.close()]):
                return [q.dequeue_up_to(n + 2)]

    if op == "size":
        return OpCase(build, {"x": x}, lambda f: [np.int32(n)])
    return OpCase(build, {"x": x}, lambda f: [f["x"]])


@st.composite
def _padding(draw):
    dtype = draw(st.sampled_from((np.float32, np.int32)))
    a = draw(arrays(dtype, (draw(st.integers(0, 3)),)))
    b = draw(arrays(dtype, (draw(st.integers(0, 3)),)))

    def build():
        ap = tf.placeholder(dtype, [None], name="a")
        bp = tf.placeholder(dtype, [None], name="b")
        q = tf.PaddingFIFOQueue(4, [dtype], shapes=[[None]])
        with tf.control_dependencies([q.enqueue([ap])]):
            second = q.enqueue([bp])
        with tf.control_dependencies([second]):
            return [q.dequeue_many(2)]

    def expected(f):
        width = max(len(f["a"]), len(f["b"]))
        out = np.zeros((2, width), dtype)
        out[0, :len(f["a"])] = f["a"]
        out[1, :len(f["b"])] = f["b"]
        return [out]

    return OpCase(build, {"a": a, "b": b}, expected)


SAMPLES = {
    "FIFOQueueV2": _round_trip("fifo"), "QueueEnqueueV2": _round_trip("fifo"),
    "QueueDequeueV2": _round_trip("fifo"), "RandomShuffleQueueV2": _round_trip("shuffle"),
    "QueueEnqueueManyV2": _many("many"), "QueueDequeueManyV2": _many("many"),
    "QueueDequeueUpToV2": _many("up_to"), "QueueCloseV2": _many("up_to"),
    "QueueSizeV2": _many("size"), "PaddingFIFOQueueV2": _padding(),
}
