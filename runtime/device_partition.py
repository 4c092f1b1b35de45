"""Partitioning a placed step into one subgraph per device, with a Send/Recv pair on every
cross-device edge (2015 TensorFlow paper §3.2.2, Figure 4).

`partition(ops, placement, fed, fetches)` gives one `Partition` per device that runs ops:
its ops (graph order) and its `Transfer`s in and out.  A transfer moves one tensor from the
device that computes it to one device that reads it; a tensor read by several ops of
another device is sent there ONCE (the paper's canonicalization), and a control edge
between devices becomes a transfer of an empty token (`tensor` None, `control` the
producing op), as TensorFlow sends a dummy value for it.  Fed tensors are never
transferred: every device reads the feed directly.

`partition_graph_defs(partitions, placement)` describes each partition as a GraphDef for
`RunMetadata.partition_graphs`, with TensorFlow's `_Send`/`_Recv` nodes (attrs
tensor_name, send_device, recv_device, client_terminated, T) standing for the transfers.
The user's graph is never changed: Send and Recv are runtime steps
(runtime/device_plan.py), and these GraphDefs only describe them.
"""

from __future__ import annotations

import dataclasses

from ..compiler.core.attr_values import to_attr_value
from ..compiler.core.graph_def import (GRAPH_DEF_VERSION, GraphDef, NodeDef, VersionDef,
                                       node_def_for)
from ..dtypes import float32


@dataclasses.dataclass(frozen=True)
class Transfer:
    """One Send/Recv pair: `tensor` (or a control token from `control`) from src to dst."""

    tensor: object            # the Tensor sent, or None for a control token
    control: object           # the Operation a control token stands for, else None
    src: object               # runtime.devices.Device
    dst: object
    compressed: bool = False  # sent as float16, received as float32 (paper §5.5)

    @property
    def name(self) -> str:
        """The tensor's name, or '^op' for a control token."""
        return self.tensor.name if self.tensor is not None else f"^{self.control.name}"

    @property
    def edge_name(self) -> str:
        """A name for the pair's nodes in the partition GraphDefs."""
        base = self.name.replace(":", "_").replace("^", "ctrl_")
        return f"{base}/_send_to_{self.dst.device_type.name}_{self.dst.index}"


@dataclasses.dataclass
class Partition:
    """The ops one device runs in a step, and its transfers."""

    device: object
    ops: list = dataclasses.field(default_factory=list)
    sends: list = dataclasses.field(default_factory=list)   # Transfers from this device
    recvs: list = dataclasses.field(default_factory=list)   # Transfers to this device


def partition(ops, placement: dict, fed, compress=False) -> list:
    """Per-device partitions of `ops` placed by `placement` ({op: Device}), in device
    order.  `compress`: True compresses every float32 transfer, or a collection of tensor
    names compresses those edges only (module docstring)."""
    parts: dict = {}
    for op in ops:
        device = placement[op]
        part = parts.get(device)
        if part is None:
            part = parts[device] = Partition(device)
        part.ops.append(op)
    seen = set()
    for op in ops:
        dst = placement[op]
        for t in op.inputs:
            if t in fed or t.op not in placement:
                continue
            src = placement[t.op]
            if src is dst or (t, dst) in seen:
                continue
            seen.add((t, dst))
            squeeze = t.dtype == float32 and (compress is True or (
                not isinstance(compress, bool) and t.name in compress))
            _add(parts, Transfer(t, None, src, dst, squeeze))
        for c in op.control_inputs:
            if c not in placement:
                continue
            src = placement[c]
            if src is dst or (c, dst) in seen:
                continue
            seen.add((c, dst))
            _add(parts, Transfer(None, c, src, dst))
    return sorted(parts.values(), key=lambda p: _device_order(p.device))


def _add(parts, transfer):
    parts[transfer.src].sends.append(transfer)
    parts[transfer.dst].recvs.append(transfer)


def _device_order(device):
    return (device.device_type.name != "CPU", device.device_type.name, device.index)


def partition_graph_defs(partitions, placement: dict) -> list:
    """One GraphDef per partition: its ops (device set to where they run, inputs from
    other devices renamed to their Recv) and the _Send/_Recv nodes of its transfers."""
    out = []
    for part in partitions:
        received = {}
        nodes = []
        for tr in part.recvs:
            name = tr.edge_name.replace("_send_to_", "_recv_from_") + \
                f"_{tr.src.device_type.name}_{tr.src.index}"
            received[(tr.tensor, tr.control)] = name
            nodes.append(_transfer_node(name, "_Recv", [], part.device.name, tr))
        for op in part.ops:
            nd = node_def_for(op)
            inputs = []
            for t in op.inputs:
                name = received.get((t, None))
                inputs.append(name if name is not None else _input_name(t))
            for c in op.control_inputs:
                name = received.get((None, c))
                inputs.append(f"^{name}" if name is not None else f"^{c.name}")
            node = NodeDef(name=nd.name, op=nd.op, input=inputs, device=part.device.name)
            for key, value in nd.attr.items():
                node.attr[key].CopyFrom(value)
            nodes.append(node)
        for tr in part.sends:
            source = _input_name(tr.tensor) if tr.tensor is not None else f"^{tr.control.name}"
            nodes.append(_transfer_node(tr.edge_name, "_Send", [source], part.device.name, tr))
        graph_def = GraphDef(versions=VersionDef(producer=GRAPH_DEF_VERSION))
        graph_def.node.extend(nodes)
        out.append(graph_def)
    return out


def _transfer_node(name: str, op_type: str, inputs: list, device: str, transfer) -> NodeDef:
    node = NodeDef(name=name, op=op_type, input=inputs, device=device)
    for key, value in _transfer_attrs(transfer).items():
        node.attr[key].CopyFrom(to_attr_value(value))
    return node


def _input_name(t) -> str:
    return t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"


def _transfer_attrs(tr: Transfer) -> dict:
    attrs = {"tensor_name": tr.name, "send_device": tr.src.name, "recv_device": tr.dst.name,
             "send_device_incarnation": 1, "client_terminated": False}
    if tr.tensor is not None:
        attrs["T"] = tr.tensor.dtype
    if tr.compressed:
        attrs["_compressed_as"] = "float16"
    return attrs
