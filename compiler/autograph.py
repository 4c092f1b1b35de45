"""Source conversion of a jitted function's Python control flow (AutoGraph-style).

`converted(fn)` returns `fn` with its `for`/`while` loops and `if` statements rewritten into
calls of runtime helpers (autograph_loops.py, autograph_branches.py), done once per
function from its source (docs/architecture.md "Python control flow in @jit").  The
helpers run the plain Python statement for Python values and build graph control flow
(`ops/control_flow.py`'s while_loop / cond) when traced values are involved.

The rewrite of one statement: the names its body assigns become the statement's state,
read and written through `get_state()` / `set_state(values)` closures (the body moves into
a nested function that declares them `nonlocal`; a name without a value yet is bound to
`Undefined` first).  `break` and `continue` become flags (`_ag_brk_N`, `_ag_cont_N`) that
guard the rest of the body and end the loop; `and`/`or`/`not` in conditions become
`and_`/`or_`/`not_`.  Not converted (they keep Python's semantics, so a traced condition
is a graph break as before, with one log line at conversion saying why): loops holding
`return`, `yield` or `try`, and `if`s holding `return`/`yield` or a `break`/`continue` of a
loop left as Python.  Functions without available source (lambdas, the REPL), generators,
coroutines and functions using `global`/`nonlocal` or zero-argument `super()` are not
converted at all.
"""

from __future__ import annotations

import ast
import inspect
import logging
import textwrap
import types
import weakref

from .autograph_names import (_PRIVATE, _assigned, _has, _mutated, _own_nodes,  # noqa: F401
                              _read)

log = logging.getLogger("flowjit.jit")
_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_HELPERS = "_ag__"


def converted(fn):
    """`fn` with its control flow converted (cached per function), or `fn` itself when
    there is nothing to convert or it cannot be (the reason is logged once)."""
    try:
        return _CACHE[fn]
    except (KeyError, TypeError):
        pass
    try:
        new, why = _convert(fn)
    except Exception as e:   # noqa: BLE001 - conversion must never break a call
        new, why = None, f"conversion failed ({type(e).__name__}: {e})"
    if new is None:
        new = fn
        if why:
            log.info("flowjit.jit: control flow of %s not converted: %s",
                     getattr(fn, "__qualname__", fn), why)
    try:
        _CACHE[fn] = new
    except TypeError:
        pass
    return new


def _convert(fn):
    if not isinstance(fn, types.FunctionType):
        return None, ""
    code = fn.__code__
    if fn.__name__ == "<lambda>":
        return None, "a lambda (its source is not available)"
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE |
                        inspect.CO_ASYNC_GENERATOR):
        return None, "a generator or coroutine"
    if "__class__" in code.co_freevars:
        return None, "it uses zero-argument super()"
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        filename = inspect.getsourcefile(fn) or "<unknown>"
        _, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None, "its source is not available"
    tree = ast.parse(source)
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef) or node.name != fn.__name__:
        return None, "its source is not a plain `def`"
    if not any(isinstance(n, (ast.For, ast.While, ast.If)) for n in _own_nodes(node.body)):
        return None, ""
    if any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in _own_nodes(node.body)):
        return None, "it uses `global` or `nonlocal`"
    node.decorator_list = []
    notes: list = []
    node.body = [_MinMax().visit(stmt) for stmt in node.body]
    rewriter = _Rewriter(notes, first - 1)
    node.body = rewriter.block(node.body)
    freevars = list(code.co_freevars)
    factory = ast.parse(f"def _ag_factory({', '.join([_HELPERS] + freevars)}):\n"
                        f"    return {fn.__name__}").body[0]
    factory.body.insert(0, node)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.increment_lineno(module, first - 1)
    _repair(module)
    compiled = compile(module, filename, "exec")
    factory_code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    cells = [c.cell_contents for c in (fn.__closure__ or ())]
    from . import autograph_api

    make = types.FunctionType(factory_code, fn.__globals__, "_ag_factory")
    new = make(autograph_api, *cells)
    new.__defaults__, new.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__
    new.__dict__.update(fn.__dict__)
    new.__qualname__, new.__module__, new.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    for note in notes:
        log.info("flowjit.jit: in %s, %s", fn.__qualname__, note)
    return new, ""


class _MinMax(ast.NodeTransformer):
    """`min(a, b, ...)` / `max(a, b, ...)` become `_ag__.builtin_minmax(min, a, b, ...)`,
    which takes np.minimum / np.maximum when an argument is traced (a Python `if` on a
    traced value otherwise: a graph break) and calls the name's value otherwise (a local
    or global `min` stays what it is)."""

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id in ("min", "max") and len(node.args) >= 2 and \
                not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args):
            helper = ast.Attribute(ast.Name(_HELPERS, ast.Load()), "builtin_minmax",
                                   ast.Load())
            return ast.copy_location(ast.Call(helper, [ast.Name(f.id, ast.Load())] +
                                              node.args, []), node)
        return node


_LINE = [1]   # the line of the statement being rewritten: generated code's location


def _parse(src: str) -> list:
    """Statements of `src`, located at the line of the statement being rewritten (so
    tracebacks and graph-break sites name the user's line)."""
    body = ast.parse(textwrap.dedent(src)).body
    for root in body:
        for n in ast.walk(root):
            if "lineno" in n._attributes:
                n.lineno = n.end_lineno = _LINE[0]
                n.col_offset = n.end_col_offset = 0
    return body


def _repair(tree) -> None:
    """Every node located, with an end not before its start (compile() checks)."""
    ast.fix_missing_locations(tree)
    for n in ast.walk(tree):
        if "lineno" in n._attributes:
            if getattr(n, "end_lineno", None) is None or n.end_lineno < n.lineno:
                n.end_lineno = n.lineno
            if getattr(n, "end_col_offset", None) is None or \
                    (n.end_lineno == n.lineno and n.end_col_offset < n.col_offset):
                n.end_col_offset = n.col_offset


class _Rewriter:
    """Rewrites one function body (see the module docstring)."""

    def __init__(self, notes: list, offset: int = 0):
        self.notes = notes
        self.count = 0
        self.offset = offset   # the file's line number of the source's first line, less 1

    def block(self, stmts) -> list:
        out = []
        for s in stmts:
            out.extend(self.statement(s))
        return out

    def statement(self, s) -> list:
        _LINE[0] = s.lineno
        if isinstance(s, (ast.For, ast.While)):
            return self.loop(s)
        if isinstance(s, ast.If):
            return self.if_(s)
        for field in ("body", "orelse", "finalbody"):
            if isinstance(s, (ast.With, ast.Try)) and getattr(s, field, None):
                setattr(s, field, self.block(getattr(s, field)))
        if isinstance(s, ast.Try):
            for h in s.handlers:
                h.body = self.block(h.body)
        return [s]

    # --- loops ---------------------------------------------------------------------------
    def loop(self, s) -> list:
        _LINE[0] = s.lineno
        kind = "for" if isinstance(s, ast.For) else "while"
        why = ""
        if isinstance(s, ast.AsyncFor):
            why = "an async loop"
        elif _has(s.body, (ast.Return,), loops_too=True):
            why = "`return` inside the loop"
        elif _has(s.body, (ast.Yield, ast.YieldFrom, ast.Await), loops_too=True):
            why = "`yield` inside the loop"
        elif _has(s.body, (ast.Try,), loops_too=True):
            why = "`try` inside the loop"
        if why:
            self.notes.append(f"the `{kind}` loop at line {s.lineno + self.offset} stays a "
                              "Python loop (unrolled while tracing; a traced condition is a "
                              f"graph break): {why}")
            s.body = self.block(s.body)
            s.orelse = self.block(s.orelse)
            return [s]
        self.count += 1
        n = self.count
        brk = _has(s.body, (ast.Break,))
        cont = _has(s.body, (ast.Continue,))
        flags = ([f"_ag_brk_{n}"] if brk else []) + ([f"_ag_cont_{n}"] if cont else [])
        body = _lower_jumps(s.body, n, flags)
        if cont:
            body = _parse(f"_ag_cont_{n} = False") + body
        body = self.block(body)
        orelse = self.block(s.orelse)
        _LINE[0] = s.lineno
        pre = _parse(f"_ag_brk_{n} = False") if brk else []
        where = f"at line {s.lineno + self.offset}"
        if kind == "for":
            body = [ast.Assign(targets=[s.target], value=ast.Name("_ag_it", ast.Load()),
                               lineno=s.lineno)] + body
            state = _assigned(body)
            it = s.iter
            extra = f"_ag_fextra_{n}" if brk else "None"
            defs = _parse(f"def _ag_fextra_{n}():\n    return {_HELPERS}.not_(_ag_brk_{n})") \
                if brk else []
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and \
                    not it.keywords and 1 <= len(it.args) <= 3 and \
                    not any(isinstance(a, ast.Starred) for a in it.args):
                call = _parse(f"{_HELPERS}.for_range(_ag_range, _ag_args, _ag_fbody_{n}, "
                              f"_ag_fget_{n}, _ag_fset_{n}, {tuple(state)!r}, _ag_fread_{n}, "
                              f"{extra}, _ag_fmut_{n}, {where!r})")
                _replace_names(call, {"_ag_range": it.func,
                                      "_ag_args": ast.Tuple(it.args, ast.Load())})
            else:
                call = _parse(f"{_HELPERS}.for_iter(_ag_iter, _ag_fbody_{n}, _ag_fget_{n}, "
                              f"_ag_fset_{n}, {tuple(state)!r}, _ag_fread_{n}, {extra}, "
                              f"_ag_fmut_{n}, {where!r})")
                _replace_names(call, {"_ag_iter": it})
            body_def = _function(f"_ag_fbody_{n}", ["_ag_it"], state, body)
        else:
            state = _assigned(body)
            test = _logic(s.test)
            if brk:
                test = _parse(f"{_HELPERS}.and_(lambda: {_HELPERS}.not_(_ag_brk_{n}), "
                              f"lambda: _ag_test)")[0].value
                _replace_names(test, {"_ag_test": _logic(s.test)})
            defs = [_function(f"_ag_ftest_{n}", [], [], [ast.Return(test)])]
            call = _parse(f"{_HELPERS}.while_stmt(_ag_ftest_{n}, _ag_fbody_{n}, _ag_fget_{n}, "
                          f"_ag_fset_{n}, {tuple(state)!r}, _ag_fread_{n}, _ag_fmut_{n}, "
                          f"{where!r})")
            body_def = _function(f"_ag_fbody_{n}", [], state, body)
        nodes = [s.iter if kind == "for" else s.test] + body
        out = pre + _undefined(state) + [body_def] + defs + \
            _state_functions(n, state, _read(nodes), _mutated(body)) + call
        if orelse:
            out += self.if_(ast.If(test=_parse(f"not _ag_brk_{n}")[0].value, body=orelse,
                                   orelse=[], lineno=s.lineno)) if brk else orelse
        return out

    # --- if --------------------------------------------------------------------------------
    def if_(self, s) -> list:
        _LINE[0] = s.lineno
        stmts = s.body + s.orelse
        why = ""
        if _has(stmts, (ast.Return,), loops_too=True):
            why = "`return` inside it"
        elif _has(stmts, (ast.Yield, ast.YieldFrom, ast.Await), loops_too=True):
            why = "`yield` inside it"
        elif _has(stmts, (ast.Break, ast.Continue)):
            why = "`break`/`continue` of a loop left as Python"
        if why:
            if why != "`return` inside it":
                self.notes.append(f"the `if` at line {s.lineno + self.offset} stays a "
                                  f"Python `if` (a traced condition is a graph break): {why}")
            s.body, s.orelse = self.block(s.body), self.block(s.orelse)
            return [s]
        self.count += 1
        n = self.count
        body, orelse = self.block(s.body), self.block(s.orelse)
        _LINE[0] = s.lineno
        state = _assigned(body + orelse)
        call = _parse(f"{_HELPERS}.if_stmt(_ag_test, _ag_ftrue_{n}, _ag_ffalse_{n}, "
                      f"_ag_fget_{n}, _ag_fset_{n}, {tuple(state)!r}, _ag_fread_{n}, "
                      f"_ag_fmut_{n}, 'at line {s.lineno + self.offset}')")
        _replace_names(call, {"_ag_test": _logic(s.test)})
        return _undefined(state) + [
            _function(f"_ag_ftrue_{n}", [], state, body),
            _function(f"_ag_ffalse_{n}", [], state, orelse)] + \
            _state_functions(n, state, _read(body + orelse), _mutated(body + orelse)) + call


def _lower_jumps(stmts, n, flags) -> list:
    """The loop body with its own `break`/`continue` turned into flag assignments, and
    every statement after one guarded by `if not (flags)`."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, ast.Break):
            out += _parse(f"_ag_brk_{n} = True")
            return out
        if isinstance(s, ast.Continue):
            out += _parse(f"_ag_cont_{n} = True")
            return out
        jumps = _has([s], (ast.Break, ast.Continue))
        if jumps:
            for field in ("body", "orelse"):
                if hasattr(s, field) and not isinstance(s, (ast.For, ast.While)):
                    setattr(s, field, _lower_jumps(getattr(s, field), n, flags))
            if isinstance(s, (ast.With,)):
                s.body = _lower_jumps(s.body, n, flags)
        out.append(s)
        rest = stmts[i + 1:]
        if jumps and rest:
            test = " or ".join(flags)
            guard = ast.If(test=_parse(f"not ({test})")[0].value,
                           body=_lower_jumps(rest, n, flags), orelse=[], lineno=s.lineno)
            out.append(guard)
            return out
    return out


def _logic(e):
    """Condition `e` with `and`/`or`/`not` as helper calls (traced operands stay lazy)."""
    if any(isinstance(m, ast.NamedExpr) for m in ast.walk(e)):
        return e
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
        return ast.Call(ast.Attribute(ast.Name(_HELPERS, ast.Load()), "not_", ast.Load()),
                        [_logic(e.operand)], [])
    if isinstance(e, ast.BoolOp):
        fn = "and_" if isinstance(e.op, ast.And) else "or_"
        values = [_logic(v) for v in e.values]
        out = values[-1]
        for v in reversed(values[:-1]):
            out = ast.Call(ast.Attribute(ast.Name(_HELPERS, ast.Load()), fn, ast.Load()),
                           [_thunk(v), _thunk(out)], [])
        return out
    if isinstance(e, ast.IfExp):
        return ast.Call(ast.Attribute(ast.Name(_HELPERS, ast.Load()), "if_exp", ast.Load()),
                        [_logic(e.test), _thunk(e.body), _thunk(e.orelse)], [])
    return e


def _thunk(e):
    return ast.Lambda(ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                    defaults=[]), e)


def _replace_names(tree, mapping) -> None:
    nodes = tree if isinstance(tree, list) else [tree]
    for root in nodes:
        for parent in ast.walk(root):
            for field, value in ast.iter_fields(parent):
                if isinstance(value, ast.Name) and value.id in mapping:
                    setattr(parent, field, mapping[value.id])
                elif isinstance(value, list):
                    for i, v in enumerate(value):
                        if isinstance(v, ast.Name) and v.id in mapping:
                            value[i] = mapping[v.id]


def _function(name, params, state, body):
    fn = _parse(f"def {name}({', '.join(params)}):\n    pass")[0]
    nonlocal_ = [v for v in state if v not in params]
    fn.body = (_parse(f"nonlocal {', '.join(nonlocal_)}") if nonlocal_ else []) + \
        (body or [ast.Pass()])
    return fn


def _undefined(state) -> list:
    out = []
    for v in state:
        out += _parse(f"try:\n    {v}\nexcept NameError:\n    {v} = {_HELPERS}.Undefined({v!r})")
    return out


def _state_functions(n, state, read, mutated) -> list:
    names = ", ".join(state)
    get = f"def _ag_fget_{n}():\n    return ({names}{',' if state else ''})\n"
    put = f"def _ag_fset_{n}(_ag_vals):\n" + \
        (f"    nonlocal {names}\n    ({names},) = _ag_vals\n" if state else "    pass\n")
    reads = ", ".join(f"{_HELPERS}.ld(lambda: {v})" for v in read)
    rd = f"def _ag_fread_{n}():\n    return ({reads}{',' if read else ''})\n"
    muts = ", ".join(f"({v!r}, {_HELPERS}.ld(lambda: {v}))" for v in mutated)
    mut = f"def _ag_fmut_{n}():\n    return ({muts}{',' if mutated else ''})\n"
    return _parse(get + put + rd + mut)
