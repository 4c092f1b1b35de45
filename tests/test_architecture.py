"""The layers of docs/architecture.md hold: import-linter's contracts in pyproject.toml pass,
the graph-core contract names every module of compiler/ outside core, and nothing below the
top layer imports the package root.  grimp (import-linter's graph) counts imports written
inside functions too."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import tomllib

import grimp
import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
TOP_LAYER = {"flowjit.__main__", "flowjit.demo", "flowjit.nn", "flowjit.train",
             "flowjit.optimizers", "flowjit.benchmarks"}


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("flowjit", include_external_packages=False)


def test_import_linter_contracts_pass():
    exe = shutil.which("lint-imports") or str(pathlib.Path(sys.executable).parent / "lint-imports")
    proc = subprocess.run([exe, "--config", str(REPO / "pyproject.toml"), "--no-cache"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Contracts: {len(CONFIG['contracts'])} kept, 0 broken." in proc.stdout


def test_the_core_contract_names_every_compiler_module_outside_core(graph):
    (contract,) = [c for c in CONFIG["contracts"]
                   if c.get("source_modules") == ["flowjit.compiler.core"]]
    compiler_children = {m for m in graph.find_children("flowjit.compiler")
                         if m != "flowjit.compiler.core"}
    listed = {m for m in contract["forbidden_modules"] if m.startswith("flowjit.compiler.")}
    assert compiler_children - listed == set(), (
        "add these modules of compiler/ to the graph-core contract's forbidden_modules in "
        "pyproject.toml (compiler/core must not import them)")
    assert listed - compiler_children == set(), "the contract names modules that do not exist"


def test_every_module_belongs_to_a_layer(graph):
    layers = CONFIG["contracts"][0]["layers"]
    named = {m.strip() for layer in layers for m in layer.replace(":", "|").split("|")}
    # setup.py sits in the package's folder (the repository root) but is not shipped
    top = graph.find_children("flowjit") - {"flowjit.setup"}
    assert top - named == set(), f"modules outside every layer: {sorted(top - named)}"


def test_nothing_below_the_top_layer_imports_the_package_root(graph):
    importers = graph.find_modules_that_directly_import("flowjit")
    below = sorted(m for m in importers if not any(m == t or m.startswith(t + ".")
                                                    for t in TOP_LAYER))
    assert below == [], f"these modules import the package root: {below}"
