"""Samples for ops/reader_ops.py, ops/parsing_ops.py and the input producer's epoch op:
each writes its drawn data to a temporary file (or formats it as text), reads it back in
one run and expects exactly what was written."""

import os
import tempfile

import numpy as np
from hypothesis import strategies as st

import flowjit as tf

from . import OpCase
from .strategies import arrays

_DIR = tempfile.mkdtemp(prefix="flowjit-reader-samples-")
_count = [0]


def _file(data: bytes) -> str:
    _count[0] += 1
    path = os.path.join(_DIR, f"f{_count[0]}")
    with open(path, "wb") as f:
        f.write(data)
    return path


def _queue_of(path, close=False):
    q = tf.FIFOQueue(2, tf.string, shapes=[[]])
    ops = [q.enqueue(tf.constant(path))]
    if close:
        with tf.control_dependencies(ops):
            ops = [q.close()]
    return q, ops


_lines = st.lists(st.text(alphabet="abc xyz019,;", max_size=8), min_size=1, max_size=4)


@st.composite
def _text(draw, up_to):
    lines = draw(_lines)
    skip = draw(st.integers(0, 1)) if len(lines) > 1 else 0
    path = _file("".join(line + "\n" for line in lines).encode())

    def build():
        q, ops = _queue_of(path, close=up_to)
        reader = tf.TextLineReader(skip_header_lines=skip)
        with tf.control_dependencies(ops):
            if up_to:
                return [reader.read_up_to(q, 10)[1]]
            return [tf.expand_dims(reader.read(q)[1], 0)]   # 1-d: fetched as an array

    body = [line.encode() for line in lines[skip:]]
    if up_to:
        expected = np.empty(len(body), object)
        expected[:] = body
        return OpCase(build, {}, lambda f: [expected])
    first = np.empty(1, object)
    first[0] = body[0]
    return OpCase(build, {}, lambda f: [first])


@st.composite
def _fixed(draw):
    x = draw(arrays(np.int16, (draw(st.integers(1, 4)), 3)))
    path = _file(b"HEAD" + x.tobytes() + b"FT")

    def build():
        q, ops = _queue_of(path)
        reader = tf.FixedLengthRecordReader(6, header_bytes=4, footer_bytes=2)
        with tf.control_dependencies(ops):
            return [tf.decode_raw(reader.read(q)[1], tf.int16)]

    return OpCase(build, {}, lambda f: [x[0]])


@st.composite
def _tfrecord(draw):
    records = draw(st.lists(st.binary(max_size=12), min_size=1, max_size=3))
    path = os.path.join(_DIR, f"r{len(records)}-{abs(hash(tuple(records)))}.tfrecord")
    with tf.python_io.TFRecordWriter(path) as w:
        for r in records:
            w.write(r)

    def build():
        q, ops = _queue_of(path)
        with tf.control_dependencies(ops):
            return [tf.expand_dims(tf.TFRecordReader().read(q)[1], 0)]

    first = np.empty(1, object)
    first[0] = records[0]
    return OpCase(build, {}, lambda f: [first])


@st.composite
def _csv(draw):
    rows = draw(st.lists(st.tuples(st.integers(-99, 99), st.floats(-5, 5, width=32)),
                         min_size=1, max_size=4))
    text = np.empty(len(rows), object)
    text[:] = [f"{a},{b!r}".encode() if i % 2 == 0 else f"{a},".encode()
               for i, (a, b) in enumerate(rows)]

    def build():
        return tf.decode_csv(tf.constant(text), [tf.constant([], tf.int32), [7.5]])

    ints = np.array([a for a, _ in rows], np.int32)
    floats = np.array([np.float32(b) if i % 2 == 0 else 7.5 for i, (_, b) in enumerate(rows)],
                      np.float32)
    return OpCase(build, {}, lambda f: [ints, floats])


@st.composite
def _raw(draw):
    dtype = draw(st.sampled_from((np.float32, np.int32, np.uint8, np.float64)))
    x = draw(arrays(dtype, (draw(st.integers(0, 3)), draw(st.integers(0, 4)))))
    strings = np.empty(len(x), object)
    strings[:] = [row.astype(np.dtype(dtype).newbyteorder("<")).tobytes() for row in x]

    def build():
        return [tf.decode_raw(tf.constant(strings), tf.as_dtype(dtype))]

    return OpCase(build, {}, lambda f: [x.reshape(len(x), x.shape[1] if len(x) else 0)])


@st.composite
def _epoch(draw):
    x = draw(arrays(np.int32, (draw(st.integers(1, 4)),)))

    def build():
        q = tf.train.input_producer(tf.constant(x), shuffle=False, num_epochs=2)
        runner = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)[-1]
        with tf.control_dependencies(runner.enqueue_ops):
            return [q.dequeue_many(len(x))]

    return OpCase(build, {}, lambda f: [x])


@st.composite
def _example(draw):
    rows = draw(st.lists(st.tuples(st.integers(-2**40, 2**40),
                                   st.lists(st.floats(-9, 9, width=32), min_size=2,
                                            max_size=2)), min_size=1, max_size=3))
    records = np.empty(len(rows), object)
    records[:] = [tf.train.Example(features=tf.train.Features(feature={
        "n": tf.train.Feature(int64_list=tf.train.Int64List(value=[n])),
        "v": tf.train.Feature(float_list=tf.train.FloatList(value=v))})).SerializeToString()
        for n, v in rows]

    def build():
        parsed = tf.parse_example(tf.constant(records),
                                  {"n": tf.FixedLenFeature([], tf.int64),
                                   "v": tf.FixedLenFeature([2], tf.float32)})
        return [parsed["n"], parsed["v"]]

    return OpCase(build, {}, lambda f: [np.array([n for n, _ in rows], np.int64),
                                        np.array([v for _, v in rows], np.float32)])


SAMPLES = {
    "ParseExample": _example(),
    "TextLineReaderV2": _text(False), "ReaderReadV2": _text(False),
    "ReaderReadUpToV2": _text(True), "FixedLengthRecordReaderV2": _fixed(),
    "TFRecordReaderV2": _tfrecord(), "DecodeCSV": _csv(), "DecodeRaw": _raw(),
    "InputProducerEpoch": _epoch(),
}
