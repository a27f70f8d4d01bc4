"""`make bench`: ingest against the Prometheus floor, API and pages against the SQL floor.

Sizes (environment): BENCH_GPUS=1000 BENCH_DAYS=3 BENCH_INTERVAL=60 (the simulated cluster in a
real Prometheus, cached in .bench-cache/), BENCH_API_GPUS=10000 BENCH_API_NAMESPACES=5000
BENCH_API_TEAMS=250 BENCH_API_DAYS=31 (the seeded month), BENCH_REPEATS=10.
The API part also closes the month (cold, then prepared), reads it closed, reads the month after
it, and times the first read after an hour of ingest and after a rate edit (docs/performance.md).
BENCH_SKIP_INGEST=1 / BENCH_SKIP_FLOOR=1 / BENCH_SKIP_API=1 / BENCH_SKIP_LONG=1 /
BENCH_SKIP_DEMO_HEALTH=1 leave a part out. The parts: ingest here; ingest against the single raw
fetch in tests/bench/ingest_floor.py (BENCH_FLOOR_GPUS=136 BENCH_FLOOR_DAYS=3); the API and pages in
tests/bench/api.py; the longest idle and right-sizing calls at 10,000 GPUs in
tests/bench/long_reads.py (BENCH_LONG_GPUS=10000, BENCH_LONG_DAYS=14); a team lead's fleet health on the demo in tests/bench/demo_health.py; the
sweep over fleet sizes in tests/bench/scaling.py (BENCH_SCALES=1000,2000,5000,10000, off unless
set); what they share in tests/bench/common.py. Needs Postgres: the bench works in its own database
`<DATABASE_URL's name>_bench`, dropped and created at each run.
Writes bench-results.json: every figure with its baseline and their ratio.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from datetime import datetime, timedelta, timezone

from tests.bench.common import (CACHE, RESULTS, ROOT, TARGETS, bench_database_url, child_env, env_int, figure,
                                machine, measured, recreate_database)
from tests.bench.demo_health import targets as demo_health_targets
from tests.bench.long_reads import targets as long_reads_targets


def bench_ingest(url: str, results: dict) -> None:
    from apps.simulator.builders import build_fleet
    from apps.simulator.promserver import prepare_tsdb, serve_scenario

    gpus, days, interval = env_int("BENCH_GPUS", 1000), env_int("BENCH_DAYS", 3), env_int("BENCH_INTERVAL", 60)
    start_ts = int(datetime(2026, 9, 1, tzinfo=timezone.utc).timestamp())
    t = time.perf_counter()
    scenario = build_fleet(gpus=gpus, mig_share=0.15, hours=24 * days, interval_seconds=interval,
                           seed=11, name=f"bench{gpus}", start=start_ts)
    print(f"scenario: {gpus} GPUs, {len(scenario.devices)} devices, {days} d at {interval} s "
          f"({time.perf_counter() - t:.1f} s to build)", flush=True)
    t = time.perf_counter()
    prepare_tsdb(scenario, CACHE)
    print(f"TSDB ready in .bench-cache/ ({time.perf_counter() - t:.1f} s; cached for the next run)", flush=True)
    start = datetime.fromtimestamp(scenario.start, tz=timezone.utc)
    windows = {"1d": (start, start + timedelta(days=1)), f"{days}d": (start, start + timedelta(days=days))}
    env = child_env(url)
    with serve_scenario(scenario, CACHE) as prom:
        lo, hi = windows["1d"]
        measured(["floor", "--url", prom.url, "--start", lo.isoformat(), "--end", hi.isoformat()], env)  # warm
        steps = {}
        for label, (lo, hi) in windows.items():
            span = ["--url", prom.url, "--start", lo.isoformat(), "--end", hi.isoformat()]
            steps[f"floor_{label}"] = measured(["floor", *span], env)
            steps[f"ingest_{label}"] = measured(["ingest", "--cluster", f"fleet-{label}", *span], env)
            print(f"  {label}: floor {steps[f'floor_{label}']['wall_seconds']} s, "
                  f"ingest {steps[f'ingest_{label}']['wall_seconds']} s, "
                  f"RSS {steps[f'ingest_{label}']['peak_rss_mb']} MB", flush=True)
    full = f"{days}d"
    ing, flo = steps[f"ingest_{full}"], steps[f"floor_{full}"]
    results["ingest"] = {
        "gpus": gpus, "devices": len(scenario.devices), "days": days, "interval_seconds": interval,
        "samples_read": ing["samples_read"], "rows_written": ing["rows_written"],
        "answer_bytes": flo["answer_bytes"],
        "wall_seconds": figure(ing["wall_seconds"], flo["wall_seconds"], "s", TARGETS["ingest_ratio"],
                               "baseline: the same PromQL queries, same chunks and concurrency, answers read unparsed"),
        "peak_rss_mb": figure(ing["peak_rss_mb"], flo["peak_rss_mb"], "MB", TARGETS["peak_rss_mb"],
                              "baseline: the floor process's peak RSS"),
        "peak_rss_mb_1d": figure(steps["ingest_1d"]["peak_rss_mb"], steps["floor_1d"]["peak_rss_mb"], "MB"),
        "peak_rss_1d_vs_full": figure(ing["peak_rss_mb"], steps["ingest_1d"]["peak_rss_mb"], "MB",
                                      note=f"{full} window over the 1-day window: flat is ~1.0"),
        "wall_seconds_1d": figure(steps["ingest_1d"]["wall_seconds"], steps["floor_1d"]["wall_seconds"], "s"),
    }


# ------------------------------------------------------------------ API and pages


def check_targets(results: dict) -> list[str]:
    """One line per target: the figure, the target, met or missed by how much."""
    lines = []
    ing = results.get("ingest")
    if ing:
        checks = [("ingest wall / floor", ing["wall_seconds"]["ratio"], TARGETS["ingest_ratio"], "×"),
                  ("ingest peak RSS", ing["peak_rss_mb"]["value"], TARGETS["peak_rss_mb"], " MB"),
                  ("ingest peak RSS 3 d / 1 d", ing["peak_rss_1d_vs_full"]["ratio"], 1.1, "×")]
    else:
        checks = []
    api = results.get("api") or {}
    for part in ("open_month", "month_after_closed"):
        for name, fig in (api.get(part) or {}).items():
            checks.append((f"API {part} {name} p95 / SQL floor p95", fig["p95_ms"]["ratio"], TARGETS["api_p95_ratio"],
                           "×"))
    if "close_seconds" in api:
        checks.append(("closing a month", api["close_seconds"]["value"], TARGETS["close_seconds"], " s"))
        checks.append(("closing a month cold (nothing stored)", api["close_cold_seconds"]["value"],
                       TARGETS["close_seconds"], " s"))
    by_day = api.get("by_day") or {}
    if by_day:
        checks.append(("closing a month after an ingested hour (parts kept by the worker)",
                       by_day["close_after_worker_seconds"]["value"], TARGETS["close_seconds"], " s"))
        checks.append(("first read after an hour and the worker / SQL floor p95",
                       by_day["first_read_after_worker_ms"]["ratio"], TARGETS["api_p95_ratio"], "×"))
    for name, fig in (results.get("pages") or {}).items():
        checks.append((f"page {name} p95 / its API call p95", fig["p95_ms"]["ratio"], TARGETS["page_api_ratio"], "×"))
    checks.extend(demo_health_targets(results))
    checks.extend(long_reads_targets(results))
    for name, value, target, unit in checks:
        if value is None:       # not answered (a long read cut at its statement timeout)
            lines.append(f"target {name}: no answer (≤ {target}{unit}) MISSED")
            continue
        verdict = "met" if value <= target else f"MISSED by {value / target:.1f}×"
        lines.append(f"target {name}: {value}{unit} (≤ {target}{unit}) {verdict}")
    return lines


def main() -> None:
    warnings.filterwarnings("ignore", message="No directory at")
    url = bench_database_url()
    recreate_database(url)
    os.environ.update(child_env(url))
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    results = {"machine": machine(), "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    if os.environ.get("BENCH_SKIP_INGEST") != "1":
        print("== ingest (real Prometheus) ==", flush=True)
        bench_ingest(url, results)
    if os.environ.get("BENCH_SKIP_FLOOR") != "1":
        from tests.bench.ingest_floor import bench_ingest_floor

        print("== ingest against the single raw fetch (real Prometheus, issue 24) ==", flush=True)
        bench_ingest_floor(child_env(url), results, CACHE)
    if os.environ.get("BENCH_SKIP_API") != "1":
        from tests.bench.api import bench_api

        print("== API and pages (seeded month) ==", flush=True)
        bench_api(results)
    if os.environ.get("BENCH_SKIP_LONG") != "1":
        from tests.bench.long_reads import bench_long_reads

        print("== the longest idle and right-sizing calls (seeded hourly rows) ==", flush=True)
        bench_long_reads(results)
    if os.environ.get("BENCH_SKIP_DEMO_HEALTH") != "1":
        from tests.bench.demo_health import bench_demo_health

        print("== a team lead's fleet health on the demo (SQLite) ==", flush=True)
        bench_demo_health(results)
    from tests.bench.scaling import bench_scaling, scales

    if scales():
        print(f"== how it grows: {', '.join(f'{g:,}' for g in scales())} GPUs (BENCH_SCALES) ==", flush=True)
        bench_scaling(child_env(url), results, recreate_database)
    results["targets"] = check_targets(results)
    for line in results["targets"]:
        print(line)
    results["bench_seconds"] = round(time.perf_counter() - started, 1)
    RESULTS.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(f"wrote {RESULTS.name} ({results['bench_seconds']} s)")


if __name__ == "__main__":
    main()
