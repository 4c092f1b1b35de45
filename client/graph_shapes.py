"""Drawing a laid-out graph view: one list of shapes, written out as SVG or as a PNG.

`draw(nodes, edges, layout, header, legend)` turns the boxes and routes of
client/graph_layout.py into a flat list of shapes (rectangles, text, edge curves with their
arrowheads, and groups that carry a node's tooltip and data attributes); `to_svg` writes
that list as an SVG document and `to_png` paints it with matplotlib (its Agg canvas on a
`Figure`, never pyplot's global state), so the notebook's SVG and a saved PNG show the same
picture (docs/architecture.md, "Graph views in notebooks").  Coordinates are SVG pixels,
y pointing down; text positions are the text's vertical centre.
"""

from __future__ import annotations

import dataclasses
import html
import math

HEADER = 26      # the title line above the view
CHAR_LABEL = 7.4  # estimated width of one character of a 12 px bold label
CHAR_SMALL = 6.0  # ... of a 10 px line
MAX_LABEL = 30   # longer labels are shortened with an ellipsis
_EDGE = {"data": ("#64748b", None), "control": ("#a3a3a3", "4,3"), "back": ("#d97706", "5,3")}


@dataclasses.dataclass
class Node:
    """A box of a view: an op ("op"), a collapsed name scope ("scope", with `bar`: the
    [(fill, op count)] inside it) or a neighbour outside the scope ("stub")."""

    key: str
    kind: str
    label: str
    sub: str
    title: str
    fill: str
    stroke: str
    bar: list = dataclasses.field(default_factory=list)
    count: int = 0
    width: float = 0.0
    height: float = 0.0

    def measure(self):
        """Shorten the labels and size the box to hold them."""
        self.label = _shorten(self.label)
        self.sub = _shorten(self.sub)
        char = CHAR_SMALL if self.kind == "stub" else CHAR_LABEL
        self.width = max(len(self.label) * char, len(self.sub) * CHAR_SMALL) + 20
        self.width = max(self.width, 72 if self.kind == "scope" else 44)
        self.height = {"op": 34, "scope": 44, "stub": 24}[self.kind]


def _shorten(text: str) -> str:
    return text if len(text) <= MAX_LABEL else text[:MAX_LABEL - 1] + "\u2026"


def draw(nodes, edges, layout, header: str, legend: list) -> tuple:
    """(shapes, width, height) of a laid-out view (module docstring); `edges` are
    (src key, dst key, edge with .count/.data/.names), in the order `layout` has them."""
    shapes = [("text", 10, HEADER / 2 + 2, header, 13, "bold", "#111827", "start", False)]
    for i, ((src, dst, e), route) in enumerate(zip(edges, layout.routes)):
        kind = "back" if i in layout.back else ("data" if e.data else "control")
        colour, dash = _EDGE[kind]
        width = min(1.2 + 0.7 * math.log2(e.count), 4.0 if e.data else 1.6)
        pts = [(x, y + HEADER) for x, y in route]
        more = f" (+{e.count - len(e.names)} more)" if e.count > len(e.names) else ""
        title = f"{src[2:]} -> {dst[2:]}: " + ", ".join(e.names) + more
        shapes.append(("open", {"class": f"fj-edge fj-{kind}"}, title))
        shapes.extend(_edge_shapes(pts, colour, width, dash))
        shapes.append(("close",))
    for n in nodes:
        cx, cy = layout.positions[n.key]
        shapes.extend(_node_shapes(n, cx, cy + HEADER))
    width, height = layout.width, layout.height + HEADER
    if legend:
        rows, height, right = _legend(legend, max(width, 640), height + 4)
        shapes.extend(rows)
        width = max(width, right + 10)
    return shapes, width, height


def _edge_shapes(pts, colour, width, dash) -> list:
    """A smooth curve through `pts` (Catmull-Rom tangents inside, vertical at both ends),
    ending in an arrowhead at the last point."""
    (x1, y1), y0 = pts[-1], pts[-2][1]
    sign = 1.0 if y1 >= y0 else -1.0
    tip = 7.0 + width
    pts = pts[:-1] + [(x1, y1 - sign * (tip - 1))]
    last = len(pts) - 1
    tangents = [(0.0, pts[1][1] - pts[0][1])]
    tangents += [((pts[i + 1][0] - pts[i - 1][0]) / 2, (pts[i + 1][1] - pts[i - 1][1]) / 2)
                 for i in range(1, last)]
    tangents.append((0.0, pts[last][1] - pts[last - 1][1]))
    segments = []
    for i in range(last):
        (ax, ay), (bx, by) = pts[i], pts[i + 1]
        (tax, tay), (tbx, tby) = tangents[i], tangents[i + 1]
        segments.append(((ax + tax / 3, ay + tay / 3), (bx - tbx / 3, by - tby / 3),
                         (bx, by)))
    arrow = [(x1, y1), (x1 - 3 - width, y1 - sign * tip), (x1 + 3 + width, y1 - sign * tip)]
    return [("path", pts[0], segments, colour, width, dash),
            ("poly", arrow, colour)]


def _node_shapes(n: Node, cx, cy) -> list:
    x, y, w, h = cx - n.width / 2, cy - n.height / 2, n.width, n.height
    attrs = {"class": f"fj-{n.kind}", "data-name": n.key[2:], "data-fill": n.fill}
    if n.kind == "scope":
        attrs["data-ops"] = str(n.count)
    out = [("open", attrs, n.title)]
    if n.kind == "op":
        out.append(("rect", x, y, w, h, 5, n.fill, n.stroke, 1.8, None))
    elif n.kind == "scope":   # a stack of cards: a collapsed group
        out.append(("rect", x + 4, y + 4, w, h, 9, "#e2e8f0", n.stroke, 1.2, None))
        out.append(("rect", x, y, w, h, 9, n.fill, n.stroke, 1.6, None))
        total, left = sum(c for _, c in n.bar) or 1, x + 8
        for fill, c in n.bar:
            part = (w - 16) * c / total
            out.append(("rect", left, y + h - 10, part, 5, 0, fill, "#94a3b8", 0.5, None))
            left += part
    else:
        out.append(("rect", x, y, w, h, 11, n.fill, n.stroke, 1.0, "3,2"))
    if n.kind == "stub":
        out.append(("text", cx, cy, n.label, 10.5, "normal", "#4b5563", "middle", True))
    elif n.sub:
        top = cy - (9 if n.kind == "scope" else 6)
        out.append(("text", cx, top, n.label, 12, "bold", "#111827", "middle", False))
        out.append(("text", cx, top + 14, n.sub, 10, "normal", "#4b5563", "middle", False))
    else:
        out.append(("text", cx, cy, n.label, 12, "bold", "#111827", "middle", False))
    out.append(("close",))
    return out


def _legend(items, width, top) -> tuple:
    """The legend's swatches and labels, flowed into rows; (shapes, bottom, right end)."""
    shapes, x, y, right = [], 10.0, top + 8, 0.0
    for fill, stroke, label in items:
        step = 22 + len(label) * 6.4
        if x > 10 and x + step > width:
            x, y = 10.0, y + 18
        shapes.append(("rect", x, y, 14, 10, 1, fill, stroke, 2.0, None))
        shapes.append(("text", x + 20, y + 5, label, 11, "normal", "#111827", "start", False))
        right = max(right, x + step)
        x += step + 16
    return shapes, y + 22, right


def to_svg(shapes, width, height, uid: str) -> str:
    """The shapes as an SVG document (inline-able in HTML: it scales down to fit)."""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" id="{uid}" width="{width:.0f}" '
           f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
           f'font-family="sans-serif" style="max-width:100%;height:auto;background:#fff">']
    for s in shapes:
        kind = s[0]
        if kind == "open":
            attrs = "".join(f' {k}="{html.escape(v)}"' for k, v in s[1].items())
            out.append(f"<g{attrs}><title>{html.escape(s[2])}</title>")
        elif kind == "close":
            out.append("</g>")
        elif kind == "rect":
            _, x, y, w, h, rx, fill, stroke, sw, dash = s
            extra = f' stroke-dasharray="{dash}"' if dash else ""
            out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
                       f'rx="{rx}" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"'
                       f"{extra}/>")
        elif kind == "text":
            _, x, y, text, size, weight, colour, anchor, italic = s
            style = ' font-style="italic"' if italic else ""
            out.append(f'<text x="{x:.1f}" y="{y:.1f}" dy="0.35em" font-size="{size}" '
                       f'font-weight="{weight}" fill="{colour}" text-anchor="{anchor}"'
                       f"{style}>{html.escape(text)}</text>")
        elif kind == "path":
            _, start, segments, colour, width, dash = s
            d = f"M{start[0]:.1f},{start[1]:.1f}" + "".join(
                "C" + " ".join(f"{px:.1f},{py:.1f}" for px, py in seg) for seg in segments)
            extra = f' stroke-dasharray="{dash}"' if dash else ""
            out.append(f'<path d="{d}" fill="none" stroke="{colour}" '
                       f'stroke-width="{width:.2f}"{extra}/>')
        elif kind == "poly":
            pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in s[1])
            out.append(f'<polygon points="{pts}" fill="{s[2]}"/>')
    out.append("</svg>")
    return "".join(out)


def to_png(shapes, width, height, path, dpi: int = 150) -> None:
    """Paint the shapes into a PNG file with matplotlib's Agg canvas (one SVG pixel is
    1/100 inch, so `dpi` 150 gives 1.5 image pixels per SVG pixel)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyBboxPatch, PathPatch, Polygon
    from matplotlib.path import Path

    fig = Figure(figsize=(width / 100, height / 100), dpi=dpi, facecolor="white")
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.axis("off")
    pt = 72 / 100   # points per SVG pixel
    for s in shapes:
        kind = s[0]
        if kind == "rect":
            _, x, y, w, h, rx, fill, stroke, sw, dash = s
            style = f"round,pad=0,rounding_size={min(rx, w / 2, h / 2)}" if rx else "square,pad=0"
            ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle=style, facecolor=fill,
                                        edgecolor=stroke, linewidth=sw * pt,
                                        linestyle=_dashes(dash)))
        elif kind == "text":
            _, x, y, text, size, weight, colour, anchor, italic = s
            ax.text(x, y, text, fontsize=size * pt, fontweight=weight, color=colour,
                    ha={"middle": "center", "start": "left"}[anchor], va="center",
                    fontstyle="italic" if italic else "normal")
        elif kind == "path":
            _, start, segments, colour, lw, dash = s
            verts, codes = [start], [Path.MOVETO]
            for seg in segments:
                verts.extend(seg)
                codes.extend([Path.CURVE4] * 3)
            ax.add_patch(PathPatch(Path(verts, codes), facecolor="none", edgecolor=colour,
                                   linewidth=lw * pt, linestyle=_dashes(dash)))
        elif kind == "poly":
            ax.add_patch(Polygon(s[1], closed=True, facecolor=s[2], edgecolor="none"))
    fig.savefig(path, format="png", dpi=dpi, facecolor="white")


def _dashes(dash):
    if not dash:
        return "solid"
    return (0, tuple(float(v) * 0.5 for v in dash.split(",")))
