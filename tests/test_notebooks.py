"""The notebooks in notebooks/ must run: their code cells are executed in order, in one
namespace, with the exceptions they raise failing the test (no Jupyter needed)."""

import json
import os

import pytest

NOTEBOOKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "notebooks")


def _notebooks():
    return sorted(f for f in os.listdir(NOTEBOOKS) if f.endswith(".ipynb"))


def test_there_is_a_getting_started_notebook():
    assert "getting_started.ipynb" in _notebooks()


@pytest.mark.parametrize("name", _notebooks())
def test_notebook_code_cells_run_in_order(name, capsys):
    with open(os.path.join(NOTEBOOKS, name)) as f:
        nb = json.load(f)
    assert nb["nbformat"] == 4
    cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert cells, "a notebook without code"
    namespace = {"__name__": "__notebook__"}
    for i, cell in enumerate(cells):
        source = "".join(cell["source"])
        exec(compile(source, f"{name}[code cell {i}]", "exec"), namespace)
    assert capsys.readouterr().out  # the cells print what they compute
