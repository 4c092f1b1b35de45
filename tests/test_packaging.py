"""flowjit installs the way users install it: a built wheel holds every module of the source
tree, and `pip install` of that wheel into a fresh virtual environment imports and runs.

The editable install CI uses maps the package to the checkout, so it cannot notice a module
the wheel leaves out; this test builds the wheel from a copy of the tree (nothing is written
into the checkout) and looks inside it.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
_NOT_SHIPPED = {"tests", "docs", "examples", "notebooks", "build", "dist", ".git", ".ci"}


def _source_modules() -> set:
    """Every module of the package's source tree, as a path inside the wheel."""
    found = set()
    for path in REPO.rglob("*.py"):
        rel = path.relative_to(REPO)
        top = rel.parts[0]
        if top in _NOT_SHIPPED or top.startswith(".") or rel == pathlib.Path("setup.py"):
            continue
        # a module ships only when every folder above it is a package
        folders = [REPO.joinpath(*rel.parts[:k]) for k in range(1, len(rel.parts))]
        if all((f / "__init__.py").exists() for f in folders):
            found.add("flowjit/" + rel.as_posix())
    return found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> pathlib.Path:
    """A wheel built with pip from a clean copy of the source tree."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis", ".pytest_cache",
        ".venv", "tests"))
    # with build isolation, as `pip install .` builds (setuptools comes from the registry)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                    "-w", str(work / "dist"), str(src)], check=True, capture_output=True,
                   text=True, stdin=subprocess.DEVNULL)
    (built,) = (work / "dist").glob("flowjit-*.whl")
    return built


def test_the_wheel_holds_every_module_of_the_source_tree(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {n for n in names if n.endswith(".py")}
    expected = _source_modules()
    assert "flowjit/targets/cpu/codegen.py" in expected  # the walk found the tree
    assert expected - shipped == set(), "modules missing from the wheel"
    assert shipped - expected == set(), "modules in the wheel that are not in the source tree"
    assert "flowjit/setup.py" not in names


def test_pip_install_of_the_wheel_imports_and_runs_a_jitted_function(wheel, tmp_path):
    venv = tmp_path / "venv"
    # system site packages give the venv numpy/numba/scipy without a download; the wheel
    # installed into the venv comes first on its path, before any editable flowjit
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True, text=True,
                   stdin=subprocess.DEVNULL)
    script = (
        "import importlib.metadata, numpy as np, flowjit\n"
        "print(flowjit.__file__)\n"
        "assert flowjit.__version__ == importlib.metadata.version('flowjit')\n"
        "f = flowjit.jit(lambda x, y: np.tanh(x) * 2.0 + y.sum())\n"
        "x = np.linspace(-2, 2, 7)\n"
        "np.testing.assert_allclose(f(x, x), np.tanh(x) * 2.0 + x.sum(), rtol=1e-12)\n"
        "print('ok')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run([str(python), "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    where, ok = proc.stdout.split()[-2:]
    assert pathlib.Path(where).is_relative_to(venv), f"imported flowjit from {where}"
    assert ok == "ok"
