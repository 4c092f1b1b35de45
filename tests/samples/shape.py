"""Samples for ops/shape_ops.py: Shape, ShapeN, Size and Rank of fed placeholders.

Static shapes are drawn fully known (the op still runs: the generic test fetches it),
partially known or of unknown rank; the oracle reads the fed array's NumPy shape.
"""

import numpy as np
from hypothesis import strategies as st

import flowjit as tf

from . import OpCase
from .array import _static
from .strategies import arrays, shapes

OUT_TYPES = ((tf.int32, np.int32), (tf.int64, np.int64))


@st.composite
def _fed_shape(draw, name="x"):
    shape = draw(shapes(max_dims=5))
    x = draw(arrays(draw(st.sampled_from((np.float32, np.int32, np.bool_))), shape))
    static = draw(_static(shape))
    tf_dtype = tf.as_dtype(x.dtype)
    return (lambda: tf.placeholder(tf_dtype, static, name=name)), x


@st.composite
def _shape(draw):
    make, x = draw(_fed_shape())
    out, np_out = draw(st.sampled_from(OUT_TYPES))
    return OpCase(lambda: [tf.shape(make(), out_type=out)], {"x": x},
                  lambda f: [np.array(list(x.shape), np_out)])


@st.composite
def _shape_n(draw):
    pairs = [draw(_fed_shape(name=f"x{i}")) for i in range(draw(st.integers(1, 3)))]
    out, np_out = draw(st.sampled_from(OUT_TYPES))
    return OpCase(lambda: tf.shape_n([m() for m, _ in pairs], out_type=out),
                  {f"x{i}": x for i, (_, x) in enumerate(pairs)},
                  lambda f: [np.array(list(x.shape), np_out) for _, x in pairs])


@st.composite
def _size(draw):
    make, x = draw(_fed_shape())
    out, np_out = draw(st.sampled_from(OUT_TYPES))
    count = int(np.prod(x.shape, dtype=np.int64))
    return OpCase(lambda: [tf.size(make(), out_type=out)], {"x": x},
                  lambda f: [np.array(count, np_out)])


@st.composite
def _rank(draw):
    make, x = draw(_fed_shape())
    return OpCase(lambda: [tf.rank(make())], {"x": x},
                  lambda f: [np.array(len(x.shape), np.int32)])


SAMPLES = {
    "Shape": _shape(),
    "ShapeN": _shape_n(),
    "Size": _size(),
    "Rank": _rank(),
}
