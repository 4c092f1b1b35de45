"""Samples for ops/accumulator_ops.py: each applies two drawn gradients to a fresh
accumulator in one run (control dependencies order the ops) and takes their mean, counts
them, or moves the global step first (then a gradient of an older step is dropped)."""

import numpy as np
from hypothesis import strategies as st

import flowjit as tf

from . import OpCase
from .strategies import arrays, shapes


@st.composite
def _mean(draw, op):
    dtype = draw(st.sampled_from((np.float32, np.float64)))
    shape = draw(shapes(max_dims=2))
    a = draw(arrays(dtype, shape))
    b = draw(arrays(dtype, shape))

    def build():
        ap = tf.placeholder(dtype, shape, name="a")
        bp = tf.placeholder(dtype, shape, name="b")
        acc = tf.ConditionalAccumulator(dtype, shape=shape)
        first = acc.apply_grad(ap, local_step=0)
        if op == "set_step":
            with tf.control_dependencies([first]):
                moved = acc.set_global_step(tf.constant(1, tf.int64))
            with tf.control_dependencies([moved]):
                stale = acc.apply_grad(bp, local_step=0)      # dropped
            with tf.control_dependencies([stale]):
                return [acc.num_accumulated()]
        with tf.control_dependencies([first]):
            second = acc.apply_grad(bp, local_step=0)
        with tf.control_dependencies([second]):
            if op == "count":
                return [acc.num_accumulated()]
            return [acc.take_grad(2)]

    if op in ("count", "set_step"):
        return OpCase(build, {"a": a, "b": b}, lambda f: [np.int32(1 if op == "set_step"
                                                                   else 2)])
    return OpCase(build, {"a": a, "b": b},
                  lambda f: [((f["a"] + f["b"]) / 2).astype(dtype)])


SAMPLES = {
    "ConditionalAccumulator": _mean("take"), "AccumulatorApplyGradient": _mean("take"),
    "AccumulatorTakeGradient": _mean("take"), "AccumulatorNumAccumulated": _mean("count"),
    "AccumulatorSetGlobalStep": _mean("set_step"),
}
