"""Samples for ops/random_ops.py: dtype and shape checks only (`expected=None`).

Values are random, so the generic test checks that each op runs, with the inferred dtype
and a shape compatible with the inferred one; tests/test_random_ops.py checks the
distributions and the seed rules.  Shapes are given as lists (static) or fed through a
placeholder (known only at run time).
"""

import numpy as np
from hypothesis import strategies as st

import flowjit as tf

from . import OpCase
from .strategies import arrays, shapes

FLOATS = (tf.float16, tf.float32, tf.float64)


def _shape_arg(fed: bool, shape):
    """The `shape` argument of a random op, and the feeds it needs."""
    if fed:
        return (lambda: tf.placeholder(tf.int32, [None], name="s")), \
            {"s": np.array(shape, np.int32)}
    return (lambda: list(shape)), {}


@st.composite
def _float_case(draw, fn_name):
    shape = draw(shapes(max_dims=3))
    dtype = draw(st.sampled_from(FLOATS))
    seed = draw(st.one_of(st.none(), st.integers(0, 2**31 - 2)))
    make_shape, feeds = _shape_arg(draw(st.booleans()), shape)
    fn = getattr(tf, fn_name)
    return OpCase(lambda: [fn(make_shape(), dtype=dtype, seed=seed)], feeds, None)


@st.composite
def _uniform_int(draw):
    shape = draw(shapes(max_dims=3))
    dtype = draw(st.sampled_from((tf.int32, tf.int64)))
    lo = draw(st.integers(-1000, 1000))
    hi = lo + draw(st.integers(1, 1000))
    make_shape, feeds = _shape_arg(draw(st.booleans()), shape)
    return OpCase(lambda: [tf.random_uniform(make_shape(), lo, hi, dtype=dtype)], feeds, None)


@st.composite
def _shuffle(draw):
    dtype = draw(st.sampled_from((np.float32, np.int32, np.bool_)))
    value = draw(arrays(dtype, draw(shapes(max_dims=3))))
    tf_dtype = tf.as_dtype(dtype)
    return OpCase(lambda: [tf.random_shuffle(tf.placeholder(tf_dtype, name="x"), seed=1)],
                  {"x": value}, None)


@st.composite
def _multinomial(draw):
    batch = draw(st.integers(0, 4))
    classes = draw(st.integers(1, 5))
    logits = draw(arrays(np.float32, (batch, classes)))
    num = draw(st.integers(0, 6))
    out = draw(st.sampled_from((tf.int32, tf.int64)))
    return OpCase(lambda: [tf.multinomial(logits, num, output_dtype=out)], {}, None)


SAMPLES = {
    "RandomStandardNormal": _float_case("random_normal"),
    "TruncatedNormal": _float_case("truncated_normal"),
    "RandomUniform": _float_case("random_uniform"),
    "RandomUniformInt": _uniform_int(),
    "RandomShuffle": _shuffle(),
    "Multinomial": _multinomial(),
}
