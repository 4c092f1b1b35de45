"""Graph views for notebooks: a flowjit Graph as HTML with inline SVG, or as a PNG.

`render_html(graph, session=None)` is what `Graph._repr_html_` shows in Jupyter (the root
package registers it with compiler/core/display.py; docs/architecture.md, "Graph views in
notebooks"):
- the top-level view, with each name scope (op names split at "/") collapsed to one block
  labelled with the scope's name and op count; under it one `<details>` section per scope
  holding that scope's own view, recursively (plain HTML, no script, so it shows in
  untrusted notebooks and in saved HTML too);
- an op whose name is also a scope (`Variable` beside `Variable/read`) sits inside it;
- edges between blocks stand for all the tensors (solid) and control edges (dashed)
  between their ops; a view of a scope shows the neighbours outside it as grey stubs;
  loop back edges (NextIteration -> Merge) are drawn upwards in orange;
- fill colour: the device (the op's requested device, or where the session placed it),
  and, with a `session` that has run steps of the graph, its compiled clusters: the ops of
  one cluster share a colour (the legend names it and says whether it runs compiled); the
  border keeps the device's colour.  A collapsed block's bar shows the colours inside it.
The layout is client/graph_layout.py's.  Both the SVG and the PNG (`save_png`, matplotlib's
Agg canvas, imported only there) draw the same list of shapes (client/graph_shapes.py).
"""

from __future__ import annotations

import collections
import html
import itertools

from ..compiler.core.display import register_html_renderer
from ..compiler.core.graph import Graph
from ..compiler.core.session_hook import get_default_session
from ..runtime.clustering import ClusterStep
from . import graph_shapes
from .graph_layout import layered_layout

__all__ = ["render_html", "render_svg", "save_png", "register_notebook_display"]

MAX_STUBS = 12    # neighbours outside a scope drawn in its view (the best connected)
_LOCAL_PREFIX = "/job:localhost/replica:0/task:0"
_DEVICE_FILLS = ("#dbeafe", "#fde68a", "#dcfce7", "#fce7f3", "#e9d5ff", "#ccfbf1", "#fee2e2")
_DEVICE_STROKES = ("#2563eb", "#b45309", "#15803d", "#be185d", "#6d28d9", "#0f766e", "#b91c1c")
_CLUSTER_FILLS = ("#f59e0b", "#34d399", "#a78bfa", "#f472b6", "#38bdf8", "#fb923c", "#a3e635",
                  "#2dd4bf", "#facc15", "#c084fc", "#fb7185", "#4ade80")
_ids = itertools.count()


class _Colours:
    """Each op's fill (its cluster's colour, else its device's) and border (its device's),
    and the legend of both."""

    def __init__(self, ops, session):
        self.device_of, self.cluster_of, self.clusters = {}, {}, {}
        for placed in _placements(session):
            for op, device in placed.items():
                self.device_of.setdefault(op, getattr(device, "name", str(device)))
        for node in _plan_nodes(session):
            name = _cluster_name(node)
            if name is None:
                continue
            members = [op for op in node.ops if op not in self.cluster_of]
            if name not in self.clusters:
                fill = _CLUSTER_FILLS[len(self.clusters) % len(_CLUSTER_FILLS)]
                self.clusters[name] = [fill, 0, _cluster_status(node)]
            for op in members:
                self.cluster_of[op] = name
            self.clusters[name][1] += len(members)
        for op in ops:
            self.device_of[op] = _short(self.device_of.get(op) or op.device)
        names = sorted({d for d in self.device_of.values() if d})
        self.devices = {d: (_DEVICE_FILLS[i % 7], _DEVICE_STROKES[i % 7])
                        for i, d in enumerate(names)}

    def fill(self, op) -> str:
        cluster = self.cluster_of.get(op)
        if cluster is not None:
            return self.clusters[cluster][0]
        return self.devices.get(self.device_of.get(op), ("#ffffff",))[0]

    def stroke(self, op) -> str:
        return self.devices.get(self.device_of.get(op), (None, "#6b7280"))[1]

    def legend(self) -> list:
        """[(fill, stroke, label)]: the devices, then the clusters."""
        items = [(f, s, f"device {d}") for d, (f, s) in self.devices.items()]
        if items and any(not d for d in self.device_of.values()):
            items.append(("#ffffff", "#6b7280", "no device"))
        items += [(f, "#374151", f"{name}: {_plural(n, 'op')}, {status}")
                  for name, (f, n, status) in self.clusters.items() if n]
        return items


def _plan_nodes(session) -> list:
    """The nodes of every plan `session` has run (runtime/session.py, Session.explain)."""
    if session is None:
        return []
    nodes = [n for plan in getattr(session, "_plans", {}).values()
             for n in getattr(plan, "ops", ())]
    for plan in getattr(session, "_multi_plans", {}).values():
        nodes += [n for p in getattr(plan, "plans", ()) for n in getattr(p, "nodes", ())]
    return nodes


def _placements(session) -> list:
    if session is None:
        return []
    found = list(getattr(session, "_placements", {}).values())
    return found + [getattr(p, "placement", {}) for p in
                    getattr(session, "_multi_plans", {}).values()]


def _cluster_name(node):
    if isinstance(node, ClusterStep):
        return node.name
    if hasattr(node, "loop") and hasattr(node, "ops"):   # a LoopStep (runtime/loop_steps.py)
        return f"loop {node.name}"
    return None


def _cluster_status(node) -> str:
    kernels = getattr(node, "kernels", None) or getattr(getattr(node, "whole", None),
                                                        "kernels", None)
    entries = getattr(kernels, "entries", {})
    return "compiled" if any(e is not None for e in entries.values()) \
        else "reference kernels"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _short(device: str) -> str:
    return device[len(_LOCAL_PREFIX):] if device.startswith(_LOCAL_PREFIX) else device


class _Scopes:
    """The name-scope tree of a graph's ops and, per scope, the edges of its view."""

    def __init__(self, ops):
        self.ops = ops
        scopes = set()
        for op in ops:
            parts = op.name.split("/")
            scopes.update("/".join(parts[:k]) for k in range(1, len(parts)))
        self.scopes = scopes
        self.path = {}     # op -> the scopes holding it, outermost ("") first
        self.members = collections.defaultdict(list)
        self.children = collections.defaultdict(dict)   # scope -> {child key: None}, ordered
        for op in ops:
            parts = op.name.split("/")
            path = [""] + ["/".join(parts[:k]) for k in range(1, len(parts))]
            if op.name in scopes:
                path.append(op.name)
            self.path[op] = path
            for i, s in enumerate(path):
                self.members[s].append(op)
                self.children[s][self._rep(op, path, i)] = None
        self.edges = collections.defaultdict(dict)   # scope -> {(src, dst): _Edge}
        for v in ops:
            for t in v.inputs:
                self._add(t.op, v, False, t.name, t.op.type == "NextIteration")
            for c in v.control_inputs:
                self._add(c, v, True, "^" + c.name)

    @staticmethod
    def _rep(op, path, i) -> str:
        """The key of the node standing for `op` in the view of scope `path[i]`."""
        return "s:" + path[i + 1] if i + 1 < len(path) else "o:" + op.name

    def _add(self, u, v, control, label, loop=False):
        cu, cv = self.path[u], self.path[v]
        m = 0
        while m < min(len(cu), len(cv)) and cu[m] == cv[m]:
            m += 1
        self._edge(cu[m - 1], self._rep(u, cu, m - 1), self._rep(v, cv, m - 1), control, label,
                   loop)
        stub_v = "x:" + (cv[m] if m < len(cv) else v.name)
        stub_u = "x:" + (cu[m] if m < len(cu) else u.name)
        for i in range(m, len(cu)):
            self._edge(cu[i], self._rep(u, cu, i), stub_v, control, label, loop)
        for i in range(m, len(cv)):
            self._edge(cv[i], stub_u, self._rep(v, cv, i), control, label, loop)

    def _edge(self, scope, src, dst, control, label, loop=False):
        if src == dst:
            return
        edge = self.edges[scope].get((src, dst))
        if edge is None:
            edge = self.edges[scope][(src, dst)] = _Edge()
        edge.loop = (edge.loop or not edge.count) and loop
        edge.count += 1
        edge.data = edge.data or not control
        if len(edge.names) < 6:
            edge.names.append(label)


class _Edge:
    """What one drawn edge stands for: how many tensors and control edges, whether any is
    data, whether all come from a loop's NextIteration (a back edge), a few names."""

    __slots__ = ("count", "data", "loop", "names")

    def __init__(self):
        self.count, self.data, self.loop, self.names = 0, False, False, []


def _without_implied(edges) -> list:
    """`edges` less the control-only edges another path already implies (the order they
    ask for holds anyway): the transitive reduction of the control edges, for readability."""
    if len(edges) > 3000:
        return edges
    succ = collections.defaultdict(list)
    for s, d, _ in edges:
        succ[s].append(d)
    kept = []
    for s, d, e in edges:
        if e.data or not _reaches(succ, s, d):
            kept.append((s, d, e))
    return kept


def _reaches(succ, s, d) -> bool:
    """Whether `d` is reachable from `s` by a path of two or more edges."""
    seen = set()
    stack = [m for m in succ[s] if m != d]
    while stack:
        n = stack.pop()
        if n == d:
            return True
        if n not in seen:
            seen.add(n)
            stack.extend(succ[n])
    return False


class _Model:
    """A graph with its scope tree and colours: what every view of it is drawn from."""

    def __init__(self, graph, session=None, max_nodes: int = 150):
        if session is not None and getattr(session, "graph", graph) is not graph:
            raise ValueError("The session runs a different graph than the one to draw.")
        self.graph = graph
        self.tree = _Scopes(graph.get_operations())
        self.colours = _Colours(self.tree.ops, session)
        self.max_nodes = max_nodes
        self.by_name = {op.name: op for op in self.tree.ops}

    def view(self, scope: str):
        """(nodes, edges, how many children were left out, how many control edges others
        imply) of one scope's view: nodes are graph_shapes.Node, edges (src key, dst key,
        _Edge)."""
        if scope and scope not in self.tree.scopes:
            raise KeyError(f"no name scope {scope!r} in the graph")
        keys = list(self.tree.children.get(scope, {}))
        left_out = max(0, len(keys) - self.max_nodes)
        keys = keys[:self.max_nodes]
        shown = set(keys)
        edges = self.tree.edges.get(scope, {})
        weight = collections.Counter()
        for (src, dst), e in edges.items():
            for a, b in ((src, dst), (dst, src)):
                if a.startswith("x:") and b in shown:
                    weight[a] += e.count
        stubs = [k for k, _ in weight.most_common(MAX_STUBS)]
        shown.update(stubs)
        nodes = [self._node(k, scope) for k in keys + stubs]
        kept = [(s, d, e) for (s, d), e in edges.items() if s in shown and d in shown]
        drawn = _without_implied(kept)
        return nodes, drawn, left_out, len(kept) - len(drawn)

    def _node(self, key, scope):
        kind, name = key[0], key[2:]
        local = name[len(scope) + 1:] if scope and name.startswith(scope + "/") else name
        if kind == "o":
            op = self.by_name[name]
            if name == scope:   # the op the scope is named after (`Variable` in `Variable/`)
                local = name.rsplit("/", 1)[-1]
            colours = self.colours
            shapes = ", ".join(f"{t.dtype.name}{t.shape}" for t in op.outputs)
            title = (f"{op.name} ({op.type})\ndevice: {colours.device_of.get(op) or 'none'}"
                     + (f"\ncluster: {colours.cluster_of[op]}" if op in colours.cluster_of
                        else "") + (f"\noutputs: {shapes}" if shapes else ""))
            return graph_shapes.Node(key, "op", local, op.type if op.type != local else "",
                                     title, colours.fill(op), colours.stroke(op))
        if kind == "s":
            members = self.tree.members[name]
            bar = collections.Counter(self.colours.fill(op) for op in members)
            if set(bar) == {"#ffffff"}:
                bar.clear()   # nothing coloured inside: no bar
            ops = _plural(len(members), "op")
            return graph_shapes.Node(key, "scope", local, ops, f"name scope {name}: {ops}",
                                     "#f8fafc", "#334155", count=len(members),
                                     bar=sorted(bar.items(), key=lambda kv: -kv[1]))
        return graph_shapes.Node(key, "stub", name, "", f"outside this scope: {name}",
                                 "#f9fafb", "#9ca3af")

    def shapes(self, scope: str, legend: bool) -> tuple:
        """(shapes, width, height) of one view, laid out: graph_shapes' drawing list."""
        nodes, edges, left_out, implied = self.view(scope)
        for n in nodes:
            n.measure()
        layout = layered_layout({n.key: (n.width, n.height) for n in nodes},
                                [(s, d) for s, d, _ in edges],
                                [i for i, (_, _, e) in enumerate(edges) if e.loop])
        count = len(self.tree.members.get(scope, ())) if scope else len(self.tree.ops)
        header = (f"name scope {scope}" if scope else "top level") + f": {_plural(count, 'op')}"
        if implied:
            header += f"; {implied} control edges that other paths imply not drawn"
        if left_out:
            header += f" ({left_out} more nodes not drawn: max_nodes={self.max_nodes})"
        used = {c for n in nodes if n.kind == "op" for c in (n.fill, n.stroke)}
        used.update(f for n in nodes for f, _ in n.bar)
        items = [i for i in self.colours.legend() if i[0] in used or i[1] in used]
        return graph_shapes.draw(nodes, edges, layout, header, items if legend else [])


def render_svg(graph, session=None, scope: str = "", max_nodes: int = 150) -> str:
    """One view of `graph` as a standalone SVG document: the top level (scopes collapsed),
    or the view inside name scope `scope`, with the legend of devices and clusters."""
    model = _Model(graph, session, max_nodes)
    shapes, width, height = model.shapes(scope, legend=True)
    return graph_shapes.to_svg(shapes, width, height, f"fj{next(_ids)}")


def render_html(graph, session=None, max_nodes: int = 150, max_scopes: int = 300) -> str:
    """`graph` as self-contained HTML (inline SVG, no script): a summary line, the legend,
    the top-level view with name scopes collapsed, then a `<details>` section per scope
    with its own view, nested like the scopes (at most `max_scopes` sections)."""
    model = _Model(graph, session, max_nodes)
    tree, prefix = model.tree, f"fj{next(_ids)}"
    top = [k[2:] for k in tree.children.get("", {}) if k.startswith("s:")]
    summary = f"flowjit Graph: {len(tree.ops)} ops, {len(top)} top-level name scopes"
    if session is not None:
        summary += f"; {len(model.colours.clusters)} clusters in the session's plans"
    out = [f'<div class="flowjit-graph" style="font-family:sans-serif;font-size:13px">'
           f"<div><b>{html.escape(summary)}</b></div>"]
    legend = model.colours.legend()
    if legend:
        out.append('<div style="margin:4px 0">' + " ".join(
            f'<span style="display:inline-block;margin-right:12px"><span style="display:'
            f"inline-block;width:14px;height:10px;background:{f};border:2px solid {s};"
            f'vertical-align:middle"></span> {html.escape(label)}</span>'
            for f, s, label in legend) + "</div>")
    if tree.ops:
        shapes, width, height = model.shapes("", legend=False)
        out.append(graph_shapes.to_svg(shapes, width, height, prefix + "t"))
    budget = [max_scopes]

    def section(scope, depth):
        if budget[0] <= 0:
            return '<div style="color:#6b7280">(more scopes not shown: max_scopes)</div>'
        budget[0] -= 1
        shapes, width, height = model.shapes(scope, legend=False)
        inner = [k[2:] for k in tree.children[scope] if k.startswith("s:")]
        body = graph_shapes.to_svg(shapes, width, height, f"{prefix}s{budget[0]}")
        body += "".join(section(s, depth + 1) for s in inner)
        name = scope.rsplit("/", 1)[-1] if depth else scope
        return (f'<details data-scope="{html.escape(scope)}" style="margin:4px 0 4px '
                f'{14 if depth else 0}px"><summary>name scope <b>{html.escape(name)}</b>'
                f" ({_plural(len(tree.members[scope]), 'op')})</summary>{body}</details>")

    out.extend(section(s, 0) for s in top)
    out.append("</div>")
    return "".join(out)


def save_png(graph, path, session=None, scope: str = "", max_nodes: int = 150,
             dpi: int = 150) -> str:
    """Draw the view of `render_svg` (the top level, or name scope `scope`) into a PNG file
    at `path` with matplotlib's Agg canvas; returns `path`."""
    model = _Model(graph, session, max_nodes)
    shapes, width, height = model.shapes(scope, legend=True)
    graph_shapes.to_png(shapes, width, height, path, dpi)
    return path


def notebook_html(graph) -> str:
    """`Graph._repr_html_`: render_html, coloured by the default session's clusters when
    that session runs this graph."""
    session = get_default_session()
    return render_html(graph, session if getattr(session, "graph", None) is graph else None)


def register_notebook_display() -> None:
    """Make `Graph._repr_html_` show `notebook_html` (compiler/core/display.py)."""
    register_html_renderer(Graph, notebook_html)
