"""Serialized graphs: `GraphDef`, `NodeDef`, `graph_to_graph_def` and `import_graph_def`.

A `GraphDef` is a plain, picklable description of a graph (TensorFlow's GraphDef): a list
of `NodeDef`s (name, op type, inputs, device, attrs) and `versions`.  Inputs use
TensorFlow's spelling: "op" for output 0, "op:i" for output i, "^op" for a control input
(control inputs last).  Attrs hold the Python values the op definitions use (DType,
TensorShape, read-only NumPy arrays, ...).  `SerializeToString`/`ParseFromString` use the
binary form and `str()`/`FromText` the text form; both are defined in
`compiler/core/graph_def_codec.py`, and `ParseFromString` accepts either.

`import_graph_def` rebuilds a GraphDef in a graph through `Graph.create_op`, in dependency
order, so every imported op runs its op definition's inference exactly as if built by hand.
Checks that can be made without building anything (unknown op types, missing inputs,
cycles, name clashes, unused input_map keys, unknown return elements) are made first, so a
bad GraphDef leaves the graph untouched.  This module reaches `ops/registry.py` (a leaf
module) to look op types up; it imports nothing else from `ops/`.
"""

from __future__ import annotations

import contextlib
import heapq

from ...errors import NotFoundError
from . import graph_def_codec as _codec
from .graph import _VALID_NAME, Graph, Operation, Tensor, get_default_graph
from .graph_def_codec import FORMAT_VERSION, DecodeError

__all__ = ["GraphDef", "NodeDef", "VersionDef", "DecodeError", "FORMAT_VERSION",
           "graph_to_graph_def", "node_def_for", "import_graph_def", "parse_text"]

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


# --- GraphDef -> graph ------------------------------------------------------------------------


def _split_input(spec: str):
    """("op", index, is_control) for "op", "op:3" or "^op"."""
    if spec.startswith("^"):
        return spec[1:], -1, True
    name, sep, index = spec.rpartition(":")
    if sep and index.isdigit():
        return name, int(index), False
    return spec, 0, False


def _canonical_key(key: str) -> str:
    name, index, control = _split_input(key)
    return f"^{name}" if control else f"{name}:{index}"


def _dependency_order(nodes: list, by_name: dict) -> list:
    """Nodes sorted so producers come first, keeping the listed order where free to."""
    position = {n.name: i for i, n in enumerate(nodes)}
    waiting = {}
    consumers = {n.name: [] for n in nodes}
    for n in nodes:
        deps = set()
        for spec in n.input:
            producer = _split_input(spec)[0]
            if producer not in by_name:
                raise ValueError(f"graph_def is invalid at node '{n.name}': input '{spec}' "
                                 f"names a node '{producer}' that is not in the graph_def.")
            deps.add(producer)
        waiting[n.name] = len(deps)
        for d in deps:
            consumers[d].append(n.name)
    ready = [position[name] for name, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        node = nodes[heapq.heappop(ready)]
        order.append(node)
        for c in consumers[node.name]:
            waiting[c] -= 1
            if waiting[c] == 0:
                heapq.heappush(ready, position[c])
    if len(order) != len(nodes):
        stuck = sorted((n for n, c in waiting.items() if c > 0), key=position.get)
        raise ValueError(f"graph_def contains a cycle: nodes {stuck[:10]} depend on each other "
                         "(directly or through their inputs), so there is no order to build "
                         "them in.")
    return order


def _prepare_input_map(input_map, graph: Graph, by_name: dict) -> dict:
    from ...ops.conversion import convert_to_tensor  # only for non-Tensor values

    out = {}
    for key, value in (input_map or {}).items():
        if not isinstance(key, str):
            raise TypeError(f"input_map keys must be tensor names (str), got {key!r}.")
        canon = _canonical_key(key)
        if hasattr(value, "_as_graph_element"):
            value = value._as_graph_element()
        if canon.startswith("^"):
            if not isinstance(value, Operation):
                raise TypeError(f"input_map['{key}'] maps a control input and must be an "
                                f"Operation, got {value!r}.")
        elif not isinstance(value, Tensor):
            with graph.as_default():
                value = convert_to_tensor(value)
        if value.graph is not graph:
            raise ValueError(f"input_map['{key}'] = {value.name} is from a different graph "
                             "than the one being imported into.")
        out[canon] = value
    unused = [k for k in out if _split_input(k)[0] not in by_name]
    if unused:
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: {unused}")
    return out


def _resolve_returns(return_elements, by_name: dict) -> list:
    specs = []
    for spec in return_elements:
        if not isinstance(spec, str):
            raise TypeError(f"return_elements must be names (str), got {spec!r}.")
        name, index, _ = _split_input(spec)
        if name not in by_name:
            kind = "tensor" if ":" in spec else "operation"
            raise ValueError(f"Requested return {kind} '{spec}' not found in graph def.")
        specs.append((name, index if ":" in spec else None))
    return specs


def import_graph_def(graph_def: GraphDef, input_map=None, return_elements=None, name=None,
                     op_dict=None, producer_op_list=None):
    """Add the ops of `graph_def` to the default graph, under the name prefix `name`.

    `name` defaults to "import" (made unique, inside the current name scope); `name=""`
    imports the names unchanged.  `input_map` maps tensor names of the GraphDef ("x:0", "x",
    or "^x" for a control input) to tensors (operations) of the default graph, which
    replace them as inputs.  Returns the tensors ("y:0") and operations ("train") named in
    `return_elements`, in order, or None.  `op_dict` and `producer_op_list` are accepted and
    ignored, as in TensorFlow.  Raises ValueError for an invalid GraphDef, NotFoundError
    for an op type flowjit does not know.
    """
    from ...ops import registry  # a leaf module: the op table

    if not isinstance(graph_def, GraphDef):
        raise TypeError(f"graph_def must be a GraphDef, got {type(graph_def).__name__}.")
    if graph_def.versions.min_consumer > FORMAT_VERSION:
        raise ValueError(f"This graph_def needs a reader of format version "
                         f">= {graph_def.versions.min_consumer}; this flowjit reads "
                         f"{FORMAT_VERSION}.")
    graph = get_default_graph()
    nodes = list(graph_def.node)
    by_name = {}
    for n in nodes:
        if not isinstance(n.name, str) or not _VALID_NAME.match(n.name):
            raise ValueError(f"graph_def has an invalid node name {n.name!r}.")
        if n.name in by_name:
            raise ValueError(f"graph_def has two nodes named '{n.name}'.")
        by_name[n.name] = n
    op_defs = {}
    for n in nodes:
        try:
            op_defs[n.name] = registry.lookup(n.op)
        except NotFoundError as e:
            raise NotFoundError(None, None, f"{e.message} (needed by node '{n.name}' of the "
                                            "graph_def being imported)") from None
    order = _dependency_order(nodes, by_name)
    mapped = _prepare_input_map(input_map, graph, by_name)
    returns = _resolve_returns(return_elements or [], by_name)

    with graph.name_scope("import" if name is None else name) as prefix:
        clashes = [prefix + n.name for n in nodes if prefix + n.name in graph]
        if clashes:
            raise ValueError(f"Cannot import graph_def: the graph already has operations "
                             f"named {clashes[:5]}; pass another `name` prefix.")
        created = {}
        for n in order:
            created[n.name] = _import_node(graph, n, op_defs[n.name], prefix, created, mapped)

    results = []
    for op_name, index in returns:
        op = created[op_name]
        if index is None:
            results.append(op)
        elif index >= len(op.outputs):
            raise ValueError(f"Requested return tensor '{op_name}:{index}' not found in graph "
                             f"def: '{op_name}' has {len(op.outputs)} outputs.")
        else:
            results.append(op.outputs[index])
    return results if return_elements is not None else None


def _import_node(graph: Graph, node: NodeDef, op_def, prefix: str, created: dict,
                 mapped: dict) -> Operation:
    inputs, controls = [], []
    for spec in node.input:
        producer, index, control = _split_input(spec)
        if control:
            controls.append(mapped.get(f"^{producer}", created[producer]))
            continue
        source = created[producer]
        if index >= len(source.outputs):
            raise ValueError(f"graph_def is invalid at node '{node.name}': input '{spec}' asks "
                             f"for output {index} of '{producer}', which has "
                             f"{len(source.outputs)} outputs.")
        original = source.outputs[index]
        t = mapped.get(f"{producer}:{index}", original)
        if t.dtype is not original.dtype:
            raise ValueError(f"Input {len(inputs)} of node {prefix}{node.name} was passed "
                             f"{t.dtype.name} from {t.name} incompatible with expected "
                             f"{original.dtype.name}.")
        inputs.append(t)
    attrs = dict(node.attr)
    shapes = attrs.pop(_SHAPES_ATTR, None)
    device = graph.device(node.device) if node.device else contextlib.nullcontext()
    with device:
        op = graph.create_op(op_def, inputs, attrs, prefix + node.name + "/",
                             control_inputs=controls)
    if isinstance(shapes, (list, tuple)) and len(shapes) == len(op.outputs):
        for t, s in zip(op.outputs, shapes):
            t.set_shape(s)  # refine with the shapes recorded by as_graph_def(add_shapes=True)
    return op

