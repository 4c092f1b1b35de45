"""Placement (runtime/placement.py): device requests, colocation, kernels per device type,
soft placement, the errors, greedy simulated placement with the cost model, and the
log_device_placement lines."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowjit as tf
from flowjit.compiler.core.device_spec import DeviceSpec
from flowjit.errors import InvalidArgumentError
from flowjit.runtime.devices import (Device, DeviceType, DeviceTypeInfo, make_devices,
                                     register_type, unregister_type)
from flowjit.runtime.placement import (OP_OVERHEAD, TRANSFER_LATENCY, CostModel, place,
                                       placement_log)
from flowjit.targets.target import TargetKind

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"
CPU2 = "/job:localhost/replica:0/task:0/device:CPU:2"
XPU0 = "/job:localhost/replica:0/task:0/device:XPU:0"
XPU = DeviceType("XPU")
XPU_OPS = {"MatMul", "Const", "Placeholder"}


@pytest.fixture
def cpus():
    return make_devices({"CPU": 2})


@pytest.fixture
def xpu():
    """A registered test device type with kernels for XPU_OPS only."""
    register_type(DeviceTypeInfo(XPU, (TargetKind.CPU,), supports=lambda op: op.type in XPU_OPS,
                                 physical_count=lambda: 1))
    yield XPU
    unregister_type(XPU)


def names(placement):
    return {op.name: d.name for op, d in placement.items()}


def placed(graph, devices, **kw):
    return names(place(graph.get_operations(), devices, **kw))


# --- requests ---------------------------------------------------------------------------------

@pytest.mark.parametrize("request_, want", [
    (CPU1, CPU1), ("/cpu:1", CPU1), ("/device:CPU:1", CPU1), ("CPU:1", CPU1),
    ("/job:localhost/device:CPU:1", CPU1), ("/cpu:0", CPU0),
])
def test_explicit_requests(cpus, request_, want):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4])
        with tf.device(request_):
            tf.identity(x, name="y")
    out = placed(g, cpus)
    assert out["y"] == want
    assert out["Placeholder"] == want          # a source goes with its first consumer


def test_partial_requests_pick_among_matching_devices(xpu):
    devices = make_devices({"CPU": 2, "XPU": 1})
    assert [d.name for d in devices] == [CPU0, CPU1, XPU0]
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [8, 8])
        with tf.device("/device:CPU:*"):
            m = tf.matmul(a, a, name="m")              # XPU has a MatMul kernel too
        with tf.device("/job:localhost"):
            n = tf.matmul(m, a, name="n")
        with tf.device("/device:XPU:*"):
            tf.matmul(n, a, name="x")
    out = placed(g, devices)
    assert out["m"] in (CPU0, CPU1)
    assert out["n"] in (CPU0, CPU1, XPU0)
    assert out["x"] == XPU0


def test_nested_device_scopes_merge(cpus):
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:localhost"):
            with tf.device("/cpu:1"):
                a = tf.constant(1.0, name="a")
            b = tf.identity(a, name="b")
        with tf.device("/cpu:0"):
            with tf.device("/cpu:1"):
                tf.identity(b, name="c")
    assert g.get_operation_by_name("a").device == "/job:localhost/device:CPU:1"
    out = placed(g, cpus)
    assert out["a"] == CPU1 and out["c"] == CPU1
    assert out["b"] in (CPU0, CPU1)


def test_constant_feeding_pinned_ops_goes_with_them(cpus):
    g = tf.Graph()
    with g.as_default():
        c = tf.constant([1.0, 2.0], name="c")
        with tf.device("/cpu:1"):
            d = tf.add(c, c, name="d")
        tf.multiply(d, 2.0, name="e")
    out = placed(g, cpus)
    assert out["c"] == CPU1 and out["d"] == CPU1
    assert out["e"] == CPU1                     # moving a tiny op off its input never pays


# --- colocation -------------------------------------------------------------------------------

def test_colocate_with_follows_the_pinned_op(cpus):
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:1"):
            a = tf.constant(3.0, name="a")
        x = tf.placeholder(tf.float32, [], name="x")
        with g.colocate_with(a):
            b = tf.add(x, 1.0, name="b")
        with g.colocate_with(b.op):
            tf.multiply(x, 2.0, name="c")
    assert g.get_operation_by_name("b")._colocation == ("a",)
    out = placed(g, cpus)
    assert out["a"] == out["b"] == out["c"] == CPU1
    # `a` is not run in this step: its request still binds the group
    ops = [op for op in g.get_operations() if op.name != "a"]
    assert names(place(ops, cpus))["b"] == CPU1


def test_variable_assign_initializer_and_updates_share_its_device(cpus):
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:1"):
            v = tf.Variable(tf.ones([3]), name="v")
        inc = tf.assign_add(v, tf.ones([3]), name="inc")
        loss = tf.reduce_sum(v * v)
        tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        tf.global_variables_initializer()
        tf.cond(loss > 0.0, lambda: v + 1.0, lambda: v - 1.0)
    assert inc.op.device == ""
    out = placed(g, cpus)
    for name in ("v", "v/Assign", "inc", "GradientDescent/update_v/AssignSub", "cond/Switch"):
        assert out[name] == CPU1, name


def test_variable_without_request_shares_with_its_updates(cpus):
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(1.0, name="v")
        with tf.device("/cpu:1"):
            tf.assign_add(v, 1.0, name="inc")
    out = placed(g, cpus)
    assert out["v"] == out["v/Assign"] == out["inc"] == CPU1


def test_conflicting_colocation_is_an_error_naming_every_member(cpus):
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            a = tf.constant(1.0, name="a")
        with g.colocate_with(a), tf.device("/cpu:1"):
            tf.identity(a, name="b")
    with pytest.raises(InvalidArgumentError) as e:
        place(g.get_operations(), cpus)
    msg = str(e.value)
    assert "Cannot assign a device for operation 'b' (op: 'Identity')" in msg
    assert "Cannot colocate 2 nodes ('b', 'a')" in msg
    assert "requested /device:CPU:0: 'a'" in msg
    assert "requested /device:CPU:1: 'b'" in msg
    assert CPU0 in msg and CPU1 in msg
    assert e.value.op.name == "b"
    soft = placed(g, cpus, allow_soft_placement=True)
    assert soft["a"] == soft["b"]


def test_colocation_with_an_op_outside_the_step_that_asks_for_a_missing_device(cpus):
    g = tf.Graph()
    with g.as_default():
        with tf.device("/gpu:0"):
            a = tf.constant(1.0, name="a")
        x = tf.placeholder(tf.float32, [], name="x")
        with g.colocate_with(a):
            tf.identity(x, name="b")
    ops = [op for op in g.get_operations() if op.name != "a"]
    with pytest.raises(InvalidArgumentError) as e:
        place(ops, cpus)
    msg = str(e.value)
    assert "operation 'b' (op: 'Identity')" in msg
    assert "requested /device:GPU:0: 'a'" in msg and "Not run in this step: 'a'" in msg
    assert names(place(ops, cpus, allow_soft_placement=True))["b"] == CPU0


# --- kernels per device type --------------------------------------------------------------------

def test_ops_go_where_their_kernels_are(xpu):
    devices = make_devices({"CPU": 1, "XPU": 1})
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [4, 4], name="a")
        with tf.device("/device:XPU:0"):
            m = tf.matmul(a, a, name="m")
        tf.nn.relu(m, name="r")                          # no XPU kernel: CPU
        with g.colocate_with(m):
            tf.matmul(m, m, name="m2")
    out = placed(g, devices)
    assert out["m"] == out["m2"] == XPU0
    assert out["r"] == CPU0


def test_request_without_a_kernel(xpu):
    devices = make_devices({"CPU": 1, "XPU": 1})
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [4], name="a")
        with tf.device("/device:XPU:0"):
            tf.nn.relu(a, name="r")
    with pytest.raises(InvalidArgumentError) as e:
        place(g.get_operations(), devices)
    msg = str(e.value)
    assert "operation 'r' (op: 'Relu')" in msg
    assert "Could not satisfy explicit device specification '/device:XPU:0'" in msg
    assert "no supported kernel for XPU devices" in msg
    assert f"Devices with a kernel for 'Relu': [ {CPU0} ]" in msg
    assert f"Available devices: [ {CPU0}, {XPU0} ]" in msg
    assert placed(g, devices, allow_soft_placement=True)["r"] == CPU0


def test_no_kernel_anywhere_fails_even_with_soft_placement(xpu):
    devices = [Device(XPU, 0, 1), Device(XPU, 1, 1)]
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [4], name="a")
        tf.nn.relu(a, name="r")
    for soft in (False, True):
        with pytest.raises(InvalidArgumentError, match="no device has a kernel for op type "
                                                        "'Relu'"):
            place(g.get_operations(), devices, allow_soft_placement=soft)


def test_colocation_of_ops_with_disjoint_kernels(xpu):
    devices = make_devices({"CPU": 1, "XPU": 1})
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [4, 4], name="a")
        with tf.device("/device:XPU:0"):
            m = tf.matmul(a, a, name="m")
        with g.colocate_with(m):
            tf.nn.relu(m, name="r")
    with pytest.raises(InvalidArgumentError, match=r"Cannot colocate 2 nodes \('r', 'm'\)"):
        place(g.get_operations(), devices)
    out = placed(g, devices, allow_soft_placement=True)   # requests relaxed: both on CPU
    assert out["m"] == out["r"] == CPU0


# --- soft placement and bad requests --------------------------------------------------------------

@pytest.mark.parametrize("n_cpu", [1, 2])
@pytest.mark.parametrize("request_", ["/gpu:0", "/device:GPU:0", "/cpu:3", "/device:TPU:0",
                                      "/job:worker"])
def test_requests_of_missing_devices(n_cpu, request_):
    devices = make_devices({"CPU": n_cpu})
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        with tf.device(request_):
            tf.identity(x, name="y")
    with pytest.raises(InvalidArgumentError) as e:
        place(g.get_operations(), devices)
    msg = str(e.value)
    wanted = DeviceSpec.parse(request_).to_string()
    assert "Cannot assign a device for operation 'y' (op: 'Identity')" in msg
    assert f"Operation was explicitly assigned to {wanted} but no device matches it" in msg
    assert "Available devices: [ " + ", ".join(d.name for d in devices) + " ]" in msg
    assert "Devices with a kernel for 'Identity'" in msg
    assert e.value.error_code == tf.errors.INVALID_ARGUMENT
    out = placed(g, devices, allow_soft_placement=True)
    assert out["y"].startswith("/job:localhost/replica:0/task:0/device:CPU:")
    if request_ == "/cpu:3":
        assert out["y"] in (CPU0, CPU1)


def test_single_device_fast_path(cpus):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        with tf.device("/cpu:0"):
            y = tf.identity(x, name="y")
        with g.colocate_with(y):
            tf.identity(x, name="z")
    one = make_devices({"CPU": 1})
    out = place(g.get_operations(), one)
    assert set(out.values()) == {one[0]} and len(out) == len(g.get_operations())


# --- greedy simulated placement -------------------------------------------------------------------

def _chains(n_chains, length, size):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [size, size], name="x")
        w = tf.constant(0.5, shape=[size, size], name="w")
        for c in range(n_chains):
            y = x
            for i in range(length):
                y = tf.matmul(y, w, name=f"c{c}_{i}")
    return g


def test_independent_heavy_chains_spread_over_devices(cpus):
    out = placed(_chains(2, 3, 512), cpus)
    chain0 = {out[f"c0_{i}"] for i in range(3)}
    chain1 = {out[f"c1_{i}"] for i in range(3)}
    assert len(chain0) == 1 and len(chain1) == 1    # no chain bounces between devices
    assert chain0 != chain1


def test_heavy_chains_over_three_devices():
    devices = make_devices({"CPU": 3})
    out = placed(_chains(3, 2, 512), devices)
    assert {out[f"c{c}_0"] for c in range(3)} == {CPU0, CPU1, CPU2}


def test_tiny_graphs_stay_on_device_zero(cpus):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4], name="x")
        outs = [tf.add(x, float(i)) for i in range(20)]     # wide
        y = tf.add_n(outs)
        for _ in range(10):                                  # deep
            y = tf.nn.relu(y * 2.0)
        v = tf.Variable(tf.zeros([4]))
        tf.assign_add(v, y)
    assert set(placed(g, cpus).values()) == {CPU0}
    assert set(placed(_chains(2, 3, 4), cpus).values()) == {CPU0}


def test_measured_costs_change_the_decision(cpus):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [16], name="x")
        tf.multiply(x, 2.0, name="a")
        tf.add(x, 1.0, name="b")
    costs = CostModel()
    before = placed(g, cpus, cost_model=costs)
    assert before["a"] == before["b"] == CPU0
    costs.record(g.get_operation_by_name("a"), 1.0)         # `a` turns out to be slow
    after = placed(g, cpus, cost_model=costs)
    assert after["a"] == CPU0 and after["b"] == CPU1


def test_fed_tensors_cost_no_transfer(cpus):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [64, 64])
        with tf.device("/cpu:1"):
            h = tf.matmul(x, x, name="h")
        tf.multiply(h, 2.0, name="m")
    ops = [op for op in g.get_operations() if op.name not in ("h", "Placeholder")]
    out = names(place(ops, cpus, fed=frozenset({h})))
    assert out["m"] == CPU0                 # h is fed: no reason to follow its producer
    assert placed(g, cpus)["m"] == CPU1     # computed on CPU:1: moving it would cost a transfer


def test_while_loops_place(cpus):
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:1"):
            i = tf.constant(0, name="i")
        tf.while_loop(lambda i: i < 10, lambda i: i + 1, [i])
    out = placed(g, cpus)
    assert out["i"] == CPU1
    assert len(out) == len(g.get_operations())


# --- the cost model and the log -------------------------------------------------------------------

def test_cost_estimates():
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [100, 200])
        b = tf.placeholder(tf.float32, [200, 300])
        m = tf.matmul(a, b)
        mt = tf.matmul(b, a, transpose_a=True, transpose_b=True)
        e = tf.nn.relu(m)
        u = tf.placeholder(tf.float32, [None, 10])
        r = tf.reduce_sum(u)
        d = tf.placeholder(tf.float64, [1000])
    costs = CostModel()
    assert costs.op_seconds(m.op) == pytest.approx(OP_OVERHEAD + 2 * 100 * 300 * 200 / 2e10)
    assert costs.op_seconds(mt.op) == pytest.approx(OP_OVERHEAD + 2 * 300 * 100 * 200 / 2e10)
    assert costs.op_seconds(e.op) == pytest.approx(OP_OVERHEAD + 1e-9 * 30000)
    assert costs.op_seconds(r.op) == pytest.approx(OP_OVERHEAD + 1e-9 * 10000)
    assert costs.transfer_seconds(d) == pytest.approx(TRANSFER_LATENCY + 8000 / 5e9)
    assert costs.transfer_seconds(u) == pytest.approx(TRANSFER_LATENCY + 40000 / 5e9)
    costs.record(e.op, 1.0)
    assert costs.op_seconds(e.op) == 1.0
    costs.record(e.op, 3.0)
    assert costs.op_seconds(e.op) == pytest.approx(2.0)       # moving average
    assert costs.estimate(e.op) == pytest.approx(OP_OVERHEAD + 1e-9 * 30000)


def test_placement_log_lines(cpus):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        with tf.device("/cpu:1"):
            tf.matmul(tf.reshape(x, [1, 2]), tf.reshape(x, [2, 1]), name="mm")
    placement = place(g.get_operations(), cpus)
    lines = placement_log(placement).splitlines()
    assert [ln.split(":")[0] for ln in lines] == [op.name for op in g.get_operations()]
    assert f"mm: (MatMul): {CPU1}" in lines
    assert f"x: (Placeholder): {CPU1}" in lines
    assert all(re.fullmatch(r"[\w/]+: \(\w+\): /job:localhost/replica:0/task:0/device:CPU:\d",
                            ln) for ln in lines)
    shuffled = dict(reversed(list(placement.items())))
    assert placement_log(shuffled).splitlines() == lines


# --- property: requests and colocation hold on random graphs -------------------------------------

_SPECS = ["", "", "", "/cpu:0", "/cpu:1", "/cpu:2", "/device:CPU:*", "/job:localhost",
          "/job:localhost/device:CPU:2"]


@st.composite
def _graphs(draw):
    n = draw(st.integers(2, 12))
    nodes = []
    for i in range(n):
        spec = draw(st.sampled_from(_SPECS))
        inputs = draw(st.lists(st.integers(0, i - 1), max_size=2)) if i else []
        coloc = draw(st.one_of(st.none(), st.integers(0, i - 1))) if i else None
        nodes.append((spec, inputs, coloc))
    return nodes


def _build(nodes):
    g = tf.Graph()
    made = []
    with g.as_default():
        for i, (spec, inputs, coloc) in enumerate(nodes):
            with tf.device(spec or None):
                scope = g.colocate_with(made[coloc]) if coloc is not None else _nothing()
                with scope:
                    if inputs:
                        t = tf.add_n([made[j] for j in inputs], name=f"n{i}")
                    else:
                        t = tf.constant(float(i), shape=[3], name=f"n{i}")
            made.append(t)
    return g


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _groups_feasible(g, devices):
    """An independent oracle: union the colocated ops, intersect their requests."""
    parent = {op: op for op in g.get_operations()}

    def find(o):
        while parent[o] is not o:
            o = parent[o]
        return o

    for op in g.get_operations():
        for name in op._colocation:
            parent[find(op)] = find(g.get_operation_by_name(name))
    allowed = {}
    for op in g.get_operations():
        spec = DeviceSpec.parse(op.device)
        ok = {d for d in devices if spec.matches(d.spec)}
        root = find(op)
        allowed[root] = allowed.get(root, set(devices)) & ok
    return all(allowed.values()), find


@settings(max_examples=40, deadline=None)
@given(_graphs())
def test_random_graphs_respect_requests_and_colocation(nodes):
    devices = make_devices({"CPU": 3})
    g = _build(nodes)
    ok, find = _groups_feasible(g, devices)
    try:
        out = place(g.get_operations(), devices)
    except InvalidArgumentError:
        assert not ok
        out = None
    else:
        assert ok
        for op, d in out.items():
            assert DeviceSpec.parse(op.device).matches(d.spec), op.name
    soft = place(g.get_operations(), devices, allow_soft_placement=True)
    for result in (out, soft):
        if result is None:
            continue
        assert set(result) == set(g.get_operations())
        for op, d in result.items():
            assert d in devices
            for name in op._colocation:
                assert result[g.get_operation_by_name(name)] is d
