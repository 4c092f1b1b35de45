"""Devices, device names and the rendezvous: runtime/devices.py, compiler/core/device_spec.py,
runtime/rendezvous.py.  Threaded tests bound every wait and assert only deterministic facts."""

from __future__ import annotations

import threading

import pytest

import flowjit as tf
from flowjit.compiler.core.device_spec import DeviceSpec, canonical
from flowjit.runtime import devices
from flowjit.runtime.rendezvous import Rendezvous, RendezvousKey

# --- device names -----------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ("/job:localhost/replica:0/task:0/device:CPU:0",
     DeviceSpec("localhost", 0, 0, "CPU", 0)),
    ("/cpu:1", DeviceSpec(device_type="CPU", device_index=1)),
    ("/GPU:0", DeviceSpec(device_type="GPU", device_index=0)),
    ("/device:CPU:*", DeviceSpec(device_type="CPU")),
    ("/device:gpu:2", DeviceSpec(device_type="GPU", device_index=2)),
    ("/job:worker/task:3", DeviceSpec(job="worker", task=3)),
    ("CPU:0", DeviceSpec(device_type="CPU", device_index=0)),
    ("", DeviceSpec()),
])
def test_device_names_parse(text, expected):
    assert DeviceSpec.parse(text) == expected


@pytest.mark.parametrize("bad", ["/job:x/replica:one", "/banana:1", "/device:CPU:x"])
def test_bad_device_names_say_what_is_accepted(bad):
    with pytest.raises(ValueError, match="accepted forms"):
        DeviceSpec.parse(bad)


def test_partial_names_match_full_ones():
    full = DeviceSpec.parse("/job:localhost/replica:0/task:0/device:CPU:1")
    for partial in ("/cpu:1", "/device:CPU:*", "/job:localhost", "", "/task:0/cpu:1"):
        assert DeviceSpec.parse(partial).matches(full), partial
    for other in ("/cpu:0", "/gpu:1", "/job:worker", "/task:1"):
        assert not DeviceSpec.parse(other).matches(full), other


def test_nested_device_scopes_merge_as_in_tensorflow():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:localhost"):
            with tf.device("/cpu:1"):
                a = tf.constant(1.0, name="a")
            b = tf.constant(2.0, name="b")
            with tf.device(None):
                c = tf.constant(3.0, name="c")
        with tf.device(lambda op: "/cpu:0"):
            d = tf.constant(4.0, name="d")
    assert a.op.device == "/job:localhost/device:CPU:1"
    assert b.op.device == "/job:localhost"
    assert c.op.device == ""
    assert d.op.device == canonical("/cpu:0") == "/device:CPU:0"


def test_colocate_with_records_tensorflows_class_attribute():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(1.0, name="x")
        with tf.colocate_with(x):
            y = tf.identity(x, name="y")
            with g.colocate_with(None):
                z = tf.identity(x, name="z")
    assert y.op._colocation == ("x",)
    assert y.op.colocation_groups == [b"loc:@x"]
    assert z.op._colocation == ()
    assert z.op.colocation_groups == [b"loc:@z"]


# --- devices ----------------------------------------------------------------------------------


def test_one_cpu_is_the_host_device():
    (only,) = devices.make_devices({})
    assert only is devices.host_device()
    assert only.name == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert only.device_type is devices.CPU


def test_virtual_cpus_share_the_cores():
    made = devices.make_devices({"CPU": 3})
    assert [d.name[-5:] for d in made] == ["CPU:0", "CPU:1", "CPU:2"]
    cores = devices._cpu_count()
    assert all(d.threads >= 1 for d in made)
    if cores >= 3:
        assert sum(d.threads for d in made) == cores
    assert len({id(d.kernel_lock) for d in made}) == 3


def test_device_count_asks_for_gpus_the_machine_does_not_have():
    made = devices.make_devices({"CPU": 1, "GPU": 2})
    assert [d.device_type for d in made] == [devices.CPU] * 1 + \
        [devices.GPU] * devices.type_info(devices.GPU).physical_count()


def test_unknown_device_type_in_device_count():
    with pytest.raises(ValueError, match="unknown device type 'TPU'"):
        devices.make_devices({"TPU": 1})


def test_device_listings():
    assert any(d.device_type == "CPU" for d in tf.config.list_physical_devices())
    assert tf.config.list_physical_devices("GPU") == \
        tf.config.list_physical_devices("gpu")
    logical = tf.config.list_logical_devices("CPU", device_count={"CPU": 2})
    assert [d.name for d in logical] == ["/job:localhost/replica:0/task:0/device:CPU:0",
                                         "/job:localhost/replica:0/task:0/device:CPU:1"]
    with tf.Session(graph=tf.Graph(), config=tf.ConfigProto(device_count={"CPU": 2})) as s:
        listed = s.list_devices()
    assert [d.name for d in listed] == [d.name for d in logical]
    assert all(d.device_type == "CPU" and d.memory_limit_bytes > 0 for d in listed)


def test_running_on_is_thread_local():
    made = devices.make_devices({"CPU": 2})
    seen = {}

    def work():
        seen["other"] = devices.running_on()

    with devices.running(made[1]):
        t = threading.Thread(target=work)
        t.start()
        t.join(5)
        assert devices.running_on() is made[1]
    assert seen["other"] is devices.host_device()
    assert devices.running_on() is devices.host_device()


def test_allocator_accounts_in_use_and_peak():
    a = devices.DeviceAllocator()
    a.allocated(100)
    a.allocated(50)
    a.freed(100)
    assert (a.in_use, a.peak) == (50, 150)
    a.reset_peak()
    assert a.peak == 50


# --- rendezvous -------------------------------------------------------------------------------

KEY = RendezvousKey("/device:CPU:0", "/device:CPU:1", "x:0", step_id=7)


def test_send_before_recv():
    r = Rendezvous()
    r.send(KEY, 42)
    got = []
    r.recv_async(KEY, lambda e, v: got.append((e, v)))
    assert got == [(None, 42)]


def test_recv_before_send_waits_without_a_thread():
    r = Rendezvous()
    got = []
    r.recv_async(KEY, lambda e, v: got.append((e, v)))
    assert got == [] and r.pending() == ((), (KEY,))
    r.send(KEY, 5)
    assert got == [(None, 5)]


def test_blocking_recv_from_another_thread():
    r = Rendezvous()
    sender = threading.Timer(0.05, r.send, (KEY, "value"))
    sender.start()
    assert r.recv(KEY, timeout=10) == "value"
    sender.join(5)


def test_keys_of_other_steps_frames_and_iterations_do_not_mix():
    r = Rendezvous()
    keys = [KEY, KEY._replace(step_id=8), KEY._replace(frame="loop", iteration=1),
            KEY._replace(frame="loop", iteration=2), KEY._replace(dst_device="/device:CPU:2")]
    for i, k in enumerate(keys):
        r.send(k, i)
    assert [r.recv(k, timeout=1) for k in reversed(keys)] == list(reversed(range(len(keys))))
    assert "loop:2" in str(keys[3])


def test_abort_wakes_every_waiting_recv_with_the_error():
    r = Rendezvous()
    got = []
    for i in range(3):
        r.recv_async(KEY._replace(tensor=f"t{i}:0"), lambda e, v: got.append(e))
    error = tf.errors.InvalidArgumentError(None, None, "device 0 failed")
    r.abort(error)
    assert got == [error] * 3
    with pytest.raises(tf.errors.InvalidArgumentError):
        r.send(KEY, 1)
    later = []
    r.recv_async(KEY, lambda e, v: later.append(e))
    assert later == [error]
    r.abort(ValueError("second"))
    assert r.error is error


def test_blocking_recv_times_out_and_aborts():
    r = Rendezvous()
    with pytest.raises(tf.errors.DeadlineExceededError, match="Timed out waiting"):
        r.recv(KEY, timeout=0.05)
    assert isinstance(r.error, tf.errors.DeadlineExceededError)


def test_sending_a_key_twice_is_an_error():
    r = Rendezvous()
    r.send(KEY, 1)
    with pytest.raises(tf.errors.InternalError, match="twice"):
        r.send(KEY, 2)


def test_many_threads_send_and_receive_every_value_once():
    r = Rendezvous()
    n = 200
    got = []
    lock = threading.Lock()

    def receiver(i):
        v = r.recv(KEY._replace(tensor=f"t{i}"), timeout=20)
        with lock:
            got.append(v)

    threads = [threading.Thread(target=receiver, args=(i,)) for i in range(0, n, 2)]
    for t in threads:
        t.start()
    for i in range(n):
        r.send(KEY._replace(tensor=f"t{i}"), i)
    for t in threads:
        t.join(20)
    assert sorted(got) == list(range(0, n, 2))
    assert len(r.pending()[0]) == n // 2     # the odd ones: sent, never asked for


def test_kernel_slot_gives_the_calling_thread_the_devices_share_only():
    numba = pytest.importorskip("numba")
    from flowjit.targets.cpu import native

    native.ensure_runtime(parallel=True)          # the threading layer is running
    default = numba.get_num_threads()
    device = devices.Device(devices.CPU, 5, threads=1)
    seen = {}

    def work():
        with device.kernel_slot():
            seen["inside"] = numba.get_num_threads()
            seen["locked"] = device.kernel_lock.locked() or not \
                native.concurrent_launches()

    with devices.running(device):
        t = threading.Thread(target=work)
        t.start()
        t.join(10)
    assert seen == {"inside": 1, "locked": True}
    assert numba.get_num_threads() == default      # this thread's setting is untouched


def test_kernel_slot_serializes_one_devices_kernels():
    device = devices.Device(devices.CPU, 6, threads=1)
    other = devices.Device(devices.CPU, 7, threads=1)
    concurrent = device.kernel_slot().target.concurrent_launches()
    with device.kernel_slot():
        held = device.kernel_lock if concurrent else devices._PROCESS_KERNEL_LOCK
        assert held.locked()
        if concurrent:
            assert not other.kernel_lock.locked()    # another device's kernels may run
    assert not held.locked()
