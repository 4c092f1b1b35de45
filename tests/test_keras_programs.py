"""flowjit's `tf.keras` against Keras 2: the programs of fixtures/keras_programs.py run under
`flowjit.keras` and give what tf_keras gave (fixtures/keras_programs.npz, recorded by
fixtures/record_keras.py): layer outputs, losses and metrics, optimizer steps, a fit History,
batch normalization's statistics, parameter counts."""

import importlib.util
import os

import numpy as np
import pytest

from flowjit import keras

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def _programs():
    spec = importlib.util.spec_from_file_location(
        "flowjit_keras_programs", os.path.join(FIXTURES, "keras_programs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PROGRAMS = _programs().PROGRAMS
RECORDED = dict(np.load(os.path.join(FIXTURES, "keras_programs.npz")))


def test_the_fixture_covers_every_program_and_is_small():
    recorded = {key.split("/")[0] for key in RECORDED if not key.startswith("_meta")}
    assert recorded == set(PROGRAMS)
    assert str(RECORDED["_meta/keras_version"]).startswith("2.")
    assert os.path.getsize(os.path.join(FIXTURES, "keras_programs.npz")) < 100_000


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_matches_keras2(name):
    keras.utils.set_random_seed(0)
    got = PROGRAMS[name](keras)
    want = {key[len(name) + 1:]: value for key, value in RECORDED.items()
            if key.startswith(name + "/")}
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        result = np.asarray(got[key])
        assert result.shape == value.shape, key
        if value.dtype.kind in "iu":
            np.testing.assert_array_equal(result, value, err_msg=key)
        else:
            np.testing.assert_allclose(result, value, rtol=2e-5, atol=2e-6, err_msg=key)
