"""Serialized graphs: `GraphDef`, `NodeDef`, `graph_to_graph_def` and `import_graph_def`.

A `GraphDef` is a plain, picklable description of a graph (TensorFlow's GraphDef): a list
of `NodeDef`s (name, op type, inputs, device, attrs) and `versions`.  Inputs use
TensorFlow's spelling: "op" for output 0, "op:i" for output i, "^op" for a control input
(control inputs last).  Attrs hold the Python values the op definitions use (DType,
TensorShape, read-only NumPy arrays, ...).  `SerializeToString`/`ParseFromString` use the
binary form and `str()`/`FromText` the text form; both are defined in
`compiler/core/graph_def_codec.py`, and `ParseFromString` accepts either.

Importing (`import_graph_def`) needs the op table, so it sits above ops in
`compiler/graph_import.py`; this module only writes and reads the description.
Checks that can be made without building anything (unknown op types, missing inputs,
cycles, name clashes, unused input_map keys, unknown return elements) are made first, so a
bad GraphDef leaves the graph untouched.  This module reaches `ops/registry.py` (a leaf
module) to look op types up; it imports nothing else from `ops/`.
"""

from __future__ import annotations


from . import graph_def_codec as _codec
from .graph import Graph, Operation, Tensor
from .graph_def_codec import FORMAT_VERSION, DecodeError

__all__ = ["GraphDef", "NodeDef", "VersionDef", "DecodeError", "FORMAT_VERSION",
           "graph_to_graph_def", "node_def_for", "parse_text"]

_SHAPES_ATTR = "_output_shapes"


class NodeDef:
    """One node of a GraphDef: `name`, `op` (type), `input` (list of str), `device`, `attr`."""

    def __init__(self, name: str = "", op: str = "", input=None, device: str = "",
                 attr: dict | None = None):
        self.name = name
        self.op = op
        self.input = list(input or [])
        self.device = device
        self.attr = dict(attr or {})

    def _as_dict(self) -> dict:
        return {"name": self.name, "op": self.op, "input": self.input, "device": self.device,
                "attr": self.attr}

    def __eq__(self, other):
        if not isinstance(other, NodeDef):
            return NotImplemented
        return _codec.build_document([self._as_dict()], {}, None) == \
            _codec.build_document([other._as_dict()], {}, None)

    __hash__ = None

    def __repr__(self):
        return f"NodeDef(name={self.name!r}, op={self.op!r}, input={self.input!r})"

    def __str__(self):
        doc = _codec.build_document([self._as_dict()], {}, None)
        return _codec._node_text(doc["node"][0]).strip() + "\n"


class VersionDef:
    """`producer`: format version that wrote the graph; `min_consumer`: oldest reader allowed."""

    def __init__(self, producer: int = FORMAT_VERSION, min_consumer: int = 1):
        self.producer = int(producer)
        self.min_consumer = int(min_consumer)

    def _as_dict(self) -> dict:
        return {"producer": self.producer, "min_consumer": self.min_consumer}

    def __eq__(self, other):
        return isinstance(other, VersionDef) and self._as_dict() == other._as_dict()

    def __repr__(self):
        return f"VersionDef(producer={self.producer}, min_consumer={self.min_consumer})"


class _NodeList(list):
    """A list of NodeDefs with protobuf's `add()`."""

    def add(self, **fields) -> NodeDef:
        node = NodeDef(**fields)
        self.append(node)
        return node


class GraphDef:
    """A serializable graph: `node` (list of NodeDef) and `versions` (VersionDef)."""

    def __init__(self, node=None, versions: VersionDef | None = None):
        self.node = _NodeList(node or [])
        self.versions = versions if versions is not None else VersionDef()

    # --- serialization --------------------------------------------------------------------
    def SerializeToString(self, deterministic=None) -> bytes:
        """The binary form (deterministic: attrs are written in sorted order)."""
        return _codec.encode_binary([n._as_dict() for n in self.node],
                                    self.versions._as_dict())

    def ParseFromString(self, data) -> int:
        """Replace this GraphDef's contents from the binary or text form; returns len(data).

        Raises `DecodeError` (a `flowjit.errors.DataLossError`) for malformed data.
        """
        nodes, versions = _codec.decode(data)
        self._set(nodes, versions)
        return len(data)

    @classmethod
    def FromString(cls, data) -> GraphDef:
        """A new GraphDef parsed from the binary or text form."""
        g = cls()
        g.ParseFromString(data)
        return g

    @classmethod
    def FromText(cls, text) -> GraphDef:
        """A new GraphDef parsed from the text form (`str(graph_def)`)."""
        g = cls()
        if isinstance(text, (bytes, bytearray)):
            try:
                text = bytes(text).decode("utf-8")
            except UnicodeDecodeError as e:
                raise DecodeError(f"Malformed GraphDef text: not UTF-8 ({e}).") from None
        g._set(*_codec.decode_text(text))
        return g

    def _set(self, nodes, versions):
        self.node = _NodeList(NodeDef(**n) for n in nodes)
        self.versions = VersionDef(versions.get("producer", FORMAT_VERSION),
                                   versions.get("min_consumer", 1))

    def CopyFrom(self, other: GraphDef):
        """Make this GraphDef a deep copy of `other`."""
        self.ParseFromString(other.SerializeToString())

    def MergeFrom(self, other: GraphDef):
        """Append copies of `other`'s nodes (protobuf's repeated-field merge)."""
        self.node.extend(GraphDef.FromString(other.SerializeToString()).node)

    def ByteSize(self) -> int:
        return len(self.SerializeToString())

    def __str__(self):
        return _codec.encode_text([n._as_dict() for n in self.node], self.versions._as_dict())

    def __repr__(self):
        return f"<GraphDef with {len(self.node)} nodes>"

    def __eq__(self, other):
        if not isinstance(other, GraphDef):
            return NotImplemented
        return (self.versions == other.versions and len(self.node) == len(other.node)
                and all(a == b for a, b in zip(self.node, other.node)))

    __hash__ = None


def parse_text(text) -> GraphDef:
    """Parse the text form (`str(graph_def)`, `write_graph(..., as_text=True)`)."""
    return GraphDef.FromText(text)


# --- graph -> GraphDef ------------------------------------------------------------------------


def _input_name(t: Tensor) -> str:
    return t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"


def node_def_for(op: Operation, add_shapes: bool = False) -> NodeDef:
    """The NodeDef describing `op` (attrs are shared, not copied: they are immutable)."""
    inputs = [_input_name(t) for t in op.inputs] + [f"^{c.name}" for c in op.control_inputs]
    attr = op.attrs
    if add_shapes and op.outputs:
        attr[_SHAPES_ATTR] = [t.shape for t in op.outputs]
    return NodeDef(op.name, op.type, inputs, op.device, attr)


def graph_to_graph_def(graph: Graph, add_shapes: bool = False) -> GraphDef:
    """Describe every op of `graph`, in creation order (which is a dependency order)."""
    return GraphDef([node_def_for(op, add_shapes) for op in graph.get_operations()],
                    VersionDef(FORMAT_VERSION, 1))
