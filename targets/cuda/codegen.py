"""A cluster's schedule as one numba-cuda module: its kernels and the host function `run` that
sizes, allocates and launches them (docs/architecture.md, "The CUDA target").

`generate(schedule, simulator)` returns the module's source.  `run(*inputs, stream=None)`
takes host arrays or device arrays (numba-cuda's), copies host ones to the device, checks
the program's size conditions, allocates one flat device buffer per materialized node and
launches, per schedule group, the kernel the sizes call for:
- a loop group: `flat` (one thread per outer index) when each outer index holds little work
  or there are very many of them, `row` (one block per outer index) otherwise, and the two
  `split` kernels for a lone reduction with few outputs over many inputs (kernel_text.py);
  a lone COMPUTE that swaps the last two axes of a materialized tensor runs the tiled
  transpose;
- MATMUL: the tiled matrix product; RESHAPE: the input's buffer itself (buffers are flat);
  SCATTER: a copy of the base, then the ordered scatter (library_text.py).
It returns the outputs as device arrays in their shapes.  Launch sizes come from the run-
time sizes, so one module serves every shape of its signature, as on the CPU.

Not rendered (`Unrenderable`, so the cluster runs elsewhere): LIBCALL (sorting, LAPACK) and
WHILE nodes, sizes or checks that depend on computed values, complex and float16 values.
"""

from __future__ import annotations

from ...compiler.core import ir
from ...compiler.core.ir import NodeKind, Scalar
from . import kernel_text, library_text
from .prelude import GPU_LAUNCH, HOST_HELPERS, SIMULATOR_LAUNCH, LaunchShape, prelude
from .scalar_text import ScalarWriter, Unrenderable, ctor, host_size, linear_index

ROW_MIN_WORK = 64          # elements per outer index from which a block shares one
FLAT_MIN_OUTER = 1 << 16   # ... unless there are this many outer indices (threads enough)
SPLIT_MAX_OUTER = 64       # a lone reduction with at most this many outputs ...
SPLIT_MIN_WORK = 1 << 14   # ... over at least this many inputs each is split
TRANSPOSE_TILE = 32


class Module:
    """The module being generated: size names, buffer names, kernels, host lines."""

    def __init__(self, schedule, launch: LaunchShape, simulator: bool):
        self.schedule, self.launch, self.simulator = schedule, launch, simulator
        self.host: list = []
        self.kernels: list = []
        self.signatures: dict = {}   # kernel name -> numba type signature of its launch
        self.buffer_types: dict = {}   # buffer name -> numba array type
        self.nested: list = []   # (name, source, signatures) of while loops' modules
        self.loaders: list = []  # module-level lines loading them
        self._sizes: dict = {}

    def size(self, expr) -> str:
        """The host name (or literal) of a size expression, computed once in `run`."""
        if ir.is_const(expr):
            return str(int(expr.attr))
        if expr.op is Scalar.DIM:
            return f"d{expr.attr[0]}_{expr.attr[1]}"
        name = self._sizes.get(id(expr))
        if name is None:
            name = self._sizes[id(expr)] = f"z{len(self._sizes)}"
            text = host_size(expr, lambda p, a: f"d{p}_{a}", self._host_load)
            self.host.append(f"    {name} = {text}")
        return name

    def _host_load(self, node, idx) -> str:
        """A computed value a size depends on, copied back to the host (its producer ran:
        a node's size is first asked for where that node is computed, after its
        producers)."""
        buf = self.buffer(node)
        self.host.append(f"    {buf}_h = {buf}.copy_to_host(stream=stream)")
        return f"{buf}_h[{linear_index(idx, [self.size(d) for d in node.shape])}]"

    def buffer(self, node) -> str:
        while node.kind is NodeKind.RESHAPE:
            node = node.inputs[0]
        name = f"b_in{node.attr[0]}" if node.kind is NodeKind.INPUT else f"b_{node.name}"
        self.buffer_types[name] = array_type(node.dtype)
        return name

    def add_kernel(self, kt) -> None:
        """Add a loop-group kernel (kernel_text.KernelText): its text and its signature."""
        types = [self.buffer_types.get(a, "int64") for a in kt.args]
        self.add_text(kt.name, kt.text(), types)

    def add_text(self, name: str, text: str, types) -> None:
        self.kernels.append(text)
        self.signatures[name] = f"void({', '.join(types)})"

    def launch_line(self, kernel: str, grid: str, block: str, args) -> str:
        return f"{kernel}[{grid}, {block}, stream]({', '.join(args)})"


def array_type(dtype) -> str:
    """The numba type of a flat buffer of `dtype` (as a launch types it)."""
    return f"{kernel_text.NUMBA_TYPE[dtype.name]}[::1]"


def generate(schedule, simulator: bool) -> str:
    """The module source of `schedule` (module docstring)."""
    return generate_module(schedule, simulator)[0]


def generate_module(schedule, simulator: bool) -> tuple:
    """(the module source, {kernel name: its numba signature}, [(name, source, signatures)
    of the modules of its while loops, nested ones too]) of `schedule`."""
    launch = SIMULATOR_LAUNCH if simulator else GPU_LAUNCH
    mod = Module(schedule, launch, simulator)
    program = schedule.program
    for node in program.nodes():
        if node.kind is NodeKind.LIBCALL:
            raise Unrenderable(f"{node.kind.value} nodes ({node.name})")
        if node.dtype.is_complex or node.dtype.name == "float16":
            raise Unrenderable(f"{node.dtype.name} values ({node.name})")
    # parameters in the order of program.inputs, each named by its input's position (the
    # array constants the pipeline appends keep their own numbers after unused ones drop)
    inputs = {n.attr[0]: n for n in program.inputs}
    params = "".join(f"in{n.attr[0]}, " for n in program.inputs)
    mod.host.append(f"def run({params}stream=0):")
    for p, node in sorted(inputs.items()):
        for a in range(len(node.shape)):
            mod.host.append(f"    d{p}_{a} = in{p}.shape[{a}]")
    data_checks = []
    for cond, message in program.checks:
        if any(e.op is Scalar.LOAD for e in ir.walk(cond)):
            data_checks.append((cond, message))
            continue
        mod.host.append(f"    if not {host_size(cond, lambda p, a: f'd{p}_{a}')}:")
        mod.host.append(f"        raise ValueError({message!r})")
    for p in sorted(inputs):
        mod.host.append(f"    b_in{p} = _to_device(in{p}, stream)")
    for k, group in enumerate(schedule.groups):
        _group(mod, k, group)
    _data_checks(mod, data_checks)
    outs = []
    for o in program.outputs:
        shape = [mod.size(d) for d in o.shape]
        outs.append(f"_shaped({mod.buffer(o)}, ({''.join(s + ', ' for s in shape)}))")
    mod.host.append(f"    return ({''.join(o + ', ' for o in outs)})")
    source = "\n".join([prelude(launch, simulator), "import numba", HOST_HELPERS]
                       + mod.kernels + mod.loaders + mod.host) + "\n"
    return source, mod.signatures, mod.nested




def _data_checks(mod: Module, checks) -> None:
    """Conditions on computed values, evaluated on the host after the kernels (the values
    they read are copied back); a false one raises ValueError(message)."""
    copied: set = set()

    def load(node, idx):
        buf = mod.buffer(node)
        if buf not in copied:
            copied.add(buf)
            mod.host.append(f"    {buf}_h = {buf}.copy_to_host(stream=stream)")
        return f"{buf}_h[{linear_index(idx, [mod.size(d) for d in node.shape])}]"

    for k, (cond, message) in enumerate(checks):
        writer = ScalarWriter(mod.host, "    ", lambda attr: "0", load,
                              lambda p, a: f"d{p}_{a}", prefix=f"c{k}_")
        value = writer.value(cond)
        mod.host.append(f"    if not {value}:")
        mod.host.append(f"        raise ValueError({message!r})")


def _alloc(mod: Module, node) -> None:
    sizes = " * ".join(mod.size(d) for d in node.shape) or "1"
    mod.host.append(f"    {mod.buffer(node)} = _buffer({sizes}, {ctor(node.dtype)}, stream)")


def _group(mod: Module, k: int, group) -> None:
    m0 = group.members[0]
    if group.kind == "matmul":
        _matmul(mod, k, m0)
    elif group.kind == "reshape":
        return
    elif group.kind == "scatter":
        _scatter(mod, k, m0)
    elif group.kind == "while":
        _while(mod, k, m0)
    elif group.kind == "while_out":
        mod.buffer(m0)
        mod.host.append(f"    {mod.buffer(m0)} = _flat(_wv_{m0.inputs[0].name}[{m0.attr}])")
    elif group.kind == "loop":
        if len(group.members) == 1 and _transpose_source(mod, m0) is not None:
            _transpose(mod, k, m0, _transpose_source(mod, m0))
        else:
            _loop_group(mod, k, group)
    else:
        raise Unrenderable(f"{group.kind} nodes ({m0.name})")


def _work_text(mod: Module, group) -> str:
    p = len(group.outer)
    parts = []
    for m in group.members:
        sizes = list(m.shape[p:]) + list(m.rshape)
        parts.append(" * ".join(mod.size(s) for s in sizes) or "1")
    return f"max({', '.join(parts)}, 0)" if len(parts) > 1 else parts[0]


def _loop_group(mod: Module, k: int, group) -> None:
    for m in group.members:
        _alloc(mod, m)
    shuffles = mod.launch.shuffles
    flat = kernel_text.flat_kernel(mod, f"_g{k}_flat", group)
    row = kernel_text.row_kernel(mod, f"_g{k}_row", group, shuffles)
    mod.add_kernel(flat)
    mod.add_kernel(row)
    n_outer = " * ".join(mod.size(d) for d in group.outer) or "1"
    h = mod.host
    h.append(f"    n_outer = {n_outer}")
    h.append(f"    work = {_work_text(mod, group)}")
    lone = len(group.members) == 1 and group.members[0].kind is NodeKind.REDUCE
    indent = "    "
    if lone:
        node = group.members[0]
        part, fin, acc_dtype = kernel_text.split_kernels(mod, f"_g{k}", node, shuffles)
        mod.buffer_types[f"pv__g{k}"] = array_type(acc_dtype)
        mod.buffer_types[f"pi__g{k}"] = "int64[::1]"
        mod.add_kernel(part)
        mod.add_kernel(fin)
        h.append(f"    if n_outer <= {SPLIT_MAX_OUTER} and work >= {SPLIT_MIN_WORK}:")
        h.append(f"        nsplit = min(work // (TPB * 4), MAX_BLOCKS // max(n_outer, 1))")
        h.append(f"        nsplit = max(1, nsplit)")
        h.append(f"        pv__g{k} = cuda.device_array(n_outer * nsplit, "
                 f"dtype={ctor(acc_dtype)}, stream=stream)")
        h.append(f"        pi__g{k} = cuda.device_array(n_outer * nsplit, dtype=i8, "
                 f"stream=stream)")
        h.append("        " + mod.launch_line(part.name, "_blocks(n_outer * nsplit, 1)",
                                               "TPB", part.args))
        h.append("        " + mod.launch_line(fin.name, "_blocks(n_outer, 1)", "TPB",
                                               fin.args))
        h.append(f"    elif work >= {ROW_MIN_WORK} and n_outer < {FLAT_MIN_OUTER}:")
        indent = "        "
    else:
        h.append(f"    if work >= {ROW_MIN_WORK} and n_outer < {FLAT_MIN_OUTER}:")
        indent = "        "
    h.append(indent + "if n_outer > 0:")
    h.append(indent + "    " + mod.launch_line(row.name, "_blocks(n_outer, 1)", "TPB",
                                               row.args))
    h.append("    elif n_outer > 0:")
    h.append("        " + mod.launch_line(flat.name, "_blocks(n_outer, TPB)", "TPB",
                                           flat.args))


def _matmul(mod: Module, k: int, node) -> None:
    if node.dtype.is_bool:
        raise Unrenderable(f"bool matrix products ({node.name})")
    a, b = node.inputs
    ta, tb = node.attr
    name = f"_g{k}_mm"
    arr = array_type(node.dtype)
    mod.add_text(name, library_text.matmul_kernel(name, node.dtype, ta, tb, mod.launch),
                 [arr, arr, arr] + ["int64"] * 5)
    _alloc(mod, node)
    rank = len(node.shape)
    m, n = mod.size(node.shape[-2]), mod.size(node.shape[-1])
    kdim = mod.size(a.shape[-1] if not ta else a.shape[-2])
    batch = " * ".join(mod.size(d) for d in node.shape[:-2]) or "1"
    a_batch = " * ".join(mod.size(d) for d in a.shape[:-2]) or "1"
    b_batch = " * ".join(mod.size(d) for d in b.shape[:-2]) or "1"
    h = mod.host
    h.append(f"    nb = {batch}")
    h.append(f"    a_step = {m} * {kdim} if ({a_batch}) == nb else 0")
    h.append(f"    b_step = {kdim} * {n} if ({b_batch}) == nb else 0")
    bm = mod.launch.mm_block
    threads = library_text.matmul_threads(mod.launch)
    h.append(f"    if nb > 0 and {m} > 0 and {n} > 0:")
    h.append(f"        if {kdim} == 0:")
    h.append(f"            {mod.buffer(node)}[:] = 0")
    h.append("        else:")
    h.append(f"            grid = (({n} + {bm - 1}) // {bm}, ({m} + {bm - 1}) // {bm}, nb)")
    h.append("            " + mod.launch_line(
        name, "grid", str(threads), [mod.buffer(a), mod.buffer(b), mod.buffer(node), m, n,
                                     kdim, "a_step", "b_step"]))
    del rank


def _scatter(mod: Module, k: int, node) -> None:
    base, rows, updates = node.inputs
    name = f"_g{k}_scatter"
    out = mod.buffer(node)
    mod.add_text(name, library_text.scatter_kernel(name, add=node.attr is not None),
                 [array_type(node.dtype), array_type(rows.dtype), array_type(node.dtype)]
                 + ["int64"] * 3 + ["int32[::1]"])
    h = mod.host
    _alloc(mod, node)
    h.append(f"    {out}.copy_to_device({mod.buffer(base)}, stream=stream)")
    n_base = mod.size(node.shape[0]) if node.shape else "1"
    row_size = " * ".join(mod.size(d) for d in node.shape[1:]) or "1"
    n_rows = " * ".join(mod.size(d) for d in rows.shape) or "1"
    h.append(f"    err = cuda.to_device(np.zeros(1, np.int32), stream=stream)")
    h.append(f"    if ({n_rows}) > 0 and ({row_size}) > 0:")
    h.append("        " + mod.launch_line(
        name, f"_blocks({row_size}, TPB)", "TPB",
        [out, mod.buffer(rows), mod.buffer(updates), n_rows, n_base, row_size, "err"]))
    h.append("    if err.copy_to_host(stream=stream)[0]:")
    h.append(f"        raise ValueError('{node.name}: a scattered row is outside [0, ' "
             f"+ str({n_base}) + ')')")


def _transpose_source(mod: Module, node):
    """The materialized node whose last two axes `node` swaps, else None."""
    if node.kind is not NodeKind.COMPUTE or len(node.shape) < 2:
        return None
    body = mod.schedule.resolved.get(id(node))
    if body is None or body.op is not Scalar.LOAD or body.attr.dtype != node.dtype:
        return None
    src = body.attr
    n = len(node.shape)
    want = list(ir.axis_vars(n))
    want[-1], want[-2] = want[-2], want[-1]
    if len(src.shape) != n or list(body.args) != want:
        return None
    if src.kind not in (NodeKind.INPUT, NodeKind.RESHAPE) and \
            id(src) in mod.schedule.inline:
        return None
    return src


def _transpose(mod: Module, k: int, node, src) -> None:
    tile = TRANSPOSE_TILE if not mod.simulator else 4
    name = f"_g{k}_transpose"
    arr = array_type(node.dtype)
    mod.add_text(name, library_text.transpose_kernel(name, node.dtype, tile),
                 [arr, arr, "int64", "int64"])
    _alloc(mod, node)
    r, c = mod.size(src.shape[-2]), mod.size(src.shape[-1])
    batch = " * ".join(mod.size(d) for d in node.shape[:-2]) or "1"
    rows = 8 if not mod.simulator else 2
    mod.host.append(f"    if ({batch}) > 0 and {r} > 0 and {c} > 0:")
    mod.host.append(f"        grid = (({c} + {tile - 1}) // {tile}, ({r} + {tile - 1}) // {tile}, "
                    f"{batch})")
    mod.host.append("        " + mod.launch_line(name, "grid", f"({tile}, {rows})",
                                                 [mod.buffer(src), mod.buffer(node), r, c]))


def _while(mod: Module, k: int, node) -> None:
    """A WHILE node: its condition and body are modules of their own (generated by this
    module, loaded at import), run by a host loop that reads the condition's one value back
    each iteration; loop variables are rebound to the body's new device arrays."""
    from ...compiler.schedule import make_schedule

    spec = node.attr
    names = {}
    for part, program in (("cond", spec.cond), ("body", spec.body)):
        source, signatures, nested = generate_module(
            make_schedule(program, mod.schedule.options), mod.simulator)
        name = names[part] = f"_w{k}_{part}"
        mod.nested.append((name, source, signatures))
        mod.nested += [(f"{name}{inner}", src, sigs) for inner, src, sigs in nested]
        mod.loaders.append(f"{name} = _load({source!r})")
    shaped = [f"_shaped({mod.buffer(x)}, ({''.join(mod.size(d) + ', ' for d in x.shape)}))"
              for x in node.inputs]
    n = spec.n_carried
    h = mod.host
    loop_vars = f"_wv_{node.name}"
    h.append(f"    {loop_vars} = [{', '.join(shaped[:n])}]")
    h.append(f"    _wc_{node.name} = [{', '.join(shaped[n:])}]")
    h.append(f"    while _truth({names['cond']}(*{loop_vars}, *_wc_{node.name}, "
             f"stream=stream)[0]):")
    h.append(f"        {loop_vars} = list({names['body']}(*{loop_vars}, *_wc_{node.name}, "
             f"stream=stream))")
