"""The digits examples (examples/digits_*.py) reach the test accuracy their docstrings
document, trained on scikit-learn's bundled digits with fixed seeds, at the documented
epoch counts: the TF 1.x MLP, the Keras CNN and the Keras LSTM over image rows.

Each example's `main()` is imported and run as the script runs it (flowjit's default,
tiered compile policy: steps run while the training step compiles in the background), with
BLAS on one thread.
scikit-learn comes with the `test` extra; without it these tests skip.
"""

import importlib.util
import os

import pytest
from threadpoolctl import threadpool_limits

from flowjit import keras

pytest.importorskip("sklearn", reason="the digits examples need scikit-learn "
                                      "(pip install flowjit[datasets])")

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "examples")


def _example(name):
    spec = importlib.util.spec_from_file_location(f"flowjit_example_{name}",
                                                  os.path.join(EXAMPLES, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def keras_state():
    yield
    keras.backend.set_random_seed(None)
    keras.backend.clear_session()


# (example, epochs, the accuracy its docstring promises)
CASES = [("digits_mlp", 10, 0.95), ("digits_cnn", 10, 0.97), ("digits_lstm", 20, 0.95)]


@pytest.mark.parametrize("name,epochs,at_least", CASES, ids=[c[0] for c in CASES])
def test_example_reaches_its_documented_accuracy(name, epochs, at_least):
    module = _example(name)
    assert f">= {at_least:.0%}" in module.__doc__ and f"after {epochs} epochs" in module.__doc__
    # BLAS on one thread: the steps run NumPy's small products until their cluster has
    # compiled, and OpenBLAS's spinning threads on a busy 2-core machine (pytest's other
    # worker, the compile worker) made them 4x slower
    with threadpool_limits(1, user_api="blas"):
        accuracy = module.main(epochs=epochs, verbose=0)
    print(f"{name}: test accuracy {accuracy:.4f} after {epochs} epochs")
    assert accuracy >= at_least
