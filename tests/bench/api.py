"""`make bench`, API and pages: a seeded 10,000-GPU month read through the API and the pages
against the SQL that answers the same question, the close, the month after it, the first read
after a change, the running month (docs/performance.md, "make bench", steps 2–4)."""
from __future__ import annotations

import time
from contextlib import contextmanager
from datetime import date, datetime, timedelta, timezone

from tests.bench.common import ROOT, TARGETS, alternated, env_int, figure, fleet_size, percentile, ratio, timed


FLOOR_BY_NAMESPACE = ("SELECT namespace, SUM(gpu_seconds), SUM(used_gpu_seconds), SUM(idle_gpu_seconds) "
                      "FROM accounting_usageday WHERE day >= %s AND day < %s AND namespace <> '' GROUP BY namespace")


FLOOR_BY_TEAM = ("SELECT COALESCE(NULLIF(n.label_team, ''), 'unassigned'), SUM(d.gpu_seconds), "
                 "SUM(d.used_gpu_seconds), SUM(d.idle_gpu_seconds) FROM accounting_usageday d "
                 "JOIN teams_namespace n ON n.cluster_id = d.cluster_id AND n.name = d.namespace "
                 "WHERE d.day >= %s AND d.day < %s AND d.namespace <> '' GROUP BY 1")


FLOOR_FOCUS = ("SELECT d.cluster_id, d.namespace, d.gpu_model, d.mig_profile, d.day, SUM(d.gpu_seconds), "
               "SUM(d.used_gpu_seconds) FROM accounting_usageday d WHERE d.day >= %s AND d.day < %s "
               "GROUP BY 1, 2, 3, 4, 5")


class Api:
    """Timed calls as a logged-in finance user (Django test client, DEBUG off), and the raw SQL
    floor: the same question answered by one aggregate over the daily rollups."""

    def __init__(self, client, repeats):
        self.client, self.repeats = client, repeats

    def get(self, path):
        def call():
            r = self.client.get(path, secure=True)
            assert r.status_code == 200, (path, r.status_code, b"" if r.streaming else r.content[:300])
            if r.streaming:     # a streamed export: timed to its last byte
                for _ in r.streaming_content:
                    pass
        return call

    @staticmethod
    def sql(query, params):
        from django.db import connection

        def call():
            with connection.cursor() as cur:
                cur.execute(query, params)
                cur.fetchall()
        return call

    def once_ms(self, fn):
        t = time.perf_counter()
        fn()
        return round((time.perf_counter() - t) * 1000.0, 1)

    def month(self, first: date, end: date, label: str) -> dict:
        """Usage and chargeback of a month by team and by namespace: the first call (computes and
        stores the month's answer when it is not stored yet) and p50 / p95 of the calls after it,
        against the SQL floor over the same days."""
        out = {}
        period = first.strftime("%Y-%m")
        for group_by, floor_sql in (("team", FLOOR_BY_TEAM), ("namespace", FLOOR_BY_NAMESPACE)):
            base = timed(self.sql(floor_sql, [first, end]), self.repeats)
            for name, path in (("usage", f"/api/v1/usage/?start={first}&end={end}&group_by={group_by}"),
                               ("chargeback", f"/api/v1/chargeback/?period={period}&group_by={group_by}")):
                first_ms = self.once_ms(self.get(path))
                took = timed(self.get(path), self.repeats)
                out[f"{name}_by_{group_by}"] = {
                    "first_ms": figure(first_ms, base["p50"], "ms", note="computes and stores the answer if needed"),
                    "p50_ms": figure(took["p50"], base["p50"], "ms"),
                    "p95_ms": figure(took["p95"], base["p95"], "ms", TARGETS["api_p95_ratio"],
                                     "target: the ratio to the SQL floor's p95"),
                }
                print(f"  {label}: /api/v1/{name}/ by {group_by}: first {first_ms} ms, p50 {took['p50']} ms, "
                      f"p95 {took['p95']} ms (SQL floor p50 {base['p50']} ms, p95 {base['p95']} ms)", flush=True)
        return out


@contextmanager
def worker_after():
    """Celery runs eagerly in the bench: a write's on-commit tasks (the month's recompute, a close's
    statement e-mails) would run inside the write being timed. A worker runs them after the
    commit; so does this, once the block is over, in the order they were queued."""
    from celery.app.task import Task

    queued, original = [], Task.apply_async

    def later(task, args=None, kwargs=None, **options):
        queued.append((task, args or (), kwargs or {}))

    Task.apply_async = later
    try:
        yield
    finally:
        Task.apply_async = original
        for task, args, kwargs in queued:
            task.apply(args, kwargs)


def record_history(fleet, first: date) -> None:
    """The seeded rollups are written without an ingest run; a month before the fleet's history
    cannot be closed, so record the run ingest would have left (one per cluster)."""
    from apps.ingest.models import IngestRun

    start = datetime.combine(first, datetime.min.time(), tzinfo=timezone.utc)
    for cluster in fleet.clusters:
        IngestRun.objects.create(cluster=cluster, window_start=start, window_end=start + timedelta(hours=1),
                                 status=IngestRun.Status.SUCCEEDED)


def focus_export(api: "Api", period: str, first: date, end: date) -> dict:
    """The FOCUS export of a month, streamed (docs/performance.md, "Exports stream"): time to its
    first byte and to its last, and the peak Python memory while it is made and sent (tracemalloc,
    in a run of its own: it slows what it watches), against the SQL floor — one aggregate over
    the daily rollups at the rows' grain (cluster × namespace × model × day) — and against the
    same rows made at once and written as one text (how the export was built before it streamed)."""
    import tracemalloc

    from apps.accounting.ledger.daily_money import focus_month
    from apps.reports.api.focus import issuer
    from apps.reports.focus_csv import columns, focus_rows
    from apps.web.csv import rows_to_csv

    path = f"/api/v1/chargeback/focus/?period={period}"

    def export():
        t = time.perf_counter()
        r = api.client.get(path, secure=True)
        assert r.status_code == 200 and r.streaming, (path, r.status_code)
        chunks = iter(r.streaming_content)
        size = len(next(chunks))
        first_ms = (time.perf_counter() - t) * 1000.0
        rows = 0
        for chunk in chunks:
            size += len(chunk)
            rows += chunk.count(b"\r\n")
        return first_ms, (time.perf_counter() - t) * 1000.0, size, rows

    export()    # warm
    runs = [export() for _ in range(max(3, api.repeats // 3))]
    first_ms = round(percentile([r[0] for r in runs], 0.5), 1)
    total_ms = round(percentile([r[1] for r in runs], 0.5), 1)
    size, rows = runs[0][2], runs[0][3]
    base = timed(api.sql(FLOOR_FOCUS, [first, end]), api.repeats)

    def peak_mb(fn) -> float:
        tracemalloc.start()
        try:
            fn()
            return round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
        finally:
            tracemalloc.stop()

    streamed_mb = peak_mb(export)
    at_once_mb = peak_mb(lambda: rows_to_csv(focus_rows(focus_month(period), None, issuer()), columns()).encode())
    print(f"  FOCUS export {period}: {rows:,} rows, {size / 2**20:.1f} MB; first byte {first_ms} ms, last byte "
          f"{total_ms} ms (SQL floor p50 {base['p50']} ms); peak memory {streamed_mb} MB streamed, "
          f"{at_once_mb} MB made at once", flush=True)
    return {"rows": rows, "bytes": size,
            "first_byte_ms": figure(first_ms, base["p50"], "ms", note="the header, sent once the month is read"),
            "last_byte_ms": figure(total_ms, base["p50"], "ms", note="baseline: the SQL floor at the rows' grain"),
            "peak_memory_mb": figure(streamed_mb, at_once_mb, "MB",
                                     note="baseline: the same rows made at once and written as one text")}


def bench_api(results: dict) -> None:
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.test import Client

    from apps.accounting.actions.periods import do_close_period, do_reopen_period
    from apps.accounting.actions.rates import do_save_rate
    from apps.accounting.ledger.answer import prepare_month
    from apps.accounting.models import Rate
    from apps.simulator.benchseed import seed_month

    gpus, namespaces = env_int("BENCH_API_GPUS", 10000), env_int("BENCH_API_NAMESPACES", 5000)
    teams, days, repeats = env_int("BENCH_API_TEAMS", 250), env_int("BENCH_API_DAYS", 31), env_int("BENCH_REPEATS", 10)
    first = date(2026, 10, 1)
    t = time.perf_counter()
    seeded = seed_month(first, days, gpus, namespaces, teams)
    fleet = seeded.pop("fleet")
    print(f"seeded {seeded['usage_day_rows']:,} daily rollup rows ({gpus} GPUs, {namespaces} namespaces, "
          f"{days} d) in {time.perf_counter() - t:.1f} s", flush=True)
    call_command("import_rates", str(ROOT / "apps/accounting/fixtures/rates.example.csv"), verbosity=0)
    user = User.objects.create_user("finance", password="bench")
    user.groups.add(Group.objects.get_or_create(name="finance")[0])
    client = Client()
    client.force_login(user)
    api = Api(client, repeats)
    end = first + timedelta(days=days)
    period = first.strftime("%Y-%m")
    out = {"seeded": seeded, "repeats": repeats}
    out["open_month"] = api.month(first, end, period)

    pages = {}
    # DEBUG is off (as in production) but collectstatic has not run: plain static URLs.
    from django.test import override_settings

    plain = override_settings(STORAGES={"default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
                                        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}})
    plain.enable()
    # Every page over the seeded month, against the API call answering its question (the
    # explorer has none: its own CSV of the same rows). Each is warmed once first, as the API is.
    pages.update(time_pages(api, page_questions(first, end, period), repeats))

    out["focus_export"] = focus_export(api, period, first, end)

    # The month after a closed one: the first half of November rolled up, October closed.
    nov = date(2026, 11, 1)
    nov_days = min(15, days)
    t = time.perf_counter()
    fleet.seed_days(nov, nov_days)
    print(f"seeded {nov_days} days of {nov:%Y-%m} in {time.perf_counter() - t:.1f} s", flush=True)
    # Closing cold (nothing stored: every part computed in the close), then, after a reopen,
    # with the month's answer prepared as the beat task keeps it (apps/accounting/tasks.py).
    admin = User.objects.create_superuser("bench-admin", password="bench")
    record_history(fleet, first)
    # Cold: the reads above stored the month's parts; dropped, the close finds nothing stored.
    from apps.accounting.models import MonthAnswer

    MonthAnswer.objects.filter(period=period).delete()
    with worker_after():
        cold_s = round(api.once_ms(lambda: do_close_period(period, actor=user)) / 1000.0, 2)
    with worker_after():
        reopen_s = round(api.once_ms(lambda: do_reopen_period(period, admin)) / 1000.0, 2)
    prepare_s = round(api.once_ms(lambda: prepare_month(period)) / 1000.0, 2)
    with worker_after():
        close_s = round(api.once_ms(lambda: do_close_period(period, actor=user)) / 1000.0, 2)
    out["close_seconds"] = figure(close_s, None, "s", TARGETS["close_seconds"],
                                  "the month's answer prepared (stored and current) before the close")
    out["close_cold_seconds"] = figure(cold_s, None, "s", TARGETS["close_seconds"],
                                       "nothing stored: the database freezes the month (actions.freeze_month)")
    out["prepare_seconds"] = figure(prepare_s, None, "s", note="prepare_month: lines, span and per-day cells")
    out["reopen_seconds"] = figure(reopen_s, None, "s")
    print(f"  closing {period}: {close_s} s prepared ({prepare_s} s to prepare), {cold_s} s cold; "
          f"reopening {reopen_s} s", flush=True)
    closed = {}
    for group_by in ("team", "namespace"):
        took = timed(api.get(f"/api/v1/chargeback/?period={period}&group_by={group_by}"), repeats)
        closed[f"chargeback_by_{group_by}"] = {"p50_ms": figure(took["p50"], None, "ms"),
                                               "p95_ms": figure(took["p95"], None, "ms")}
        print(f"  closed {period}: /api/v1/chargeback/ by {group_by}: p50 {took['p50']} ms, p95 {took['p95']} ms",
              flush=True)
    out["closed_month"] = closed
    nov_period = nov.strftime("%Y-%m")
    nov_end = date(2026, 12, 1)
    out["month_after_closed"] = api.month(nov, nov_end, f"{nov_period} after closed {period}")

    # A read right after a change: one hour of ingest (every device), then a rate edit.
    after = {}
    hour = datetime(2026, 11, 1 + nov_days, tzinfo=timezone.utc)
    write_ms = api.once_ms(lambda: fleet.seed_hour(hour))
    for name, path in (("chargeback", f"/api/v1/chargeback/?period={nov_period}&group_by=team"),
                       ("usage", f"/api/v1/usage/?start={nov}&end={nov_end}&group_by=team")):
        after[f"after_ingest_hour_{name}_by_team_ms"] = figure(api.once_ms(api.get(path)), None, "ms",
                                                               note="the first read after the hour is written")
    rate = Rate.objects.order_by("pk").first()
    rate.hourly_rate = rate.hourly_rate + 1
    edit_ms = api.once_ms(lambda: do_save_rate(user, rate))
    for name, path in (("chargeback", f"/api/v1/chargeback/?period={nov_period}&group_by=team"),
                       ("usage", f"/api/v1/usage/?start={nov}&end={nov_end}&group_by=team")):
        after[f"after_rate_edit_{name}_by_team_ms"] = figure(api.once_ms(api.get(path)), None, "ms",
                                                             note="the first read after the edit")
    after["ingest_hour_write_ms"] = figure(write_ms, None, "ms", note=f"{fleet_size(fleet)} hourly rows by COPY")
    after["rate_edit_write_ms"] = figure(edit_ms, None, "ms")
    for k, v in after.items():
        print(f"  {k}: {v['value']} ms", flush=True)
    out["after_change"] = after
    out["by_day"] = bench_day_parts(api, fleet, user, admin, period, nov, nov_days)
    out["running_month"] = bench_running_month(api, nov, nov_days, pages)
    # The same pages once October is closed with late data (an hour ingested into it after a
    # close, above), as they stand for most of a month: the team page's "Last month" then shows
    # the hours that arrived after the close, and Idle GPUs reads that hour's rows.
    closed_pages = time_pages(api, [q for q in page_questions(first, end, period) if q[0] != "explorer"], repeats)
    pages.update({f"{name}_closed": fig for name, fig in closed_pages.items()})
    results["api"] = out
    results["pages"] = pages


def page_questions(first: date, end: date, period: str) -> list[tuple[str, str, str]]:
    """(name, page, the API call answering its question) of every page over the seeded month (the
    explorer has none: its own CSV of the same rows)."""
    window = f"start={first}&end={end}"
    team = "team-001"
    return [("overview", f"/?{window}", f"/api/v1/usage/?{window}&group_by=team"),
            ("team", f"/teams/{team}/?{window}", f"/api/v1/usage/?{window}&group_by=namespace&team={team}"),
            ("idle", f"/idle/?{window}", f"/api/v1/idle/?{window}"),
            ("explorer", f"/explore/?{window}&grain=day", f"/explore/?{window}&grain=day&format=csv"),
            ("chargeback", f"/chargeback/?period={period}", f"/api/v1/chargeback/?period={period}")]


def time_pages(api, questions, repeats: int) -> dict:
    """p50 / p95 of each page against its API call, called in turn, each warmed once first."""
    pages = {}
    for name, path, api_path in questions:
        page_call, api_call = api.get(path), api.get(api_path)
        page_call(), api_call()
        # the explorer's day grain and its CSV take seconds each: fewer rounds of them
        took, base = alternated(page_call, api_call, max(5, repeats // 2) if name == "explorer" else max(10, repeats))
        pages[name] = {"p50_ms": figure(took["p50"], base["p50"], "ms"),
                       "p95_ms": figure(took["p95"], base["p95"], "ms", TARGETS["page_api_ratio"],
                                        f"baseline: {api_path}")}
        print(f"  page {path}: p50 {took['p50']} ms, p95 {took['p95']} ms "
              f"(its API call p95 {base['p95']} ms: {api_path})", flush=True)
    return pages


def bench_day_parts(api, fleet, user, admin, period: str, nov: date, nov_days: int) -> dict:
    """Per-day parts (docs/performance.md, "Per-day parts"): an hour of ingest, then what the
    worker's on-commit task recomputes (its day, not the month) and the first read after it;
    then the close as it happens in production: October reopened, an hour ingested into its
    last day, the worker's recompute, and the close reading the stored parts it freezes."""
    from apps.accounting.stored.provenance import recomputed
    from apps.accounting.actions.periods import do_close_period, do_reopen_period
    from apps.accounting.tasks import prepare_month_answers

    nov_period, out = nov.strftime("%Y-%m"), {}

    def worker(p):
        before = recomputed.copy()
        ms = api.once_ms(lambda: prepare_month_answers([p]))
        days = sorted(part for (q, part), n in (recomputed - before).items() if q == p and part.startswith("day"))
        return ms, days

    write_ms = api.once_ms(lambda: fleet.seed_hour(datetime(2026, 11, 1 + nov_days, 1, tzinfo=timezone.utc)))
    task_ms, days = worker(nov_period)
    floor = timed(api.sql(FLOOR_BY_TEAM, [nov, date(2026, 12, 1)]), api.repeats)
    read_ms = api.once_ms(api.get(f"/api/v1/chargeback/?period={nov_period}&group_by=team"))
    out["ingest_hour_worker_ms"] = figure(task_ms, None, "ms", note=f"day parts recomputed: {', '.join(days)}")
    out["first_read_after_worker_ms"] = figure(read_ms, floor["p95"], "ms", TARGETS["api_p95_ratio"],
                                               "chargeback by team; baseline: the SQL floor's p95")
    print(f"  an hour into {nov_period} ({write_ms} ms to write): the worker recomputed {len(days)} day part(s) "
          f"{days} in {task_ms} ms; first chargeback read after it {read_ms} ms (SQL floor p95 {floor['p95']} ms, "
          f"target ≤ {TARGETS['api_p95_ratio']}×)", flush=True)

    with worker_after():
        do_reopen_period(period, admin)
    api.once_ms(lambda: fleet.seed_hour(datetime(2026, 10, 31, 23, tzinfo=timezone.utc)))
    task_ms, days = worker(period)
    with worker_after():
        close_ms = api.once_ms(lambda: do_close_period(period, actor=user))
    out["close_after_worker_seconds"] = figure(round(close_ms / 1000.0, 2), None, "s", TARGETS["close_seconds"],
                                               "an hour ingested into the month, the worker's recompute, then the close")
    out["close_worker_recompute_ms"] = figure(task_ms, None, "ms", note=f"day parts recomputed: {', '.join(days)}")
    print(f"  closing {period} after an hour ingested into it and the worker's recompute ({len(days)} day part(s) "
          f"{days}, {task_ms} ms): {close_ms / 1000.0:.2f} s (target ≤ {TARGETS['close_seconds']} s)", flush=True)
    return out


def bench_running_month(api, nov: date, nov_days: int, pages: dict) -> dict:
    """The running month's chargeback page, with each team's forecast beside its cost
    (docs/performance.md, "The running month's forecast, stored"). The seeded November is made
    the running month by pinning "now" (`django.utils.timezone.now`, in this process only) at
    noon of the day after its seeded days, with every cluster's watermark where the seeded hours
    end, as ingest leaves it. Timed: the forecast computed live (what every view did before), the
    first view with no worker (it computes and stores it), the worker's task after the watermark
    moves, then p50 / p95 of the page against `/api/v1/chargeback/` of the month (target ≤ 2×)."""
    from unittest import mock

    from apps.accounting.forecast import stored as forecast_store
    from apps.accounting.forecast.teams import month_forecast
    from apps.accounting.tasks import prepare_month_answers
    from apps.clusters.models import Cluster

    period, out = nov.strftime("%Y-%m"), {}
    day = datetime(2026, 11, 1 + nov_days, tzinfo=timezone.utc)     # the seeded hours: 00:00 and 01:00 of it
    clock = day + timedelta(hours=12)
    page, api_path = f"/chargeback/?period={period}", f"/api/v1/chargeback/?period={period}"
    repeats = max(5, api.repeats // 2)
    with mock.patch("django.utils.timezone.now", lambda: clock):
        Cluster.objects.update(ingested_until=day + timedelta(hours=1))
        live_ms = api.once_ms(lambda: month_forecast(period))
        first_ms = api.once_ms(api.get(page))
        Cluster.objects.update(ingested_until=day + timedelta(hours=2))      # the next hour's run: stale
        task_ms = api.once_ms(lambda: prepare_month_answers([period]))
        worker_forecast_ms = round(forecast_store._last_ms.get(period, 0.0), 1)
        page_call, api_call, forecast_call = api.get(page), api.get(api_path), api.get(f"/api/v1/forecast/?period={period}")
        page_call(), api_call()
        took, base = alternated(page_call, api_call, max(10, repeats))
        forecast = timed(forecast_call, repeats)
        # Before: every view computed the forecast live (main until this change), measured here
        # by putting the live function back under the page.
        with mock.patch("apps.reports.views.chargeback.stored_forecast",
                        lambda p, teams=None: month_forecast(p, teams=teams)):
            before = timed(page_call, 3)
    out["page_before_p50_ms"] = figure(before["p50"], base["p50"], "ms",
                                       note="the page computing the forecast on every view (before this change)")
    pages["chargeback_running"] = {"p50_ms": figure(took["p50"], base["p50"], "ms"),
                                   "p95_ms": figure(took["p95"], base["p95"], "ms", TARGETS["page_api_ratio"],
                                                    f"baseline: {api_path}; now pinned at {clock.isoformat()}")}
    out["forecast_live_ms"] = figure(live_ms, None, "ms", note="runrate.month_forecast of every team, computed live")
    out["first_view_no_worker_ms"] = figure(first_ms, None, "ms", note="the page computes and stores the forecast")
    out["worker_task_ms"] = figure(task_ms, None, "ms", note=f"of which the forecast {worker_forecast_ms} ms")
    out["forecast_api_p50_ms"] = figure(forecast["p50"], None, "ms")
    out["forecast_api_p95_ms"] = figure(forecast["p95"], None, "ms")
    print(f"  running month {period} (now pinned at {clock:%Y-%m-%d %H:%M} UTC): forecast computed live "
          f"{live_ms} ms; first page view with no worker {first_ms} ms; the worker's task after the watermark "
          f"moved {task_ms} ms (forecast {worker_forecast_ms} ms)", flush=True)
    print(f"  page {page}: p50 {took['p50']} ms, p95 {took['p95']} ms (its API call p95 {base['p95']} ms: "
          f"{api_path}; target ≤ {TARGETS['page_api_ratio']}×: {ratio(took['p95'], base['p95'])}×); "
          f"/api/v1/forecast/ p50 {forecast['p50']} ms, p95 {forecast['p95']} ms; the page computing it live "
          f"on every view (before) p50 {before['p50']} ms", flush=True)
    return out
