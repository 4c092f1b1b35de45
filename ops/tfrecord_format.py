"""TFRecord files: TensorFlow's record framing, read and written (shared by the TFRecord
reader op and `tf.python_io`; the event files of summaries use the same framing).

A record is: its length (uint64, little-endian), the masked CRC-32C of those 8 bytes
(uint32), the data, the masked CRC-32C of the data (uint32).  Masking is TensorFlow's:
rotate the CRC right by 15 bits and add 0xa282ead8.  A length or data CRC that does not
match, or a file that ends inside a record, is a DataLossError naming the file and the
record's byte offset.  Writes go to a temporary file renamed into place on `close`, so a
crash never leaves a truncated file under the final name.

CRC-32C (Castagnoli polynomial, reflected 0x82F63B78) is computed here with a byte table,
in pure Python: about a megabyte per second, enough for the test and example files this
is used with; a faster implementation can replace `crc32c` without changing the format.
"""

from __future__ import annotations

import os
import struct
import tempfile

from ..errors import DataLossError, NotFoundError


def _table() -> list:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _table()


def crc32c(data: bytes) -> int:
    """The CRC-32C of `data`."""
    crc = 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    """TensorFlow's masked CRC-32C of `data`."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def encode_record(data: bytes) -> bytes:
    """One record's bytes, framed."""
    length = struct.pack("<Q", len(data))
    return (length + struct.pack("<I", masked_crc(length)) + data
            + struct.pack("<I", masked_crc(data)))


def read_records(path: str):
    """Yield (byte offset, data) of each record of the TFRecord file at `path`."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise NotFoundError(None, None, f"TFRecord file not found: {path}") from None
    with f:
        offset = 0
        while True:
            header = f.read(12)
            if not header:
                return
            if len(header) < 12:
                raise DataLossError(None, None, f"Truncated record header in {path} at byte "
                                                f"offset {offset}.")
            length_bytes, (length_crc,) = header[:8], struct.unpack("<I", header[8:])
            if masked_crc(length_bytes) != length_crc:
                raise DataLossError(None, None, f"Corrupted record length in {path} at byte "
                                                f"offset {offset} (CRC mismatch).")
            (length,) = struct.unpack("<Q", length_bytes)
            data = f.read(length)
            footer = f.read(4)
            if len(data) < length or len(footer) < 4:
                raise DataLossError(None, None, f"Truncated record in {path} at byte offset "
                                                f"{offset}.")
            if masked_crc(data) != struct.unpack("<I", footer)[0]:
                raise DataLossError(None, None, f"Corrupted record data in {path} at byte "
                                                f"offset {offset} (CRC mismatch).")
            yield offset, data
            offset += 16 + length


class TFRecordWriter:
    """Writes records to a TFRecord file (TF1 `tf.python_io.TFRecordWriter`); the file
    appears, complete, when the writer is closed (a context manager closes it)."""

    def __init__(self, path: str, options=None):
        del options
        self.path = path
        folder = os.path.dirname(os.path.abspath(path))
        fd, self._tmp = tempfile.mkstemp(prefix=".tfrecord-", dir=folder)
        self._file = os.fdopen(fd, "wb")

    def write(self, record) -> None:
        """Append one record (bytes, or str encoded as UTF-8)."""
        if isinstance(record, str):
            record = record.encode()
        self._file.write(encode_record(bytes(record)))

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        if self._file is None:
            return
        self._file.close()
        self._file = None
        os.replace(self._tmp, self.path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def tf_record_iterator(path: str, options=None):
    """The records of a TFRecord file, as bytes (TF1 `tf.python_io.tf_record_iterator`)."""
    del options
    for _, data in read_records(path):
        yield data
