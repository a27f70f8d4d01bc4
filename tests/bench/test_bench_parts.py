"""The bench's own parts that decide what its figures mean (docs/performance.md, "`make bench`"):
what the single raw fetch reads, which fleet sizes the sweep runs, how step times are summed."""
import threading
import time
import types

from apps.ingest.queries import KUBE_STATE_QUERIES, MetricNames, dcgm_queries
from tests.bench.ingest_floor import Clock, raw_specs
from tests.bench.scaling import scales

NAMES = MetricNames(gpu_util="U", gr_engine_active="G", fb_used="F", power="P", temperature="T", xid="X")


def test_the_single_raw_fetch_reads_every_raw_series_ingest_reads_and_nothing_grouped():
    specs = raw_specs(NAMES)
    assert set(specs) == set(dcgm_queries(NAMES)) | set(KUBE_STATE_QUERIES)
    # ingest's own matchers, so the floor reads the same series (MIG utilization under both spellings)
    assert specs["mig_util"] == ("G", ('GPU_I_PROFILE!=""',))
    assert specs["mig_util_lower"] == ("G", ('gpu_i_profile!=""',))
    assert specs["phase"] == ("kube_pod_status_phase", ('phase="Pending"',))
    # owners are asked for grouped by ingest, never raw: not part of the floor
    assert not {"pod_owner", "replicaset_owner", "job_owner", "notebook_labels"} & set(specs)


def test_the_sweep_runs_the_sizes_named_and_none_unless_asked(monkeypatch):
    monkeypatch.delenv("BENCH_SCALES", raising=False)
    assert scales() == []
    monkeypatch.setenv("BENCH_SCALES", "1000, 2000,,10000")
    assert scales() == [1000, 2000, 10000]


def test_step_times_on_the_critical_path_count_the_main_thread_only():
    clock = Clock()
    owner = types.SimpleNamespace(step=lambda seconds: time.sleep(seconds))
    clock.wrap(owner, "step", "a step")
    owner.step(0.05)
    worker = threading.Thread(target=owner.step, args=(0.1,))
    worker.start()
    worker.join()
    assert clock.calls["a step"] == 2
    assert 0.05 <= clock.main["a step"] < 0.1            # the worker's 0.1 s is not on the main thread
    assert 0.15 <= clock.all["a step"] < 0.15 + 0.1


def test_a_childs_peak_rss_is_read_by_the_child_not_from_wait4():
    """Started by vfork + exec, a child's `ru_maxrss` starts at its parent's peak; the bench once
    read a parent's 346 MB (it had built a TSDB) as the ingest's. The child reads its own."""
    import os
    import subprocess
    import sys

    held = bytearray(200 * 2**20)
    held[::4096] = b"\x01" * len(held[::4096])      # resident, not just reserved
    proc = subprocess.Popen([sys.executable, "-c", "from tests.bench.child import own_peak_rss_mb as p; print(p())"],
                            stdout=subprocess.PIPE)
    own = float(proc.stdout.read())
    _, _, usage = os.wait4(proc.pid, 0)
    assert usage.ru_maxrss / 1024.0 >= 200      # what wait4 says of it
    assert 0 < own < 100                        # what it held itself (a bare interpreter)
    del held
