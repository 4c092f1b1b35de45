"""The files of `python -m flowjit bench report`: report.md, the plots and results.json.

Owns how a report (built by `benchmarks/report.py`: the machine, the options and one section
of rows per benchmark) is written down:

- `report.md`: the machine (CPU, cores, memory, OS, Python and library versions, OpenBLAS
  kernels), the systems that did not run and why, then per benchmark a table of workloads
  (rows) by systems (columns), each cell the median time and, in parentheses, the time /
  NumPy's time (below 1 is faster), the rows that were not timed with their reasons, and the
  benchmark's plot;
- `NAME.png` per benchmark: horizontal bars of each system's speedup over NumPy (NumPy's
  time / the system's) per workload on a log axis, the bars growing from 1 (NumPy) to the
  right when faster and to the left when slower, the value at the end of each bar;
- `results.json`: the whole report as data.

Plots are drawn on a `matplotlib.figure.Figure` with the Agg canvas (no pyplot, no global
backend), and every file is written to a temporary file in the same folder, then renamed
over its name (`os.replace`), so a reader never sees half a file.
"""

from __future__ import annotations

import io
import json
import math
import os
import tempfile

PLOT_DPI = 120
WIDTH_INCHES = 11.0
BAR_INCHES = 0.2        # height of one bar


def write_atomic(path: str, data) -> None:
    """Write `data` (str or bytes) to `path` through a temporary file and os.replace."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path), dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        umask = os.umask(0o022)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)   # mkstemp's file is private; a report is not
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def format_seconds(seconds) -> str:
    """"1.23 ms", "45.6 µs", "2.1 s" (three significant digits); "-" for None."""
    if seconds is None:
        return "-"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def _cell(text) -> str:
    return str(text).replace("\n", " ").replace("|", "\\|")


def _table(header: list, rows: list) -> list:
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]


def systems_of(rows: list) -> list:
    """The systems of `rows` in order of appearance, NumPy first, then flowjit's."""
    names = list(dict.fromkeys(r["system"] for r in rows))
    return sorted(names, key=lambda s: (s != "numpy", not s.startswith("flowjit")))


def timing_table(rows: list, leave_out=()) -> list:
    """Markdown lines: workloads by systems (but `leave_out`), "median (time / NumPy's)"
    per cell."""
    systems = [s for s in systems_of(rows) if s not in leave_out]
    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    cell = {(r["workload"], r["system"]): r for r in rows}
    body = []
    for w in workloads:
        texts = []
        for s in systems:
            r = cell.get((w, s))
            if r is None:
                texts.append("-")
            elif r["status"] != "ok" or r["median_s"] is None:
                texts.append(r["status"])
            elif s == "numpy" or r["ratio_to_numpy"] is None:
                texts.append(format_seconds(r["median_s"]))
            else:
                texts.append(f"{format_seconds(r['median_s'])} ({r['ratio_to_numpy']:.3g})")
        body.append([w] + texts)
    return _table(["workload"] + systems, body)


def _compile_table(compile_rows: list) -> list:
    """W7's cold and warm first-result times (compiler benchmark)."""
    body = []
    for row in compile_rows:
        cold, warm = row["cold"], row["warm"]
        if "error" in cold:
            body.append([row["system"], "-", "-", f"not run: {cold['error']}"])
            continue
        warm_text = "no persistent cache" if warm is None else \
            f"failed: {warm['error']}" if "error" in warm else format_seconds(warm["first_s"])
        check = "ok" if cold.get("err", math.inf) <= 1.0 else "WRONG"
        body.append([row["system"], format_seconds(cold["first_s"]), warm_text, check])
    return _table(["system", "cold: 1st result", "warm: 1st result", "check"], body)


def _machine_lines(report: dict) -> list:
    m, opts = report["machine"], report["options"]
    usable = m.get("usable_cores")
    cores = f"{m['cores']}" + (f" ({usable} usable)" if usable and usable != m["cores"]
                               else "")
    memory = f", {m['memory_bytes'] / 2**30:.1f} GiB memory" if m.get("memory_bytes") else ""
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items())
    peers = {}
    for section in report["benchmarks"]:
        meta = (section.get("result") or {}).get("meta") or {}
        for key, version in (meta.get("versions") or {}).items():
            if key not in m["versions"] and version not in ("-", None, "not installed"):
                peers.setdefault(key, version)
    threads = opts["threads"] or m["cores"]
    lines = [f"- CPU: {m['cpu']}; {cores} cores{memory}",
             f"- OS: {m['os']}; Python {m['python']}",
             f"- Versions: {versions}",
             f"- OpenBLAS kernels: {m['openblas']}",
             f"- Threads: {threads} for every system (Session.run overhead: 1)"]
    if peers:
        lines.append("- Peers: " + ", ".join(f"{k} {v}" for k, v in peers.items()))
    return lines


def markdown(report: dict, plots: dict) -> str:
    """The text of report.md; `plots` maps a benchmark key to its PNG's file name."""
    opts = report["options"]
    mode = "quick mode" if opts["quick"] else "full sizes"
    repeats = opts["repeats"]
    timing = [f"{repeats} repetition{'s' * (repeats != 1)}"] if repeats else []
    timing += [f"~{opts['target_seconds']:g} s batches"] if opts["target_seconds"] else []
    lines = ["# flowjit benchmark report", "",
             f"Created {report['created']} by `python -m flowjit bench report` ({mode}"
             + "".join(f", {t}" for t in timing) + ").", "", "## Machine", ""]
    lines += _machine_lines(report)
    missing = [(system, s["title"], why) for s in report["benchmarks"]
               for system, why in s["missing"].items()]
    lines += ["", "## Systems that did not run", ""]
    lines += _table(["system", "benchmark", "why"], missing) if missing else ["None."]
    for section in report["benchmarks"]:
        lines += ["", f"## {section['title']}", ""]
        command = [a for a in section["command"] if not a.endswith(".json")
                   and a != "--json"]
        lines += [f"`python {' '.join(command)}`: {section['seconds']:.0f} s; its own "
                  f"tables: [{section['log']}]({section['log']}).", ""]
        if "error" in section:
            lines += ["The benchmark failed, " + section["error"].split("\n")[0].rstrip(":")
                      + ":", "",
                      "```", *section["error"].split("\n")[1:], "```"]
            continue
        rows = section["rows"]
        if rows:
            unit = "step" if section["key"] == "training" else "call"
            lines += [f"Each cell: median time per {unit} and, in parentheses, time / "
                      "NumPy's time (below 1 is faster); - where the system has no such "
                      "workload.", ""]
            lines += timing_table(rows, section["missing"])
            busy, timed = section.get("busy") or (0, 0)
            if busy:
                lines += ["", f"**Other processes kept the machine busy during {busy} of "
                          f"{timed} timed rows**: those times are unreliable (the log says "
                          "which); rerun on a quiet machine."]
            skipped = [r for r in rows if r["status"] != "ok"
                       and r["system"] not in section["missing"]]
            if skipped:
                lines += ["", "Not timed:", ""]
                lines += [f"- {_cell(r['workload'])}, {r['system']}: {r['status']}"
                          + (f", {_cell(r['reason'])}" if r["reason"] else "")
                          for r in skipped]
        if section["key"] in plots:
            lines += ["", f"![{section['title']}: speedup over NumPy]"
                          f"({plots[section['key']]})"]
        compile_rows = (section.get("result") or {}).get("compile") or []
        if compile_rows:
            lines += ["", "W7, compile time of W2 softmax: seconds from the input to the first "
                      "result in a fresh process, with an empty cache (cold) and with the "
                      "cold run's cache (warm).", ""]
            lines += _compile_table(compile_rows)
    return "\n".join(lines) + "\n"


def _log_axis(ax, values: list) -> None:
    """Limits around the values and 1 (at least 0.25..4) with ticks labelled 0.5×, 1×, 2×..."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    low = min(values + [1.0]) / 2.5
    high = max(values + [1.0]) * 2.5
    low, high = min(low, 0.25), max(high, 4.0)
    ax.set_xlim(low, high)
    subs = (1.0, 2.0, 5.0) if math.log10(high / low) <= 4 else (1.0,)
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=subs))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}×"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def speedup_figure(title: str, rows: list):
    """A Figure (Agg canvas) of each non-NumPy system's speedup over NumPy per workload:
    horizontal bars from 1 on a log axis, None when no row has a speedup."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    cell = {(r["workload"], r["system"]): r for r in rows}
    speed = {k: 1.0 / r["ratio_to_numpy"] for k, r in cell.items()
             if r["status"] == "ok" and r["ratio_to_numpy"] and k[1] != "numpy"}
    systems = [s for s in systems_of(rows) if any(k[1] == s for k in speed)]
    if not systems:
        return None
    bar, group = 1.0, len(systems) + 0.9   # bar and workload heights, in y units
    legend_rows = math.ceil(len(systems) / 4)
    height = 1.3 + BAR_INCHES * group * len(workloads) + 0.25 * legend_rows
    fig = Figure(figsize=(WIDTH_INCHES, max(2.6, height)), dpi=PLOT_DPI,
                 layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_xscale("log")
    _log_axis(ax, list(speed.values()))
    for j, system in enumerate(systems):
        color, labelled = f"C{j % 10}", False
        for i, workload in enumerate(workloads):
            y = i * group + (j - (len(systems) - 1) / 2) * bar
            s = speed.get((workload, system))
            if s is None:
                r = cell.get((workload, system))
                status = "not measured" if r is None else "not run" if r["status"] in (
                    "unavailable", "unsupported") else r["status"]
                ax.text(1.0, y, f" {system}: {status}", va="center", ha="left",
                        fontsize=7, color="0.4")
                continue
            ax.barh(y, s - 1.0, left=1.0, height=bar * 0.85, color=color,
                    label=None if labelled else system)
            labelled = True
            ax.text(s * 1.03 if s >= 1 else s / 1.03, y, f"{s:.3g}×", va="center",
                    ha="left" if s >= 1 else "right", fontsize=7.5)
    ax.axvline(1.0, color="0.2", linewidth=1)
    ax.set_yticks([i * group for i in range(len(workloads))], workloads, fontsize=9)
    ax.set_ylim(len(workloads) * group - group / 2, -group / 2)
    ax.set_xlabel("speedup over NumPy (NumPy's time / the system's; log scale, "
                  "right of 1 = faster)")
    ax.grid(axis="x", which="major", color="0.85", linewidth=0.6)
    ax.set_axisbelow(True)
    if len(workloads) > 10:   # a tall plot: speedups readable at its top too
        ax.tick_params(axis="x", top=True, labeltop=True)
    legend = fig.legend(loc="outside upper center", ncols=min(4, len(systems)),
                        frameon=False, fontsize=9, title=f"{title}: speedup over NumPy",
                        title_fontproperties={"size": 12})   # the title over the systems
    legend.get_title().set_fontweight("bold")
    return fig


def write_report(report: dict, out_dir: str) -> list:
    """Write report.md, one PNG per benchmark with speedups and results.json into
    `out_dir`; returns the paths written."""
    written, plots = [], {}
    for section in report["benchmarks"]:
        fig = speedup_figure(section["title"], section["rows"]) if section["rows"] else None
        if fig is None:
            continue
        name = f"{section['key']}.png"
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=PLOT_DPI)
        path = os.path.join(out_dir, name)
        write_atomic(path, buffer.getvalue())
        plots[section["key"]] = name
        written.append(path)
    path = os.path.join(out_dir, "report.md")
    write_atomic(path, markdown(report, plots))
    written.insert(0, path)
    path = os.path.join(out_dir, "results.json")
    write_atomic(path, json.dumps(report, indent=1, default=float))
    written.append(path)
    return written
