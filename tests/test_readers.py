"""File readers and record parsing: TFRecord files byte-compatible with TensorFlow's (a
fixture TensorFlow wrote), corrupt records reported with file and offset, text and
fixed-length readers through string_input_producer, decode_csv and decode_raw."""

import os

import numpy as np
import pytest

import flowjit as tf
from flowjit.errors import DataLossError, InvalidArgumentError, OutOfRangeError

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures",
                       "records_tf.tfrecord")
# what tests/fixtures/records_tf.tfrecord holds (TensorFlow 2.21's tf.io.TFRecordWriter)
RECORDS = [np.arange(i, i + 4, dtype=np.int32).tobytes() for i in range(5)] + \
    [b"", b"hello \xff world"]


def _drain(sess, fetches):
    out = []
    try:
        while True:
            out.append(sess.run(fetches))
    except OutOfRangeError:
        return out


def test_tfrecords_match_tensorflows_files_byte_for_byte(tmp_path):
    assert list(tf.python_io.tf_record_iterator(FIXTURE)) == RECORDS
    ours = str(tmp_path / "ours.tfrecord")
    with tf.python_io.TFRecordWriter(ours) as w:
        for r in RECORDS:
            w.write(r)
    with open(ours, "rb") as a, open(FIXTURE, "rb") as b:
        assert a.read() == b.read()


def test_the_tfrecord_reader_reads_tensorflows_file_and_reports_corruption(tmp_path):
    with tf.Graph().as_default():
        files = tf.train.string_input_producer([FIXTURE], num_epochs=1, shuffle=False)
        key, value = tf.TFRecordReader().read(files)
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            got = _drain(sess, [key, value])
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=20)
    assert [v for _, v in got] == RECORDS
    assert got[1][0] == f"{FIXTURE}:{16 + 16}".encode()    # key: file and byte offset
    broken = tmp_path / "broken.tfrecord"
    data = bytearray(open(FIXTURE, "rb").read())
    data[16 + 16 + 12 + 2] ^= 0xFF                            # a byte of record 1's data
    broken.write_bytes(bytes(data))
    with tf.Graph().as_default():
        q = tf.FIFOQueue(1, tf.string, shapes=[[]])
        load = q.enqueue(tf.constant(str(broken)))
        _, value = tf.TFRecordReader().read(q)
        with tf.Session() as sess:
            sess.run(load)
            sess.run(value)
            with pytest.raises(DataLossError, match=r"broken\.tfrecord.*offset 32"):
                sess.run(value)


def test_a_csv_pipeline_reads_every_line_of_every_epoch(tmp_path):
    paths = []
    for k in range(2):
        p = tmp_path / f"part{k}.csv"
        p.write_text("id,score,name\n" + "".join(f"{k * 10 + i},{i * 0.5},n{i}\n"
                                                  for i in range(3)))
        paths.append(str(p))
    with tf.Graph().as_default():
        files = tf.train.string_input_producer(paths, num_epochs=2, shuffle=False)
        key, line = tf.TextLineReader(skip_header_lines=1).read(files)
        ident, score, name = tf.decode_csv(line, [[0], [0.0], ["?"]])
        ids, scores = tf.train.batch([ident, score], batch_size=4,
                                     allow_smaller_final_batch=True)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            batches = _drain(sess, [ids, scores])
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=20)
    got = sorted(int(i) for b in batches for i in b[0])
    assert got == sorted([0, 1, 2, 10, 11, 12] * 2)
    assert all(b[1].dtype == np.float32 for b in batches)


def test_fixed_length_records_and_read_up_to(tmp_path):
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    p = tmp_path / "data.bin"
    p.write_bytes(b"HDR" + x.tobytes())
    with tf.Graph().as_default():
        q = tf.FIFOQueue(2, tf.string, shapes=[[]])
        load, done = q.enqueue(tf.constant(str(p))), q.close()
        _, values = tf.FixedLengthRecordReader(16, header_bytes=3).read_up_to(q, 4)
        rows = tf.decode_raw(values, tf.float32)
        with tf.Session() as sess:
            sess.run(load)
            sess.run(done)
            first, second = sess.run(rows), sess.run(rows)
            with pytest.raises(OutOfRangeError):
                sess.run(rows)
    np.testing.assert_array_equal(np.concatenate([first, second]), x)


def test_decode_csv_errors_name_the_record_and_field():
    with tf.Graph().as_default():
        lines = tf.placeholder(tf.string, [None])
        a, b = tf.decode_csv(lines, [tf.constant([], tf.int32), [1.5]])
        with tf.Session() as sess:
            out = sess.run([a, b], {lines: np.array([b"1,2", b"3,", b'"4",5e-1'], object)})
            assert out[0].tolist() == [1, 3, 4] and out[1].tolist() == [2.0, 1.5, 0.5]
            for bad, match in ((b"1,2,3", "Expect 2 fields"), (b",2", "Field 0 is required"),
                               (b"x,2", "not a valid int32")):
                with pytest.raises(InvalidArgumentError, match=match):
                    sess.run(a, {lines: np.array([bad], object)})


def test_decode_raw_needs_equal_lengths():
    with tf.Graph().as_default():
        s = tf.placeholder(tf.string, [None])
        v = tf.decode_raw(s, tf.int16, little_endian=False)
        with tf.Session() as sess:
            out = sess.run(v, {s: np.array([b"\x00\x01\x00\x02", b"\x01\x00\xff\xff"], object)})
            assert out.tolist() == [[1, 2], [256, -1]]
            with pytest.raises(InvalidArgumentError, match="same size"):
                sess.run(v, {s: np.array([b"\x00\x01", b"\x00"], object)})


EXAMPLES = os.path.join(os.path.dirname(FIXTURE), "examples_tf.tfrecord")


def test_tf_train_examples_written_by_tensorflow_parse_and_round_trip(tmp_path):
    """tests/fixtures/examples_tf.tfrecord: three Examples TensorFlow 2.21 wrote (label:
    int64 [i - 1], x: float [0.5 i, -1.25, 3 + i], name: bytes ["row<i>"], big: int64
    [2**40 + i, -2**40])."""
    records = list(tf.python_io.tf_record_iterator(EXAMPLES))
    parsed = [tf.train.Example.FromString(r) for r in records]
    assert [e.features.feature["big"].int64_list.value for e in parsed] == \
        [[2**40 + i, -2**40] for i in range(3)]
    again = [tf.train.Example.FromString(e.SerializeToString()) for e in parsed]
    assert [e.features.feature["x"].float_list.value for e in again] == \
        [[0.5 * i, -1.25, 3.0 + i] for i in range(3)]
    features = {"label": tf.FixedLenFeature([], tf.int64),
                "x": tf.FixedLenFeature([3], tf.float32),
                "name": tf.FixedLenFeature([], tf.string),
                "weight": tf.FixedLenFeature([], tf.float32, default_value=1.0)}
    with tf.Graph().as_default():
        files = tf.train.string_input_producer([EXAMPLES], num_epochs=1, shuffle=False)
        _, record = tf.TFRecordReader().read(files)
        one = tf.parse_single_example(record, features)
        batch = tf.parse_example(tf.constant(np.array(records, object)), features)
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            rows = _drain(sess, one)
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=20)
            whole = sess.run(batch)
    assert [r["label"] for r in rows] == [-1, 0, 1]
    assert [r["name"] for r in rows] == [b"row0", b"row1", b"row2"]
    np.testing.assert_array_equal(whole["x"], [[0.5 * i, -1.25, 3.0 + i] for i in range(3)])
    assert whole["x"].dtype == np.float32 and whole["label"].dtype == np.int64
    np.testing.assert_array_equal(whole["weight"], [1.0, 1.0, 1.0])
    with tf.Graph().as_default():
        bad = tf.parse_single_example(tf.constant(records[0]),
                                      {"missing": tf.FixedLenFeature([], tf.int64)})
        wrong = tf.parse_single_example(tf.constant(records[0]),
                                        {"x": tf.FixedLenFeature([2], tf.float32)})
        with tf.Session() as sess:
            with pytest.raises(InvalidArgumentError, match="missing.*required"):
                sess.run(bad)
            with pytest.raises(InvalidArgumentError, match="3 values for shape"):
                sess.run(wrong)
