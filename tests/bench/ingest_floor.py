"""Ingest against the single raw fetch (issue 24, item 3), step by step.

The floor: every raw DCGM and kube-state-metrics series ingest reads, for the whole window
(with ingest's look-around on both sides), fetched once, one query at a time through ingest's
own HTTP session (answers uncompressed unless PROMETHEUS_COMPRESSION, as ingest takes them),
each answer parsed by orjson and its values put into float arrays. That is what any ingest of the window
must at least do; a query set that costs Prometheus more (per-hour `*_over_time` queries,
chunks) raises the bench's other floor (`floor` in child.py) but not the user's wait.

Measured against it: the whole `manage.py ingest` process (from the parent's fork to the
child's exit: interpreter and Django start-up included), and the same ingest once more in an
instrumented child that times each step: start-up, waiting for Prometheus, the JSON parse,
turning answers into series, the roll-up, the writes, the daily rebuild, the commit, and the
answer-input triggers' own time in Postgres (pg_stat_user_functions).

    python -m tests.bench.ingest_floor rawfloor --url URL --start ISO --end ISO
    python -m tests.bench.ingest_floor steps --cluster NAME --url URL --start ISO --end ISO --t0 EPOCH
"""
from __future__ import annotations

import time

T_IMPORT = time.time()   # noqa: E402 — the child's first instant, before anything heavy is imported

import argparse
import gc
import json
import os
import subprocess
import sys
import threading
from collections import defaultdict
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from functools import wraps
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET_RATIO = 1.3


# ------------------------------------------------------------------ the floor

def raw_specs(names) -> dict:
    """role -> (metric, matchers): every raw series ingest reads (its DCGM and kube-state-metrics
    roles, with its matchers), GPU requests of every pod included (ingest reads Pending pods' only,
    after the phase answer). Pods' owners are left out: ingest asks for them grouped, never raw."""
    from apps.ingest.queries import KUBE_STATE_QUERIES, dcgm_queries

    return {**dcgm_queries(names), **KUBE_STATE_QUERIES}


def rawfloor(url: str, start: datetime, end: datetime) -> dict:
    import numpy as np
    import orjson

    from apps.ingest.prometheus_http import http_session
    from apps.ingest.queries import MetricNames, selector
    from apps.ingest.rollup.timeline import LOOKAROUND_SECONDS

    names = MetricNames(gpu_util="DCGM_FI_DEV_GPU_UTIL", gr_engine_active="DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                        fb_used="DCGM_FI_DEV_FB_USED", power="DCGM_FI_DEV_POWER_USAGE",
                        temperature="DCGM_FI_DEV_GPU_TEMP", xid="DCGM_FI_DEV_XID_ERRORS")
    lo, hi = start.timestamp() - LOOKAROUND_SECONDS, end.timestamp() + LOOKAROUND_SECONDS
    span = int(hi - lo) + 1
    session = http_session()   # ingest's own transport (uncompressed unless PROMETHEUS_COMPRESSION)
    fetch = parse = 0.0
    samples = series = answer_bytes = 0
    by_role = {}
    gc.disable()   # as ingest does while it parses (docs/performance.md)
    started = time.perf_counter()
    for role, (metric, matchers) in raw_specs(names).items():
        t = time.perf_counter()
        r = session.get(f"{url}/api/v1/query", params={"query": f"{metric}{selector(*matchers)}[{span}s]",
                                                        "time": f"{hi:.3f}"}, timeout=600)
        r.raise_for_status()
        body = r.content
        t2 = time.perf_counter()
        result = orjson.loads(body)["data"]["result"]
        n = 0
        for item in result:   # [[t, "v"], …] -> two float arrays (the fastest of the ways tried)
            values = item["values"]
            ts = np.array([t for t, _ in values], dtype=np.float64)
            vs = np.array([float(v) for _, v in values], dtype=np.float64)
            n += len(ts) + len(vs) - len(values)
        t3 = time.perf_counter()
        by_role[role] = {"series": len(result), "samples": n, "mb": round(len(body) / 1e6, 1),
                         "http_s": round(t2 - t, 2), "parse_s": round(t3 - t2, 2)}
        samples += n
        series += len(result)
        answer_bytes += len(body)
        del result, body
        fetch += t2 - t
        parse += t3 - t2
    gc.enable()
    return {"wall_seconds": round(time.perf_counter() - started, 3), "fetch_seconds": round(fetch, 3),
            "parse_seconds": round(parse, 3), "samples": samples, "series": series, "answer_bytes": answer_bytes,
            "by_role": by_role}


# ------------------------------------------------------------------ the instrumented ingest

class Clock:
    """Seconds spent in wrapped callables, summed per label: in the main thread (on the run's
    critical path, adding up to its wall time) and in all threads (fetch threads overlap)."""

    def __init__(self):
        self.main = defaultdict(float)
        self.cpu = defaultdict(float)    # the main thread's own CPU seconds (robust to a loaded machine)
        self.all = defaultdict(float)
        self.calls = defaultdict(int)
        self.lock = threading.Lock()

    def wrap(self, owner, name, label):
        fn = getattr(owner, name)

        @wraps(fn)
        def timed(*args, **kwargs):
            t, c = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add(label, time.perf_counter() - t, time.thread_time() - c)
        setattr(owner, name, timed)

    def add(self, label, seconds, cpu=0.0):
        with self.lock:
            self.all[label] += seconds
            self.calls[label] += 1
            if threading.current_thread() is threading.main_thread():
                self.main[label] += seconds
                self.cpu[label] += cpu


def instrument(clock: Clock) -> None:
    import types

    import orjson

    from apps.ingest import pipeline, prometheus, rollup, writer

    clock.wrap(prometheus.PrometheusClient, "_fast_query", "fetch raw (HTTP + JSON)")
    clock.wrap(prometheus.PrometheusClient, "hourly", "fetch per-hour (HTTP + JSON + parse)")
    clock.wrap(prometheus.PrometheusClient, "_parse_matrix", "answers into series")
    shim = types.SimpleNamespace(loads=orjson.loads, JSONDecodeError=orjson.JSONDecodeError)
    clock.wrap(shim, "loads", "JSON parse (orjson)")
    prometheus.orjson = shim
    for name in ("rollup_devices", "rollup_queued", "rollup_quota", "namespace_teams", "cluster_queues"):
        clock.wrap(rollup, name, "roll-up")
    clock.wrap(writer._Writer, "write_chunk", "write_chunk (roll-up + writes)")
    clock.wrap(writer, "insert_rows", "COPY of hourly rows")
    clock.wrap(writer._Writer, "finish", "end of run")
    clock.wrap(writer._Writer, "record_labels", "labels seen")
    clock.wrap(pipeline, "rebuild_days", "daily rebuild")
    inner = pipeline.prefetched

    def prefetched(fetcher, chunks, *args):
        gen = inner(fetcher, chunks, *args)
        while True:
            t = time.perf_counter()
            try:
                item = next(gen)
            except StopIteration:
                clock.add("waiting for Prometheus", time.perf_counter() - t)
                return
            clock.add("waiting for Prometheus", time.perf_counter() - t)
            yield item
    pipeline.prefetched = prefetched
    original_atomic = pipeline.transaction.atomic

    @contextmanager
    def atomic(*args, **kwargs):
        ctx = original_atomic(*args, **kwargs)
        ctx.__enter__()
        try:
            yield
        except BaseException:
            if not ctx.__exit__(*sys.exc_info()):
                raise
        else:
            t = time.perf_counter()
            ctx.__exit__(None, None, None)
            clock.add("commit (+ on_commit work)", time.perf_counter() - t)
    pipeline.transaction = types.SimpleNamespace(atomic=atomic)


def trigger_seconds() -> dict:
    """The answer-input triggers' own time in this database since the stats were reset."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT pg_stat_force_next_flush()")
    time.sleep(0.05)
    with connection.cursor() as cur:
        cur.execute("SELECT pg_stat_clear_snapshot()")
        cur.execute("SELECT coalesce(sum(calls), 0), coalesce(sum(self_time), 0) FROM pg_stat_user_functions "
                    "WHERE funcname LIKE 'accounting\\_%'")
        calls, ms = cur.fetchone()
    return {"calls": int(calls), "seconds": round(float(ms) / 1000.0, 3)}


def steps(cluster_name: str, url: str, start: datetime, end: datetime, t0: float) -> dict:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuportal.settings")
    import django

    django.setup()
    from django.db import connection

    from apps.clusters.models import Cluster
    from apps.ingest import pipeline

    ready = time.time()
    clock = Clock()
    instrument(clock)
    sized, size = [], pipeline.sized_chunk_hours
    pipeline.sized_chunk_hours = lambda per_hour: sized.append(size(per_hour)) or sized[-1]
    cluster, _ = Cluster.objects.get_or_create(name=cluster_name, defaults={"prometheus_url": url})
    with connection.cursor() as cur:
        cur.execute("SET track_functions = 'pl'")
        cur.execute("SELECT pg_stat_reset()")
    t = time.perf_counter()
    run = pipeline.ingest(cluster, start, end, trigger="bench")
    took = time.perf_counter() - t
    finished = time.time()
    main = dict(clock.main)
    in_chunk = main.get("write_chunk (roll-up + writes)", 0.0)
    rollup_s = main.get("roll-up", 0.0)
    copy_s = main.get("COPY of hourly rows", 0.0)
    path = {
        "process start-up (interpreter, imports, django.setup)": ready - t0,
        "waiting for Prometheus (main thread)": main.get("waiting for Prometheus", 0.0),
        "roll-up (numpy, per chunk)": rollup_s,
        "COPY of hourly rows": copy_s,
        "other writes of a chunk (deletes, devices, namespaces, queues, owners collected)": in_chunk - rollup_s - copy_s,
        "end of run: device spans, pod owners": main.get("end of run", 0.0),
        "daily rebuild (rebuild_days)": main.get("daily rebuild", 0.0),
        "labels seen": main.get("labels seen", 0.0),
        "commit (+ on_commit work)": main.get("commit (+ on_commit work)", 0.0),
    }
    path["other (run record, lock, checks, watermark)"] = took - sum(v for k, v in path.items()
                                                                      if not k.startswith("process"))
    threads = {k: v for k, v in clock.all.items() if k in (
        "fetch raw (HTTP + JSON)", "fetch per-hour (HTTP + JSON + parse)", "JSON parse (orjson)",
        "answers into series")}
    cpu = {"roll-up (numpy, per chunk)": clock.cpu.get("roll-up", 0.0),
           "write_chunk (roll-up + writes)": clock.cpu.get("write_chunk (roll-up + writes)", 0.0),
           "whole process (all threads, user + system)": sum(os.times()[:2])}
    return {"wall_seconds": round(finished - t0, 3), "ingest_seconds": round(took, 3),
            "cpu_seconds": {k: round(v, 3) for k, v in cpu.items()},
            "critical_path": {k: round(v, 3) for k, v in path.items()},
            "fetch_threads": {k: round(v, 3) for k, v in threads.items()},
            "triggers": trigger_seconds(), "rows_written": run.rows_written, "samples_read": run.samples_read,
            "chunks": run.chunks_total, "chunk_hours": sized[-1] if sized else None}


# ------------------------------------------------------------------ the parent's part of make bench

def _child(args: list[str], env: dict) -> tuple[dict, float]:
    t0 = time.time()
    proc = subprocess.run([sys.executable, "-m", "tests.bench.ingest_floor", *args, "--t0", repr(t0)], cwd=ROOT,
                          env=env, capture_output=True)
    wall = time.time() - t0
    if proc.returncode != 0:
        sys.exit(f"bench step {args[0]} failed:\n{proc.stderr.decode()[-3000:]}")
    return json.loads(proc.stdout.decode().strip().splitlines()[-1]), wall


def manage_ingest(cluster: str, url: str, lo: datetime, hi: datetime, env: dict) -> float:
    """The whole `manage.py ingest` process, fork to exit, in seconds."""
    t0 = time.time()
    proc = subprocess.run([sys.executable, "manage.py", "ingest", "--cluster", cluster, "--prometheus-url", url,
                           "--start", lo.isoformat(), "--end", hi.isoformat(), "--no-progress"],
                          cwd=ROOT, env=env, capture_output=True)
    wall = time.time() - t0
    if proc.returncode != 0:
        sys.exit(f"manage.py ingest failed:\n{proc.stderr.decode()[-3000:]}")
    return wall


@contextmanager
def as_deployed(env: dict):
    """The ingest's environment as deployed: with a broker, so the month's recompute its commit
    triggers is queued for the worker (timed by the bench on its own: `prepare_month_answers`)
    instead of run inside the ingest process, as the demo, with no broker, runs it.
    BENCH_REDIS_URL (default redis://127.0.0.1:6379/14), emptied before and after; yields the
    environment and whether a broker was reachable (without one, the ingest runs the recompute)."""
    import redis

    url = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=1)
        client.flushdb()
    except (redis.RedisError, OSError, ValueError):
        yield env, False
        return
    try:
        yield {**env, "REDIS_URL": url}, True
    finally:
        client.flushdb()     # the queued recomputes: no worker here takes them


def bench_ingest_floor(env: dict, results: dict, cache: Path) -> None:
    """BENCH_FLOOR_GPUS=136 BENCH_FLOOR_DAYS=3 BENCH_FLOOR_ROUNDS=3 (the round of the median ratio is kept)."""
    from apps.simulator.builders import build_fleet
    from apps.simulator.promserver import prepare_tsdb, serve_scenario

    gpus = int(os.environ.get("BENCH_FLOOR_GPUS", 136))
    days = int(os.environ.get("BENCH_FLOOR_DAYS", 3))
    rounds = int(os.environ.get("BENCH_FLOOR_ROUNDS", 3))
    start_ts = int(datetime(2026, 9, 1, tzinfo=timezone.utc).timestamp())
    scenario = build_fleet(gpus=gpus, mig_share=0.15, hours=24 * days, interval_seconds=60, seed=11,
                           name=f"bench{gpus}", start=start_ts)
    t = time.perf_counter()
    prepare_tsdb(scenario, cache)
    print(f"TSDB of {gpus} GPUs ({len(scenario.devices)} devices), {days} d at 60 s ready "
          f"({time.perf_counter() - t:.1f} s)", flush=True)
    lo = datetime.fromtimestamp(scenario.start, tz=timezone.utc)
    hi = lo + timedelta(days=days)
    span = ["--url", "", "--start", lo.isoformat(), "--end", hi.isoformat()]
    measured = []
    with serve_scenario(scenario, cache) as prom, as_deployed(env) as (deployed, broker):
        span[1] = prom.url
        _child(["rawfloor", *span], env)   # warm Prometheus' page cache
        for r in range(rounds):
            floor, _ = _child(["rawfloor", *span], env)
            process = manage_ingest(f"floor-{r}", prom.url, lo, hi, deployed)
            step, _ = _child(["steps", "--cluster", f"steps-{r}", *span], deployed)
            print(f"  round {r + 1}: single raw fetch {floor['wall_seconds']} s, manage.py ingest {process:.2f} s "
                  f"({process / floor['wall_seconds']:.2f}×), instrumented {step['wall_seconds']} s", flush=True)
            measured.append((floor, process, step))
        # for the record: the same single fetch with gzipped answers (ingest's transport before
        # PROMETHEUS_COMPRESSION: docs/performance.md, "Answers uncompressed"), and the ingest
        # with no broker (the demo's: it runs the month's recompute itself)
        gzipped, _ = _child(["rawfloor", *span], {**env, "PROMETHEUS_COMPRESSION": "true"})
        no_broker = manage_ingest("floor-no-broker", prom.url, lo, hi, {**env, "REDIS_URL": ""})
    # the round of the median ratio: one round moves by ±0.15 on this kind of host, the floor
    # as much as the ingest (docs/performance.md, "make bench")
    measured.sort(key=lambda m: m[1] / m[0]["wall_seconds"])
    floor, process, step = measured[len(measured) // 2]
    ratio = round(process / floor["wall_seconds"], 3)
    all_ratios = [round(p / f["wall_seconds"], 3) for f, p, _ in measured]
    results["ingest_floor"] = {
        "gpus": gpus, "devices": len(scenario.devices), "days": days, "floor": floor,
        "process_seconds": round(process, 3), "ratio": ratio, "target": TARGET_RATIO, "steps": step,
        "floor_gzipped_seconds": gzipped["wall_seconds"], "broker": broker,
        "process_no_broker_seconds": round(no_broker, 3), "round_ratios": all_ratios,
    }
    print(f"  single raw fetch of the window: {floor['wall_seconds']} s (HTTP {floor['fetch_seconds']} s, "
          f"parse into arrays {floor['parse_seconds']} s; {floor['samples']:,} samples in {floor['series']:,} "
          f"series, {floor['answer_bytes'] / 1e6:.0f} MB)")
    print(f"  the round of the median ratio of {len(measured)} ({', '.join(f'{r}×' for r in all_ratios)}):")
    print(f"  manage.py ingest, whole process: {process:.2f} s = {ratio}× the single raw fetch "
          f"(target ≤ {TARGET_RATIO}×: {'met' if ratio <= TARGET_RATIO else 'MISSED'}); "
          f"{step['chunks']} chunks (the first of 1 h, fetched while the rest is planned, then {step['chunk_hours']} h); "
          + ("with a broker, as deployed: the month's recompute queued for the worker" if broker else
             "no broker reachable (BENCH_REDIS_URL): the month's recompute ran inside the ingest"))
    print(f"  (with no broker, as the demo runs it, the ingest process also recomputes the month's stored "
          f"answers: {no_broker:.2f} s = {no_broker / floor['wall_seconds']:.2f}×)")
    print(f"  (the same single fetch with gzipped answers: {gzipped['wall_seconds']} s; ingest takes answers "
          f"{'gzipped' if env.get('PROMETHEUS_COMPRESSION', '').lower() in ('1', 'true', 'yes', 'on') else 'plain'}, "
          f"as the floor above does)")
    print(f"  instrumented run, {step['wall_seconds']} s fork to exit; where its main thread went:")
    for name, s in step["critical_path"].items():
        print(f"    {s:7.2f} s  {name}")
    print("  CPU seconds of the instrumented run (steady under load, unlike the wall times above):")
    for name, s in step.get("cpu_seconds", {}).items():
        print(f"    {s:7.2f} s  {name}")
    print("  in the fetch threads (overlapping the above):")
    for name, s in step["fetch_threads"].items():
        print(f"    {s:7.2f} s  {name}")
    trig = step["triggers"]
    print(f"    {trig['seconds']:7.3f} s  answer-input triggers in Postgres ({trig['calls']} statement-level calls)",
          flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("rawfloor", "steps"))
    parser.add_argument("--cluster", default="bench-steps")
    parser.add_argument("--url", required=True)
    parser.add_argument("--start", required=True)
    parser.add_argument("--end", required=True)
    parser.add_argument("--t0", type=float, default=T_IMPORT)
    args = parser.parse_args(argv)
    start, end = datetime.fromisoformat(args.start), datetime.fromisoformat(args.end)
    if args.mode == "rawfloor":
        result = rawfloor(args.url, start, end)
    else:
        result = steps(args.cluster, args.url, start, end, args.t0)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
