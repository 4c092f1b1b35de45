"""Progress bars (progress.py): shown on terminals or when asked, silent otherwise, and
turned off by FLOWJIT_PROGRESS=0; `python -m flowjit run --steps N` draws one on a
terminal without breaking its printed lines."""

import argparse
import io

import pytest

import flowjit as tf
from flowjit import progress as progress_mod
from flowjit.progress import NullProgress, progress
from flowjit.runtime import run_cli


class _Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self):
        return True


@pytest.fixture(autouse=True)
def _no_setting(monkeypatch):
    monkeypatch.delenv(progress_mod.ENV_VAR, raising=False)


def test_not_a_terminal_writes_nothing(capsys):
    """Automatic mode, stderr not a terminal (pytest captures it): nothing is written, and
    the stand-in still iterates, counts and takes every call a bar takes."""
    seen = []
    with progress(range(5), desc="work") as bar:
        assert isinstance(bar, NullProgress) and not bar.enabled and len(bar) == 5
        for i in bar:
            bar.set_postfix(item=i)
            bar.set_description("still working")
            with bar.printing():
                seen.append(i)
    bar.update(2)
    assert seen == list(range(5)) and bar.n == 7
    assert capsys.readouterr().err == ""
    stream = io.StringIO()
    assert list(progress([1, 2], file=stream)) == [1, 2]
    assert stream.getvalue() == ""


def test_enabled_writes_a_bar_to_the_given_file():
    stream = io.StringIO()
    with progress(total=3, desc="cases", file=stream, enabled=True, leave=True) as bar:
        assert bar.enabled and bar.total == 3
        for _ in range(3):
            bar.update()
        assert bar.n == 3
    text = stream.getvalue()
    assert "cases" in text and "3/3" in text      # left on screen, finished
    stream = io.StringIO()
    assert list(progress("abc", file=stream, enabled=True, desc="letters")) == list("abc")
    assert "letters" in stream.getvalue()


def test_a_terminal_gets_a_bar_automatically():
    terminal = _Terminal()
    assert progress_mod.should_show(None, terminal)
    assert list(progress(range(4), desc="auto", file=terminal)) == [0, 1, 2, 3]
    assert "auto" in terminal.getvalue()


def test_flowjit_progress_0_turns_every_bar_off(monkeypatch):
    monkeypatch.setenv(progress_mod.ENV_VAR, "0")
    terminal = _Terminal()
    for enabled in (None, True):
        bar = progress(range(3), desc="off", file=terminal, enabled=enabled)
        assert isinstance(bar, NullProgress) and list(bar) == [0, 1, 2]
    assert terminal.getvalue() == ""


def test_flowjit_progress_1_asks_for_bars_anywhere(monkeypatch):
    monkeypatch.setenv(progress_mod.ENV_VAR, "1")
    stream = io.StringIO()
    assert progress(range(2), file=stream).enabled
    assert not progress(range(2), file=stream, enabled=False).enabled


def test_printing_clears_the_bar_and_draws_it_again():
    terminal = _Terminal()
    with progress(total=2, desc="lines", file=terminal, enabled=True) as bar:
        bar.update()
        before = len(terminal.getvalue())
        with bar.printing():
            pass
        assert "lines" in terminal.getvalue()[before:]    # drawn again
        before = len(terminal.getvalue())
        with bar.printing(io.StringIO()):                 # printing to a file: untouched
            pass
        assert len(terminal.getvalue()) == before


def test_not_in_a_notebook():
    assert not progress_mod.in_notebook()


def _counter_graph(path):
    graph = tf.Graph()
    with graph.as_default():
        v = tf.Variable(0.0, name="v")
        tf.assign_add(v, 1.0, name="inc")
        tf.global_variables_initializer()
        init = [op.name for op in graph.get_operations() if op.type == "NoOp"][-1]
        tf.train.write_graph(graph.as_graph_def(), str(path), "counter.pb", as_text=False)
    return str(path / "counter.pb"), init


def _run(argv, err):
    parser = argparse.ArgumentParser()
    run_cli.add_arguments(parser)
    out = io.StringIO()
    assert run_cli.execute(parser.parse_args(argv), out=out, err=err) == 0
    return out.getvalue()


def test_run_steps_draws_a_bar_on_a_terminal_only(tmp_path):
    path, init = _counter_graph(tmp_path)
    argv = [path, "--no-jit", "--run", init, "--fetch", "v", "--run", "inc", "--steps", "4"]
    quiet = io.StringIO()
    out = _run(argv, quiet)
    assert quiet.getvalue() == ""
    assert out.splitlines() == [f"step {i}: v = {float(i - 1)}" for i in range(1, 5)]
    terminal = _Terminal()
    assert _run(argv, terminal) == out            # the printed lines are unchanged
    assert "steps" in terminal.getvalue() and "/4" in terminal.getvalue()
