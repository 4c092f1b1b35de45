"""Graph views in notebooks (client/graph_view.py, graph_layout.py, graph_shapes.py) and the
jit report's HTML (runtime/report_html.py): scopes collapse, devices and clusters colour,
SVG is well-formed, PNGs are written, and `_repr_html_` works through the core's registry."""

import html
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import flowjit as tf
from flowjit.client import graph_view
from flowjit.client.graph_layout import layered_layout
from flowjit.compiler.core import display
from flowjit.runtime.clustering import ClusterStep
from flowjit.runtime.report_html import python_html

SVG = "{http://www.w3.org/2000/svg}"


def svgs(page: str) -> list:
    """Every inline <svg> of an HTML page, parsed."""
    found = re.findall(r"<svg.*?</svg>", page, flags=re.S)
    assert found
    return [ET.fromstring(s) for s in found]


def groups(svg, kind: str) -> dict:
    """{data-name: <g>} of the nodes of one kind ("op", "scope", "stub") in a parsed SVG."""
    return {g.get("data-name"): g for g in svg.iter(SVG + "g")
            if g.get("class") == f"fj-{kind}"}


def fill(group) -> str:
    return group.find(SVG + "rect").get("fill")


def scoped_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        with tf.name_scope("layer1"):
            h = tf.tanh(x * 2.0)                      # Mul, Mul/y, Tanh
        with tf.name_scope("layer2"):
            with tf.name_scope("inner"):
                h = tf.exp(h) + 1.0                   # Exp, add/y, add
            h = tf.sqrt(h)
        tf.reduce_sum(h, name="total")
    return g


def test_name_scopes_collapse_to_blocks_with_their_op_counts_and_details_sections():
    g = scoped_graph()
    page = graph_view.render_html(g)
    top = svgs(page)[0]
    blocks = groups(top, "scope")
    counts = {name: len([op for op in g.get_operations() if op.name.startswith(name + "/")])
              for name in ("layer1", "layer2")}
    assert counts == {"layer1": 3, "layer2": 4}
    assert {n: int(b.get("data-ops")) for n, b in blocks.items()
            if n in counts} == counts
    # no op inside a scope is drawn at the top level; x is
    assert "x" in groups(top, "op") and not any("/" in n for n in groups(top, "op"))
    assert '<details data-scope="layer1"' in page and '<details data-scope="layer2"' in page
    nested = page.index('<details data-scope="layer2/inner"')
    assert page.index('<details data-scope="layer2"') < nested
    assert "name scope <b>layer1</b> (3 ops)" in page
    # the scope's own view: its ops, and its neighbours outside as stubs
    inner = ET.fromstring(graph_view.render_svg(g, scope="layer2/inner"))
    assert set(groups(inner, "op")) == {"layer2/inner/Exp"}
    assert set(groups(inner, "scope")) == {"layer2/inner/Add"}
    assert set(groups(inner, "stub")) == {"layer1", "layer2/Sqrt"}
    with pytest.raises(KeyError):
        graph_view.render_svg(g, scope="nowhere")


def test_two_devices_get_different_fills_and_the_legend_names_both():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            a = tf.constant(np.ones(3, np.float32), name="a")
        with tf.device("/gpu:0"):
            tf.multiply(a, 2.0, name="b")
    svg = ET.fromstring(graph_view.render_svg(g))
    ops = groups(svg, "op")
    assert fill(ops["a"]) != fill(ops["b"])
    legend = " ".join(t.text for t in svg.iter(SVG + "text"))
    assert "device /device:CPU:0" in legend and "device /device:GPU:0" in legend
    page = graph_view.render_html(g)
    assert "device /device:CPU:0" in page and "device /device:GPU:0" in page


def test_the_ops_of_one_compiled_cluster_share_a_fill_named_in_the_legend():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 8], name="x")
        with tf.name_scope("layer"):
            h = tf.tanh(x * 2.0 + 1.0)
            h = tf.exp(h) - h
        tf.reduce_sum(h, name="total")
    config = tf.ConfigProto(jit=tf.JitOptions.always())
    with tf.Session(graph=g, config=config) as sess:
        sess.run("total:0", {x: np.ones((4, 8), np.float32)})
        (step,) = [n for p in sess._plans.values() for n in p.ops
                   if isinstance(n, ClusterStep)]
        page = graph_view.render_html(g, session=sess)
        layer = ET.fromstring(graph_view.render_svg(g, session=sess, scope="layer"))
    clustered = {op.name for op in step.ops}
    assert {"layer/Tanh", "layer/Exp", "layer/Sub", "total"} <= clustered
    assert "x" not in clustered   # fed: the cluster's input
    ops = groups(layer, "op")
    fills = {fill(ops[n]) for n in ("layer/Tanh", "layer/Exp", "layer/Sub")}
    assert len(fills) == 1
    top = svgs(page)[0]
    assert fill(groups(top, "op")["x"]) not in fills
    assert f"{step.name}: {len(step.ops)} ops, compiled" in page
    # a collapsed scope's bar shows its cluster's colour
    bar = [r.get("fill") for r in groups(top, "scope")["layer"].iter(SVG + "rect")][2:]
    assert bar == list(fills)


def test_save_png_writes_a_png(tmp_path):
    path = tmp_path / "view.png"
    assert graph_view.save_png(scoped_graph(), str(path)) == str(path)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    inner = tmp_path / "inner.png"
    graph_view.save_png(scoped_graph(), str(inner), scope="layer2")
    assert inner.read_bytes()[:4] == b"\x89PNG"


def test_graph_repr_html_goes_through_the_core_registry(monkeypatch):
    assert "flowjit Graph: 0 ops" in tf.Graph()._repr_html_()
    page = scoped_graph()._repr_html_()
    assert page.startswith('<div class="flowjit-graph"') and "<svg" in page
    monkeypatch.setattr(display, "_HTML_RENDERERS", {})
    assert tf.Graph()._repr_html_() is None   # nothing registered: Jupyter's plain repr
    display.register_html_renderer(tf.Graph, lambda g: f"<b>{len(g.get_operations())}</b>")
    assert scoped_graph()._repr_html_() == "<b>10</b>"


def test_a_while_loop_renders_with_its_back_edges_drawn_upwards():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        tf.while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, v * 2.0), [tf.constant(0), x])
    page = graph_view.render_html(g)
    for svg in svgs(page):   # well-formed
        assert svg.tag == SVG + "svg"
    loop = ET.fromstring(graph_view.render_svg(g, scope="while"))
    back = [e for e in loop.iter(SVG + "g") if e.get("class") == "fj-edge fj-back"]
    assert len(back) == 3   # NextIteration -> Merge, one per loop variable
    assert all("NextIteration" in e.find(SVG + "title").text for e in back)


def test_max_nodes_limits_a_view_and_says_so():
    g = tf.Graph()
    with g.as_default():
        v = tf.constant(1.0)
        for _ in range(30):
            v = v + 1.0
    svg = ET.fromstring(graph_view.render_svg(g, max_nodes=10))
    assert len(groups(svg, "op")) + len(groups(svg, "scope")) == 10   # Add/y* are a scope
    assert any("not drawn" in (t.text or "") for t in svg.iter(SVG + "text"))


def test_the_layout_points_edges_down_and_keeps_boxes_apart():
    sizes = {n: (40 + 10 * i, 30) for i, n in enumerate("abcdef")}
    edges = [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("a", "e"), ("e", "f"),
             ("d", "f"), ("f", "a")]   # the last closes a cycle
    lay = layered_layout(sizes, edges)
    assert lay.back == {7}
    for i, (u, v) in enumerate(edges):
        route = lay.routes[i]
        assert route[0][1] != route[-1][1]
        if i not in lay.back:
            assert lay.positions[u][1] < lay.positions[v][1]
    boxes = sorted((y, x - sizes[n][0] / 2, x + sizes[n][0] / 2)
                   for n, (x, y) in lay.positions.items())
    for (y1, _, r1), (y2, l2, _) in zip(boxes, boxes[1:]):
        assert y1 != y2 or r1 < l2
    assert all(0 <= x <= lay.width and 0 <= y <= lay.height for x, y in lay.positions.values())


def test_the_jit_report_renders_every_stage_as_a_collapsible_section():
    def f(a, b):
        return np.tanh(a * b + 1.0).sum(axis=1)

    a = np.ones((4, 5), np.float32)
    lowered = tf.jit(f).lower(a, a)
    page = lowered._repr_html_()
    names = [n for n, _ in lowered.stages.items]
    assert {"graph", "schedule", "source"} <= set(names)
    assert re.findall(r'<details data-stage="([^"]+)"', page) == names
    assert page.index("compiled into one kernel") < page.index("<details")
    assert "(unchanged)" in page or len(set(map(lowered.stage, names))) == len(names)
    source = page[page.index('data-stage="source"'):]
    assert '<span style="color:#7c3aed;font-weight:bold">def</span>' in source
    plain = tf.jit(lambda s: s.tolist(), fallback=True).lower(a)._repr_html_()
    assert "not compiled" in plain and "<details" in plain


def test_python_colouring_keeps_the_text():
    text = 'def k(a):  # a < b & c\n    s = """x\n<y>"""\n    return a + 1.5e3\n'
    coloured = python_html(text)
    assert html.unescape(re.sub(r"<[^>]+>", "", coloured)) == text
    assert '<span style="color:#6b7280"># a &lt; b &amp; c</span>' in coloured
