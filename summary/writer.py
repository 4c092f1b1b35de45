"""`FileWriter`: TensorBoard event files (TF 1.x `tf.summary.FileWriter`).

An event file is a sequence of TFRecord records (length, masked CRC-32C of the length, the
bytes, masked CRC-32C of the bytes; ops/tfrecord_format.py), each an `Event` protobuf
(protos/): first `file_version: "brain.Event:2"`, then summaries, graphs, run metadata and
session logs, each with its wall time and global step.  The file is named
`events.out.tfevents.<seconds>.<host><suffix>` in `logdir`, so TensorBoard finds it.

Events queue in memory and are appended to the file, whole records in one write, when
`max_queue` are waiting, when `flush_secs` have passed since the last write (checked as
events arrive), on `flush()` and on `close()`; a reader never sees half an event except
after a crash mid-write, which TensorBoard's reader tolerates (the record's CRC fails and
the reader stops there).  The file is flushed when the writer is garbage collected or the
process exits.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import weakref

from ..compiler.core.graph import Graph
from ..compiler.core.graph_def import GraphDef
from ..ops.tfrecord_format import encode_record
from ..protos import (DeviceStepStats, Event, NodeExecStats, RunMetadataProto, SessionLog,
                      Summary, TaggedRunMetadata)

__all__ = ["FileWriter", "run_metadata_proto"]


class _EventFile:
    """The open event file: queued records and the lock that orders them."""

    def __init__(self, path: str):
        self.path = path
        self.lock = threading.Lock()
        self.queue: list = []
        self.last_write = time.monotonic()
        with open(path, "ab"):
            pass

    def write_out(self):
        with self.lock:
            records, self.queue = self.queue, []
            self.last_write = time.monotonic()
        if records:
            with open(self.path, "ab") as f:
                f.write(b"".join(records))
                f.flush()
                os.fsync(f.fileno())


def _flush_at_exit(event_file: _EventFile):
    try:
        event_file.write_out()
    except OSError:
        pass


class FileWriter:
    """Writes summaries, graphs and run metadata to an event file in `logdir`.

    `FileWriter(logdir, graph=None, max_queue=10, flush_secs=120, filename_suffix=None)`:
    `logdir` is created if needed; a `graph` (or `graph_def`) given is written first.
    """

    def __init__(self, logdir, graph=None, max_queue: int = 10, flush_secs: float = 120,
                 graph_def=None, filename_suffix: str | None = None, session=None):
        del session   # TensorFlow's summary-op-based writer; flowjit writes directly
        self._logdir = os.fspath(logdir)
        os.makedirs(self._logdir, exist_ok=True)
        name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}"
                f"{filename_suffix or ''}")
        self._file = _EventFile(os.path.join(self._logdir, name))
        self._max_queue = max(1, int(max_queue))
        self._flush_secs = float(flush_secs)
        self._closed = False
        self._finalizer = weakref.finalize(self, _flush_at_exit, self._file)
        self.add_event(Event(wall_time=time.time(), file_version="brain.Event:2"))
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def get_logdir(self) -> str:
        """The directory the event file is in."""
        return self._logdir

    @property
    def event_file_path(self) -> str:
        """The path of the event file being written."""
        return self._file.path

    def add_event(self, event) -> None:
        """Queue one `Event` protobuf."""
        if self._closed:
            raise RuntimeError("This FileWriter is closed; reopen() it to write again.")
        record = encode_record(event.SerializeToString())
        with self._file.lock:
            self._file.queue.append(record)
            due = (len(self._file.queue) >= self._max_queue
                   or time.monotonic() - self._file.last_write >= self._flush_secs)
        if due:
            self._file.write_out()

    def add_summary(self, summary, global_step=None) -> None:
        """Queue a summary: a `Summary` protobuf or its serialized bytes (what running a
        summary op returns)."""
        if isinstance(summary, Summary):
            message = summary
        else:
            raw = summary.item() if hasattr(summary, "item") else summary
            if not isinstance(raw, (bytes, bytearray)):
                raise TypeError(f"add_summary expects a Summary or the bytes a summary op "
                                f"returns, got {type(summary).__name__}.")
            message = Summary.FromString(bytes(raw))
        self.add_event(self._event(global_step, summary=message))

    def add_graph(self, graph, global_step=None, graph_def=None) -> None:
        """Queue a Graph (or a GraphDef) for TensorBoard's graph view."""
        if isinstance(graph, GraphDef) and graph_def is None:
            graph, graph_def = None, graph
        if graph_def is None:
            if not isinstance(graph, Graph):
                raise TypeError(f"add_graph expects a Graph or GraphDef, got "
                                f"{type(graph).__name__}.")
            graph_def = graph.as_graph_def(add_shapes=True)
        self.add_event(self._event(global_step, graph_def=graph_def.SerializeToString()))

    def add_run_metadata(self, run_metadata, tag: str, global_step=None) -> None:
        """Queue one step's RunMetadata under `tag` (TensorBoard shows its compute time per
        node in the graph view)."""
        proto = run_metadata_proto(run_metadata)
        self.add_event(self._event(global_step, tagged_run_metadata=TaggedRunMetadata(
            tag=str(tag), run_metadata=proto.SerializeToString())))

    def add_session_log(self, session_log, global_step=None) -> None:
        """Queue a `SessionLog` (START, STOP or CHECKPOINT)."""
        if not isinstance(session_log, SessionLog):
            raise TypeError(f"add_session_log expects a SessionLog, got "
                            f"{type(session_log).__name__}.")
        self.add_event(self._event(global_step, session_log=session_log))

    def _event(self, global_step, **what):
        event = Event(wall_time=time.time(), **what)
        if global_step is not None:
            event.step = int(global_step)
        return event

    def flush(self) -> None:
        """Write every queued event to the file."""
        self._file.write_out()

    def close(self) -> None:
        """Flush and stop accepting events."""
        if not self._closed:
            self.flush()
            self._closed = True

    def reopen(self) -> None:
        """Accept events again after `close()` (they go to the same file)."""
        self._closed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def run_metadata_proto(run_metadata) -> RunMetadataProto:
    """A RunMetadata protobuf of flowjit's RunMetadata (runtime/config.py): one
    DeviceStepStats per device with a NodeExecStats per traced op or compile event, times
    in microseconds since the epoch, and the partition graphs."""
    proto = RunMetadataProto()
    if isinstance(run_metadata, RunMetadataProto):
        return run_metadata
    base_us = int(getattr(run_metadata, "wall_start", 0.0) * 1e6)
    devices: dict = {}
    for stat in run_metadata.step_stats:
        device = stat.device or "/job:localhost/replica:0/task:0/device:CPU:0"
        dev = devices.get(device)
        if dev is None:
            dev = devices[device] = DeviceStepStats(device=device)
        start = int(stat.start * 1e6)
        length = max(0, int((stat.end - stat.start) * 1e6))
        thread = stat.thread & 0xFFFFFFFF
        dev.node_stats.append(NodeExecStats(
            node_name=stat.node_name, all_start_micros=base_us + start,
            op_start_rel_micros=0, op_end_rel_micros=length, all_end_rel_micros=length,
            thread_id=thread, timeline_label=f"{stat.node_name} = {stat.op_type}()"))
        dev.thread_names[thread] = f"thread {thread}"
    proto.step_stats.dev_stats.extend(devices.values())
    for graph_def in getattr(run_metadata, "partition_graphs", ()):
        proto.partition_graphs.add().CopyFrom(graph_def)
    return proto
