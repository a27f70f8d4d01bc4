"""The sample-by-sample accounting core, on hand-built series with hand-computed figures."""
import math

import pytest

from apps.accounting.core.measures import longest_idle_seconds
from apps.ingest import rollup
from apps.ingest.rollup import RollupConfig, Series, Window

H = 3600
T0 = 1_700_000_000 - (1_700_000_000 % H)  # a whole hour
H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"


def gpu(uuid="GPU-1", host="node-1", gpu_index="0", model=H100, **extra):
    labels = {"gpu": gpu_index, "UUID": uuid, "Hostname": host, "modelName": model, "device": f"nvidia{gpu_index}"}
    labels.update(extra)
    return labels


def cfg(spelling="plain", interval=30.0, **kw):
    return RollupConfig(spelling=spelling, interval_seconds=interval, **kw)


def by_key(result):
    return {(u.namespace, u.pod, u.hour_start, u.device_key): u for u in result.usage}


def test_whole_gpu_allocated_used_idle():
    labels = gpu(namespace="ml", pod="train-0", container="c")
    s = Series(labels, [(T0, 100.0), (T0 + 30, 0.0), (T0 + 60, 50.0), (T0 + 90, 2.0)])
    result = rollup.rollup_devices(cfg(), Window(T0, T0 + H), [s], [])
    [u] = result.usage
    assert (u.namespace, u.pod, u.hour_start) == ("ml", "train-0", T0)
    assert u.sample_count == 4
    assert u.gpu_seconds == pytest.approx(120.0)
    # 30 s × (1.00 + 0 + 0.50 + 0.02)
    assert u.used_gpu_seconds == pytest.approx(45.6)
    # 0 % and 2 % are under the 5 % threshold
    assert u.idle_gpu_seconds == pytest.approx(60.0)
    assert u.mig_seconds == 0.0
    assert result.devices[("GPU-1", "")].gpu_fraction == 1.0


def test_mig_instance_fraction_and_raw_mig_seconds():
    labels = gpu(model=H100, GPU_I_PROFILE="1g.10gb", GPU_I_ID="9", namespace="serve", pod="emb", container="s")
    s = Series(labels, [(T0, 0.5), (T0 + 60, 0.5)])
    result = rollup.rollup_devices(cfg(interval=60.0), Window(T0, T0 + H), [], [s])
    [u, free] = result.usage
    # the six slices no instance occupies: unallocated capacity of the GPU itself (docs/accounting.md)
    assert (free.device_key, free.namespace, free.mig_profile) == (("GPU-1", ""), "", "")
    assert free.gpu_seconds == pytest.approx(120 * 6 / 7) and free.mig_seconds == 0.0
    assert u.gpu_fraction == pytest.approx(1 / 7)
    assert u.gpu_seconds == pytest.approx(120 / 7)
    assert u.mig_seconds == pytest.approx(120.0)
    assert u.used_gpu_seconds == pytest.approx(60 / 7)
    assert u.mig_profile == "1g.10gb"
    assert u.device_key == ("GPU-1", "9")


@pytest.mark.parametrize("model,profile,expected", [
    (A100, "3g.40gb", 3 / 7), (H100, "7g.80gb", 1.0), ("NVIDIA A30", "2g.12gb", 2 / 4),
    ("NVIDIA A30", "1g.6gb", 1 / 4), ("NVIDIA H200", "1g.18gb", 1 / 7), ("NVIDIA B200", "2g.45gb", 2 / 7),
    (A100, "1c.3g.40gb", 1 / 7),
])
def test_gpu_fraction_by_model(model, profile, expected):
    fraction, warning = rollup.gpu_fraction(model, profile)
    assert fraction == pytest.approx(expected)
    assert warning is None


def test_unknown_mig_model_warns_and_keeps_data():
    fraction, warning = rollup.gpu_fraction("Mystery GPU X", "2g.20gb")
    assert fraction == pytest.approx(2 / 7)
    assert "Mystery GPU X" in warning and "override" in warning
    fraction, warning = rollup.gpu_fraction("Mystery GPU X", "2g.20gb", {"Mystery GPU X": 4})
    assert fraction == pytest.approx(0.5) and warning is None


def test_unallocated_gpu_has_no_namespace():
    s = Series(gpu(), [(T0 + i * 30, 0.0) for i in range(10)])
    [u] = rollup.rollup_devices(cfg(), Window(T0, T0 + H), [s], []).usage
    assert u.namespace == "" and u.gpu_seconds == pytest.approx(300.0)
    assert u.idle_gpu_seconds == 0.0  # idle is only counted on allocated samples


def test_sample_on_hour_boundary_counted_once_in_its_own_hour():
    labels = gpu(namespace="ml", pod="p", container="c")
    s = Series(labels, [(T0 + H - 30, 90.0), (T0 + H, 90.0), (T0 + 2 * H, 90.0)])
    result = rollup.rollup_devices(cfg(), Window(T0, T0 + 2 * H), [s], [])
    rows = by_key(result)
    assert rows[("ml", "p", T0, ("GPU-1", ""))].gpu_seconds == pytest.approx(30.0)
    assert rows[("ml", "p", T0 + H, ("GPU-1", ""))].gpu_seconds == pytest.approx(30.0)
    assert sum(u.gpu_seconds for u in result.usage) == pytest.approx(60.0)  # 12:00:00 is outside


@pytest.mark.parametrize("spelling,workload", [
    ("plain", {"namespace": "ml", "pod": "p", "container": "c"}),
    ("exported", {"exported_namespace": "ml", "exported_pod": "p", "exported_container": "c",
                  "namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-x7k2p", "container": "nvidia-dcgm-exporter"}),
    ("old", {"pod_namespace": "ml", "pod_name": "p", "container_name": "c"}),
])
def test_each_label_spelling_names_the_workload(spelling, workload):
    held = Series(gpu(**workload), [(T0, 80.0), (T0 + 30, 80.0)])
    rows = rollup.rollup_devices(cfg(spelling), Window(T0, T0 + H), [held], []).usage
    assert [(u.namespace, u.pod) for u in rows] == [("ml", "p")]


def test_exporters_own_pod_is_not_a_workload():
    """Under honorLabels: false a free GPU still carries namespace/pod: the exporter's."""
    free = Series(gpu(namespace="gpu-operator", pod="nvidia-dcgm-exporter-x7k2p", container="nvidia-dcgm-exporter"),
                  [(T0, 0.0), (T0 + 30, 0.0)])
    [u] = rollup.rollup_devices(cfg("exported"), Window(T0, T0 + H), [free], []).usage
    assert u.namespace == "" and u.gpu_seconds == pytest.approx(60.0)


def test_spelling_detection():
    assert rollup.detect_spelling({"namespace", "pod", "exported_namespace"}) == "exported"
    assert rollup.detect_spelling({"pod_namespace", "pod_name"}) == "old"
    assert rollup.detect_spelling({"namespace", "pod", "Hostname"}) == "plain"


def test_lowercase_hostname_and_uuid():
    labels = {"gpu": "1", "uuid": "GPU-x", "hostname": "n7", "modelName": H100, "namespace": "a", "pod": "b"}
    result = rollup.rollup_devices(cfg(), Window(T0, T0 + H), [Series(labels, [(T0, 50.0)])], [])
    dev = result.devices[("GPU-x", "")]
    assert dev.host == "n7" and result.usage[0].node == "n7"


def test_time_slicing_splits_the_device_and_never_adds_the_device_series():
    device = Series(gpu(), [(T0, 60.0), (T0 + 30, 60.0), (T0 + 60, 60.0)])
    a = Series(gpu(namespace="a", pod="pa", vgpu="0", pod_uid="ua"), [(T0, 60.0), (T0 + 30, 60.0)])
    b = Series(gpu(namespace="b", pod="pb", vgpu="1", pod_uid="ub"), [(T0, 60.0)])
    result = rollup.rollup_devices(cfg(), Window(T0, T0 + H), [device, a, b], [])
    rows = {(u.namespace, u.pod): u for u in result.usage}
    # T0: shared by a and b (15 s each); T0+30: a alone (30 s); T0+60: nobody (30 s unallocated)
    assert rows[("a", "pa")].gpu_seconds == pytest.approx(45.0)
    assert rows[("b", "pb")].gpu_seconds == pytest.approx(15.0)
    assert rows[("", "")].gpu_seconds == pytest.approx(30.0)
    assert sum(u.gpu_seconds for u in result.usage) == pytest.approx(90.0)  # capacity: 3 samples
    assert rows[("a", "pa")].used_gpu_seconds == pytest.approx(45.0 * 0.6)


def test_mig_mode_parent_utilization_is_not_counted_twice():
    parent = Series(gpu(uuid="GPU-M", model=A100), [(T0, 10.0)])
    inst = Series(gpu(uuid="GPU-M", model=A100, GPU_I_PROFILE="3g.40gb", GPU_I_ID="1", namespace="a", pod="p"),
                  [(T0, 0.2)])
    result = rollup.rollup_devices(cfg(), Window(T0, T0 + H), [parent], [inst])
    # the parent's sample stands for an instant its instance covers: not counted; the 4 slices no
    # instance occupies are the GPU's unallocated capacity (docs/accounting.md, "When devices change")
    assert [(u.mig_profile, u.namespace, round(u.gpu_seconds, 6)) for u in result.usage] == [
        ("3g.40gb", "a", round(30 * 3 / 7, 6)), ("", "", round(30 * 4 / 7, 6))]
    assert any("MIG mode" in w for w in result.warnings)


def test_nan_and_out_of_range_samples():
    s = Series(gpu(namespace="a", pod="p"), [(T0, math.nan), (T0 + 30, math.inf), (T0 + 60, 250.0), (T0 + 90, 20.0)])
    result = rollup.rollup_devices(cfg(), Window(T0, T0 + H), [s], [])
    [u] = result.usage
    assert u.gpu_seconds == pytest.approx(120.0)  # the GPU was held all four samples
    assert u.unknown_util_samples == 2
    assert u.used_gpu_seconds == pytest.approx(30 * 1.0 + 30 * 0.2)  # 250 % clamped to 100 %
    assert any("NaN" in w for w in result.warnings) and any("clamped" in w for w in result.warnings)


def test_idle_runs_within_and_across_hours():
    labels = gpu(namespace="nb", pod="forgotten")
    # hour 0: busy for 10 samples, then idle to the end; hour 1: idle throughout; hour 2: idle 5 samples then busy
    samples = [(T0 + i * 30, 90.0 if i < 10 else 0.0) for i in range(120)]
    samples += [(T0 + H + i * 30, 1.0) for i in range(120)]
    samples += [(T0 + 2 * H + i * 30, 0.0 if i < 5 else 70.0) for i in range(120)]
    result = rollup.rollup_devices(cfg(), Window(T0, T0 + 3 * H), [Series(labels, samples)], [])
    rows = sorted(result.usage, key=lambda u: u.hour_start)
    h0, h1, h2 = rows
    assert (h0.idle_prefix_seconds, h0.idle_suffix_seconds, h0.idle_max_run_seconds) == (0.0, 3300.0, 3300.0)
    assert h1.idle_whole_hour and h1.idle_prefix_seconds == 3600.0
    assert (h2.idle_prefix_seconds, h2.idle_suffix_seconds) == (150.0, 0.0)
    hours = [(u.hour_start, u.idle_prefix_seconds, u.idle_suffix_seconds, u.idle_max_run_seconds, u.idle_whole_hour)
             for u in rows]
    assert longest_idle_seconds(hours) == pytest.approx(3300 + 3600 + 150)


def test_idle_run_broken_by_a_gap_between_hours():
    hours = [(T0, 0.0, 600.0, 600.0, False), (T0 + 2 * H, 900.0, 0.0, 900.0, False)]
    assert longest_idle_seconds(hours) == 900.0


def test_queued_demand_from_pending_pods():
    phase = [Series({"namespace": "ml", "pod": "w3", "uid": "u", "phase": "Pending"},
                    [(T0 + i * 30, 1.0) for i in range(4)])]
    requests = [
        Series({"namespace": "ml", "pod": "w3", "container": "a", "resource": "nvidia_com_gpu"},
               [(T0 + i * 30, 4.0) for i in range(4)]),
        Series({"namespace": "ml", "pod": "w3", "container": "b", "resource": "nvidia_com_gpu"},
               [(T0 + i * 30, 2.0) for i in range(4)]),
        Series({"namespace": "ml", "pod": "w3", "container": "a", "resource": "nvidia_com_mig_1g_10gb"},
               [(T0 + i * 30, 1.0) for i in range(4)]),
        Series({"namespace": "ml", "pod": "running", "container": "a", "resource": "nvidia_com_gpu"},
               [(T0, 8.0)]),
    ]
    out = {(q.pod, q.resource): q for q in rollup.rollup_queued(Window(T0, T0 + H), 30.0, phase, requests)}
    assert set(out) == {("w3", "nvidia_com_gpu"), ("w3", "nvidia_com_mig_1g_10gb")}
    assert out[("w3", "nvidia_com_gpu")].queued_gpu_seconds == pytest.approx(4 * 30 * 6)
    assert out[("w3", "nvidia_com_gpu")].requested == 6
    assert out[("w3", "nvidia_com_mig_1g_10gb")].queued_gpu_seconds == pytest.approx(4 * 30 / 7)


def test_quota_hours():
    hard = Series({"namespace": "ml", "resource": "requests.nvidia.com/gpu", "type": "hard"}, [(T0, 8.0), (T0 + 30, 8.0)])
    used = Series({"namespace": "ml", "resource": "requests.nvidia.com/gpu", "type": "used"}, [(T0, 8.0), (T0 + 30, 6.0)])
    [q] = rollup.rollup_quota(Window(T0, T0 + H), 30.0, [hard, used])
    assert (q.hard, q.used_max, q.seconds_at_hard) == (8.0, 8.0, 30.0)


def test_namespace_team_labels_per_hour_keep_every_change():
    """A re-label is a new series; each hour carries the label of its last sample."""
    s = [Series({"namespace": "ml", "label_team": "research"}, [(T0, 1.0), (T0 + H + 600, 1.0)]),
         Series({"namespace": "ml", "label_team": "platform"}, [(T0 + H + 1200, 1.0), (T0 + 2 * H, 1.0)]),
         Series({"namespace": "solo"}, [(T0, 1.0)])]
    teams = rollup.namespace_teams(s, "team")
    assert teams["ml"].hours == {T0: "research", T0 + H: "platform", T0 + 2 * H: "platform"}
    assert teams["ml"].last_seen == T0 + 2 * H
    assert teams["solo"].hours == {T0: ""}
    assert rollup.sanitize_label_key("example.com/team") == "label_example_com_team"


def test_interval_detection_is_median_spacing():
    s = [Series({}, [(0, 0), (15, 0), (30, 0), (45, 0), (120, 0)]), Series({}, [(0, 0), (15, 0)])]
    assert rollup.detect_interval(s) == 15.0


def test_duplicate_series_of_one_device_count_once():
    """The exporter scraped by two jobs: same device, same instants, different job labels."""
    a = Series(gpu(namespace="ml", pod="p", job="dcgm", instance="10.0.0.1:9400"), [(T0, 50.0), (T0 + 30, 50.0)])
    b = Series(gpu(namespace="ml", pod="p", job="dcgm-2", instance="10.0.0.1:9400"), [(T0, 50.0), (T0 + 30, 50.0)])
    free = Series(gpu(job="dcgm-3"), [(T0 + 30, 0.0), (T0 + 60, 0.0)])
    result = rollup.rollup_devices(cfg(), Window(T0, T0 + H), [b, free, a], [])
    by_ns = {u.namespace: u.gpu_seconds for u in result.usage}
    # T0 and T0+30 once, held by the pod; T0+60 unallocated
    assert by_ns == {"ml": pytest.approx(60.0), "": pytest.approx(30.0)}
    assert result.duplicates == 3   # b's two samples, and free's at T0+30 under the pod's


def test_a_pod_that_moves_between_gpus():
    """Re-created on another GPU: its time is split over both devices, never counted twice."""
    first = Series(gpu(uuid="GPU-1", namespace="nb", pod="jupyter"), [(T0 + i * 30, 40.0) for i in range(4)])
    free_later = Series(gpu(uuid="GPU-1"), [(T0 + i * 30, 0.0) for i in range(4, 8)])
    second = Series(gpu(uuid="GPU-2", gpu_index="1", namespace="nb", pod="jupyter"),
                    [(T0 + i * 30, 40.0) for i in range(4, 8)])
    result = rollup.rollup_devices(cfg(), Window(T0, T0 + H), [first, free_later, second], [])
    rows = {(u.device_key[0], u.namespace): u.gpu_seconds for u in result.usage}
    assert rows == {("GPU-1", "nb"): pytest.approx(120.0), ("GPU-1", ""): pytest.approx(120.0),
                    ("GPU-2", "nb"): pytest.approx(120.0)}
    pod_seconds = sum(u.gpu_seconds for u in result.usage if u.pod == "jupyter")
    assert pod_seconds == pytest.approx(240.0)  # 8 samples × 30 s, one GPU at a time
    assert sum(u.used_gpu_seconds for u in result.usage) == pytest.approx(240.0 * 0.4)


@pytest.mark.parametrize("pinned", [None, 30.0])
@pytest.mark.parametrize("sliced", [False, True])
def test_two_copies_with_one_sample_each_at_the_same_instant_count_once(pinned, sliced):
    """An HA pair whose replicas each kept only one sample of a stream, at the same instant: the
    copies are one sample (docs/accounting.md, "Replicas and duplicates"), counted for one
    interval. It used to be kept twice, each standing for a 0-second gap (and, with time
    slicing or a pinned interval, the roll-up crashed)."""
    extra = dict(vgpu="0", pod_uid="ua") if sliced else {}
    a = Series(gpu(namespace="ml", pod="p", prometheus_replica="a", **extra), [(T0 + 60, 50.0)])
    b = Series(gpu(namespace="ml", pod="p", prometheus_replica="b", **extra), [(T0 + 60, 70.0)])
    config = cfg(interval=30.0, pinned_interval_seconds=pinned)
    result = rollup.rollup_devices(config, Window(T0, T0 + H), [b, a], [])
    rows = {(u.namespace, u.pod): u for u in result.usage}
    assert set(rows) == {("ml", "p")}
    # one sample of 30 s (the chunk's interval, or the pinned one), replica "a"'s value: 50 %
    assert rows[("ml", "p")].gpu_seconds == pytest.approx(30.0)
    assert rows[("ml", "p")].used_gpu_seconds == pytest.approx(15.0)
    assert result.duplicates == 1


def test_sequential_sums_add_each_group_in_sample_order():
    """`arrays.sequential_sums` gives the floats of `total += v` over each group's samples in
    order: 1e16 + 1.0 + 1.0 - 1e16 is 0.0 that way (each 1.0 is lost against 1e16) and 2.0 added
    pairwise or sorted; NaN, ±inf and -0.0 as the loop has them."""
    import numpy as np

    from apps.ingest.rollup.arrays import sequential_sums

    groups = np.array([1, 0, 1, 1, 1, 2, 0, 3, 3])
    values = np.array([[1e16, -0.0, 1.0, 1.0, -1e16, math.nan, 5.5, math.inf, -math.inf],
                       [0.1, 0.2, 0.2, 0.3, 0.4, 1.0, 0.7, 2.0, 3.0]])
    got = sequential_sums(groups, values, 5)
    expected = np.zeros((2, 5))
    with np.errstate(invalid="ignore"):        # inf + -inf: NaN, as the loop has it
        for row in range(2):
            for g, v in zip(groups.tolist(), values[row].tolist()):
                expected[row, g] += v
    assert got[0, 1] == 0.0 and math.fsum([1e16, 1.0, 1.0, -1e16]) == 2.0
    assert got[0, 0] == 5.5 and math.isnan(got[0, 2]) and math.isnan(got[0, 3]) and got[0, 4] == 0.0
    assert got[1, 1] == ((0.1 + 0.2) + 0.3) + 0.4
    assert got.tobytes() == expected.tobytes()           # to the bit, NaNs and signs of zero too

    rng = np.random.default_rng(7)
    groups = rng.integers(0, 50, 4000)
    values = rng.normal(size=(3, 4000)) * 10.0 ** rng.integers(-8, 17, size=(3, 4000))
    expected = np.zeros((3, 50))
    for row in range(3):
        for g, v in zip(groups.tolist(), values[row].tolist()):
            expected[row, g] += v
    assert sequential_sums(groups, values, 50).tobytes() == expected.tobytes()
    assert sequential_sums(np.array([], dtype=np.int64), np.zeros((2, 0)), 3).tobytes() == np.zeros((2, 3)).tobytes()


def test_a_gpu_with_readings_but_no_utilization_is_unallocated_capacity():
    """A T4 whose exporter sends power, memory and temperature but no GPU_UTIL (docs/accounting.md,
    "When devices change"): 60 power samples at 60 s are 3,600 s of capacity, unallocated even
    though its memory series names a pod (with no utilization, what the pod did is unknown); its
    neighbour with utilization is counted as ever, and its own power does not add a second row."""
    t4 = gpu(uuid="GPU-T4", model="Tesla T4")
    power = [Series(t4, [(T0 + 60 * i, 27.0) for i in range(60)])]
    fb = [Series({**t4, "namespace": "ml", "pod": "p"}, [(T0 + 60 * i, 300.0) for i in range(60)])]
    busy = gpu(uuid="GPU-H", model=H100, namespace="ml", pod="q")
    util = [Series(busy, [(T0 + 60 * i, 80.0) for i in range(60)])]
    power.append(Series(busy, [(T0 + 60 * i, 500.0) for i in range(60)]))
    result = rollup.rollup_devices(cfg(interval=60.0), Window(T0, T0 + H), util, [], fb_used=fb, power=power)
    rows = {(u.device_key[0], u.namespace): u for u in result.usage}
    assert set(rows) == {("GPU-T4", ""), ("GPU-H", "ml")}
    assert rows[("GPU-T4", "")].gpu_seconds == pytest.approx(3600.0)
    assert rows[("GPU-T4", "")].used_gpu_seconds == 0.0 and rows[("GPU-T4", "")].gpu_model == "Tesla T4"
    assert rows[("GPU-H", "ml")].gpu_seconds == pytest.approx(3600.0)
    assert rows[("GPU-H", "ml")].used_gpu_seconds == pytest.approx(2880.0)
    assert any("readings but no utilization" in w for w in result.warnings)
