"""The notebooks in notebooks/ run in a real Jupyter kernel, as a user's would.

Each notebook is executed by nbclient in an IPython kernel (ipykernel) of this same Python,
with a temporary folder of its own as the working directory (the notebooks write logs and
traces there).  A cell that raises fails the test (nbclient's CellExecutionError, with the
cell and its traceback).  The notebooks are committed without outputs, and every code cell
must show something when run: text, HTML, an image; some notebooks promise particular kinds
of output (the training notebook's loss curve is an image/png), checked in `PROMISED`.

The kernel gets FLOWJIT_PROGRESS=0 (no progress bars in the outputs), a TMPDIR of the
test's own (what the notebooks write into `tempfile.mkdtemp()` folders stays there) and,
like every process of the test run, conftest's environment; Jupyter's runtime files and
IPython's profile go to temporary folders, never to the user's home.
"""

import os
import shutil
import sys

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "notebooks")
CELL_TIMEOUT_S = 300   # one cell, numba compiling with a cold kernel cache included

# Output types a notebook promises beyond "every code cell shows something".
PROMISED = {
    "getting_started.ipynb": {"text/html"},                   # a lower() report, a graph
    "tf1_training.ipynb": {"image/png"},                      # the loss curve
    "performance_tour.ipynb": {"image/png", "text/markdown"},  # the plot, the table
}


def _notebooks():
    return sorted(f for f in os.listdir(NOTEBOOKS) if f.endswith(".ipynb"))


def _read(name):
    return nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _jupyter_for_this_python(tmp_path, monkeypatch):
    """Jupyter's runtime files and IPython's profile in `tmp_path`, and a `python3` kernel
    that runs sys.executable: the kernelspec Jupyter finds does when ipykernel is installed
    in this Python; otherwise install one for sys.executable in a temporary prefix and put
    it first on JUPYTER_PATH (of this process: the kernel spec is looked up here)."""
    from jupyter_client.kernelspec import NoSuchKernel
    from jupyter_client.manager import KernelManager

    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "jupyter-runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))   # kernel managers make one
    try:
        command = KernelManager(kernel_name="python3").format_kernel_cmd()
        executable = shutil.which(command[0]) or command[0]
    except NoSuchKernel:
        executable = None
    if executable and _same_file(executable, sys.executable):
        return
    from ipykernel.kernelspec import install

    prefix = tmp_path / "kernelspec"
    install(kernel_name="python3", prefix=str(prefix))
    path = [str(prefix / "share" / "jupyter"), os.environ.get("JUPYTER_PATH", "")]
    monkeypatch.setenv("JUPYTER_PATH", os.pathsep.join(p for p in path if p))
    command = KernelManager(kernel_name="python3").format_kernel_cmd()
    assert _same_file(shutil.which(command[0]) or command[0], sys.executable), command


def _kinds(cell):
    """The output kinds of an executed code cell: "stream" and the MIME types of its rich
    outputs."""
    kinds = set()
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            kinds.add("stream")
        elif out["output_type"] in ("display_data", "execute_result"):
            kinds.update(out["data"])
    return kinds


def test_there_is_a_getting_started_notebook():
    assert "getting_started.ipynb" in _notebooks()


@pytest.mark.parametrize("name", _notebooks())
def test_notebook_is_committed_without_outputs(name):
    nb = _read(name)
    assert nb.nbformat == 4
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "a notebook without code"
    for i, cell in enumerate(code):
        assert not cell.outputs and cell.execution_count is None, \
            f"{name}: code cell {i} has stored outputs (clear them before committing)"
    assert any(c.cell_type == "markdown" for c in nb.cells), "cells explained by markdown"


@pytest.mark.parametrize("name", _notebooks())
def test_notebook_runs_in_a_jupyter_kernel(name, tmp_path, monkeypatch):
    _jupyter_for_this_python(tmp_path, monkeypatch)
    nb = _read(name)
    # one more cell, which says which Python the kernel is
    nb.cells.append(nbformat.v4.new_code_cell("import sys; print(sys.executable)"))
    work, temp = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    temp.mkdir()   # the notebooks' tempfile.mkdtemp() folders (logs, reports) go here
    env = dict(os.environ, FLOWJIT_PROGRESS="0", TMPDIR=str(temp))
    client = NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(work)}})
    client.execute(env=env)   # raises CellExecutionError for a cell that raises

    probe = nb.cells.pop()
    assert _same_file(probe.outputs[0]["text"].strip(), sys.executable)
    code = [c for c in nb.cells if c.cell_type == "code"]
    shown = set()
    for i, cell in enumerate(code):
        kinds = _kinds(cell)
        assert not any(o["output_type"] == "error" for o in cell.outputs)
        assert kinds, f"{name}: code cell {i} shows nothing:\n{cell.source}"
        shown |= kinds
    missing = PROMISED.get(name, set()) - shown
    assert not missing, f"{name}: no {', '.join(sorted(missing))} output"
