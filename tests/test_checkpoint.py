"""Checkpoints (runtime/checkpoint.py): round trips, fresh-process resume, max_to_keep, the
state file, crash safety, corruption detection and clear restore errors."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowjit as tf
from flowjit.runtime import checkpoint


def _session():
    return tf.Session(config=tf.ConfigProto(jit=False))


def _model():
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="layer/w")
    b = tf.Variable(np.array([0.5, -1.5]), name="layer/b")  # float64
    n = tf.Variable(np.int64(7), name="count")
    flag = tf.Variable([True, False, True], name="flag")
    return w, b, n, flag


def _bump(variables):
    """An op changing every variable, so a restore visibly brings the old values back."""
    w, b, n, flag = variables
    return tf.group(tf.assign_add(w, tf.ones([2, 3])), tf.assign(b, b * 3.0),
                    tf.assign_add(n, 100), tf.assign(flag, tf.logical_not(flag)))


def test_round_trip_in_a_new_session(tmp_path):
    variables = _model()
    bump = _bump(variables)
    saver = tf.train.Saver()
    with _session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(bump)
        saved = sess.run(list(variables))
        prefix = saver.save(sess, str(tmp_path / "model.ckpt"))
    assert prefix == str(tmp_path / "model.ckpt")
    assert os.path.isfile(prefix + ".fjckpt")
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix
    assert tf.train.list_variables(str(tmp_path)) == [
        ("count", []), ("flag", [3]), ("layer/b", [2]), ("layer/w", [2, 3])]
    with _session() as sess:  # no initializer: restore alone makes the variables usable
        saver.restore(sess, prefix)
        for got, want, var in zip(sess.run(list(variables)), saved, variables):
            np.testing.assert_array_equal(got, want)
            assert np.asarray(got).dtype == var.dtype.as_numpy_dtype
    np.testing.assert_array_equal(tf.train.load_variable(prefix, "layer/w"), saved[0])


def test_string_variables_and_dict_var_lists(tmp_path):
    words = tf.Variable([b"alpha", b"", b"\xff\x00z"], name="words")
    x = tf.Variable(2.5, name="x")
    with _session() as sess:
        sess.run(tf.global_variables_initializer())
        path = tf.train.Saver({"saved_words": words, "saved_x": x}).save(
            sess, str(tmp_path / "d"))
    assert [n for n, _ in tf.train.list_variables(path)] == ["saved_words", "saved_x"]
    tf.reset_default_graph()
    other = tf.Variable([b"", b"", b""], name="other")
    y = tf.Variable(0.0, name="y")
    with _session() as sess:
        tf.train.Saver({"saved_words": other, "saved_x": y}).restore(sess, path)
        assert list(sess.run(other)) == [b"alpha", b"", b"\xff\x00z"]
        assert sess.run(y) == 2.5


def test_global_step_names_and_latest_checkpoint(tmp_path):
    step = tf.train.get_or_create_global_step()
    inc = tf.assign_add(step, 5)
    saver = tf.train.Saver()
    base = str(tmp_path / "run" / "model")  # the directory is created
    with _session() as sess:
        sess.run(tf.global_variables_initializer())
        assert saver.save(sess, base, global_step=3) == base + "-3"
        sess.run(inc)
        assert saver.save(sess, base, global_step=step) == base + "-5"
    directory = str(tmp_path / "run")
    assert tf.train.latest_checkpoint(directory) == base + "-5"
    state = tf.train.get_checkpoint_state(directory)
    assert state.all_model_checkpoint_paths == [base + "-3", base + "-5"]
    with open(os.path.join(directory, "checkpoint")) as f:  # relative paths, TF's text form
        assert f.read() == ('model_checkpoint_path: "model-5"\n'
                            'all_model_checkpoint_paths: "model-3"\n'
                            'all_model_checkpoint_paths: "model-5"\n')
    assert saver.last_checkpoints == [base + "-3", base + "-5"]
    assert tf.train.latest_checkpoint(str(tmp_path)) is None  # no state file there
    assert tf.train.checkpoint_exists(base + "-3") and not tf.train.checkpoint_exists(base)


def test_max_to_keep(tmp_path):
    v = tf.Variable(1.0, name="v")
    base = str(tmp_path / "m")
    with _session() as sess:
        sess.run(v.initializer)
        saver = tf.train.Saver(max_to_keep=2)
        for step in range(1, 5):
            saver.save(sess, base, global_step=step)
        assert saver.last_checkpoints == [base + "-3", base + "-4"]
        assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m-3.fjckpt", "m-3.meta",
                                                "m-4.fjckpt", "m-4.meta"]
        # A new Saver (e.g. after a restart) adopts the directory's list and keeps the limit.
        tf.train.Saver(max_to_keep=2).save(sess, base, global_step=5)
        assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m-4.fjckpt", "m-4.meta",
                                                "m-5.fjckpt", "m-5.meta"]
        # Saving the same prefix again keeps one entry for it.
        saver = tf.train.Saver(max_to_keep=2)
        saver.save(sess, base, global_step=5)
        assert saver.last_checkpoints == [base + "-4", base + "-5"]
        keep_all = tf.train.Saver(max_to_keep=None)
        for step in range(6, 10):
            keep_all.save(sess, base, global_step=step)
        assert len(os.listdir(tmp_path)) == 1 + 2 * 6
    assert tf.train.latest_checkpoint(str(tmp_path)) == base + "-9"


_RESUME = textwrap.dedent("""
    import sys
    import numpy as np
    import flowjit as tf

    w = tf.Variable([1.0, -2.0, 0.5], dtype=tf.float64, name="w")
    step = tf.train.get_or_create_global_step()
    grad = 2.0 * (w - tf.constant([3.0, 1.0, -1.0], dtype=tf.float64))
    train = tf.train.AdamOptimizer(0.1).apply_gradients([(grad, w)], global_step=step)
    saver = tf.train.Saver()

    def steps(sess, n):
        return [sess.run([train, w, step])[1:] for _ in range(n)]

    if __name__ == "__main__":
        with tf.Session(config=tf.ConfigProto(jit=False)) as sess:
            saver.restore(sess, tf.train.latest_checkpoint(sys.argv[1]))
            out = steps(sess, 3)
            np.save(sys.argv[2], np.array([np.append(v, s) for v, s in out]))
""")


def test_restore_in_a_fresh_process_resumes_identically(tmp_path):
    script = tmp_path / "resume.py"
    script.write_text(_RESUME)
    namespace = {"__name__": "model"}
    exec(compile(_RESUME, str(script), "exec"), namespace)
    with _session() as sess:
        sess.run(tf.global_variables_initializer())
        namespace["steps"](sess, 3)
        namespace["saver"].save(sess, str(tmp_path / "ckpt" / "model"),
                                global_step=namespace["step"])
        expected = np.array([np.append(v, s) for v, s in namespace["steps"](sess, 3)])
    out = tmp_path / "out.npy"
    subprocess.run([sys.executable, str(script), str(tmp_path / "ckpt"), str(out)], check=True,
                   timeout=120)
    got = np.load(out)
    np.testing.assert_array_equal(got, expected)  # bit for bit, global step 4..6 included
    assert list(got[:, -1]) == [4, 5, 6]


def _two_checkpoints(tmp_path, monkeypatch, fail_on):
    v = tf.Variable([1.0, 2.0], name="v")
    base = str(tmp_path / "m")
    sess = _session()
    sess.run(v.initializer)
    saver = tf.train.Saver()
    first = saver.save(sess, base, global_step=1)
    sess.run(tf.assign(v, [8.0, 9.0]))
    real_replace = os.replace

    def crashing_replace(src, dst, *args, **kwargs):
        if dst.endswith(fail_on):
            raise OSError("simulated crash")
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", crashing_replace)
    with pytest.raises(OSError, match="simulated crash"):
        saver.save(sess, base, global_step=2)
    monkeypatch.setattr(os, "replace", real_replace)
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]  # no litter
    assert tf.train.latest_checkpoint(str(tmp_path)) == first
    sess.run(tf.assign(v, [0.0, 0.0]))
    saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
    np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
    sess.close()
    return base


def test_a_crash_writing_the_data_file_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    base = _two_checkpoints(tmp_path, monkeypatch, fail_on=".fjckpt")
    assert not os.path.exists(base + "-2.fjckpt")


def test_a_crash_writing_the_state_file_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    _two_checkpoints(tmp_path, monkeypatch, fail_on="checkpoint")


def test_deletion_waits_for_the_state_file(tmp_path, monkeypatch):
    v = tf.Variable(1.0, name="v")
    base = str(tmp_path / "m")
    with _session() as sess:
        sess.run(v.initializer)
        saver = tf.train.Saver(max_to_keep=1)
        saver.save(sess, base, global_step=1)
        monkeypatch.setattr(checkpoint, "_write_state", _raise)
        with pytest.raises(OSError):
            saver.save(sess, base, global_step=2)
    assert os.path.exists(base + "-1.fjckpt")  # still listed, so not deleted
    assert tf.train.latest_checkpoint(str(tmp_path)) == base + "-1"


def _raise(*args, **kwargs):
    raise OSError("simulated crash")


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "garbage"])
def test_damaged_data_files_are_detected(tmp_path, damage):
    v = tf.Variable(np.arange(100, dtype=np.float32), name="v")
    with _session() as sess:
        sess.run(v.initializer)
        saver = tf.train.Saver()
        path = saver.save(sess, str(tmp_path / "m"))
        data = bytearray(open(path + ".fjckpt", "rb").read())
        if damage == "flip":
            data[len(data) // 2] ^= 0x01
        elif damage == "truncate":
            data = data[:-10]
        elif damage == "empty":
            data = b""
        else:
            data = b"not a checkpoint at all, but long enough to have a digest"
        with open(path + ".fjckpt", "wb") as f:
            f.write(data)
        sess.run(tf.assign(v, tf.zeros([100])))
        with pytest.raises(tf.errors.DataLossError, match="m.fjckpt"):
            saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(v), np.zeros(100))  # left untouched


def test_damaged_state_file_is_reported(tmp_path):
    (tmp_path / "checkpoint").write_text("model_checkpoint_path: unquoted\n")
    with pytest.raises(tf.errors.DataLossError, match="checkpoint"):
        tf.train.latest_checkpoint(str(tmp_path))


def test_missing_checkpoint_is_not_found(tmp_path):
    tf.Variable(1.0, name="v")
    with _session() as sess, pytest.raises(tf.errors.NotFoundError, match="nothing"):
        tf.train.Saver().restore(sess, str(tmp_path / "nothing"))
    with pytest.raises(ValueError):
        tf.train.Saver().restore(None, None)


def _save(tmp_path, make):
    with tf.Graph().as_default():
        variables = make()
        with _session() as sess:
            sess.run(tf.global_variables_initializer())
            return tf.train.Saver(variables).save(sess, str(tmp_path / "m"))


def test_missing_variable_names_it(tmp_path):
    path = _save(tmp_path, lambda: [tf.Variable(1.0, name="w")])
    w = tf.Variable(5.0, name="w")
    u = tf.Variable(6.0, name="extra/u")
    with _session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.NotFoundError, match="'extra/u' was not found"):
            tf.train.Saver([w, u]).restore(sess, path)
        assert sess.run([w, u]) == [5.0, 6.0]  # nothing assigned
        tf.train.Saver([w]).restore(sess, path)  # a subset restores fine
        assert sess.run(w) == 1.0


def test_shape_mismatch_names_the_variable_and_both_shapes(tmp_path):
    path = _save(tmp_path, lambda: [tf.Variable(np.zeros((2, 3), np.float32), name="w")])
    w = tf.Variable(np.zeros(3, np.float32), name="w")
    with _session() as sess, pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.train.Saver([w]).restore(sess, path)
    message = str(info.value)
    assert "'w'" in message and "(3,)" in message and "[2, 3]" in message


def test_dtype_mismatch_names_the_variable_and_both_dtypes(tmp_path):
    path = _save(tmp_path, lambda: [tf.Variable(np.zeros(3, np.float64), name="w")])
    w = tf.Variable(np.zeros(3, np.float32), name="w")
    with _session() as sess, pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.train.Saver([w]).restore(sess, path)
    message = str(info.value)
    assert "'w'" in message and "float32" in message and "float64" in message


def test_saver_arguments():
    with pytest.raises(ValueError, match="No variables"):
        tf.train.Saver()
    assert tf.train.Saver(allow_empty=True).last_checkpoints == []
    v = tf.Variable(1.0, name="v")
    with pytest.raises(ValueError, match="same name"):
        tf.train.Saver([v, v])
    with pytest.raises(TypeError, match="not a variable"):
        tf.train.Saver([tf.constant(1.0)])


def test_saver_accepts_tf1_options_it_does_not_need(tmp_path):
    """TF1 programs pass write_meta_graph=, sharded=, keep_checkpoint_every_n_hours=, ...;
    they raised TypeError."""
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(1.0)
        saver = tf.train.Saver(keep_checkpoint_every_n_hours=2.0, save_relative_paths=True,
                               sharded=False, reshape=False)
        with tf.Session() as sess:
            sess.run(v.initializer)
            path = saver.save(sess, str(tmp_path / "m"), global_step=1,
                              write_meta_graph=False)
            sess.run(v.assign(5.0))
            saver.restore(sess, path)
            assert sess.run(v) == 1.0
