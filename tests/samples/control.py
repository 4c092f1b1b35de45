"""Samples for ops/control_flow_ops.py, built through the public API that makes them:
`cond` (Switch, Merge), `while_loop` (Enter, Exit, NextIteration, LoopCond) and a while
loop's gradient (StackV2, StackPushV2, StackPopV2).  Each fetches what NumPy computes
independently: the branch taken, the loop's sum, the gradient of a product of powers."""

import numpy as np
from hypothesis import strategies as st

import flowjit as tf

from . import OpCase
from .strategies import arrays, shapes

FLOATS = (np.float32, np.float64)


@st.composite
def _cond(draw):
    dtype = draw(st.sampled_from(FLOATS))
    shape = draw(shapes(max_dims=3))
    x = draw(arrays(dtype, shape, st.floats(-10, 10, width=32)))
    take = draw(st.booleans())

    def build():
        xp = tf.placeholder(dtype, shape, name="x")
        pp = tf.placeholder(tf.bool, [], name="p")
        return [tf.cond(pp, lambda: xp * 2, lambda: xp - 1)]

    return OpCase(build, {"x": x, "p": np.bool_(take)},
                  lambda f: [f["x"] * 2 if f["p"] else f["x"] - 1])


@st.composite
def _loop(draw):
    dtype = draw(st.sampled_from(FLOATS))
    shape = draw(shapes(max_dims=2))
    x = draw(arrays(dtype, shape, st.floats(-10, 10, width=32)))
    n = draw(st.integers(0, 6))

    def build():
        xp = tf.placeholder(dtype, shape, name="x")
        np_ = tf.placeholder(tf.int32, [], name="n")
        _, total = tf.while_loop(lambda i, s: i < np_, lambda i, s: (i + 1, s + xp),
                                 [0, tf.zeros_like(xp)])
        return [total]

    def expected(f):
        total = np.zeros_like(f["x"])
        for _ in range(int(f["n"])):
            total = total + f["x"]
        return [total]

    return OpCase(build, {"x": x, "n": np.int32(n)}, expected)


@st.composite
def _loop_gradient(draw):
    dtype = draw(st.sampled_from(FLOATS))
    x = draw(arrays(dtype, (3,), st.floats(0.5, 1.5, width=32)))
    n = draw(st.integers(0, 4))

    def build():
        xp = tf.placeholder(dtype, [3], name="x")
        np_ = tf.placeholder(tf.int32, [], name="n")
        _, y = tf.while_loop(lambda i, y: i < np_, lambda i, y: (i + 1, y * xp),
                             [0, tf.ones_like(xp)])
        return tf.gradients(y, [xp])

    # d/dx x**n = n x**(n-1)
    return OpCase(build, {"x": x, "n": np.int32(n)},
                  lambda f: [(f["n"] * f["x"] ** max(int(f["n"]) - 1, 0)).astype(f["x"].dtype)
                             if f["n"] else np.zeros_like(f["x"])],
                  rtol=1e-5)


SAMPLES = {
    "Switch": _cond(), "Merge": _cond(),
    "Enter": _loop(), "Exit": _loop(), "NextIteration": _loop(), "LoopCond": _loop(),
    "StackV2": _loop_gradient(), "StackPushV2": _loop_gradient(),
    "StackPopV2": _loop_gradient(),
}
