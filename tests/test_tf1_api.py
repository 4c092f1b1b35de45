"""TF 1.x API completeness: the names of `tensorflow.compat.v1` (and its nn, math, linalg,
train, random and initializers namespaces) that flowjit lacks are exactly a recorded list
(fixtures/tf1_api.json, written by fixtures/record_tf1_api.py), so an added name shows here
until the list is recorded again, and a name never disappears unnoticed; the names typical
TF 1.x model programs use (the MNIST, CIFAR-10, PTB and word2vec tutorials) are all there.
"""

import json
import os

import pytest

import flowjit as tf

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
with open(os.path.join(FIXTURES, "tf1_api.json")) as _f:
    RECORDED = json.load(_f)

# Names the tutorial programs call (beyond what every graph program uses), by namespace.
TUTORIAL_NAMES = {
    "": ["placeholder", "Variable", "get_variable", "variable_scope", "truncated_normal",
         "random_uniform", "random_normal", "zeros", "constant", "matmul", "reduce_mean",
         "reduce_sum", "argmax", "equal", "cast", "reshape", "concat", "gather", "square",
         "sqrt", "add_n", "add_to_collection", "get_collection", "global_variables_initializer",
         "gradients", "clip_by_global_norm", "trainable_variables", "name_scope", "one_hot",
         "stack", "unstack", "split", "transpose", "expand_dims", "scatter_sub", "unique",
         "IndexedSlices", "sequence_mask", "assign", "group", "control_dependencies",
         "tables_initializer", "to_float", "to_int32", "random_uniform_initializer",
         "truncated_normal_initializer", "constant_initializer", "zeros_initializer"],
    "nn": ["embedding_lookup", "softmax", "relu", "dropout", "bias_add", "xw_plus_b",
           "l2_loss", "in_top_k", "top_k", "sparse_softmax_cross_entropy_with_logits",
           "softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits",
           "zero_fraction", "l2_normalize", "moments"],
    "math": ["log_sigmoid", "reduce_logsumexp", "divide_no_nan", "confusion_matrix"],
    "train": ["GradientDescentOptimizer", "AdamOptimizer", "MomentumOptimizer",
              "AdagradOptimizer", "RMSPropOptimizer", "exponential_decay", "Saver",
              "get_or_create_global_step", "global_step"],
    "random": ["normal", "uniform", "truncated_normal", "categorical", "shuffle"],
    "initializers": ["he_normal", "glorot_uniform", "zeros", "variance_scaling"],
}


def _namespace(name):
    return getattr(tf, name) if name else tf


def _lacking_now(name):
    space = _namespace(name)
    return sorted(n for n in RECORDED["names"][name] if not hasattr(space, n))


@pytest.mark.parametrize("name", sorted(RECORDED["names"]), ids=lambda n: n or "tf")
def test_the_names_flowjit_lacks_are_the_recorded_ones(name):
    now, recorded = set(_lacking_now(name)), set(RECORDED["lacking"][name])
    added, lost = sorted(recorded - now), sorted(now - recorded)
    assert not lost, f"tf.{name}: flowjit no longer has {lost}"
    assert not added, (f"tf.{name}: flowjit now has {added}; re-record the list with "
                       f"tests/fixtures/record_tf1_api.py so the additions show")


@pytest.mark.parametrize("name", sorted(TUTORIAL_NAMES), ids=lambda n: n or "tf")
def test_the_names_tutorial_programs_use_are_there(name):
    space = _namespace(name)
    assert all(n in RECORDED["names"][name] for n in TUTORIAL_NAMES[name])  # TF's own names
    missing = [n for n in TUTORIAL_NAMES[name] if not hasattr(space, n)]
    assert not missing, f"tf.{name} lacks {missing}"


def test_the_sub_namespaces_are_importable_modules():
    import importlib

    for name in ("math", "linalg", "random", "initializers", "nn"):
        module = importlib.import_module(f"flowjit.{name}")
        assert module is _namespace(name)
