"""Random reconfiguration histories (docs/accounting.md, "When devices change"): GPUs switching
between whole and MIG, MIG layouts changing (instance ids reused by other sizes), GPUs replaced under the same index, nodes renamed.
Ingested through a real Prometheus in chunks of 1, 2, 3, 5 and 12 hours and as sized from
Prometheus, every history gives the same rows to the bit, and no hour is lost or counted twice:
each GPU slot is one GPU of capacity for every hour it reported, and every held segment bills
its namespace exactly its hours × the share it held."""
import random
from datetime import datetime, timezone

import pytest

from apps.accounting.models import UsageHour
from apps.ingest.pipeline import ingest
from apps.simulator.emit import SimSeries

from tests.support.prom import served_series
from tests.support.factories import make_cluster

T0 = 1_788_220_800          # 2026-09-01 00:00 UTC
H = 3600
HOURS = 12
NOW = datetime(2026, 11, 28, tzinfo=timezone.utc)
LAYOUTS = ((("3g.40gb", 3), ("3g.40gb", 3)), (("1g.10gb", 1),) * 7, (("2g.20gb", 2),) * 3,
           (("3g.40gb", 3), ("2g.20gb", 2), ("1g.10gb", 1), ("1g.10gb", 1)), (("4g.40gb", 4), ("3g.40gb", 3)))
ROWS = ("device__uuid", "device__mig_instance_id", "namespace", "pod", "hour_start", "mig_profile",
        "sample_count", "gpu_seconds", "used_gpu_seconds", "idle_gpu_seconds", "mig_seconds", "fb_used_mib_avg")


def _history(seed: int):
    """Series of four A100 slots over 12 hours in segments of 1-4 hours, and what each namespace
    must be billed (GPU-seconds)."""
    rng = random.Random(seed)
    series, billed, gi = [], {}, 0
    for slot in range(4):
        uuid, host, h = f"GPU-{seed}-{slot}-0", f"node-{slot}", 0
        while h < HOURS:
            length = min(HOURS - h, rng.randint(1, 4))
            change = rng.choice(("none", "none", "replaced", "renamed"))
            if change == "replaced":
                uuid = f"GPU-{seed}-{slot}-{h}"
            elif change == "renamed":
                host = f"node-{slot}-{h}"
            board = {"gpu": str(slot), "UUID": uuid, "pci_bus_id": f"00000000:{slot + 7:02x}:00.0",
                     "device": f"nvidia{slot}", "modelName": "NVIDIA A100-SXM4-80GB", "Hostname": host,
                     "DCGM_FI_DRIVER_VERSION": "570.124.06", "instance": f"10.0.0.{slot}:9400",
                     "job": "nvidia-dcgm-exporter"}
            ts = [T0 + h * H + 30 + 60 * i for i in range(length * 60)]
            if rng.random() < 0.5:      # whole
                pod = rng.choice((None, ("train", f"t-{slot}-{h}")))
                labels = {**board, **({"container": "main", "namespace": pod[0], "pod": pod[1]} if pod else {})}
                util = float(rng.choice((0, 3, 40, 90)))
                series += [SimSeries("DCGM_FI_DEV_GPU_UTIL", labels, [(t, util) for t in ts]),
                           SimSeries("DCGM_FI_PROF_GR_ENGINE_ACTIVE", dict(labels), [(t, util / 100) for t in ts]),
                           SimSeries("DCGM_FI_DEV_FB_USED", dict(labels), [(t, 1000.0) for t in ts])]
                ns = pod[0] if pod else ""
                billed[ns] = billed.get(ns, 0.0) + length * H
            else:                       # MIG mode, a layout of instances, some held
                layout = rng.choice(LAYOUTS)
                for n, (profile, slices) in enumerate(layout, 1):
                    gi += 1
                    pod = rng.choice((None, ("lab", f"nb-{gi}")))
                    # instance ids restart with each layout, as the driver hands them out: the same
                    # GPU_I_ID names instances of other sizes before and after a change
                    labels = {**board, "GPU_I_PROFILE": profile, "GPU_I_ID": str(n),
                              **({"container": "main", "namespace": pod[0], "pod": pod[1]} if pod else {})}
                    series += [SimSeries("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, [(t, 0.5) for t in ts]),
                               SimSeries("DCGM_FI_DEV_FB_USED", dict(labels), [(t, 500.0) for t in ts])]
                    ns = pod[0] if pod else ""
                    billed[ns] = billed.get(ns, 0.0) + length * H * slices / 7
                free = 7 - sum(s for _, s in layout)
                billed[""] = billed.get("", 0.0) + length * H * free / 7
            h += length
    return series, billed


@pytest.mark.prometheus
@pytest.mark.django_db
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_reconfigurations_give_the_same_rows_in_any_chunks(settings, tmp_path, seed):
    series, billed = _history(seed)
    rows = {}
    with served_series(series, tmp_path) as server:
        for chunk in (1, 2, 3, 5, 12, 0):
            settings.INGEST_CHUNK_HOURS = chunk
            cluster = make_cluster(f"reconf-{seed}-{chunk}", prometheus_url=server.url)
            run = ingest(cluster, datetime.fromtimestamp(T0, tz=timezone.utc),
                         datetime.fromtimestamp(T0 + HOURS * H, tz=timezone.utc), now=NOW)
            assert run.status == "succeeded", run.error
            rows[chunk] = sorted(UsageHour.objects.filter(cluster=cluster).values_list(*ROWS))
    for chunk, got in rows.items():
        assert got == rows[1], f"chunks of {chunk} h"
    by_ns: dict[str, float] = {}
    for r in rows[1]:
        by_ns[r[2]] = by_ns.get(r[2], 0.0) + r[7]
    assert set(by_ns) == set(billed)
    for ns, seconds in billed.items():
        # the one thing cut: the unoccupied slices of a GPU in MIG mode at the window's end stop
        # there, where its instances' last samples (30 s before it) count their whole 60 s
        assert by_ns[ns] == pytest.approx(seconds, abs=4 * 30 if ns == "" else 1e-6), ns
    assert sum(by_ns.values()) == pytest.approx(4 * HOURS * H, abs=4 * 30)
