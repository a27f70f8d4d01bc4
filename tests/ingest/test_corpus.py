"""Exposition captures replayed through a real Prometheus and ingested: the figures of each
fixture in tests/ingest/corpus/ (our own look-alikes of real dcgm-exporter output, described in
tests/ingest/corpus/README.md) by hand, and general invariants over a folder of real captures
named by GPUPORTAL_CORPUS_DIR (skipped when unset). The rules are those of docs/accounting.md:
a whole GPU counts 1 GPU-h an hour, a MIG instance its slices over the model's maximum; a GPU
in MIG mode is a whole GPU of capacity, its unoccupied slices unallocated ("When devices
change"); idle is a held GPU-second below 5 % utilization."""
import os
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from apps.accounting.models import UsageHour
from apps.ingest.pipeline import ingest
from apps.simulator.capture import CaptureError, read_capture

from tests.support.prom import served_series
from tests.support.factories import make_cluster

CORPUS = Path(__file__).parent / "corpus"
T0 = 1_788_220_800          # 2026-09-01 00:00 UTC
H = 3600
HOURS = 2
NOW = datetime(2026, 11, 28, tzinfo=timezone.utc)
DCGM_TARGET = {"instance": "10.0.0.11:9400", "job": "nvidia-dcgm-exporter"}
KSM_TARGET = {"instance": "10.0.0.2:8080", "job": "kube-state-metrics"}


def target_labels(metric: str) -> dict[str, str]:
    return KSM_TARGET if metric.startswith("kube_") else DCGM_TARGET


# Per fixture, by hand, for 2 hours: GPU-h, MIG-h and idle GPU-h per namespace ("" unallocated),
# and all GPU-h (capacity). Zero entries are left out.
EXPECTED = {
    # Two whole H100s: nlp holds GPU 0 at 92 %, GPU 1 is free.
    "dcgm-h100-whole-dcp-pods.prom": dict(
        gpu_h={"nlp": 2.0, "": 2.0}, mig_h={}, idle_h={}, capacity=4.0),
    # An A100 as 3 × 2g.20gb: analytics holds one at 2 % (idle): 2 h × 2/7; two free instances
    # 2 × 2/7 and the unoccupied seventh slice 1/7 unallocated, 2 h each: 10/7.
    "dcgm-a100-mig-2g20gb-board-power.prom": dict(
        gpu_h={"analytics": 0.571429, "": 1.428571}, mig_h={"analytics": 2.0, "": 4.0},
        idle_h={"analytics": 0.571429}, capacity=2.0),
    # An A30 as 4 × 1g.6gb (lower-cased labels): search holds one at 39 %: 2 h × 1/4; three
    # free instances 2 h × 3/4; no slice unoccupied.
    "dcgm-a30-mig-1g6gb-lowercase-labels.prom": dict(
        gpu_h={"search": 0.5, "": 1.5}, mig_h={"search": 2.0, "": 6.0}, idle_h={}, capacity=2.0),
    # A T4 reporting memory, temperature and power but no utilization: capacity, unallocated.
    "dcgm-t4-whole-no-gpu-util.prom": dict(
        gpu_h={"": 2.0}, mig_h={}, idle_h={}, capacity=2.0),
    # Two whole A100s behind honorLabels false: vision holds GPU 0 at 2 % (idle); GPU 1 names only
    # the exporter's own pod, so it is unallocated.
    "dcgm-a100-exported-pod-target-labels.prom": dict(
        gpu_h={"vision": 2.0, "": 2.0}, mig_h={}, idle_h={"vision": 2.0}, capacity=4.0),
    # Two bare-metal V100s, no pods; replayed without the N/A power line (strict=False).
    "dcgm-v100-whole-non-numeric-value.prom": dict(
        gpu_h={"": 4.0}, mig_h={}, idle_h={}, capacity=4.0),
}
NOT_A_NUMBER = "dcgm-v100-whole-non-numeric-value.prom"


def replay(capture, tmp_path, name: str) -> list[tuple[str, datetime, float, float, float]]:
    """The capture scraped every 30 s for HOURS from T0, ingested: (namespace, hour, GPU-s,
    idle GPU-s, MIG-s) of every UsageHour row."""
    series = capture.series(T0, HOURS, 30, add_labels=target_labels)
    with served_series(series, tmp_path) as server:
        cluster = make_cluster(re.sub(r"[^a-z0-9-]", "-", name.lower())[:60],
                                         prometheus_url=server.url)
        run = ingest(cluster, datetime.fromtimestamp(T0, tz=timezone.utc),
                     datetime.fromtimestamp(T0 + HOURS * H, tz=timezone.utc), now=NOW)
    assert run.status == "succeeded", run.error
    return list(UsageHour.objects.filter(cluster=cluster).values_list(
        "namespace", "hour_start", "gpu_seconds", "idle_gpu_seconds", "mig_seconds"))


def hours_by_namespace(rows, column: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for row in rows:
        out[row[0]] = out.get(row[0], 0.0) + row[column]
    return {ns: round(s / H, 6) for ns, s in out.items() if round(s / H, 6)}


def test_the_fixtures_are_the_ones_figured_by_hand():
    assert sorted(p.name for p in CORPUS.glob("*.prom")) == sorted(EXPECTED)


@pytest.mark.prometheus
@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_fixture_gives_the_figures_by_hand(name, tmp_path):
    capture = read_capture((CORPUS / name).read_text(), name, strict=name != NOT_A_NUMBER)
    rows = replay(capture, tmp_path, name)
    expected = EXPECTED[name]
    assert hours_by_namespace(rows, 2) == expected["gpu_h"]
    assert hours_by_namespace(rows, 4) == expected["mig_h"]
    assert hours_by_namespace(rows, 3) == expected["idle_h"]
    assert round(sum(r[2] for r in rows) / H, 6) == expected["capacity"]


def test_a_value_that_is_not_a_number_is_one_line_naming_file_and_line():
    text = (CORPUS / NOT_A_NUMBER).read_text()
    with pytest.raises(CaptureError) as caught:
        read_capture(text, NOT_A_NUMBER)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{NOT_A_NUMBER}:10: DCGM_FI_DEV_POWER_USAGE: value 'N/A' is not a number"), message
    lenient = read_capture(text, NOT_A_NUMBER, strict=False)
    assert lenient.rejected == [(10, "DCGM_FI_DEV_POWER_USAGE: value 'N/A' is not a number")]
    assert len(lenient.samples) == 7 and all(s.line != 10 for s in lenient.samples)


def test_the_parser_reads_escapes_timestamps_and_refuses_what_is_no_sample():
    capture = read_capture('# HELP m any text, "quoted"\n'
                           'm{a="x\\"y,z=1",b="back\\\\slash" , c=""} 1.5e+02 1788220800000\n'
                           'm_total 3\n', "inline.prom")
    assert [(s.metric, s.labels, s.value) for s in capture.samples] == [
        ("m", {"a": 'x"y,z=1', "b": "back\\slash", "c": ""}, 150.0), ("m_total", {}, 3.0)]
    series = capture.series(T0, 1 / 60, 30, add_labels={"job": "j", "a": "not this"})
    assert [(s.metric, s.labels, s.samples) for s in series] == [
        ("m", {"a": 'x"y,z=1', "b": "back\\slash", "job": "j"}, [(T0, 150.0), (T0 + 30, 150.0)]),
        ("m_total", {"job": "j", "a": "not this"}, [(T0, 3.0), (T0 + 30, 3.0)])]
    for line, problem in [('m{a="1} 2', "the value of label 'a' is not closed"),
                          ("m{a=1} 2", "label 'a' is not followed by"),
                          ("m 1 2 3", "3 fields after the labels"),
                          ("m 1 soon", "timestamp 'soon' is not an integer"),
                          ('{a="1"} 2', "no metric name"),
                          ('m{a="1",a="2"} 2', "label 'a' twice")]:
        with pytest.raises(CaptureError, match=re.escape("bad.prom:2: ") + ".*" + re.escape(problem)):
            read_capture("# a comment\n" + line + "\n", "bad.prom", strict=False)
    with pytest.raises(CaptureError, match="bad.prom:2: m: the same series again"):
        read_capture('m{a="1"} 1\nm{a="1",b=""} 2\n', "bad.prom")
    with pytest.raises(CaptureError, match="bad.prom:1: m: no value"):
        read_capture('m{a="1"}\n', "bad.prom")


def _real_captures() -> list[Path]:
    folder = os.environ.get("GPUPORTAL_CORPUS_DIR")
    return sorted(Path(folder).glob("*.prom")) if folder else []


# The fields that place a GPU in time (docs/ingest.md, "What real exporters emit"): utilization
# (GR_ENGINE_ACTIVE on MIG instances), else power, memory or temperature. A paste cut down to
# other fields (clocks, FB_FREE, XID alone) says a GPU exists but not when it reported.
TIMING_FIELDS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP")


def physical_gpus(capture) -> set[str]:
    """UUIDs (either spelling of the label) of the series that place a GPU in time: a MIG
    instance's UUID is its parent GPU's."""
    return {s.labels.get("UUID") or s.labels.get("uuid") for s in capture.samples
            if (s.metric in TIMING_FIELDS or (s.metric == "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
                                              and (s.labels.get("GPU_I_PROFILE") or s.labels.get("gpu_i_profile"))))
            and (s.labels.get("UUID") or s.labels.get("uuid"))}


@pytest.mark.prometheus
@pytest.mark.django_db
@pytest.mark.skipif(not os.environ.get("GPUPORTAL_CORPUS_DIR"), reason="GPUPORTAL_CORPUS_DIR is not set")
@pytest.mark.parametrize("path", _real_captures(), ids=lambda p: p.name)
def test_a_real_capture_ingests_to_one_gpu_of_capacity_per_physical_gpu(path, tmp_path):
    """A real capture parses, or fails with one line naming file and line (and is then replayed
    without the lines it rejects); its ingest succeeds; and every hour holds as many GPU-hours
    of capacity as the capture has physical GPUs."""
    text = path.read_text(errors="replace")
    try:
        capture = read_capture(text, path.name)
    except CaptureError as exc:
        assert "\n" not in str(exc) and re.match(re.escape(path.name) + r":\d+: ", str(exc)), str(exc)
        capture = read_capture(text, path.name, strict=False)
    gpus = physical_gpus(capture)
    rows = replay(capture, tmp_path, path.stem)
    per_hour: dict[datetime, float] = {}
    for row in rows:
        per_hour[row[1]] = per_hour.get(row[1], 0.0) + row[2]
    expected = {datetime.fromtimestamp(T0 + h * H, tz=timezone.utc): float(len(gpus)) for h in range(HOURS)}
    got = {hour: round(s / H, 6) for hour, s in per_hour.items()}
    fields = sorted({s.metric for s in capture.samples})
    if not gpus:
        assert not any(got.values()), f"no physical GPU, but ingest counted {got} from {fields}"
    else:
        assert got == expected, f"{len(gpus)} physical GPUs, ingest counted {sorted(got.values())} from {fields}"
