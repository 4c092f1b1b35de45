"""Chrome traces of one step (TensorFlow's `tf.client.timeline`): what ran where and when.

`Timeline(run_metadata.step_stats, graph=None).generate_chrome_trace_format()` returns the
JSON of the Trace Event Format that chrome://tracing and Perfetto (ui.perfetto.dev) open:
- one *process* per device (named by the device, "Compute") and one *thread* per OS thread
  that ran ops on it (numbered in order of first use, named "thread N");
- one complete event ("ph": "X") per entry of the step stats: an op, a compiled cluster or
  a Send or Recv (category "Op", named by the op type, with the node's name and type in
  `args`), or a compile that ran during the step (category "Compile", named "compile
  <cluster> (<target>, <tier>)", on the thread that compiled); timestamps in microseconds
  since the step began;
- with `show_dataflow` and the `graph`, a flow arrow ("s" at the producer's end, "f" at
  the consumer's start) for every tensor whose producer and consumer both appear in the
  stats (ops run inside a compiled cluster appear as the cluster, not one by one).
`show_memory` is accepted for TensorFlow's signature; flowjit's step stats carry no
allocation records, so no memory counters are drawn.

Step stats come from `Session.run(..., options=RunOptions(trace_level=RunOptions.FULL_TRACE),
run_metadata=meta)`: `meta.step_stats` is a list of `NodeStats` (runtime/config.py).
"""

from __future__ import annotations

import json


class Timeline:
    """A Chrome trace of one step's `step_stats` (module docstring)."""

    def __init__(self, step_stats, graph=None):
        self._stats = list(getattr(step_stats, "dev_stats", step_stats) or [])
        self._graph = graph

    def generate_chrome_trace_format(self, show_dataflow: bool = True,
                                     show_memory: bool = False) -> str:
        """The trace as a JSON string (module docstring)."""
        del show_memory   # no allocation records in flowjit's step stats
        events: list = []
        pids: dict = {}
        tids: dict = {}
        ends: dict = {}     # node name -> (pid, tid, end in us) of its event
        starts: dict = {}   # node name -> (pid, tid, start in us)
        for stat in sorted(self._stats, key=lambda s: (s.start, s.end)):
            device = stat.device or "/device:CPU:0"
            pid = pids.get(device)
            if pid is None:
                pid = pids[device] = len(pids)
                events.append({"name": "process_name", "ph": "M", "pid": pid,
                               "args": {"name": f"{device} Compute"}})
                events.append({"name": "process_sort_index", "ph": "M", "pid": pid,
                               "args": {"sort_index": pid}})
            key = (pid, stat.thread)
            tid = tids.get(key)
            if tid is None:
                tid = tids[key] = sum(1 for p, _ in tids if p == pid)
                events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                               "args": {"name": f"thread {tid}"}})
            start_us = stat.start * 1e6
            duration_us = max(0.0, (stat.end - stat.start) * 1e6)
            category = getattr(stat, "category", "Op")
            label = str(stat.op_type) if category == "Op" else stat.node_name
            events.append({"name": label, "cat": category, "ph": "X", "pid": pid,
                           "tid": tid, "ts": start_us, "dur": duration_us,
                           "args": {"name": stat.node_name, "op": str(stat.op_type)}})
            starts[stat.node_name] = (pid, tid, start_us)
            ends[stat.node_name] = (pid, tid, start_us + duration_us)
        if show_dataflow and self._graph is not None:
            events += self._flows(starts, ends)
        return json.dumps({"traceEvents": events, "displayTimeUnit": "ns"})

    def _flows(self, starts: dict, ends: dict) -> list:
        """Flow arrows from each traced producer to each traced consumer of its outputs."""
        out = []
        flow_id = 0
        for name, (pid, tid, start) in starts.items():
            try:
                op = self._graph.get_operation_by_name(name)
            except (KeyError, ValueError):
                continue   # a compiled cluster or a Send/Recv: no graph op of that name
            for t in op.inputs:
                producer = ends.get(t.op.name)
                if producer is None:
                    continue
                flow_id += 1
                p_pid, p_tid, p_end = producer
                out.append({"name": t.name, "cat": "DataFlow", "ph": "s", "id": flow_id,
                            "pid": p_pid, "tid": p_tid, "ts": p_end})
                out.append({"name": t.name, "cat": "DataFlow", "ph": "f", "bp": "e",
                            "id": flow_id, "pid": pid, "tid": tid, "ts": start})
        return out
