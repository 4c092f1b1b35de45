"""flowjit's `tf.keras` (keras/): models built on flowjit's graph, Session and compiler.

Predictions equal NumPy with the model's weights; `fit` equals a hand-written TF 1.x
training loop from the same initial weights and batch order; evaluate/predict handle a
partial last batch; History, callbacks, the progress output; weights saved and loaded (an
interrupted save leaves the old file whole); clear errors; summary() counts; the training
step compiles into clusters.  Most tests run the clusters on the reference target
(compile-always, so the lowering runs, but no numba compile); one compiles for the CPU.
Keras 2's own numbers are checked in tests/test_keras_programs.py.
"""

import os

import numpy as np
import pytest

import flowjit as tf
from flowjit import keras
from flowjit.errors import DataLossError, NotFoundError
from flowjit.runtime.clustering import ClusterStep

layers = keras.layers
REFERENCE = tf.ConfigProto(jit=tf.JitOptions.always(target="reference"))


@pytest.fixture(autouse=True)
def keras_state():
    """Fresh layer names, the reference target for every model's session, fixed seeds."""
    keras.backend.clear_session()
    keras.backend.set_session_config(REFERENCE)
    keras.utils.set_random_seed(0)
    yield
    keras.backend.set_session_config(None)
    keras.backend.set_random_seed(None)


def _data(rows=23, features=5, classes=3, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, features)).astype(np.float32)
    return x, rng.integers(0, classes, rows)


def _mlp(features=5, hidden=6, classes=3):
    return keras.Sequential([layers.Dense(hidden, activation="relu", input_shape=(features,)),
                             layers.Dense(classes, activation="softmax")])


def _numpy_mlp(weights, x):
    w1, b1, w2, b2 = weights
    logits = np.maximum(x @ w1 + b1, 0.0) @ w2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_dense_predictions_equal_numpy_with_the_models_weights():
    model = _mlp()
    x, _ = _data()
    w1, b1, w2, b2 = weights = model.get_weights()
    limit = np.sqrt(6.0 / (5 + 6))   # glorot_uniform kernels, zero biases
    assert np.all(np.abs(w1) <= limit) and np.std(w1) > 0.1 * limit
    assert not b1.any() and not b2.any()
    np.testing.assert_allclose(model.predict(x, batch_size=10), _numpy_mlp(weights, x),
                               rtol=1e-5, atol=1e-6)


def test_fit_equals_a_hand_written_tf1_training_loop():
    x, y = _data(rows=21)
    model = _mlp()
    model.compile(keras.optimizers.Adam(learning_rate=0.01), "sparse_categorical_crossentropy")
    initial = model.get_weights()
    np.random.seed(5)
    history = model.fit(x, y, batch_size=8, epochs=3, verbose=0)   # batches 8, 8, 5

    np.random.seed(5)   # the same shuffles, by hand
    graph = tf.Graph()
    with graph.as_default():
        images = tf.placeholder(tf.float32, [None, 5])
        labels = tf.placeholder(tf.int32, [None])
        w1, b1, w2, b2 = (tf.Variable(w) for w in initial)
        logits = tf.matmul(tf.nn.relu(tf.matmul(images, w1) + b1), w2) + b2
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits))
        train = tf.train.AdamOptimizer(0.01, epsilon=1e-7).minimize(loss)
        init = tf.global_variables_initializer()
    epoch_losses = []
    with tf.Session(graph=graph, config=REFERENCE) as sess:
        sess.run(init)
        for _ in range(3):
            order, total = np.random.permutation(len(x)), 0.0
            for lo in range(0, len(x), 8):
                rows = order[lo:lo + 8]
                _, value = sess.run([train, loss], {images: x[rows], labels: y[rows]})
                total += value * len(rows)
            epoch_losses.append(total / len(x))
        final = sess.run([w1, b1, w2, b2])
    np.testing.assert_allclose(history.history["loss"], epoch_losses, rtol=1e-5)
    assert history.history["loss"][-1] < history.history["loss"][0]
    for got, want in zip(model.get_weights(), final):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_evaluate_and_predict_with_a_partial_last_batch():
    x, y = _data(rows=10)
    model = _mlp()
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    probs = _numpy_mlp(model.get_weights(), x)
    want_loss = -np.mean(np.log(probs[np.arange(10), y]))
    want_accuracy = np.mean(probs.argmax(axis=1) == y)
    for batch_size in (4, 10, 32):
        loss, accuracy = model.evaluate(x, y, batch_size=batch_size)
        assert loss == pytest.approx(want_loss, rel=1e-5)
        assert accuracy == pytest.approx(want_accuracy)
        np.testing.assert_allclose(model.predict(x, batch_size=batch_size), probs, rtol=1e-5,
                                   atol=1e-6)
    assert model.evaluate(x, y, return_dict=True).keys() == {"loss", "accuracy"}
    assert model.predict(x[:0]).shape == (0, 3)


def test_history_holds_every_metric_and_the_validation_ones():
    x, y = _data(rows=20)
    model = _mlp()
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy", "mae"])
    history = model.fit(x, y, batch_size=4, epochs=3, validation_split=0.25, verbose=0)
    assert history is model.history and history.epoch == [0, 1, 2]
    assert set(history.history) == {"loss", "accuracy", "mae", "val_loss", "val_accuracy",
                                    "val_mae"}
    assert all(len(v) == 3 for v in history.history.values())
    # validation_split holds out the last quarter, evaluated after each epoch
    last = model.evaluate(x[15:], y[15:], return_dict=True)
    for key, value in last.items():
        assert history.history["val_" + key][-1] == pytest.approx(value, rel=1e-5)
    again = model.fit(x, y, epochs=1, validation_data=(x[:5], y[:5]), verbose=0)
    assert again.history["val_loss"][0] == pytest.approx(model.evaluate(x[:5], y[:5])[0],
                                                         rel=1e-5)


def test_fit_prints_a_line_per_epoch_and_draws_a_progress_bar(capsys, monkeypatch):
    x, y = _data(rows=12)
    model = _mlp()
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, epochs=2, verbose=0)
    assert capsys.readouterr().out == ""
    model.fit(x, y, epochs=2, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" - ")[0] for line in lines] == ["Epoch 1/2", "Epoch 2/2"]
    assert "loss: " in lines[0] and "accuracy: " in lines[0]
    monkeypatch.setenv("FLOWJIT_PROGRESS", "1")   # bars even though stderr is captured
    model.fit(x, y, epochs=1, batch_size=4, verbose=1)
    drawn = capsys.readouterr().err
    assert "Epoch 1/1" in drawn and "/3 [" in drawn   # tqdm's bar: 3 steps


def test_weights_round_trip_through_a_checkpoint_file(tmp_path):
    x, y = _data()
    model = _mlp()
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(x, y, epochs=1, verbose=0)
    path = model_io_path = str(tmp_path / "weights")
    model.save_weights(path)
    assert os.path.isfile(model_io_path + ".fjckpt")
    assert [name for name, _ in tf.train.list_variables(path)] == sorted(
        w.op.name for w in model.weights)
    other = _mlp()   # new layer names, other initial weights
    assert not np.allclose(other.predict(x), model.predict(x))
    other.load_weights(path)
    for got, want in zip(other.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(other.predict(x), model.predict(x))


def test_an_interrupted_save_leaves_the_old_file_whole(tmp_path, monkeypatch):
    model = _mlp()
    path = str(tmp_path / "weights")
    model.save_weights(path)
    before = open(path + ".fjckpt", "rb").read()
    saved = model.get_weights()
    model.set_weights([w + 1.0 for w in saved])

    def crash(fd):
        raise KeyboardInterrupt("power cut")

    monkeypatch.setattr(os, "fsync", crash)   # the new file is written, not yet in place
    with pytest.raises(KeyboardInterrupt):
        model.save_weights(path)
    monkeypatch.undo()
    assert open(path + ".fjckpt", "rb").read() == before
    assert sorted(os.listdir(tmp_path)) == ["weights.fjckpt"]   # no temporary file left
    model.load_weights(path)
    for got, want in zip(model.get_weights(), saved):
        np.testing.assert_array_equal(got, want)


def test_loading_weights_that_do_not_fit_changes_nothing(tmp_path):
    model = _mlp()
    path = str(tmp_path / "w")
    model.save_weights(path)
    wider = _mlp(hidden=7)
    before = wider.get_weights()
    with pytest.raises(ValueError, match=r"has shape \(5, 7\), the value given has shape "
                                         r"\(5, 6\)"):
        wider.load_weights(path)
    deeper = keras.Sequential([layers.Dense(6, input_shape=(5,)), layers.Dense(3),
                               layers.Dense(2)])
    with pytest.raises(ValueError, match="holds 4 weights, model .* has 6"):
        deeper.load_weights(path)
    for got, want in zip(wider.get_weights(), before):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(NotFoundError):
        model.load_weights(str(tmp_path / "missing"))
    data = bytearray(open(path + ".fjckpt", "rb").read())
    data[-40] ^= 0xFF
    open(path + ".fjckpt", "wb").write(bytes(data))
    with pytest.raises(DataLossError):
        model.load_weights(path)


def test_compile_and_fit_errors_say_what_is_wrong():
    model = _mlp()
    with pytest.raises(ValueError, match=r"Unknown loss function: 'mean_squared_eror'.*"
                                         r"mean_squared_error"):
        model.compile("sgd", "mean_squared_eror")
    with pytest.raises(ValueError, match=r"Unknown optimizer: 'adamm'.*adam"):
        model.compile("adamm", "mse")
    with pytest.raises(ValueError, match=r"Unknown metric function: 'acuracy'"):
        model.compile("sgd", "mse", metrics=["acuracy"])
    with pytest.raises(ValueError, match="compile needs a loss"):
        model.compile("sgd")
    x, y = _data()
    with pytest.raises(RuntimeError, match="must compile"):
        model.fit(x, y)
    model.compile("sgd", "categorical_crossentropy")
    with pytest.raises(ValueError, match="sparse_categorical_crossentropy"):
        model.fit(x, y)   # integer labels for a one-hot loss
    with pytest.raises(ValueError, match=r"expects inputs of shape \(batch, 5\)"):
        model.predict(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="different numbers of examples"):
        model.fit(x, keras.utils.to_categorical(y[:-1], 3))
    with pytest.raises(ValueError, match="Unknown activation function: 'rleu'"):
        layers.Dense(3, activation="rleu")


def test_summary_lists_layers_shapes_and_parameter_counts():
    model = keras.Sequential([layers.Dense(8, input_shape=(4,)), layers.BatchNormalization(),
                              layers.Dropout(0.5), layers.Dense(2)])
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    rows = {line.split()[0]: line.split() for line in lines[4:8]}
    assert rows["dense"][-3:] == ["(None,", "8)", "40"]
    assert rows["batch_normalization"][-1] == "32"
    assert rows["dropout"][-1] == "0" and rows["dense_1"][-1] == "18"
    assert "Total params: 90" in text and "Trainable params: 74" in text
    assert "Non-trainable params: 16" in text
    assert model.count_params() == 90


def _train_clusters(model):
    train_op = model._steps.train_fetches[0]
    return [step for plan in model.session._plans.values() for step in plan.ops
            if isinstance(step, ClusterStep) and any(op.type == "AssignSub"
                                                     for op in step.ops)], train_op


def test_the_training_step_is_one_compiled_cluster_for_every_batch_size(compiled_calls):
    keras.backend.set_session_config(tf.ConfigProto(jit=tf.JitOptions.always()))
    model = keras.Sequential([layers.Dense(3, input_shape=(4,))])
    model.compile(keras.optimizers.SGD(learning_rate=0.1), "mse")
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(10, 4)), rng.normal(size=(10, 3))
    model.fit(x, y, batch_size=4, epochs=2, verbose=0)   # batches of 4, 4 and 2
    steps, _ = _train_clusters(model)
    assert len(steps) == 1   # forward, gradient and updates: one kernel
    kinds = {op.type for op in steps[0].ops}
    assert {"MatMul", "AssignSub", "VariableV2"} <= kinds
    compiled = [entry for entry in steps[0].kernels.entries.values() if entry is not None]
    assert len(compiled) == 1   # one signature: no recompiling per epoch or batch size
    assert compiled_calls.count(steps[0].name) == 6   # 3 batches x 2 epochs, all compiled


def test_dropout_acts_only_while_training():
    x, _ = _data(rows=64, features=8)
    model = keras.Sequential([layers.Dropout(0.5, input_shape=(8,)), layers.Dense(1)])
    model.compile(keras.optimizers.SGD(learning_rate=0.0), "mse")
    np.testing.assert_allclose(model.predict(x), x @ model.get_weights()[0], rtol=1e-5,
                               atol=1e-6)
    target = np.zeros((64, 1), np.float32)
    evaluated = model.evaluate(x, target, batch_size=64)
    trained = [model.train_on_batch(x, target) for _ in range(3)]
    assert len(set(trained)) == 3 and evaluated not in trained   # new masks each step


def test_embedding_reshape_and_flatten():
    model = keras.Sequential([layers.Embedding(10, 3, input_length=4), layers.Flatten(),
                              layers.Reshape((2, -1)), layers.Activation("tanh")])
    ids = np.array([[1, 2, 3, 9], [0, 0, 5, 5]])
    table = model.get_weights()[0]
    assert np.all(np.abs(table) <= 0.05) and table.std() > 0   # Keras' uniform(-0.05, 0.05)
    np.testing.assert_allclose(model.predict(ids), np.tanh(table[ids].reshape(2, 2, 6)),
                               rtol=1e-6)
    assert model.layers[2].output_shape.as_list() == [None, 2, 6]
    with pytest.raises(ValueError, match="total size of the new shape"):
        keras.Sequential([layers.Reshape((5,), input_shape=(2, 3))])


def test_functional_and_subclassed_models_share_the_engine():
    inputs = keras.Input((5,))
    hidden = layers.Dense(6, activation="relu")(inputs)
    outputs = layers.Dense(3, activation="softmax")(layers.Dropout(0.2)(hidden))
    assert outputs.shape.as_list() == [None, 3]
    functional = keras.Model(inputs, outputs)
    assert [type(layer).__name__ for layer in functional.layers] == [
        "InputLayer", "Dense", "Dropout", "Dense"]

    class TwoLayers(keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = layers.Dense(6, activation="relu")
            self.out = layers.Dense(3, activation="softmax")

        def call(self, x, training=False):
            return self.out(self.hidden(x))

    subclassed = TwoLayers()
    x, y = _data()
    subclassed.predict(x[:1])   # builds from the data's shape
    sequential = _mlp()
    for model in (functional, subclassed):
        model.set_weights(sequential.get_weights())
        np.testing.assert_allclose(model.predict(x), sequential.predict(x), rtol=1e-6)
        model.compile(keras.optimizers.Adam(0.02), "sparse_categorical_crossentropy")
        before = model.evaluate(x, y)
        model.fit(x, y, epochs=5, verbose=0)
        assert model.evaluate(x, y) < before


@pytest.mark.parametrize("kind", ["SimpleRNN", "LSTM", "GRU"])
def test_recurrent_layers_unrolled_equal_the_while_loop(kind):
    x = np.random.default_rng(2).normal(size=(6, 5, 3)).astype(np.float32)
    y = np.random.default_rng(3).normal(size=(6, 4)).astype(np.float32)
    models = []
    for unroll in (True, False):
        model = keras.Sequential([getattr(layers, kind)(4, unroll=unroll,
                                                        return_sequences=True,
                                                        input_shape=(5, 3)),
                                  layers.Flatten(), layers.Dense(4)])
        model.compile(keras.optimizers.SGD(learning_rate=0.1), "mse")
        models.append(model)
    models[1].set_weights(models[0].get_weights())
    np.testing.assert_allclose(models[0].predict(x), models[1].predict(x), rtol=1e-5,
                               atol=1e-6)
    steps = [[m.train_on_batch(x, y) for _ in range(2)] for m in models]   # gradients too
    np.testing.assert_allclose(steps[0], steps[1], rtol=1e-5)
    for a, b in zip(models[0].get_weights(), models[1].get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_a_tf_train_optimizer_can_drive_fit():
    x, y = _data()
    models = [_mlp(), _mlp()]
    models[1].set_weights(models[0].get_weights())
    models[0].compile(keras.optimizers.SGD(learning_rate=0.1), "sparse_categorical_crossentropy")
    models[1].compile(tf.train.GradientDescentOptimizer(0.1), "sparse_categorical_crossentropy")
    results = [m.fit(x, y, epochs=2, shuffle=False, verbose=0).history["loss"] for m in models]
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)


def test_callbacks_see_batches_and_epochs_and_can_stop_training():
    x, y = _data(rows=12)
    model = _mlp()
    model.compile(keras.optimizers.SGD(learning_rate=0.0), "sparse_categorical_crossentropy")
    seen = []
    counter = keras.callbacks.LambdaCallback(
        on_batch_end=lambda batch, logs: seen.append(("batch", batch, sorted(logs))),
        on_epoch_end=lambda epoch, logs: seen.append(("epoch", epoch)))
    stop = keras.callbacks.EarlyStopping(monitor="loss", patience=1)
    history = model.fit(x, y, batch_size=6, epochs=10, callbacks=[counter, stop], verbose=0)
    assert len(history.epoch) == 3 and stop.stopped_epoch == 2   # the loss never improves
    assert seen[:3] == [("batch", 0, ["loss"]), ("batch", 1, ["loss"]), ("epoch", 0)]
    with pytest.raises(KeyError, match="val_loss"):
        model.fit(x, y, epochs=1, callbacks=[keras.callbacks.EarlyStopping()], verbose=0)


def test_the_learning_rate_is_fed_so_a_schedule_changes_it_between_epochs():
    x, y = _data(rows=8)
    model = _mlp()
    model.compile(keras.optimizers.SGD(learning_rate=0.5), "sparse_categorical_crossentropy")
    before = model.get_weights()
    schedule = keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.0 if epoch else lr)
    history = model.fit(x, y, batch_size=8, epochs=3, callbacks=[schedule], verbose=0)
    assert history.history["lr"] == [0.5, 0.0, 0.0]
    assert history.history["loss"][1] == history.history["loss"][2]   # no more steps
    assert not np.allclose(model.get_weights()[0], before[0])
    model.optimizer.learning_rate = 0.0
    after = model.get_weights()
    model.train_on_batch(x, y)
    for got, want in zip(model.get_weights(), after):
        np.testing.assert_array_equal(got, want)


def test_sequential_builds_as_layers_are_added_until_it_runs():
    model = keras.Sequential([layers.Dense(4, input_shape=(3,))])
    assert model.built and model.layers[0].count_params() == 16
    model.add(layers.Dense(2))
    assert model.count_params() == 26 and model.output_shape.as_list() == [None, 2]
    model.pop()
    assert model.count_params() == 16
    model.predict(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="already run"):
        model.add(layers.Dense(2))
    deferred = keras.Sequential([layers.Dense(2)])
    assert not deferred.built
    with pytest.raises(ValueError, match="has not been built"):
        deferred.summary()
    assert deferred.predict(np.ones((3, 7))).shape == (3, 2)


def test_weight_penalties_join_the_loss():
    x, y = _data()
    model = keras.Sequential([layers.Dense(3, activation="softmax", input_shape=(5,),
                                           kernel_regularizer=keras.regularizers.l2(0.1),
                                           bias_regularizer="l1")])
    model.compile("sgd", "sparse_categorical_crossentropy")
    kernel, bias = model.get_weights()
    model.set_weights([kernel, bias + 0.5])
    logits = x @ kernel + bias + 0.5
    log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    want = -log_probs[np.arange(len(y)), y].mean() + 0.1 * np.sum(kernel ** 2) + 0.01 * 1.5
    assert model.evaluate(x, y) == pytest.approx(want, rel=1e-5)


def test_to_categorical():
    np.testing.assert_array_equal(keras.utils.to_categorical([2, 0, 1]), np.eye(3)[[2, 0, 1]])
    assert keras.utils.to_categorical([[1], [0]], 4).shape == (2, 4)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 2\)"):
        keras.utils.to_categorical([0, 2], 2)
