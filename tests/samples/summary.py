"""Samples for the summary ops (ops/summary_ops.py).

ScalarSummary and MergeSummary have exact oracles: the Summary message built with
TensorBoard's own copy of TensorFlow's protobuf definitions (an independent
implementation), serialized; a merge of two summaries is their concatenation (protobuf
appends repeated fields).  HistogramSummary, ImageSummary and TensorSummaryV2 are checked
for dtype and shape here and for content by tests/test_summaries.py.
"""

import numpy as np
from hypothesis import strategies as st

import flowjit as tf

from . import OpCase

try:
    from tensorboard.compat.proto import summary_pb2
except ImportError:   # the oracle is missing: structure only
    summary_pb2 = None

# scope names: "/"-separated parts, each starting with a letter (a name ending in "/" would
# re-enter a scope, and the tag would lose the slash, as in TensorFlow)
_PART = st.builds(lambda a, b: a + b, st.sampled_from("abxyz"),
                  st.text(alphabet="abcxyz_.-", max_size=4))
_TAGS = st.lists(_PART, min_size=1, max_size=3).map("/".join)
_VALUES = st.floats(-1e6, 1e6, width=32)


def _string(data: bytes):
    out = np.empty(1, dtype=object)   # (a scalar string is fetched as bytes: see _vector)
    out[0] = data
    return out


def _vector(summary):
    """The summary as a one-element vector, so the fetched value is a string array."""
    return tf.reshape(summary, [1])


def _scalar_bytes(tag: str, value: float) -> bytes:
    summary = summary_pb2.Summary()
    summary.value.add(tag=tag, simple_value=value)
    return summary.SerializeToString()


@st.composite
def _scalar(draw):
    tag, value = draw(_TAGS), draw(_VALUES)

    def build():
        return [_vector(tf.summary.scalar(tag, tf.placeholder(tf.float32, [], name="v")))]

    expected = None if summary_pb2 is None else \
        (lambda feeds: [_string(_scalar_bytes(tag, float(feeds["v"])))])
    return OpCase(build, {"v": np.float32(value)}, expected)


@st.composite
def _merge(draw):
    a, b = draw(st.lists(_VALUES, min_size=2, max_size=2))

    def build():
        first = tf.summary.scalar("first", tf.constant(a, tf.float32))
        second = tf.summary.scalar("second", tf.constant(b, tf.float32))
        return [_vector(tf.summary.merge([first, second]))]

    expected = None if summary_pb2 is None else (lambda feeds: [_string(
        _scalar_bytes("first", a) + _scalar_bytes("second", b))])
    return OpCase(build, {}, expected)


@st.composite
def _histogram(draw):
    n = draw(st.integers(0, 20))

    def build():
        return [_vector(tf.summary.histogram("h", tf.constant(np.linspace(-3, 5, n))))]

    return OpCase(build, {}, None)


@st.composite
def _image(draw):
    channels = draw(st.sampled_from([1, 3, 4]))
    dtype = draw(st.sampled_from([np.uint8, np.float32]))
    pixels = (np.arange(2 * 3 * 2 * channels) % 200).astype(dtype).reshape(2, 3, 2, channels)

    def build():
        return [_vector(tf.summary.image("im", tf.constant(pixels), max_outputs=2))]

    return OpCase(build, {}, None)


@st.composite
def _text(draw):
    words = draw(st.lists(st.text(max_size=6), max_size=3))

    def build():
        return [_vector(tf.summary.text("t", tf.constant(
            np.array([w.encode() for w in words], dtype=object), tf.string)))]

    return OpCase(build, {}, None)


SAMPLES = {
    "ScalarSummary": _scalar(),
    "MergeSummary": _merge(),
    "HistogramSummary": _histogram(),
    "ImageSummary": _image(),
    "TensorSummaryV2": _text(),
}
