"""Outlining long loop programs into parts (targets/cpu/outline.py, a loop-IR pass).

The outlined program must compute what the original computes: synthetic kernels shaped
like the generated ones (checks, `loop nest` comments, buffers bound in both branches of an
`if`, names bound on one path only, loop-carried names, an early return) are made into loop
programs (a Verbatim statement per top-level statement), outlined, rendered by the CPU
target's renderer, and run as plain Python beside the original (numba compiles the same
semantics); the cut points must respect Python's binding rules.
tests/test_outline_compiled.py runs outlined kernels through numba against NumPy.
"""

from __future__ import annotations

import ast

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from flowjit.compiler.loop_ir import Comment, LoopProgram, Verbatim
from flowjit.targets.cpu import outline, render


def outline_source(source: str) -> str:
    """The module `source` defines (one `kernel` function) as a loop program of Verbatim
    statements and comments, outlined and rendered."""
    tree = ast.parse(source)
    lines = source.split("\n")
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    constants = tuple((n.targets[0].id, ast.get_source_segment(source, n.value))
                      for n in tree.body if isinstance(n, ast.Assign))
    body, previous_end = [], func.body[0].lineno - 1
    for stmt in func.body:
        for line in lines[previous_end:stmt.lineno - 1]:   # comments between statements
            if line.strip().startswith("# "):
                body.append(Comment(line.strip()[2:]))
        text = [ln[4:] for ln in lines[stmt.lineno - 1:stmt.end_lineno]]
        body.append(Verbatim(tuple(text)))
        previous_end = stmt.end_lineno
    program = LoopProgram("kernel", tuple(a.arg for a in func.args.args), constants,
                          tuple(body))
    return render.render(outline.outline(program))


def _nest(k: int, kind: int) -> list:
    """Lines of loop nest k of a synthetic kernel (indented for the function body)."""
    prev = f"b{k - 1}" if k else "x"
    if kind == 0:      # a plain elementwise nest
        return [f"    # loop nest {k}: t{k}",
                f"    b{k} = np.empty_like({prev})",
                f"    for i0 in range({prev}.shape[0]):",
                f"        v{k} = {prev}[i0] * {k + 1}.0",
                f"        b{k}[i0] = v{k} + n",
                ""]
    if kind == 1:      # bound in both branches of an if: surely bound
        return [f"    # loop nest {k}: t{k}",
                f"    if n > 2:",
                f"        b{k} = {prev} + 1.0",
                f"    else:",
                f"        b{k} = {prev} - 1.0",
                f"    cur = 0.0",
                f"    for i0 in range(b{k}.shape[0]):",
                f"        cur = cur + b{k}[i0]",
                f"    total = total + cur",
                ""]
    if kind == 2:      # bound on one path only, read under the same condition later
        return [f"    # loop nest {k}: t{k}",
                f"    if n > 3:",
                f"        extra{k} = {prev}.sum()",
                f"    b{k} = {prev} * 0.5",
                "",
                f"    # loop nest {k}b: t{k}b",
                f"    if n > 3:",
                f"        total = total + extra{k}",
                ""]
    if kind == 4:      # rebinds, without reading, a name bound before: read later
        return [f"    # loop nest {k}: t{k}",
                f"    if n > 1:",
                f"        total = {k}.5",
                f"    b{k} = {prev} * 2.0",
                ""]
    return [f"    # loop nest {k}: t{k}",            # a while loop with a carried name
            f"    r0 = 0",
            f"    b{k} = {prev}.copy()",
            f"    while r0 + 1 < b{k}.shape[0]:",
            f"        b{k}[r0 + 1] = b{k}[r0 + 1] + b{k}[r0] * 0.25",
            f"        r0 = r0 + 1",
            ""]


def _source(kinds, early_return: bool) -> str:
    lines = ["import numpy as np", "", "C0 = np.int64(3)", "",
             "def kernel(x, n):",
             "    v1 = (x.shape[0] >= 0)",
             "    if not v1:",
             "        raise ValueError('bad')",
             "    total = 0.0"]
    for k, kind in enumerate(kinds):
        lines += _nest(k, kind)
        if kind == 4 and k + 1 == len(kinds):
            lines += ["    total = total * 2.0", ""]
    last = f"b{len(kinds) - 1}"
    if early_return:
        lines += ["    if n == 5:", f"        return ({last}, total + C0,)"]
    lines += [f"    return ({last}, total,)", ""]
    return "\n".join(lines)


def _run(source: str, x, n):
    namespace: dict = {}
    exec(compile(source, "<test>", "exec"), namespace)
    return namespace["kernel"](x.copy(), n)


@pytest.fixture(autouse=True)
def _small_thresholds(monkeypatch):
    monkeypatch.setattr(outline, "MIN_LINES", 20)
    monkeypatch.setattr(outline, "CHUNK_LINES", 8)


@settings(max_examples=150, deadline=None)
@given(kinds=st.lists(st.integers(0, 4), min_size=2, max_size=9),
       early_return=st.booleans(), n=st.integers(0, 6), size=st.integers(0, 5),
       chunk=st.integers(1, 12))
def test_outlined_module_computes_the_same(kinds, early_return, n, size, chunk):
    source = _source(kinds, early_return)
    saved = outline.CHUNK_LINES
    outline.CHUNK_LINES = chunk
    try:
        rewritten = outline_source(source)
    finally:
        outline.CHUNK_LINES = saved
    x = np.arange(size, dtype=np.float64) - 1.5
    want = _run(source, x, n)
    got = _run(rewritten, x, n)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_long_function_is_cut_into_parts_listed_as_subkernels():
    source = _source([0, 1, 0, 3, 0, 1, 0], early_return=False)
    rewritten = outline_source(source)
    tree = ast.parse(rewritten)
    defs = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    parts = [d for d in defs if d.startswith("kernel_p")]
    assert len(parts) >= 3
    assert defs[-1] == "kernel"
    listed = next(n for n in tree.body if isinstance(n, ast.Assign)
                  and n.targets[0].id == "SUBKERNELS")
    assert set(ast.literal_eval(listed.value)) == set(parts)
    kernel = tree.body[-1]
    assert len(kernel.body) < 15          # the checks, calls of the parts, the return
    assert "# loop nest 3" in rewritten   # comments move with their nests


def test_name_bound_on_one_path_is_never_passed_unbound():
    """extra0 is bound only when n > 3: the part reading it must be the part binding it."""
    source = _source([2, 0, 0, 0], early_return=False)
    rewritten = outline_source(source)
    tree = ast.parse(rewritten)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            params = {a.arg for a in node.args.args}
            assert "extra0" not in params, node.name
    for n in (0, 4):
        want, got = _run(source, np.ones(3), n), _run(rewritten, np.ones(3), n)
        assert want[1] == got[1]


def test_short_and_unsupported_functions_stay_whole():
    short = "def kernel(x):\n    y = x + 1\n    return (y,)\n"
    assert "kernel_p" not in outline_source(short)
    with_comprehension = _source([0, 0, 0, 0], False).replace(
        "    total = 0.0", "    total = sum([0.0 for _ in range(2)])")
    assert "kernel_p" not in outline_source(with_comprehension)
    assert "kernel_p" in outline_source(_source([0, 0, 0, 0], False))


def test_functions_the_program_had_stay_listed():
    """A while loop's body (a function the kernel already calls) stays, after the parts."""
    body = LoopProgram("kernel_w0_body", ("a",), (), (Verbatim(("return (a,)",)),))
    tree = ast.parse(_source([0, 0, 0, 0, 0], False))
    source = _source([0, 0, 0, 0, 0], False)
    program = ast.parse(outline_source(source))   # parts only
    parts = [n.name for n in program.body if isinstance(n, ast.FunctionDef)]
    assert len(parts) > 2
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    lp = LoopProgram("kernel", tuple(a.arg for a in func.args.args), (("C0", "3"),),
                     (Verbatim(("q = kernel_w0_body(x)",)),) + tuple(
                         Verbatim((ln,)) for ln in ["v = 1"] * (outline.MIN_LINES + 1))
                     + (Verbatim(("return (q,)",)),), (body,))
    rendered = render.render(outline.outline(lp))
    line = next(ln for ln in rendered.splitlines() if ln.startswith("SUBKERNELS"))
    names = ast.literal_eval(line.split("=", 1)[1].split("#")[0].strip())
    assert names[0] == "kernel_w0_body" and len(names) >= 2


def test_name_rebound_on_one_path_is_passed_in_and_returned(monkeypatch):
    """Nest 1 rebinds `total` only when n > 1 and never reads it: its part takes `total`
    (so it is bound on the other path) and returns it, instead of being merged away."""
    monkeypatch.setattr(outline, "CHUNK_LINES", 1)
    source = _source([0, 4, 0, 0], early_return=False)
    rewritten = outline_source(source)
    part = next(n for n in ast.parse(rewritten).body if isinstance(n, ast.FunctionDef)
                and "total = 1.5" in ast.unparse(n))
    assert part.name != "kernel"
    assert "total" in {a.arg for a in part.args.args}
    for n in (0, 2):
        want, got = _run(source, np.ones(2), n), _run(rewritten, np.ones(2), n)
        assert want[1] == got[1]
