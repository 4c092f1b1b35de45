"""The graph's global step: the int64 variable training loops count steps with
(`tf.train.get_global_step`; train.py creates it, the session hooks read it)."""

from __future__ import annotations

from ..compiler.core.graph import GraphKeys, get_default_graph


def get_global_step(graph=None):
    """The graph's global-step variable (GLOBAL_STEP collection, else the tensor
    "global_step:0"), or None when it has none."""
    graph = graph if graph is not None else get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) > 1:
        raise TypeError(f"Multiple tensors in the {GraphKeys.GLOBAL_STEP!r} collection: "
                        f"{[v.name for v in found]}.")
    if found:
        return found[0]
    try:
        return graph.get_tensor_by_name("global_step:0")
    except KeyError:
        return None
