"""MetaGraphDef: a graph with its collections, as `tf.train.export_meta_graph` writes it.

A MetaGraphDef (protos/) holds the GraphDef and the graph's collections by name, so a
program can rebuild a model it did not build: `train.import_meta_graph("model.ckpt.meta")`
adds the ops, refills the collections (variables become `Variable` objects again, over the
imported ops), and returns a `Saver` for them, after which `saver.restore(sess, prefix)`
loads the checkpoint.  `Saver.save` writes `<prefix>.meta` next to each checkpoint.

Collections are written as TensorFlow writes them: Variables as serialized `VariableDef`s
(a bytes list), Tensors and Operations by name (a node list), strings, ints and floats as
such lists; values of other kinds are left out (TensorFlow does the same, with a warning).
"""

from __future__ import annotations

import logging
import os

from google.protobuf import text_format

from .. import gfile as _gfile
from .._version import __version__
from ..compiler.core.graph import Graph, GraphKeys, Operation, Tensor, get_default_graph
from ..compiler.core.graph_def import DecodeError
from ..compiler.graph_import import import_graph_def
from ..ops.variables import Variable
from ..protos import CollectionDef, MetaGraphDef, VariableDef

log = logging.getLogger("flowjit")

# collections whose values are Variables (TensorFlow's `variables`, `trainable_variables`,
# `local_variables`, `model_variables`, `moving_average_variables`)
VARIABLE_COLLECTIONS = frozenset({GraphKeys.GLOBAL_VARIABLES, GraphKeys.TRAINABLE_VARIABLES,
                                  "local_variables", "model_variables",
                                  "moving_average_variables"})


def _strip(name: str, scope) -> str:
    if scope and name.startswith(scope.rstrip("/") + "/"):
        return name[len(scope.rstrip("/")) + 1:]
    return name


def _collection_def(key: str, values, export_scope) -> CollectionDef | None:
    """The CollectionDef of one collection, or None when its values have no form."""
    out = CollectionDef()
    if all(isinstance(v, Variable) for v in values):
        out.bytes_list.value.extend(v.to_proto(export_scope).SerializeToString()
                                    for v in values)
    elif all(isinstance(v, (Tensor, Operation)) for v in values):
        out.node_list.value.extend(_strip(v.name, export_scope) for v in values)
    elif all(isinstance(v, (str, bytes)) for v in values):
        out.bytes_list.value.extend(v.encode() if isinstance(v, str) else v for v in values)
    elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        out.int64_list.value.extend(values)
    elif all(isinstance(v, float) for v in values):
        out.float_list.value.extend(values)
    else:
        log.warning("flowjit: collection %r holds values a MetaGraphDef cannot record "
                    "(%s); it is left out.", key, sorted({type(v).__name__ for v in values}))
        return None
    return out


def export_meta_graph(filename=None, meta_info_def=None, graph_def=None, saver_def=None,
                      collection_list=None, as_text: bool = False, graph=None,
                      export_scope=None, clear_devices: bool = False, **kwargs) -> MetaGraphDef:
    """The MetaGraphDef of `graph` (the default graph) with its collections (all, or
    `collection_list`); written to `filename` (atomically; text form with `as_text`) when
    given.  `meta_info_def`, `saver_def` and `graph_def` replace the parts built here."""
    graph = graph or get_default_graph()
    meta = MetaGraphDef()
    meta.meta_info_def.meta_graph_version = f"flowjit {__version__}"
    if meta_info_def is not None:
        meta.meta_info_def.MergeFrom(meta_info_def)
    meta.graph_def.CopyFrom(graph_def if graph_def is not None else graph.as_graph_def())
    if export_scope:
        prefix = export_scope.rstrip("/") + "/"
        kept = [n for n in meta.graph_def.node if n.name.startswith(prefix)]
        del meta.graph_def.node[:]
        for node in kept:
            node.name = node.name[len(prefix):]
            node.input[:] = [("^" if i.startswith("^") else "") + _strip(i.lstrip("^"), prefix)
                             for i in node.input]
        meta.graph_def.node.extend(kept)
    if clear_devices:
        for node in meta.graph_def.node:
            node.device = ""
    if saver_def is not None:
        meta.saver_def.CopyFrom(saver_def)
    keys = collection_list if collection_list is not None else graph.get_all_collection_keys()
    for key in keys:
        values = [v for v in graph.get_collection(key)
                  if not export_scope or _strip(v.name, export_scope) != v.name]
        if values:
            entry = _collection_def(key, values, export_scope)
            if entry is not None:
                meta.collection_def[key].CopyFrom(entry)
    if filename is not None:
        data = text_format.MessageToString(meta) if as_text else meta.SerializeToString()
        _gfile.MakeDirs(os.path.dirname(os.path.abspath(filename)))
        _gfile.atomic_write_string_to_file(os.fspath(filename), data)
    return meta


def read_meta_graph_file(filename) -> MetaGraphDef:
    """A MetaGraphDef from a file in the binary or text form."""
    with _gfile.GFile(os.fspath(filename), "rb") as f:
        data = f.read()
    meta = MetaGraphDef()
    try:
        meta.ParseFromString(data)
        return meta
    except DecodeError:
        pass
    try:
        text_format.Parse(data.decode("utf-8"), meta)
    except (text_format.ParseError, UnicodeDecodeError) as e:
        raise DecodeError(f"{filename} is not a MetaGraphDef: {e}") from None
    return meta


def import_meta_graph_def(meta_graph_or_file, clear_devices: bool = False,
                          import_scope=None, input_map=None) -> list:
    """Import a MetaGraphDef (or the file holding one) into the default graph and refill
    its collections; returns the imported Variables (the global ones, else all)."""
    meta = meta_graph_or_file if isinstance(meta_graph_or_file, MetaGraphDef) else \
        read_meta_graph_file(meta_graph_or_file)
    graph_def = meta.graph_def
    if clear_devices:
        graph_def = type(graph_def)()
        graph_def.CopyFrom(meta.graph_def)
        for node in graph_def.node:
            node.device = ""
    graph: Graph = get_default_graph()
    import_graph_def(graph_def, input_map=input_map, name=import_scope or "")
    prefix = f"{import_scope.rstrip('/')}/" if import_scope else ""
    variables: dict = {}
    for key in sorted(meta.collection_def):
        entry = meta.collection_def[key]
        kind = entry.WhichOneof("kind")
        if kind == "node_list":
            for name in entry.node_list.value:
                graph.add_to_collection(key, graph.as_graph_element(prefix + name))
        elif kind == "bytes_list" and key in VARIABLE_COLLECTIONS:
            for raw in entry.bytes_list.value:
                from_def = VariableDef.FromString(raw)
                var = variables.get(from_def.variable_name)
                if var is None:
                    var = variables[from_def.variable_name] = Variable.from_proto(
                        from_def, import_scope)
                graph.add_to_collection(key, var)
        elif kind == "bytes_list":
            for raw in entry.bytes_list.value:
                graph.add_to_collection(key, raw)
        elif kind in ("int64_list", "float_list"):
            for value in getattr(entry, kind).value:
                graph.add_to_collection(key, value)
    return list(variables.values())
