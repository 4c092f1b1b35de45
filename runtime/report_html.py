"""The HTML of a jitted function's report (`jit_fn.lower(*args)`, a `Lowered`) for notebooks.

`lowered_html(lowered)` is `Lowered._repr_html_` (docs/architecture.md, "Graph views in
notebooks"): a summary line first (compiled or not, and why; the target), then one
collapsible `<details>` section per stage of `lowered.stages` in order (the traced graph,
the IR after each pass, the schedule with its fusion decisions, the loop IR, the generated
source), each a `<pre>` of the stage's text, HTML-escaped; a pass that changed nothing says
so in its heading.  Python source gets simple syntax colours (keywords, strings, numbers,
comments) from the standard tokenizer.  Plain HTML with inline styles, no script.
"""

from __future__ import annotations

import html
import io
import keyword
import tokenize

_PRE = ("margin:2px 0 6px 14px;padding:6px;background:#f8fafc;border:1px solid #e5e7eb;"
        "font-size:12px;line-height:1.35;overflow-x:auto")
_COLOURS = {tokenize.STRING: "#15803d", tokenize.COMMENT: "#6b7280",
            tokenize.NUMBER: "#b45309"}


def lowered_html(lowered) -> str:
    """The report as HTML (module docstring)."""
    out = ['<div class="flowjit-lowered" style="font-family:sans-serif;font-size:13px">',
           f"<div><b>{html.escape(summary(lowered))}</b></div>"]
    previous, names = None, []
    for name, _ in lowered.stages.items:
        text = lowered.stages.text(name)
        names.append(name)
        note = "unchanged" if text == previous else f"{len(text.splitlines())} lines"
        out.append(_section(name, note, text))
        previous = text
    source = getattr(lowered, "source", None)
    if source and "source" not in names:
        out.append(_section("source", f"{len(source.splitlines())} lines", source))
    out.append("</div>")
    return "".join(out)


def summary(lowered) -> str:
    """One line: whether the signature runs compiled, with which target, or why not."""
    entry = getattr(lowered, "entry", None)
    if getattr(lowered, "compiled", False):
        compiled = getattr(entry, "compiled", entry)   # an entry on trial holds its kernel
        target = getattr(getattr(compiled, "cluster", None), "target", None)
        line = "compiled into one kernel"
        if target is not None:
            line += f" by the {getattr(target, 'value', target)} target"
        if compiled is not entry:
            line += ("; on trial: its first calls time the kernel against the plain "
                     "function, and the faster is kept")
        return line
    reason = getattr(entry, "reason", None)
    return "not compiled" + (f": {reason}" if reason else "")


def _section(name: str, note: str, text: str) -> str:
    body = python_html(text) if name == "source" else html.escape(text)
    return (f'<details data-stage="{html.escape(name)}"><summary><b>{html.escape(name)}</b>'
            f' <span style="color:#6b7280">({note})</span></summary>'
            f'<pre style="{_PRE}">{body}</pre></details>')


def python_html(text: str) -> str:
    """`text` (Python source) HTML-escaped, with keywords, strings, numbers and comments
    in colour; text the tokenizer rejects comes back escaped only."""
    lines = text.splitlines(keepends=True)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return html.escape(text)
    out, here = [], (1, 0)
    for tok in tokens:
        out.append(html.escape(_between(lines, here, tok.start)))
        piece = html.escape(_between(lines, tok.start, tok.end))
        colour = _COLOURS.get(tok.type)
        if tok.type == tokenize.NAME and keyword.iskeyword(tok.string):
            out.append(f'<span style="color:#7c3aed;font-weight:bold">{piece}</span>')
        elif colour and piece:
            out.append(f'<span style="color:{colour}">{piece}</span>')
        else:
            out.append(piece)
        here = max(here, tok.end)
    out.append(html.escape(_between(lines, here, (len(lines) + 1, 0))))
    return "".join(out)


def _between(lines, start, end) -> str:
    """The text of `lines` from position `start` to `end` ((row from 1, column))."""
    (r0, c0), (r1, c1) = start, end
    if (r1, c1) <= (r0, c0) or r0 > len(lines):
        return ""
    if r0 == r1:
        return lines[r0 - 1][c0:c1]
    parts = [lines[r0 - 1][c0:]] + lines[r0:min(r1 - 1, len(lines))]
    if r1 <= len(lines):
        parts.append(lines[r1 - 1][:c1])
    return "".join(parts)
