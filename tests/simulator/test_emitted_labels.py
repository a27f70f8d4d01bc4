"""Series carry exactly the label sets real installs produce, in each spelling."""
import pytest

from apps.simulator.emit import exporter_pod_name, iter_series

from .conftest import MIG, WHOLE, at, sliced_scenario, tiny_scenario

DEVICE = {"gpu": "0", "UUID": WHOLE.uuid, "pci_bus_id": WHOLE.pci_bus_id, "device": "nvidia0",
          "modelName": "NVIDIA H100 80GB HBM3", "Hostname": "node-a", "DCGM_FI_DRIVER_VERSION": "570.86.15"}
TAIL = {"instance": "10.0.0.10:9400", "job": "nvidia-dcgm-exporter"}


def series_of(scenario, metric, **match):
    return [s for s in iter_series(scenario)
            if s.metric == metric and all(s.labels.get(k) == v for k, v in match.items())]


def held_util(scenario, **match):
    (held,) = [s for s in series_of(scenario, "DCGM_FI_DEV_GPU_UTIL", **match) if len(s.samples) == 30]
    return held


def test_plain_spelling():
    held = held_util(tiny_scenario("plain"))
    assert list(held.labels.items()) == list(
        {**DEVICE, "container": "trainer", "namespace": "ml-research", "pod": "trainer-0", **TAIL}.items())


def test_exported_spelling_keeps_the_exporters_own_pod_on_every_series():
    scenario = tiny_scenario("exported", hostname_label="hostname")
    exporter = {"container": "nvidia-dcgm-exporter", "namespace": "gpu-operator", "pod": exporter_pod_name("node-a")}
    device = {("hostname" if k == "Hostname" else k): v for k, v in DEVICE.items()}
    held = held_util(scenario)
    assert held.labels == {**device, "exported_container": "trainer", "exported_namespace": "ml-research",
                           "exported_pod": "trainer-0", **exporter, **TAIL}
    (free,) = [s for s in series_of(scenario, "DCGM_FI_DEV_GPU_UTIL") if len(s.samples) == 90]
    assert free.labels == {**device, **exporter, **TAIL}
    assert exporter["pod"].startswith("nvidia-dcgm-exporter-") and len(exporter["pod"]) == len("nvidia-dcgm-exporter-") + 5


def test_old_spelling_uses_pod_namespace_and_lowercase_uuid():
    held = held_util(tiny_scenario("old"))
    device = {("uuid" if k == "UUID" else k): v for k, v in DEVICE.items()}
    assert held.labels == {**device, "container_name": "trainer", "pod_namespace": "ml-research",
                           "pod_name": "trainer-0", **TAIL}


def test_change_of_holder_starts_a_new_series_covering_only_its_samples():
    series = series_of(tiny_scenario(), "DCGM_FI_DEV_GPU_UTIL")
    assert sorted(len(s.samples) for s in series) == [30, 90]
    held, free = sorted(series, key=lambda s: len(s.samples))
    assert [ts for ts, _ in held.samples] == [at(k) for k in range(30)]
    assert [ts for ts, _ in free.samples] == [at(k) for k in range(30, 120)]
    assert all(float(v).is_integer() and 85 <= v <= 98 for _, v in held.samples)


def test_mig_instance_reports_gr_engine_active_not_gpu_util():
    scenario = tiny_scenario()
    assert series_of(scenario, "DCGM_FI_DEV_GPU_UTIL", UUID=MIG.uuid) == []
    mig = series_of(scenario, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", UUID=MIG.uuid)
    assert sum(len(s.samples) for s in mig) == 120
    (held,) = [s for s in mig if "pod" in s.labels]
    assert held.labels["GPU_I_PROFILE"] == "1g.10gb" and held.labels["GPU_I_ID"] == "9"
    assert list(held.labels)[:7] == ["gpu", "UUID", "pci_bus_id", "device", "modelName", "GPU_I_PROFILE", "GPU_I_ID"]
    assert all(0 <= v <= 0.03 for _, v in held.samples)
    for metric in ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP",
                   "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE"):
        assert sum(len(s.samples) for s in series_of(scenario, metric, UUID=MIG.uuid)) == 120


def test_energy_counter_is_monotone_per_whole_gpu():
    series = series_of(tiny_scenario(), "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
    values = [v for s in sorted(series, key=lambda s: s.samples[0][0]) for _, v in s.samples]
    assert len(values) == 120 and values == sorted(values)
    assert not series_of(tiny_scenario(), "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", UUID=MIG.uuid)


@pytest.mark.parametrize("spelling,ns_label", [("plain", "namespace"), ("exported", "exported_namespace"),
                                               ("old", "pod_namespace")])
def test_time_sliced_gpu_has_per_pod_vgpu_series_and_its_own_only_while_free(spelling, ns_label):
    """dcgm-exporter with --kubernetes-virtual-gpus replaces a shared GPU's series by one copy per
    pod (docs/demo.md, "The simulated exporter"): the device's own series only at the instants no
    pod holds it (samples 30 to 119 here), never beside the pods' copies."""
    from apps.simulator.truth import iter_device_truth

    scenario = sliced_scenario(spelling)
    util = series_of(scenario, "DCGM_FI_DEV_GPU_UTIL")
    (device,) = [s for s in util if "vgpu" not in s.labels]
    assert ns_label not in device.labels and [t for t, _ in device.samples] == [at(k) for k in range(30, 120)]
    per_pod = {s.labels[ns_label]: s for s in util if "vgpu" in s.labels}
    assert set(per_pod) == {"notebooks", "batch"}
    assert [t for t, _ in per_pod["notebooks"].samples] == [at(k) for k in range(0, 20)]
    assert [t for t, _ in per_pod["batch"].samples] == [at(k) for k in range(10, 30)]
    (truth,) = iter_device_truth(scenario)
    reading = {at(k): round(u * 100) for k, u in enumerate(truth.utilization)}
    pods = {p.namespace: p for p in scenario.pods}
    for ns, s in per_pod.items():
        assert s.labels["pod_uid"] == pods[ns].uid
        assert all(reading[ts] == v for ts, v in s.samples)  # the same device reading
    assert {per_pod["notebooks"].labels["vgpu"], per_pod["batch"].labels["vgpu"]} == {"0", "1"}


def test_kube_state_metrics():
    scenario = tiny_scenario()
    requests = {s.labels["pod"]: s for s in series_of(scenario, "kube_pod_container_resource_requests")}
    assert requests["jupyter-erin"].labels["resource"] == "nvidia_com_mig_1g_10gb"
    assert requests["jupyter-erin"].labels["node"] == "node-b"
    assert [ts for ts, _ in requests["jupyter-erin"].samples] == [at(k) for k in range(50, 80)]
    assert requests["trainer-1"].samples == [(at(k), 2.0) for k in range(10)]
    assert "node" not in requests["trainer-1"].labels  # unscheduled
    phases = {(s.labels["pod"], s.labels["phase"]) for s in series_of(scenario, "kube_pod_status_phase")}
    assert phases == {("trainer-0", "Running"), ("jupyter-erin", "Running"),
                      ("trainer-1", "Pending"), ("jupyter-frank", "Pending")}
    ns_labels = {s.labels["namespace"]: s.labels.get("label_team") for s in series_of(scenario, "kube_namespace_labels")}
    assert ns_labels == {"ml-research": "research", "notebooks": None}
    (used,) = series_of(scenario, "kube_resourcequota", type="used")
    assert used.labels["resource"] == "requests.nvidia.com/gpu" and used.labels["resourcequota"] == "gpu-quota"
    assert [v for _, v in used.samples] == [1.0] * 30 + [0.0] * 90
    allocatable = {s.labels["node"]: s.samples[0][1] for s in series_of(scenario, "kube_node_status_allocatable")}
    assert allocatable == {"node-a": 1.0, "node-b": 0.0}


def test_a_relabel_starts_a_new_namespace_labels_series():
    """kube-state-metrics exports one series per label set: a re-label ends one, starts another."""
    scenario = tiny_scenario()
    scenario.namespace_relabels = {"ml-research": [(at(45), "platform"), (at(90), None)]}
    by_team = {s.labels.get("label_team"): [ts for ts, _ in s.samples]
               for s in series_of(scenario, "kube_namespace_labels", namespace="ml-research")}
    assert by_team == {"research": [at(k) for k in range(45)], "platform": [at(k) for k in range(45, 90)],
                       None: [at(k) for k in range(90, 120)]}
    assert scenario.team_at("ml-research", at(44)) == "research"
    assert scenario.team_at("ml-research", at(45)) == "platform"
    assert scenario.fingerprint() != tiny_scenario().fingerprint()
