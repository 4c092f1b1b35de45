"""Compile events for execution traces: when each cluster was compiled, on which thread.

Compiling happens inside a step (a cluster's first call) or on the compile worker
(runtime/compile_queue.py), not as an op of the step, so the executor's per-op trace shows
it only as a long cluster call.  `record_compile` notes every compile (perf_counter times,
the thread, the cluster's name and the target and tier); a traced `Session.run`
(RunOptions.FULL_TRACE) takes the events that started during its step with
`compile_events_since` and lists them in `RunMetadata.step_stats` as events of their own
(category "Compile"), which timelines and TensorBoard show next to the ops.
"""

from __future__ import annotations

import collections
import threading

_LOCK = threading.Lock()
_EVENTS: collections.deque = collections.deque(maxlen=4096)
# CompileEvent: label, start and end (time.perf_counter seconds), thread ident


CompileEvent = collections.namedtuple("CompileEvent", "label start end thread")


def record_compile(label: str, start: float, end: float) -> None:
    """Note one compile of `label` that ran from `start` to `end` on this thread."""
    with _LOCK:
        _EVENTS.append(CompileEvent(label, start, end, threading.get_ident()))


def compile_events_since(start: float) -> list:
    """The compile events that began at or after `start` (perf_counter seconds)."""
    with _LOCK:
        return [e for e in _EVENTS if e.start >= start]
