"""A silence (a gap longer than Prometheus' 300 s lookback) ends a stream's run, and no spacing is
measured across one (docs/accounting.md, "How long a sample counts"): hand-computed figures, and
the same window ingested in chunks of every size giving the same rows."""
from datetime import datetime, timedelta, timezone

import pytest

from apps.accounting.models import DeviceHealthHour, UsageHour
from apps.ingest import rollup
from apps.ingest.pipeline import ingest
from apps.ingest.rollup import RollupConfig, Series, Window
from apps.simulator.builders import build_fleet

from tests.support.prom import served
from tests.support.factories import make_cluster

H = 3600
T0 = 1_700_000_000 - (1_700_000_000 % H)  # a whole hour


def test_a_sample_alone_in_its_run_counts_the_chunk_interval():
    """An idle series between pods: one sample each time no pod holds the GPU, an hour apart.
    Each is alone in its run, so each counts the chunk's interval (60 s), not the hour-long
    silence after it (3,840 and 3,960 s before), and the last one not their median (3,900 s)."""
    ts = [T0 + 480.0, T0 + 4320.0, T0 + 8280.0]
    assert rollup.durations(ts, 60.0) == [60.0, 60.0, 60.0]
    # two samples an hour apart: the same
    assert rollup.durations(ts[:2], 60.0) == [60.0, 60.0]


def test_the_sample_before_a_silence_counts_its_runs_spacing():
    """60 s scrapes, a 15-minute silence, 30 s scrapes: the sample before the silence counts its
    run's spacing (60 s), the one after it starts a run of its own measured forward (30 s), and
    no spacing mixes the two runs."""
    ts = [0.0, 60.0, 120.0, 1020.0, 1050.0, 1080.0, 1110.0]
    assert rollup.durations(ts, 45.0) == [60.0, 60.0, 60.0, 30.0, 30.0, 30.0, 30.0]


def test_a_gpus_hour_never_exceeds_the_hour_when_its_idle_series_is_sparse():
    """Pod A holds the GPU until 00:08, the idle series has one sample at 00:08, pod B holds it
    from 00:09 to the end of the hour; the idle series' previous sample is 65 minutes earlier.
    Before, the 00:08 sample counted that silence (3,900 s), and after pod B's 3,060 s were
    tiled out, 840 s were left to the idle row: 480 + 840 + 3,060 = 4,380 s in one hour. Now it
    counts one interval: 480 + 60 + 3,060 = 3,600 s."""
    labels = {"gpu": "0", "UUID": "GPU-1", "Hostname": "node-1", "modelName": "NVIDIA H100 80GB HBM3"}
    pod_a = Series({**labels, "namespace": "ml", "pod": "a"}, [(T0 - 900.0 + 60 * k, 50.0) for k in range(23)])
    idle = Series(labels, [(T0 + 480.0 - 3900.0, 0.0), (T0 + 480.0, 0.0)])
    pod_b = Series({**labels, "namespace": "ml", "pod": "b"}, [(T0 + 540.0 + 60 * k, 50.0) for k in range(51)])
    result = rollup.rollup_devices(RollupConfig(spelling="plain", interval_seconds=60.0), Window(T0, T0 + H),
                                   [pod_a, idle, pod_b], [])
    seconds = {u.pod: u.gpu_seconds for u in result.usage if u.hour_start == T0}
    assert seconds == {"a": 480.0, "": 60.0, "b": 3060.0}
    assert sum(seconds.values()) == H


def test_a_replicas_sample_alone_in_its_run_is_measured_by_the_chunk_interval():
    """The kept copy stops at 120 s; the replica holds a sample at 200 s and the next one 65
    minutes later. Each is alone in its run, so its spacing is the chunk's interval (60 s): the
    200 s sample lies 80 s from the nearest kept one and joins (before, the silence made its
    spacing 3,900 s and it was dropped)."""
    kept = [(0.0, 1.0), (60.0, 1.0), (120.0, 1.0)]
    replica = [(200.0, 2.0), (4100.0, 2.0)]
    assert rollup.merge_copies([kept, replica], 60.0) == [*kept, (200.0, 2.0), (4100.0, 2.0)]
    # within one interval of a kept sample it is that reading again
    assert rollup.merge_copies([kept, [(170.0, 2.0), (4100.0, 2.0)]], 60.0) == [*kept, (4100.0, 2.0)]


USAGE = ("device__uuid", "device__mig_instance_id", "namespace", "pod", "hour_start", "gpu_seconds",
         "used_gpu_seconds", "idle_gpu_seconds", "mig_seconds", "sample_count", "idle_max_run_seconds",
         "idle_prefix_seconds", "idle_suffix_seconds", "idle_whole_hour", "fb_used_mib_avg", "fb_used_mib_max",
         "power_watts_avg", "energy_joules")
HEALTH = ("device__uuid", "device__mig_instance_id", "hour_start", "temperature_c_avg", "temperature_c_max",
          "seconds_above_83c", "power_watts_avg", "energy_joules", "xid_samples")


@pytest.mark.prometheus
@pytest.mark.django_db(transaction=True)
def test_the_same_window_in_chunks_of_any_size_gives_the_same_rows(settings):
    """A day of 24 GPUs whose pods come and go (an idle series between each pair of pods), read
    in chunks of 1, 2, 5 and 7 hours and as sized from Prometheus (1 hour, then 12): every
    hourly usage and health row is the same, to the bit. Before, 6 usage and 2 health rows of
    this day moved with the chunks (a GPU's idle hour counted 3,840 s in one of them)."""
    scenario = build_fleet(gpus=24, mig_share=0.15, hours=24, interval_seconds=60, seed=11, name="chunk-free",
                           start=1_788_220_800)
    start = datetime.fromtimestamp(scenario.start, tz=timezone.utc)
    rows = {}
    with served(scenario) as server:
        for hours in (1, 2, 5, 7, 0):
            settings.INGEST_CHUNK_HOURS = hours
            cluster = make_cluster(f"chunks-of-{hours}", prometheus_url=server.url)
            run = ingest(cluster, start, start + timedelta(hours=24))
            assert run.status == "succeeded", run.error
            rows[hours] = (sorted(UsageHour.objects.filter(cluster=cluster).values_list(*USAGE)),
                           sorted(DeviceHealthHour.objects.filter(cluster=cluster).values_list(*HEALTH)))
    assert len(rows[1][0]) > 1000 and len(rows[1][1]) > 500
    for hours in (2, 5, 7, 0):
        assert rows[hours] == rows[1], f"chunks of {hours} h"
