"""Shared test set-up: a fresh default graph per test, strict kernel-output checking, the
loop IR verified after every loop-IR pass (compiler/loop_verify.py), and no timed trial of
jitted functions against plain NumPy (FLOWJIT_JIT_MEASURE_RUNS=0, runtime/jit.py; child
processes inherit it): the differential tests compare compiled kernels with NumPy, and a
trial could keep plain NumPy on a loaded machine; tests/test_jit_trial.py tests the trial
itself."""

import os

import pytest

os.environ.setdefault("FLOWJIT_VERIFY_LOOP_IR", "1")
os.environ["FLOWJIT_JIT_MEASURE_RUNS"] = "0"

import flowjit as tf
from flowjit.runtime import executor


@pytest.fixture(autouse=True)
def fresh_graph():
    """Every test starts with an empty default graph and kernel output checks on."""
    executor.CHECK_OUTPUTS = True
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()
    # kernel cache entries are written on background threads: let none outlive its test
    tf.wait_for_cache_writes()


@pytest.fixture
def compiled_calls(monkeypatch):
    """Compiler failures raise (clustering.STRICT); returns a list that gets one entry per
    call a compiled cluster kernel served, so a test can assert compiled code ran."""
    from flowjit.runtime import clustering

    monkeypatch.setattr(clustering, "STRICT", True)
    calls, call = [], clustering.ClusterStep._call

    def counted(step, *args):
        outs = call(step, *args)
        if outs is not None:
            calls.append(step.name)
        return outs

    monkeypatch.setattr(clustering.ClusterStep, "_call", counted)
    return calls


def assert_like_recorded(name, got_structure, got, want_structure, want, tolerances):
    """A program's flattened results equal what TensorFlow recorded: the same nesting,
    dtypes and shapes, values exact for integers, bools and strings and within
    `tolerances[dtype]` (rtol, atol) for floats."""
    import numpy as np

    assert got_structure == want_structure, "fetch results nest differently"
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        where = f"{name} leaf {i}"
        if w.dtype.kind == "U":  # tensor names
            assert g.tolist() == w.tolist(), where
            continue
        assert g.dtype == w.dtype, f"{where}: dtype {g.dtype}, TensorFlow gives {w.dtype}"
        assert g.shape == w.shape, f"{where}: shape {g.shape}, TensorFlow gives {w.shape}"
        if w.dtype.kind == "f":
            rtol, atol = tolerances[w.dtype]
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=where)
        else:
            np.testing.assert_array_equal(g, w, err_msg=where)


def load_recorded_programs(module_name):
    """(programs module, recorded arrays) of `tests/fixtures/<module_name>.py` and its
    `.npz` written by fixtures/record_tf1.py."""
    import importlib.util
    import os

    import numpy as np

    fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
    spec = importlib.util.spec_from_file_location(f"flowjit_{module_name}",
                                                  os.path.join(fixtures, module_name + ".py"))
    programs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(programs)
    return programs, dict(np.load(os.path.join(fixtures, module_name + ".npz")))


def recorded_result(recorded, name):
    """(structure string, leaf arrays) TensorFlow recorded for program `name`."""
    leaves, i = [], 0
    while f"{name}:{i}" in recorded:
        leaves.append(recorded[f"{name}:{i}"])
        i += 1
    return str(recorded[f"{name}:structure"]), leaves
