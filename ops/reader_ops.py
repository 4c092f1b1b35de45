"""File readers, the 2015 paper's input operations (§4.6): TextLineReader,
FixedLengthRecordReader and TFRecordReader read records of the files whose names they take
from a queue, one file after another.

A reader op's handle is a session resource (a `_Reader`: the current file and where it is
in it), so successive `read` runs continue where the last one stopped.  `ReaderReadV2`
returns one (key, value) pair; when the current file is exhausted it dequeues the next file
name from the queue (waiting as a dequeue does; OutOfRangeError once the queue is closed
and empty: the end of the input).  Keys are TensorFlow's: "file:line" (1-based, header
lines counted) for text, "file:n" (0-based record number) for fixed-length records,
"file:offset" for TFRecords.  A corrupt TFRecord is a DataLossError naming the file and
offset (ops/tfrecord_format.py).  The Python classes are at the end of this module.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.graph import get_default_graph
from ..compiler.core.shapes import TensorShape, scalar
from ..errors import DataLossError, NotFoundError
from .builder import make_op, to_tensor
from .registry import OpDef, Trait
from .tfrecord_format import read_records

_RESOURCE = frozenset({Trait.STATEFUL, Trait.SOURCE})
_WAITS = frozenset({Trait.STATEFUL, Trait.BLOCKING})


def _text_records(path, attrs):
    with _open(path) as f:
        for number, line in enumerate(f, start=1):
            if number <= attrs.get("skip_header_lines", 0):
                continue
            yield f"{path}:{number}", line.rstrip(b"\n").rstrip(b"\r")


def _fixed_records(path, attrs):
    size, header, footer = attrs["record_bytes"], attrs["header_bytes"], attrs["footer_bytes"]
    with _open(path) as f:
        data = f.read()
    body = data[header:len(data) - footer if footer else len(data)]
    if size <= 0 or len(body) % size:
        raise DataLossError(None, None, f"{path}: {len(body)} bytes of records is not a "
                                        f"whole number of {size}-byte records.")
    for n in range(len(body) // size):
        yield f"{path}:{n}", body[n * size:(n + 1) * size]


def _tfrecord_records(path, attrs):
    for offset, data in read_records(path):
        yield f"{path}:{offset}", data


def _open(path):
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise NotFoundError(None, None, f"Reader: file not found: {path}") from None


class _Reader:
    """A reader's place in its input (module docstring)."""

    def __init__(self, records, attrs):
        self.records, self.attrs = records, attrs
        self.current = None
        self.produced = 0

    def next(self, queue, deadline, op):
        while True:
            if self.current is None:
                [element] = queue.dequeue(None, False, deadline, op)
                name = element[0][()] if element[0].ndim == 0 else element[0]
                name = name.decode() if isinstance(name, bytes) else str(name)
                self.current = self.records(name, self.attrs)
            try:
                key, value = next(self.current)
            except StopIteration:
                self.current = None
                continue
            except (DataLossError, NotFoundError) as e:
                self.current = None
                raise type(e)(None, op, e.message) from None
            self.produced += 1
            return key, value


def _handle_infer(op):
    return [(_dtypes.string, scalar())]


def _reader_kernel(records):
    def kernel(ctx, inputs, attrs):
        handle = np.empty((), dtype=object)
        handle[()] = ctx.state.resource(("reader", ctx.op.name),
                                        lambda: _Reader(records, attrs))
        return [handle]

    return kernel


TEXT_LINE_READER = OpDef("TextLineReaderV2", _handle_infer, _reader_kernel(_text_records),
                         traits=_RESOURCE, doc="Reads the lines of its files.")
FIXED_LENGTH_READER = OpDef("FixedLengthRecordReaderV2", _handle_infer,
                            _reader_kernel(_fixed_records), traits=_RESOURCE,
                            doc="Reads fixed-size records of its files.")
TFRECORD_READER = OpDef("TFRecordReaderV2", _handle_infer, _reader_kernel(_tfrecord_records),
                        traits=_RESOURCE, doc="Reads the records of its TFRecord files.")


def _scalar_bytes(value) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = value
    return out


def _read_infer(op):
    return [(_dtypes.string, scalar()), (_dtypes.string, scalar())]


def _read_kernel(ctx, inputs, attrs):
    key, value = inputs[0][()].next(inputs[1][()], ctx.deadline, ctx.op)
    return [_scalar_bytes(key.encode()), _scalar_bytes(value)]


def _read_up_to_infer(op):
    return [(_dtypes.string, TensorShape([None])), (_dtypes.string, TensorShape([None]))]


def _read_up_to_kernel(ctx, inputs, attrs):
    from ..errors import OutOfRangeError
    reader, queue, n = inputs[0][()], inputs[1][()], int(inputs[2])
    keys, values = [], []
    while len(keys) < n:
        try:
            key, value = reader.next(queue, ctx.deadline, ctx.op)
        except OutOfRangeError:
            if keys:
                break
            raise
        keys.append(key.encode())
        values.append(value)
    k, v = np.empty(len(keys), object), np.empty(len(values), object)
    k[:], v[:] = keys, values
    return [k, v]


READ = OpDef("ReaderReadV2", _read_infer, _read_kernel, traits=_WAITS,
             doc="The next (key, value) record.")
READ_UP_TO = OpDef("ReaderReadUpToV2", _read_up_to_infer, _read_up_to_kernel, traits=_WAITS,
                   doc="Up to n records (fewer at the end of the input).")

OP_DEFS = [TEXT_LINE_READER, FIXED_LENGTH_READER, TFRECORD_READER, READ, READ_UP_TO]


# --- the TF1 classes ---------------------------------------------------------------------------

class ReaderBase:
    """A reader: `read(queue)` gives the next (key, value) of the files named in `queue`."""

    def __init__(self, op_def, attrs, name):
        self._reader_ref = get_default_graph().create_op(op_def, [], attrs, name).outputs[0]

    @property
    def reader_ref(self):
        return self._reader_ref

    def read(self, queue, name=None):
        """(key, value) scalar string tensors of the next record."""
        ref = getattr(queue, "queue_ref", queue)
        op = make_op(READ, [self._reader_ref, ref], {}, name or "ReaderRead")
        return op.outputs[0], op.outputs[1]

    def read_up_to(self, queue, num_records, name=None):
        """(keys, values): up to `num_records` records."""
        ref = getattr(queue, "queue_ref", queue)
        n = to_tensor(num_records, dtype=_dtypes.int64)
        op = make_op(READ_UP_TO, [self._reader_ref, ref, n], {}, name or "ReaderReadUpTo")
        return op.outputs[0], op.outputs[1]


class TextLineReader(ReaderBase):
    """Reads the lines of text files, without their line ends (TF1 `tf.TextLineReader`)."""

    def __init__(self, skip_header_lines=None, name=None):
        super().__init__(TEXT_LINE_READER, {"skip_header_lines": int(skip_header_lines or 0)},
                         name or "TextLineReader")


class FixedLengthRecordReader(ReaderBase):
    """Reads `record_bytes`-byte records between a header and a footer
    (TF1 `tf.FixedLengthRecordReader`)."""

    def __init__(self, record_bytes, header_bytes=None, footer_bytes=None, hop_bytes=None,
                 name=None, encoding=None):
        if hop_bytes or encoding:
            raise NotImplementedError("FixedLengthRecordReader: hop_bytes and encoding are not "
                                      "supported by flowjit.")
        super().__init__(FIXED_LENGTH_READER, {"record_bytes": int(record_bytes),
                                               "header_bytes": int(header_bytes or 0),
                                               "footer_bytes": int(footer_bytes or 0)},
                         name or "FixedLengthRecordReader")


class TFRecordReader(ReaderBase):
    """Reads the records of TFRecord files (TF1 `tf.TFRecordReader`)."""

    def __init__(self, name=None, options=None):
        del options
        super().__init__(TFRECORD_READER, {}, name or "TFRecordReader")


__all__ = ["ReaderBase", "TextLineReader", "FixedLengthRecordReader", "TFRecordReader"]
