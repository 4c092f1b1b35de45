"""Samples for the sequence ops (ops/sequence_ops.py): ReverseSequence over every axis pair
of small arrays, lengths drawn in [0, size of the sequence axis] (0 and the full length
included), int32 and int64 lengths, against a NumPy loop over the batch entries."""

import numpy as np
from hypothesis import strategies as st

import flowjit as tf
from . import OpCase
from .strategies import arrays, shapes


def _reversed(x, lengths, seq, batch):
    """NumPy: out[b, s] = x[b, n - 1 - s] for s < n = lengths[b], else x[b, s] (with the
    batch and sequence axes moved first)."""
    moved = np.moveaxis(x, (batch, seq), (0, 1))
    out = np.empty_like(moved)
    steps = np.arange(moved.shape[1])
    for b, n in enumerate(lengths):
        out[b] = moved[b][np.where(steps < n, n - 1 - steps, steps)]
    return np.moveaxis(out, (0, 1), (batch, seq))


@st.composite
def _reverse_sequence(draw):
    shape = list(draw(shapes(min_dims=2, max_dims=4)))
    rank = len(shape)
    seq, batch = draw(st.permutations(range(rank)))[:2]
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int32, np.bool_]))
    x = draw(arrays(dtype, tuple(shape)))
    length_type = draw(st.sampled_from([np.int32, np.int64]))
    lengths = np.array(draw(st.lists(st.integers(0, shape[seq]), min_size=shape[batch],
                                     max_size=shape[batch])), length_type)
    negative = draw(st.booleans())
    seq_arg, batch_arg = (seq - rank, batch - rank) if negative else (seq, batch)

    def build():
        xt = tf.placeholder(tf.as_dtype(dtype), [None] * rank, name="x")
        lt = tf.placeholder(tf.as_dtype(length_type), [None], name="lengths")
        return [tf.reverse_sequence(xt, lt, seq_axis=seq_arg, batch_axis=batch_arg)]

    return OpCase(build, {"x": x, "lengths": lengths},
                  lambda f: [_reversed(f["x"], f["lengths"].tolist(), seq, batch)])


SAMPLES = {"ReverseSequence": _reverse_sequence()}
