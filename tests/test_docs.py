"""README.md stays true: its Python examples run and its op list matches the registry."""

import importlib.util
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _readme():
    with open(os.path.join(REPO, "README.md")) as f:
        return f.read()


def test_readme_python_examples_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", _readme(), flags=re.S)
    assert blocks
    for i, block in enumerate(blocks):
        exec(compile(block, f"README.md[python block {i}]", "exec"), {"__name__": "__readme__"})
    printed = capsys.readouterr().out
    found = re.search(r"\[(?:np\.float32\()?([-0-9.e]+)", printed)
    assert found, f"no loss printed by the README example; it printed:\n{printed[:2000]}"
    loss = float(found.group(1))
    assert loss < 1e-4  # the example's regression converges, as its comment says


def test_readme_op_list_matches_the_registry():
    spec = importlib.util.spec_from_file_location(
        "update_op_list", os.path.join(REPO, "docs", "update_op_list.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.readme_section(_readme()) == tool.op_section(), \
        "README.md's op list is stale: run `python docs/update_op_list.py`"


def test_readme_test_command_is_what_ci_runs():
    readme = _readme()
    assert "pip install -e '.[test]' && python -m pytest" in readme
    with open(os.path.join(REPO, ".ci", "run")) as f:
        ci = f.read()
    assert "\npython -m pytest " in ci and "python -m pip install -e '.[test]'" in ci
    assert os.access(os.path.join(REPO, ".ci", "run"), os.X_OK)


def test_numpy_support_list_matches_the_tracer():
    spec = importlib.util.spec_from_file_location(
        "update_numpy_support", os.path.join(REPO, "docs", "update_numpy_support.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(module.PATH) as f:
        assert f.read() == module.document(), \
            "docs/numpy_support.md is stale: run `python docs/update_numpy_support.py`"
