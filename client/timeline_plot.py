"""A traced step drawn as a picture: one lane per device and thread, one bar per event.

`plot_step_stats(step_stats, path=None, title=None)` draws what `Timeline` exports for
chrome://tracing, for places without a trace viewer (a notebook, a report): lanes are the
(device, thread) pairs in order of first use, plus one "transfers" lane per device for its
Send and Recv events (a Recv's bar spans its wait, which would hide the ops its thread ran
meanwhile); bars span each event's start and end (microseconds since the step began;
compiles in orange, Send/Recv in grey, everything else in blue), and the longest bars carry
their names where the name fits inside the bar.  It returns the
matplotlib Figure (made on an Agg canvas, never pyplot's global state) and writes a PNG to
`path` when given (atomically: a temporary file, then a rename).
"""

from __future__ import annotations

import os
import tempfile

_COLOURS = {"Compile": "#f28e2b", "comm": "#9d9d9d", "Op": "#4e79a7"}


def _colour(stat) -> str:
    if getattr(stat, "category", "Op") == "Compile":
        return _COLOURS["Compile"]
    if str(stat.op_type) in ("_Send", "_Recv", "Send", "Recv"):
        return _COLOURS["comm"]
    return _COLOURS["Op"]


def _lane(stat):
    device = stat.device or "/device:CPU:0"
    if _colour(stat) == _COLOURS["comm"]:
        return (device, "transfers")
    return (device, stat.thread)


def plot_step_stats(step_stats, path=None, title=None, labels: int = 12):
    """The Figure of one step's stats (module docstring); `labels` longest bars are named."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    stats = sorted(step_stats, key=lambda s: (s.start, s.end))
    lanes: dict = {}
    for s in stats:
        lanes.setdefault(_lane(s), len(lanes))
    fig = Figure(figsize=(11, 1.4 + 0.55 * max(1, len(lanes))), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    span = max((s.end for s in stats), default=1e-6) * 1e6 or 1.0
    us_per_char = span / 150   # the axes are about 900 px wide; 7-pt text ~6 px a char
    longest = set(id(s) for s in sorted(stats, key=lambda s: s.end - s.start,
                                        reverse=True)[:labels])
    taken: dict = {}   # lane -> [(start, end)] of the labels drawn, so none overlap
    for s in stats:
        lane = lanes[_lane(s)]
        start, width = s.start * 1e6, max((s.end - s.start) * 1e6, span / 2000)
        ax.broken_barh([(start, width)], (lane - 0.4, 0.8), facecolors=_colour(s),
                       edgecolor="white", linewidth=0.5)
        text = len(s.node_name) * us_per_char
        centre = start + width / 2
        free = all(centre + text / 2 < a or centre - text / 2 > b
                   for a, b in taken.get(lane, ()))
        if id(s) in longest and text < width and free:
            ax.text(centre, lane, s.node_name, ha="center", va="center", fontsize=7,
                    color="white", clip_on=True)
            taken.setdefault(lane, []).append((centre - text / 2, centre + text / 2))
    names = [f"{device.rsplit('/', 1)[-1]} " + ("transfers" if thread == "transfers"
                                                 else f"thread {i}")
             for i, (device, thread) in enumerate(lanes)]
    ax.set_yticks(range(len(lanes)), names)
    ax.invert_yaxis()
    ax.set_xlabel("microseconds since the step began")
    ax.set_title(title or f"one step: {len(stats)} events")
    ax.legend(handles=[Patch(color=_COLOURS["Op"], label="op / cluster"),
                       Patch(color=_COLOURS["Compile"], label="compile"),
                       Patch(color=_COLOURS["comm"], label="Send / Recv")],
              loc="upper right", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    if path is not None:
        path = os.fspath(path)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)) or ".",
                                   suffix=".png")
        os.close(fd)
        try:
            fig.savefig(tmp, format="png")
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    return fig
