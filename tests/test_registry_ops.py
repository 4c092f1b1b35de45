"""Generated per-op tests: every registered op has a sample, runs, and matches NumPy.

For each op type, hypothesis draws cases (shapes with empty and size-1 dimensions,
broadcasting, several dtypes) from tests/samples; each case is built in a fresh graph and
run by a Session with kernel-output checking on.  Checked: the op type was created, every
fetched value has the inferred dtype and a shape compatible with the inferred static shape,
and values equal the case's own NumPy computation.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import flowjit as tf
from flowjit.ops import registry
from samples import all_samples

SAMPLES = all_samples()
OP_NAMES = [d.name for d in registry.all_op_defs()]


def test_every_registered_op_has_a_sample():
    missing = sorted(set(OP_NAMES) - set(SAMPLES))
    assert not missing, f"ops without test samples: {missing}"


def test_samples_name_real_ops():
    unknown = sorted(set(SAMPLES) - set(OP_NAMES))
    assert not unknown, f"samples for ops that are not registered: {unknown}"


def _check_case(op_type, case):
    graph = tf.Graph()
    with graph.as_default():
        fetches = case.build()
        types = {op.type for op in graph.get_operations()}
        assert op_type in types, f"building the {op_type} sample created only {sorted(types)}"
        feeds = {graph.get_tensor_by_name(k + ":0"): v for k, v in case.feeds.items()}
        with tf.Session(graph=graph) as sess:
            values = sess.run(fetches, feeds)
    for t, v in zip(fetches, values):
        v = np.asarray(v)
        assert v.dtype == t.dtype.np_dtype, f"{t.name}: value dtype {v.dtype} != {t.dtype}"
        assert t.shape.is_compatible_with(v.shape), f"{t.name}: {v.shape} vs {t.shape}"
    if case.expected is not None:
        expected = case.expected(case.feeds)
        assert len(expected) == len(values)
        for t, v, e in zip(fetches, values, expected):
            e = np.asarray(e)
            v = np.asarray(v)
            assert v.shape == e.shape, f"{t.name}: shape {v.shape}, NumPy gives {e.shape}"
            assert v.dtype == e.dtype, f"{t.name}: dtype {v.dtype}, NumPy gives {e.dtype}"
            if v.dtype.kind in "fc":
                np.testing.assert_allclose(v, e, rtol=case.rtol, atol=case.atol,
                                           equal_nan=True, err_msg=t.name)
            else:
                np.testing.assert_array_equal(v, e, err_msg=t.name)


@pytest.mark.parametrize("op_type", sorted(SAMPLES))
def test_op_matches_numpy(op_type):
    @settings(max_examples=25, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(SAMPLES[op_type])
    def run(case):
        _check_case(op_type, case)

    run()
