"""One op, one definition (docs/architecture.md, "A new op"): every OpDef is complete where
it is created and immutable afterwards.

Checked: registered OpDefs are frozen (assigning a field fails; `dataclasses.replace` makes
a new one); registering again, or re-running `flowjit.ops` in a fresh interpreter, leaves
every definition as it was (the same gradient and lowering objects, set at construction);
no module in ops/ assigns an OpDef field; the import rule of ops/__init__.py holds (shared
helpers import no op module, and only modules that no op module imports take names from op
modules), so the op modules import in any order; and the op modules stay under 400 lines.
"""

import ast
import dataclasses
import json
import pathlib
import subprocess
import sys

import pytest

import flowjit.ops
from flowjit.ops import registry
from flowjit.ops.registry import OpDef

OPS = pathlib.Path(flowjit.ops.__file__).parent
FIELDS = [f.name for f in dataclasses.fields(OpDef)]
# Shared builders: imported by name from any op module, so they import no op module.
HELPERS = {"builder", "conversion", "elementwise", "lower_index", "lower_reduce", "lower_util",
           "lower_window", "lower_conv", "registry", "slice_spec", "variable_ref",
           "array_common"}
# Gathering modules re-export other modules' names; only the layers above import them.
GATHERING = {"__init__", "api", "array_ops", "math_ops", "nn_ops"}


def test_every_registered_op_def_is_frozen():
    defs = registry.all_op_defs()
    assert len(defs) > 100
    for op_def in defs:
        for field in ("lower", "gradient", "infer", "kernel", "traits", "doc"):
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(op_def, field, None)
        assert isinstance(op_def.traits, frozenset)
        assert isinstance(op_def.ref_inputs, frozenset)


def test_a_variant_is_a_new_op_def():
    add = registry.lookup("Add")
    variant = dataclasses.replace(add, name="TestAddVariant", lower=None)
    assert variant is not add and variant.lower is None
    assert add.lower is not None and registry.lookup("Add") is add


def test_registration_reads_the_op_defs_and_changes_none():
    before = {d.name: (d, [getattr(d, f) for f in FIELDS]) for d in registry.all_op_defs()}
    flowjit.ops.register_all()
    after = registry.all_op_defs()
    assert sorted(before) == [d.name for d in after]
    for op_def in after:
        same, fields = before[op_def.name]
        assert op_def is same
        assert all(a is b for a, b in zip(fields, [getattr(op_def, f) for f in FIELDS])), \
            op_def.name


_DESCRIBE = """
import importlib, json
import flowjit
from flowjit import ops
from flowjit.ops import registry

def name_of(fn):
    return None if fn is None else f"{getattr(fn, '__module__', '?')}:{fn.__qualname__}"

def describe():
    return {d.name: [id(d), sorted(t.name for t in d.traits), sorted(d.ref_inputs),
                     d.default_name, d.doc, name_of(d.infer), name_of(d.kernel),
                     name_of(d.gradient), name_of(d.lower), id(d.gradient), id(d.lower)]
            for d in registry.all_op_defs()}

first = describe()
importlib.reload(ops)  # runs ops/__init__.py (and register_all) a second time
print(json.dumps([first, describe()]))
"""


def test_importing_the_ops_twice_leaves_the_definitions_unchanged():
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", _DESCRIBE], capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    (first, reloaded), (fresh, _) = runs
    assert first == reloaded  # the same objects, fields and functions after a second import

    def without_ids(description):
        return {k: v[1:9] for k, v in description.items()}

    assert without_ids(first) == without_ids(fresh)  # and the same in a new interpreter
    with_gradient = [k for k, v in first.items() if v[7] is not None]
    with_lowering = [k for k, v in first.items() if v[8] is not None]
    assert "MatMul" in with_gradient and "MatMul" in with_lowering
    assert len(with_gradient) > 80 and len(with_lowering) > 100


def _module_trees():
    for path in sorted(OPS.glob("*.py")):
        yield path.stem, path, ast.parse(path.read_text())


_OP_DEF_ONLY = {"infer", "kernel", "traits", "ref_inputs", "default_name", "gradient", "lower"}


def test_no_module_in_ops_assigns_an_op_def_field():
    for name, path, tree in _module_trees():
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr in _OP_DEF_ONLY:
                    pytest.fail(f"ops/{path.name}:{node.lineno} assigns .{target.attr}")


def _top_level_imports(tree):
    """(modules imported as objects, {module: names imported from it}) of `from . import`."""
    objects, names = set(), {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module is None:
                objects |= {a.name for a in node.names}
            else:
                names.setdefault(node.module.split(".")[0], []).extend(a.name for a in node.names)
    return objects, names


def test_the_import_rule_of_ops_holds():
    imports = {name: _top_level_imports(tree) for name, _, tree in _module_trees()}
    importers = {name: set() for name in imports}
    for name, (objects, names) in imports.items():
        for target in objects | set(names):
            importers.setdefault(target, set()).add(name)
    for name, (objects, names) in imports.items():
        if name in HELPERS:
            assert (objects | set(names)) <= HELPERS, f"helper ops/{name}.py imports an op module"
            continue
        if name in GATHERING:
            continue  # checked below: only modules that nothing imports import them
        named_ops = sorted(set(names) - HELPERS)
        users = importers[name] - GATHERING
        assert not (named_ops and users), (
            f"ops/{name}.py is imported by {sorted(users)} and imports names from "
            f"{named_ops}: import those modules as objects (see ops/__init__.py)")
    for gathering in GATHERING - {"__init__", "api"}:
        for user in importers[gathering] - GATHERING:
            assert not importers[user] - GATHERING, (
                f"ops/{user}.py imports the gathering module {gathering} but is itself "
                f"imported by {sorted(importers[user] - GATHERING)}")


def test_op_modules_stay_under_400_lines():
    long = {p.name: n for p in OPS.glob("*.py")
            if (n := len(p.read_text().splitlines())) > 400}
    assert not long, f"split these modules by family: {long}"
