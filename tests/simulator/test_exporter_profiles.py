"""The simulated dcgm-exporter per release and counters file (docs/demo.md, "The simulated exporter")."""
from dataclasses import replace

import pytest

from apps.simulator.builders import build_scenario
from apps.simulator.emit import iter_series
from apps.simulator.expected import expected_figures
from apps.simulator.exporter import ExporterProfile
from apps.simulator.scenario import Scenario

from .conftest import MIG, WHOLE, sliced_scenario, tiny_scenario

WHOLE_DCP = {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE",
             "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
             "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE"}
WHOLE_NO_DCP = {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE",
                "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"}
MIG_DCP = {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
           "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP",
           "DCGM_FI_DEV_XID_ERRORS"}


def with_exporter(scenario: Scenario, version="4.5.3-4.8.2", counters="dcp-metrics-included", **changes):
    return replace(scenario, exporter=ExporterProfile(version, counters), **changes)


def whole_only(version="4.5.3-4.8.2", counters="dcp-metrics-included", hostname_label=None):
    tiny = tiny_scenario()
    return with_exporter(tiny, version, counters, devices=[WHOLE], pods=tiny.pods[:1], hostname_label=hostname_label)


def dcgm_series(scenario, uuid):
    return [s for s in iter_series(scenario) if s.metric.startswith("DCGM_") and s.labels.get("UUID") == uuid]


def test_the_default_is_the_operators_counters_file_on_4_5_3():
    scenario = tiny_scenario()
    assert scenario.exporter == ExporterProfile("4.5.3-4.8.2", "dcp-metrics-included")
    assert {s.metric for s in dcgm_series(scenario, WHOLE.uuid)} == WHOLE_DCP
    assert {s.metric for s in dcgm_series(scenario, MIG.uuid)} == MIG_DCP


def test_a_whole_gpu_exports_gpu_util_and_gr_engine_active_with_one_label_set():
    series = dcgm_series(tiny_scenario(), WHOLE.uuid)
    util = {tuple(s.labels.items()): s for s in series if s.metric == "DCGM_FI_DEV_GPU_UTIL"}
    engine = {tuple(s.labels.items()): s for s in series if s.metric == "DCGM_FI_PROF_GR_ENGINE_ACTIVE"}
    assert len(util) == 2 and util.keys() == engine.keys()  # held, then free: label sets equal, in order too
    assert all("GPU_I_PROFILE" not in dict(labels) for labels in util)
    for labels, u in util.items():
        e = engine[labels]
        assert [t for t, _ in e.samples] == [t for t, _ in u.samples]
        assert [v for _, v in e.samples] == [v / 100 for _, v in u.samples]  # a 0-1 ratio, not percent
    tensor = {tuple(s.labels.items()): s for s in series if s.metric == "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"}
    for labels, e in engine.items():
        assert all(0 <= t <= g <= 1 for (_, t), (_, g) in zip(tensor[labels].samples, e.samples))


def test_frame_buffer_free_and_used_add_up_to_the_board():
    series = dcgm_series(tiny_scenario(), WHOLE.uuid)
    used = {t: v for s in series if s.metric == "DCGM_FI_DEV_FB_USED" for t, v in s.samples}
    free = {t: v for s in series if s.metric == "DCGM_FI_DEV_FB_FREE" for t, v in s.samples}
    assert used.keys() == free.keys() and len(used) == 120
    assert {used[t] + free[t] for t in used} == {81559.0}  # the H100's MiB


def test_default_counters_before_4_0_have_no_dcp_fields():
    scenario = whole_only("3.3.9-3.6.1", "default-counters")
    assert {s.metric for s in dcgm_series(scenario, WHOLE.uuid)} == WHOLE_NO_DCP
    assert not [s for s in iter_series(scenario) if s.metric.startswith("DCGM_FI_PROF_")]


def test_default_counters_from_4_0_carry_the_dcp_fields_too():
    assert {s.metric for s in dcgm_series(whole_only("4.2.3-4.2.0", "default-counters"), WHOLE.uuid)} == WHOLE_DCP


def test_counters_without_gr_engine_active_cannot_show_a_mig_instance():
    scenario = with_exporter(tiny_scenario(), "3.3.9-3.6.1", "default-counters")
    with pytest.raises(ValueError, match="no DCGM_FI_PROF_GR_ENGINE_ACTIVE"):
        list(iter_series(scenario))
    with pytest.raises(ValueError, match="no DCGM_FI_PROF_GR_ENGINE_ACTIVE"):
        build_scenario(hours=1, counters="default-counters", exporter_version="3.3.9-3.6.1")
    build_scenario(hours=1, counters="default-counters", exporter_version="3.3.9-3.6.1", mig_nodes=0)


@pytest.mark.parametrize("version,host", [("2.4.6-2.6.8", "Hostname"), ("3.3.9-3.6.1", "Hostname"),
                                          ("4.2.3-4.2.0", "Hostname"), ("4.5.3-4.8.2", "Hostname"),
                                          ("4.6.0-4.8.3", "hostname")])
def test_the_host_label_follows_the_version(version, host):
    (other,) = {"Hostname", "hostname"} - {host}
    for s in dcgm_series(whole_only(version), WHOLE.uuid):
        assert s.labels[host] == "node-a" and other not in s.labels


def test_an_explicit_host_label_still_wins():
    for s in dcgm_series(whole_only("4.6.0-4.8.3", hostname_label="Hostname"), WHOLE.uuid):
        assert s.labels["Hostname"] == "node-a" and "hostname" not in s.labels


@pytest.mark.parametrize("version,driver_label,pci_bus_id", [
    ("2.4.6-2.6.8", False, False), ("3.3.9-3.6.1", True, True), ("4.2.3-4.2.0", True, True),
    ("4.5.3-4.8.2", True, True), ("4.6.0-4.8.3", True, True)])
def test_driver_version_and_pci_bus_id_labels_per_version(version, driver_label, pci_bus_id):
    for s in dcgm_series(whole_only(version), WHOLE.uuid):
        assert ("DCGM_FI_DRIVER_VERSION" in s.labels) is driver_label
        assert ("pci_bus_id" in s.labels) is pci_bus_id
        if driver_label:
            assert s.labels["DCGM_FI_DRIVER_VERSION"] == "570.86.15"


def test_the_oldest_release_label_set_in_full():
    (held,) = [s for s in dcgm_series(whole_only("2.4.6-2.6.8"), WHOLE.uuid)
               if s.metric == "DCGM_FI_DEV_GPU_UTIL" and "pod" in s.labels]
    assert list(held.labels.items()) == list({
        "gpu": "0", "UUID": WHOLE.uuid, "device": "nvidia0", "modelName": "NVIDIA H100 80GB HBM3",
        "Hostname": "node-a", "container": "trainer", "namespace": "ml-research", "pod": "trainer-0",
        "instance": "10.0.0.10:9400", "job": "nvidia-dcgm-exporter"}.items())


def test_per_pod_series_of_a_shared_gpu_per_version():
    with pytest.raises(ValueError, match="--kubernetes-virtual-gpus"):
        list(iter_series(with_exporter(sliced_scenario(), "3.3.9-3.6.1")))
    for version, has_uid in (("4.2.3-4.2.0", False), ("4.5.3-4.8.2", True)):
        per_pod = [s for s in iter_series(with_exporter(sliced_scenario(), version)) if "vgpu" in s.labels]
        assert per_pod and all(("pod_uid" in s.labels) is has_uid for s in per_pod)


def test_the_profile_is_part_of_the_cache_key_and_not_of_the_figures():
    default = build_scenario(hours=1, seed=3, start=1_699_999_200)
    other = build_scenario(hours=1, seed=3, start=1_699_999_200, counters="default-counters",
                           exporter_version="4.2.3-4.2.0")
    assert default.fingerprint() != other.fingerprint()
    assert expected_figures(default).as_plain_dicts() == expected_figures(other).as_plain_dicts()


def test_unknown_versions_and_counters_are_refused():
    with pytest.raises(ValueError, match="exporter version"):
        ExporterProfile("9.9.9")
    with pytest.raises(ValueError, match="counters"):
        ExporterProfile(counters="everything")
