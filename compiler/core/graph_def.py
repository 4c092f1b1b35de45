"""Serialized graphs: TensorFlow's `GraphDef` protobuf, written from a flowjit Graph.

`GraphDef`, `NodeDef` and `VersionDef` are the protobuf message classes of protos/ (the wire
format of TensorFlow's graph.proto, node_def.proto and versions.proto), so
`SerializeToString`/`ParseFromString` and `google.protobuf.text_format` read and write the
files TensorFlow reads and writes.  A node's inputs use TensorFlow's spelling: "op" for
output 0, "op:i" for output i, "^op" for a control input (control inputs last); its attrs
are `AttrValue`s (compiler/core/attr_values.py).  Writing adds the type attrs TensorFlow's
definition of the op type needs ("T", "Tidx", "N", ...; compiler/core/tf_signatures.py), so
TensorFlow imports a graph of the op types both have.

Importing (`import_graph_def`) needs the op table, so it sits above ops in
`compiler/graph_import.py`; this module only writes and reads the description.
"""

from __future__ import annotations

from google.protobuf import text_format
from google.protobuf.message import DecodeError

from ...protos import GraphDef, NodeDef, VersionDef
from .attr_values import from_attr_value, to_attr_value
from .graph import Graph, Operation, Tensor
from .tf_signatures import attr_type, tf_output_count, type_attrs

__all__ = ["GraphDef", "NodeDef", "VersionDef", "DecodeError", "GRAPH_DEF_VERSION",
           "graph_to_graph_def", "node_def_for", "node_attrs", "parse_text", "parse_graph_def"]

# The GraphDef version of the TensorFlow (2.21) whose op interfaces flowjit writes
# (tf_signatures_data.py); a GraphDef asking for a newer reader (min_consumer) is refused.
GRAPH_DEF_VERSION = 2474
_SHAPES_ATTR = "_output_shapes"


def _input_name(t: Tensor) -> str:
    return t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"


def _attr_value(op_type: str, node_name: str, key: str, value):
    try:
        return to_attr_value(value, attr_type(op_type, key))
    except (TypeError, ValueError) as e:
        raise TypeError(f"Node '{node_name}' ({op_type}): attr '{key}' cannot be written to "
                        f"a GraphDef: {e}.") from None


def node_def_for(op: Operation, add_shapes: bool = False) -> NodeDef:
    """The NodeDef describing `op`, with TensorFlow's type attrs added where it needs them."""
    node = NodeDef(name=op.name, op=op.type, device=op.device)
    node.input.extend([_input_name(t) for t in op.inputs]
                      + [f"^{c.name}" for c in op.control_inputs])
    attrs = dict(op.attrs)
    attrs.update(type_attrs(op.type, attrs, [t.dtype for t in op.inputs],
                            [t.dtype for t in op.outputs]))
    if add_shapes and op.outputs:
        # as many as TensorFlow's op has (ApplyAdam's extra outputs are flowjit's own)
        attrs[_SHAPES_ATTR] = [t.shape for t in op.outputs][:tf_output_count(op.type)]
    for key in sorted(attrs):
        node.attr[key].CopyFrom(_attr_value(op.type, op.name, key, attrs[key]))
    return node


def graph_to_graph_def(graph: Graph, add_shapes: bool = False) -> GraphDef:
    """Describe every op of `graph`, in creation order (which is a dependency order).

    flowjit's SumToShape (the adjoint of broadcasting in its gradients) is written as the
    four ops TensorFlow's gradients use for it, so TensorFlow can run flowjit's training
    graphs; the last carries the attr `_flowjit_op: "SumToShape"` and importing into
    flowjit folds the four back into one op (compiler/graph_import_folds.py).  (Should the
    graph already hold an op of a helper's name, the SumToShape is written as it is.)
    """
    graph_def = GraphDef(versions=VersionDef(producer=GRAPH_DEF_VERSION))
    names = {op.name for op in graph.get_operations()}
    for op in graph.get_operations():
        if op.type == "SumToShape" and not names & {op.name + suffix for suffix in
                                                    ("/Shape", "/BroadcastGradientArgs",
                                                     "/Sum")}:
            graph_def.node.extend(_sum_to_shape_nodes(op, add_shapes))
        else:
            graph_def.node.append(node_def_for(op, add_shapes))
    return graph_def


EXPANDED_OP_ATTR = "_flowjit_op"


def _sum_to_shape_nodes(op: Operation, add_shapes: bool) -> list:
    """Shape(x), BroadcastGradientArgs(Shape, target), Sum(x, axes:1, keep_dims) and
    Reshape(Sum, target), named under the op's name, the Reshape taking its name."""
    x, target = op.inputs
    name, index_type = op.name, target.dtype

    def node(suffix, op_type, inputs, **attrs):
        out = NodeDef(name=name + suffix, op=op_type, device=op.device, input=inputs)
        for key, value in sorted(attrs.items()):
            out.attr[key].CopyFrom(to_attr_value(value, attr_type(op_type, key)))
        return out

    shape = node("/Shape", "Shape", [_input_name(x)] + [f"^{c.name}" for c in
                                                        op.control_inputs],
                 T=x.dtype, out_type=index_type)
    axes = node("/BroadcastGradientArgs", "BroadcastGradientArgs",
                [shape.name, _input_name(target)], T=index_type)
    total = node("/Sum", "Sum", [_input_name(x), axes.name + ":1"], T=x.dtype,
                 Tidx=index_type, keep_dims=True)
    attrs = {"T": x.dtype, "Tshape": index_type, EXPANDED_OP_ATTR: "SumToShape"}
    if add_shapes:
        attrs[_SHAPES_ATTR] = [op.outputs[0].shape]
    return [shape, axes, total, node("", "Reshape", [total.name, _input_name(target)],
                                     **attrs)]


def node_attrs(node: NodeDef) -> dict:
    """A NodeDef's attrs as the Python values flowjit's ops take (TypeError naming the node
    and attr for a value flowjit cannot represent)."""
    out = {}
    for key in sorted(node.attr):
        try:
            out[key] = from_attr_value(node.attr[key])
        except (TypeError, ValueError) as e:
            raise TypeError(f"Node '{node.name}' ({node.op}): attr '{key}': {e}") from None
    return out


def parse_text(text) -> GraphDef:
    """Parse the text form (`text_format`, `write_graph(..., as_text=True)`)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    graph_def = GraphDef()
    try:
        text_format.Parse(text, graph_def)
    except text_format.ParseError as e:
        raise DecodeError(f"not a GraphDef in text form: {e}") from None
    return graph_def


def parse_graph_def(data) -> GraphDef:
    """A GraphDef from the binary form or the text form (what `write_graph` writes either
    way); DecodeError when `data` is neither.

    A binary GraphDef starts with a field tag (0x0a, 0x12, 0x1a or 0x22), never a letter,
    so data starting with a letter or "#" is text; other data is tried as binary first and,
    failing that, as text (text may start with blank lines).
    """
    data = bytes(data)
    if data[:1].isalpha() or data[:1] == b"#":
        return _parse_text_bytes(data)
    graph_def = GraphDef()
    try:
        graph_def.ParseFromString(data)
        return graph_def
    except DecodeError as e:
        if data[:1].isspace():
            return _parse_text_bytes(data)
        raise DecodeError(f"not a binary GraphDef: {e}") from None


def _parse_text_bytes(data: bytes) -> GraphDef:
    try:
        return parse_text(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise DecodeError(f"not a GraphDef: text that is not UTF-8 ({e})") from None
