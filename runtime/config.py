"""Session options with TensorFlow's names: ConfigProto, RunOptions, RunMetadata.

Only the fields flowjit acts on are meaningful; others are accepted (so TF 1.x code that
sets them runs) and documented as ignored.
"""

from __future__ import annotations

import enum


class GPUOptions:
    """Accepted for compatibility; flowjit has no GPU memory options yet."""

    def __init__(self, allow_growth=False, per_process_gpu_memory_fraction=1.0, **kwargs):
        self.allow_growth = allow_growth
        self.per_process_gpu_memory_fraction = per_process_gpu_memory_fraction


class ConfigProto:
    """Session configuration.

    inter_op_parallelism_threads: threads that run independent ops concurrently (0: one
    per CPU core; 1: run ops one after another in the calling thread).
    Other TensorFlow fields (log_device_placement, allow_soft_placement, gpu_options,
    device_count, intra_op_parallelism_threads) are accepted and currently ignored.
    """

    def __init__(self, inter_op_parallelism_threads=0, intra_op_parallelism_threads=0,
                 log_device_placement=False, allow_soft_placement=False, gpu_options=None,
                 device_count=None, **kwargs):
        self.inter_op_parallelism_threads = int(inter_op_parallelism_threads)
        self.intra_op_parallelism_threads = int(intra_op_parallelism_threads)
        self.log_device_placement = log_device_placement
        self.allow_soft_placement = allow_soft_placement
        self.gpu_options = gpu_options or GPUOptions()
        self.device_count = dict(device_count or {})
        for k, v in kwargs.items():
            setattr(self, k, v)


class TraceLevel(enum.IntEnum):
    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3


class RunOptions:
    """Per-call options: `timeout_in_ms` (DeadlineExceededError past it) and `trace_level`
    (FULL_TRACE fills `RunMetadata.step_stats` with per-op timings)."""

    TraceLevel = TraceLevel
    NO_TRACE = TraceLevel.NO_TRACE
    SOFTWARE_TRACE = TraceLevel.SOFTWARE_TRACE
    HARDWARE_TRACE = TraceLevel.HARDWARE_TRACE
    FULL_TRACE = TraceLevel.FULL_TRACE

    def __init__(self, timeout_in_ms=0, trace_level=TraceLevel.NO_TRACE, **kwargs):
        self.timeout_in_ms = int(timeout_in_ms)
        self.trace_level = TraceLevel(trace_level)


class NodeStats:
    """Timing of one op in one run (seconds since the run started)."""

    __slots__ = ("node_name", "op_type", "start", "end", "thread")

    def __init__(self, node_name, op_type, start, end, thread):
        self.node_name = node_name
        self.op_type = op_type
        self.start = start
        self.end = end
        self.thread = thread

    def __repr__(self):
        return (f"NodeStats({self.node_name!r}, {self.op_type}, "
                f"{(self.end - self.start) * 1e6:.1f} us)")


class RunMetadata:
    """Filled by `Session.run` when RunOptions asks for a trace: `step_stats` is a list of
    NodeStats in completion order."""

    def __init__(self):
        self.step_stats = []
