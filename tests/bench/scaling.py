"""How the portal grows (issue 24, item 6): the same measurements at several fleet sizes.

`BENCH_SCALES=1000,2000,5000,10000 make bench` runs, for each size, one child process on a fresh
database (`<bench database>_scale`) seeded by apps/simulator/benchseed.py with a month of daily
rollups (namespaces = GPUs / 2, teams = GPUs / 40, 2 clusters), then times:
- ingest's database side for one hour of data: the hour's `UsageHour` rows of every device by
  COPY, the daily rebuild of that day and the commit (with the answer-input triggers), as one
  transaction the way `manage.py ingest` writes it; then, apart, the stored answers' recompute
  it queues on commit (a worker's job);
- rollup table sizes (rows and bytes with indexes);
- the first chargeback-by-namespace and usage-by-team reads after that hour;
- closing the month, cold;
- the overview, team and chargeback pages (p50 of a few views after a warm one).
The parent prints one table and writes docs/scaling.png (plotly, exported by kaleido).

    python -m tests.bench.scaling one --gpus N      (the child; prints one JSON line)
    python -m tests.bench.scaling plot              (draws the PNG again from bench-results.json)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parents[2]
PLOT = ROOT / "docs" / "scaling.png"
FIRST = date(2026, 10, 1)
TABLES = ("accounting_usagehour", "accounting_usageday")


def scales() -> list[int]:
    raw = os.environ.get("BENCH_SCALES", "").strip()
    return [int(s) for s in raw.split(",") if s.strip()] if raw else []


def _ms(fn) -> float:
    t = time.perf_counter()
    fn()
    return round((time.perf_counter() - t) * 1000.0, 1)


def one(gpus: int, days: int, repeats: int) -> dict:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuportal.settings")
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.test import Client, override_settings

    from apps.accounting.actions.periods import do_close_period
    from apps.accounting.usage.daily import rebuild_days
    from apps.accounting.stored.refresh import months_of, refresh_after_commit
    from apps.simulator.benchseed import seed_month

    call_command("migrate", verbosity=0)
    namespaces, teams = max(10, gpus // 2), max(5, gpus // 40)
    t = time.perf_counter()
    seeded = seed_month(FIRST, days, gpus, namespaces, teams)
    fleet = seeded.pop("fleet")
    seed_s = time.perf_counter() - t
    call_command("import_rates", str(ROOT / "apps/accounting/fixtures/rates.example.csv"), verbosity=0)
    user = User.objects.create_user("finance", password="bench")
    user.groups.add(Group.objects.get_or_create(name="finance")[0])
    client = Client()
    client.force_login(user)
    override_settings(STORAGES={"default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
                                "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}
                      ).enable()

    def get(path):
        def call():
            r = client.get(path, secure=True)
            assert r.status_code == 200, (path, r.status_code, r.content[:300])
        return call

    end = FIRST + timedelta(days=days)
    period = FIRST.strftime("%Y-%m")
    window = f"start={FIRST}&end={end}"
    reads = {"chargeback_by_namespace": f"/api/v1/chargeback/?period={period}&group_by=namespace",
             "usage_by_team": f"/api/v1/usage/?{window}&group_by=team"}
    for path in reads.values():
        get(path)()   # the month's answers stored, as a warm portal has them before the hour arrives

    # One hour of data, written as ingest writes it: rows by COPY, the day rebuilt, one commit.
    hour = datetime.combine(FIRST + timedelta(days=days - 1), datetime.min.time(), tzinfo=timezone.utc)
    with transaction.atomic():   # the hour before, untimed: the devices exist, as on a running portal
        fleet.seed_hour(hour - timedelta(hours=1))
    hour += timedelta(hours=1)
    t = time.perf_counter()
    with transaction.atomic():
        rows = fleet.seed_hour(hour)
        t_rows = time.perf_counter()
        for cluster in fleet.clusters:
            rebuild_days(cluster.pk, [hour.date()])
        refresh_after_commit(months_of(hour, hour + timedelta(hours=1)))
        # What the commit queues (the stored answers' recompute) is a worker's job: Celery runs
        # eagerly here, so it is taken off the commit and timed apart, as the worker would run it.
        queued = [func for _sids, func, _robust in connection.run_on_commit]
        connection.run_on_commit.clear()
        t_rebuild = time.perf_counter()
    ingest_hour_ms = round((time.perf_counter() - t) * 1000.0, 1)
    split_ms = {"rows": round((t_rows - t) * 1000.0, 1), "daily_rebuild": round((t_rebuild - t_rows) * 1000.0, 1),
                "commit": round((time.perf_counter() - t_rebuild) * 1000.0, 1)}
    recompute_ms = _ms(lambda: [func() for func in queued])
    first_read = {name: _ms(get(path)) for name, path in reads.items()}

    with connection.cursor() as cur:
        cur.execute("ANALYZE")
        sizes = {}
        for table in TABLES:
            cur.execute(f"SELECT count(*), pg_total_relation_size('{table}') FROM {table}")
            n, size = cur.fetchone()
            sizes[table] = {"rows": n, "mb": round(size / 2**20, 1)}

    pages = {}
    team = "team-001"
    for name, path in (("overview", f"/?{window}"), ("team", f"/teams/{team}/?{window}"),
                       ("chargeback", f"/chargeback/?period={period}")):
        call = get(path)
        call()
        samples = sorted(_ms(call) for _ in range(repeats))
        pages[name] = samples[len(samples) // 2]
    close_s = round(_ms(lambda: do_close_period(period, actor=user)) / 1000.0, 2)
    return {"gpus": gpus, "devices": sum(len(d) for d in fleet.devices), "namespaces": namespaces, "teams": teams,
            "days": days, "seed_seconds": round(seed_s, 1), "usage_day_rows": seeded["usage_day_rows"],
            "ingest_hour": {"rows": rows, "ms": ingest_hour_ms, "split_ms": split_ms},
            "recompute_after_hour_ms": recompute_ms, "first_read_ms": first_read,
            "tables": sizes, "pages_p50_ms": pages, "close_cold_seconds": close_s}


# ------------------------------------------------------------------ the parent's part of make bench

def _scale_url(bench_url: str) -> str:
    parts = urlparse(bench_url)
    return urlunparse(parts._replace(path=parts.path + "_scale"))


def bench_scaling(env: dict, results: dict, recreate_database) -> None:
    sizes = scales()
    days = int(os.environ.get("BENCH_SCALE_DAYS", 31))
    repeats = int(os.environ.get("BENCH_SCALE_REPEATS", 3))
    url = _scale_url(env["DATABASE_URL"])
    out = []
    for gpus in sizes:
        recreate_database(url)
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "tests.bench.scaling", "one", "--gpus", str(gpus),
                               "--days", str(days), "--repeats", str(repeats)],
                              cwd=ROOT, env={**env, "DATABASE_URL": url}, capture_output=True)
        if proc.returncode != 0:
            sys.exit(f"scaling step at {gpus} GPUs failed:\n{proc.stderr.decode()[-3000:]}")
        row = json.loads(proc.stdout.decode().strip().splitlines()[-1])
        row["step_seconds"] = round(time.perf_counter() - t, 1)
        out.append(row)
        t_ = row["tables"]
        print(f"  {gpus:>6,} GPUs ({row['devices']:,} devices, {row['namespaces']:,} namespaces): "
              f"hour of data {row['ingest_hour']['ms']:,.0f} ms ({row['ingest_hour']['rows']:,} rows; "
              f"{', '.join(f'{k} {v:,.0f}' for k, v in row['ingest_hour']['split_ms'].items())} ms), "
              f"recompute {row['recompute_after_hour_ms']:,.0f} ms, first read after it: chargeback by namespace {row['first_read_ms']['chargeback_by_namespace']:,.0f} ms, "
              f"usage by team {row['first_read_ms']['usage_by_team']:,.0f} ms; close (cold) {row['close_cold_seconds']} s; "
              f"pages p50 overview {row['pages_p50_ms']['overview']:,.0f} / team {row['pages_p50_ms']['team']:,.0f} / "
              f"chargeback {row['pages_p50_ms']['chargeback']:,.0f} ms; UsageDay {t_['accounting_usageday']['rows']:,} "
              f"rows {t_['accounting_usageday']['mb']} MB ({row['step_seconds']} s)", flush=True)
    results["scaling"] = out
    floor = results.get("ingest_floor")
    if floor is None and (ROOT / "bench-results.json").exists():   # BENCH_SKIP_FLOOR: the last run's
        floor = json.loads((ROOT / "bench-results.json").read_text()).get("ingest_floor")
        results["ingest_floor_of_last_run"] = floor
    if out:
        plot(out, floor)
        print(f"  wrote {PLOT.relative_to(ROOT)}", flush=True)


def plot(rows: list[dict], floor: dict | None = None) -> None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    x = [r["gpus"] for r in rows]
    fig = make_subplots(rows=2, cols=2, horizontal_spacing=0.1, vertical_spacing=0.16, subplot_titles=(
        "Ingest: one hour of data (s)", "First read after that hour (ms)",
        "Close a month, cold, and pages, p50 (s)", "Rollup tables with indexes (MB): a month, 2 hours"))

    def line(name, ys, row, col, dash=None):
        fig.add_trace(go.Scatter(x=x, y=ys, name=name, mode="lines+markers", line={"dash": dash}), row=row, col=col)

    line("hour of data written (measured)", [r["ingest_hour"]["ms"] / 1000 for r in rows], 1, 1)
    line("answers' recompute queued on commit (worker)", [r["recompute_after_hour_ms"] / 1000 for r in rows], 1, 1)
    if floor:
        # Prometheus' side (fetch, parse, roll-up) extrapolated linearly from the 136-GPU run.
        per_gpu_hour = floor["process_seconds"] / (floor["gpus"] * floor["days"] * 24)
        line("+ Prometheus side, extrapolated", [r["ingest_hour"]["ms"] / 1000 + per_gpu_hour * r["gpus"]
                                                 for r in rows], 1, 1, "dash")
    line("chargeback by namespace", [r["first_read_ms"]["chargeback_by_namespace"] for r in rows], 1, 2)
    line("usage by team", [r["first_read_ms"]["usage_by_team"] for r in rows], 1, 2)
    line("close, cold (s)", [r["close_cold_seconds"] for r in rows], 2, 1)
    for page in ("overview", "team", "chargeback"):
        line(f"{page} page (s)", [r["pages_p50_ms"][page] / 1000 for r in rows], 2, 1, "dot")
    for table in TABLES:
        line(table.replace("accounting_", ""), [r["tables"][table]["mb"] for r in rows], 2, 2)
    for i in (1, 2):
        for j in (1, 2):
            fig.update_xaxes(title_text="GPUs", tickvals=x, ticktext=[f"{g:,}" for g in x], row=i, col=j)
    fig.update_layout(width=1200, height=800, template="plotly_white", legend={"font": {"size": 11}},
                      title="gpuportal at growing fleets (make bench, BENCH_SCALES; 2 shared vCPUs)")
    fig.write_image(str(PLOT), width=1200, height=800)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("one", "plot"))
    parser.add_argument("--gpus", type=int)
    parser.add_argument("--days", type=int, default=31)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.mode == "plot":
        saved = json.loads((ROOT / "bench-results.json").read_text())
        plot(saved["scaling"], saved.get("ingest_floor") or saved.get("ingest_floor_of_last_run"))
        return
    result = one(args.gpus, args.days, args.repeats)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
