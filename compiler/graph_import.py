"""`import_graph_def`: rebuild a serialized GraphDef (compiler/core/graph_def.py) in a graph.

Ops are created through `Graph.create_op`, in dependency order, so every imported op runs
its op definition's inference exactly as if built by hand.  Importing needs the op table
(ops/registry.py), so it sits above ops, outside the graph core (docs/architecture.md).
"""

from __future__ import annotations

import contextlib
import heapq

from ..errors import NotFoundError
from ..ops import registry
from ..ops.conversion import convert_to_tensor
from .core.graph import _VALID_NAME, Graph, Operation, Tensor, get_default_graph
from .core import tf_signatures
from .core.graph_def import _SHAPES_ATTR, GRAPH_DEF_VERSION, GraphDef, NodeDef, node_attrs
from .graph_import_folds import fold_sums_to_shapes


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


def _back_edge(node, producer) -> bool:
    """A while loop's back edge: a Merge's input from a NextIteration, which is built after
    the Merge (the import patches it in once both exist)."""
    return node.op == "Merge" and producer.op == "NextIteration"


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
            if not _back_edge(n, by_name[producer]):
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
    if not isinstance(graph_def, GraphDef):
        raise TypeError(f"graph_def must be a GraphDef, got {type(graph_def).__name__}.")
    if graph_def.versions.min_consumer > GRAPH_DEF_VERSION:
        raise ValueError(f"This graph_def needs a reader of GraphDef version "
                         f">= {graph_def.versions.min_consumer}; this flowjit reads "
                         f"{GRAPH_DEF_VERSION}.")
    graph = get_default_graph()
    nodes = fold_sums_to_shapes(list(graph_def.node))
    by_name = {}
    for n in nodes:
        if not isinstance(n.name, str) or not _VALID_NAME.match(n.name):
            raise ValueError(f"graph_def has an invalid node name {n.name!r}.")
        if n.name in by_name:
            raise ValueError(f"graph_def has two nodes named '{n.name}'.")
        by_name[n.name] = n
    op_defs, attrs = _op_definitions(nodes), {}
    for n in nodes:
        unknown = tf_signatures.unknown_attrs(n.op, n.attr)
        if unknown:
            raise ValueError(f"graph_def node '{n.name}' ({n.op}) has attrs {unknown} that "
                             f"neither TensorFlow's nor flowjit's {n.op} defines.")
        attrs[n.name] = node_attrs(n)
    order = _dependency_order(nodes, by_name)
    mapped = _prepare_input_map(input_map, graph, by_name)
    returns = _resolve_returns(return_elements or [], by_name)

    with graph.name_scope("import" if name is None else name) as prefix:
        clashes = [prefix + n.name for n in nodes if prefix + n.name in graph]
        if clashes:
            raise ValueError(f"Cannot import graph_def: the graph already has operations "
                             f"named {clashes[:5]}; pass another `name` prefix.")
        created, back_edges = {}, []
        for n in order:
            created[n.name] = _import_node(graph, n, op_defs[n.name], attrs[n.name], prefix,
                                           created, mapped, back_edges)
        for op, index, producer, output in back_edges:   # loops' Merge <- NextIteration
            inputs = list(op._inputs)
            inputs[index] = created[producer].outputs[output]
            op._inputs = tuple(inputs)

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


def _op_definitions(nodes) -> dict:
    """Each node's OpDef; NotFoundError naming every op type flowjit does not have."""
    op_defs, missing = {}, {}
    for n in nodes:
        try:
            op_defs[n.name] = registry.lookup(n.op)
        except NotFoundError:
            missing.setdefault(n.op, n.name)
    if missing:
        listed = ", ".join(f"{t} (node '{name}')" for t, name in sorted(missing.items()))
        raise NotFoundError(None, None, f"The graph_def uses op types flowjit does not "
                                        f"have: {listed}. `python -m flowjit ops` lists "
                                        "the op types flowjit has.")
    return op_defs


def _import_node(graph: Graph, node: NodeDef, op_def, attrs: dict, prefix: str,
                 created: dict, mapped: dict, back_edges: list) -> Operation:
    inputs, controls, pending = [], [], []
    for spec in node.input:
        producer, index, control = _split_input(spec)
        if control:
            controls.append(mapped.get(f"^{producer}", created[producer]))
            continue
        if producer not in created and node.op == "Merge":   # a back edge: patched later
            pending.append((len(inputs), producer, index))
            inputs.append(None)
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
    stand_in = next((t for t in inputs if t is not None), None)
    inputs = [stand_in if t is None else t for t in inputs]
    attrs = dict(attrs)
    shapes = attrs.pop(_SHAPES_ATTR, None)
    device = graph.device(node.device) if node.device else contextlib.nullcontext()
    with device:
        op = graph.create_op(op_def, inputs, attrs, prefix + node.name + "/",
                             control_inputs=controls)
    back_edges.extend((op, i, producer, index) for i, producer, index in pending)
    if isinstance(shapes, (list, tuple)) and len(shapes) == len(op.outputs):
        for t, s in zip(op.outputs, shapes):
            if s is not None:
                t.set_shape(s)  # refine with the shapes recorded by as_graph_def(add_shapes=True)
    return op

