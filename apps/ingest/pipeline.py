"""Ingest a window of a cluster: fetch chunk by chunk, roll up, replace the hours' rows.

Idempotence comes from two choices: the window is widened to whole hours, and every hour it
touches is rewritten whole (delete + insert on the rollups' unique keys) from all samples
Prometheus holds for it. Re-running a window, or an overlapping one, therefore leaves the same
rows. The whole run is one transaction: a failure anywhere leaves every stored figure as it was.
"""
from __future__ import annotations

import contextlib
import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import Callable

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.utils import timezone as djtz

from apps.accounting.db.bulk import collector_paused
from apps.accounting.stored import months_of, refresh_after_commit
from apps.accounting.calendar.zone import days_touched
from apps.accounting.usage.daily import rebuild_days
from apps.clusters.models import Cluster
from apps.clusters.models import Device

from . import rollup
from .errors import IngestBusy, IngestError
from .locks import cluster_lock
from .models import COUNTED_TWICE, IngestRun
from .prometheus import PrometheusClient
from .prometheus_http import PrometheusError
from .queries import MetricNames
from .writer import ChunkData, _Writer, from_unix

__all__ = ["ingest", "IngestError", "IngestBusy", "cluster_lock", "ChunkData", "floor_hour", "ceil_hour"]
log = logging.getLogger(__name__)
HOUR = rollup.HOUR_SECONDS


Fetcher = Callable[[rollup.Window], ChunkData]


def floor_hour(dt: datetime) -> datetime:
    return dt.replace(minute=0, second=0, microsecond=0)


def ceil_hour(dt: datetime) -> datetime:
    floored = floor_hour(dt)
    return floored if floored == dt else floored + timedelta(hours=1)


def to_unix(dt: datetime) -> int:
    return int(dt.timestamp())


def _close_abandoned_runs(cluster: Cluster, current: IngestRun) -> None:
    """Runs still marked running over hours whose day locks we now hold died with their worker."""
    IngestRun.objects.filter(
        cluster=cluster, status=IngestRun.Status.RUNNING,
        window_start__lt=current.window_end, window_end__gt=current.window_start,
    ).exclude(pk=current.pk).update(
        status=IngestRun.Status.FAILED, finished_at=djtz.now(), rows_written=0,
        error="interrupted: its worker stopped before the run finished (nothing it wrote was kept)",
    )


# ------------------------------------------------------------------ configuration

def metric_names(cluster: Cluster) -> MetricNames:
    return MetricNames(**{role: cluster.metric(role)[0] for role in MetricNames.__dataclass_fields__})


def prometheus_fetcher(client: PrometheusClient, names: MetricNames, temperature_scale: float = 1.0) -> Fetcher:
    def fetch(window: rollup.Window) -> ChunkData:
        n = settings.INGEST_QUERY_CONCURRENCY
        around = rollup.LOOKAROUND_SECONDS
        return ChunkData(dcgm=client.dcgm(names, window.start, window.end, n,
                                          aggregate=settings.INGEST_PROMETHEUS_AGGREGATES,
                                          temperature_scale=temperature_scale, lookaround=around),
                         kube_state=client.kube_state(window.start, window.end, n,
                                                      pending_requests_only=settings.INGEST_PROMETHEUS_AGGREGATES,
                                                      lookaround=around))
    return fetch


# ------------------------------------------------------------------ the run

def ingest(cluster: Cluster, start: datetime, end: datetime, *, trigger: str = "command",
           fetcher: Fetcher | None = None, progress: Callable[[int, int], None] | None = None,
           now: datetime | None = None, chunk_hours: int | None = None) -> IngestRun:
    """Ingest [start, end) widened to whole hours. Raises IngestError; always leaves an IngestRun."""
    now = now or djtz.now()
    if start.tzinfo is None or end.tzinfo is None:
        raise IngestError("start and end must carry a time zone")
    if end <= start:
        raise IngestError(f"the window is empty: end {end.isoformat()} is not after start {start.isoformat()}")
    if start >= now:
        raise IngestError(f"the window starts in the future ({start.isoformat()}; now is {now:%Y-%m-%dT%H:%M:%SZ})")
    window_start = floor_hour(start.astimezone(timezone.utc))
    window_end = ceil_hour(min(end, now).astimezone(timezone.utc))
    chunk_hours = chunk_hours or settings.INGEST_CHUNK_HOURS    # 0: sized from Prometheus below
    chunks = _chunks(window_start, window_end, chunk_hours or DEFAULT_CHUNK_HOURS)
    run = IngestRun.objects.create(cluster=cluster, window_start=window_start, window_end=window_end,
                                   trigger=trigger, chunks_total=len(chunks))
    started = time.monotonic()
    try:
        days = days_touched(window_start, window_end)
        with cluster_lock(cluster.pk, days=days) as lock, collector_paused(), \
                ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-prefetch") as pool:
            _close_abandoned_runs(cluster, run)
            holds_from = None
            first = None
            notes: list[str] = []   # what planning the run had to fall back on, for its log
            if fetcher is None:
                client = PrometheusClient.for_cluster(cluster, settings.PROMETHEUS_TIMEOUT_SECONDS)
                client.check()
                holds_from = client.lowest_timestamp()
                names = _names_seen(cluster, client, window_start, window_end, notes)
                fetcher = prometheus_fetcher(client, names, cluster.metric("temperature")[1])
                if not chunk_hours:
                    # the first hour is fetched while Prometheus is asked how long the chunks after it can be
                    head = first_chunk(window_start, window_end)
                    if settings.INGEST_PREFETCH:
                        first = pool.submit(fetcher, head)
                    chunks = [head, *chunk_plan(client, names, from_unix(head.end), window_end, notes)]
                    run.chunks_total = len(chunks)
                    run.save(update_fields=["chunks_total"])
            with transaction.atomic():
                writer = _Writer(cluster, run, holds_from)
                writer.warnings.extend(notes)
                for i, (window, data) in enumerate(prefetched(fetcher, chunks, pool, first), 1):
                    writer.write_chunk(window, data)
                    del data
                    lock.renew()
                    run.chunks_done = i
                    if progress:
                        progress(i, len(chunks))
                writer.finish()
                writer.warnings.extend(counted_twice(cluster, window_start, window_end))
                rebuild_days(cluster.pk, days)
                writer.record_labels()
    except (PrometheusError, IngestError) as exc:
        _finish(run, started, IngestRun.Status.FAILED, error=str(exc))
        if isinstance(exc, IngestBusy):
            raise
        raise IngestError(str(exc)) from exc
    except (OperationalError, InterfaceError) as exc:
        # The database went away (restart, failover, network): the transaction is gone with
        # it, so nothing of the run was kept. One line naming the database, not a traceback.
        message = database_failure(exc)
        log.warning("ingest of %s failed: %s", cluster, message)
        _finish(run, started, IngestRun.Status.FAILED, error=message)
        raise IngestError(message) from None
    except Exception as exc:  # any other failure is still recorded, then re-raised as is
        log.exception("ingest of %s failed", cluster)
        _finish(run, started, IngestRun.Status.FAILED, error=f"{type(exc).__name__}: {exc}")
        raise
    _finish(run, started, IngestRun.Status.SUCCEEDED)
    _advance_watermark(cluster, now)
    # Queued once the rows *and* the watermark are committed: the worker's task stores the
    # running month's forecast at the instant the data stands at (docs/forecast.md, "Kept current").
    refresh_after_commit(months_of(window_start, window_end))
    return run


def counted_twice(cluster: Cluster, start: datetime, end: datetime) -> list[str]:
    """The run log's warning for each GPU (by UUID) this run found held in an hour in which
    another cluster's rows hold it too: the same device reached through two cluster entries (two
    Prometheus addresses, or a selector that does not tell them apart) is billed twice
    (docs/ingest.md, "The same GPU in two clusters"). Both clusters are named."""
    from apps.accounting.models import UsageHour

    usage, device = UsageHour._meta.db_table, Device._meta.db_table
    # The devices first (their UUIDs in another cluster: none in a sound fleet), then only their rows.
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT d.uuid, c.name, min(u.hour_start), count(DISTINCT u.hour_start) "
            f"FROM {device} d JOIN {device} od ON od.uuid = d.uuid AND od.cluster_id <> d.cluster_id "
            f"JOIN {Cluster._meta.db_table} c ON c.id = od.cluster_id "
            f"JOIN {usage} u ON u.device_id = d.id AND u.hour_start >= %s AND u.hour_start < %s "
            f"JOIN {usage} o ON o.device_id = od.id AND o.hour_start = u.hour_start "
            "WHERE d.cluster_id = %s AND d.uuid <> '' "
            "GROUP BY d.uuid, c.name ORDER BY d.uuid, c.name",
            [*(connection.ops.adapt_datetimefield_value(t) for t in (start, end)), cluster.pk])
        found = cur.fetchall()
    out = []
    for uuid, other, first, hours in found:
        if not isinstance(first, datetime):      # SQLite answers the aggregate as text, in UTC
            first = datetime.fromisoformat(str(first))
        if first.tzinfo is None:
            first = first.replace(tzinfo=timezone.utc)
        out.append(f"GPU {uuid} is in clusters {cluster.name} and {other} in the same hour ({hours} hour(s) from "
                   f"{first.astimezone(timezone.utc):%Y-%m-%d %H:%M} UTC): {COUNTED_TWICE}; remove one "
                   "cluster entry, or give each a series selector that tells them apart")
        log.warning("ingest of %s: %s", cluster, out[-1])
    return out


DEFAULT_CHUNK_HOURS = 2         # when Prometheus cannot say how many samples an hour holds
FIRST_CHUNK_HOURS = 1           # fetched while the chunks after it are planned
CHUNK_HOURS = (1, 2, 3, 4, 6, 8, 12)


def sized_chunk_hours(samples_per_hour: float | None) -> int:
    """Hours per chunk: the most (of whole divisors of a day, up to 12) whose utilization samples
    at the window's busiest hour stay within INGEST_CHUNK_SAMPLES — a chunk's memory grows with
    its samples, and every chunk costs Prometheus a round of queries and the roll-up a look
    around its edges, so fewer, larger chunks are cheaper as long as they fit (docs/ingest.md,
    "Chunks"). Unknown: DEFAULT_CHUNK_HOURS."""
    if not samples_per_hour:
        return DEFAULT_CHUNK_HOURS
    fitting = [h for h in CHUNK_HOURS if h * samples_per_hour <= settings.INGEST_CHUNK_SAMPLES]
    return fitting[-1] if fitting else CHUNK_HOURS[0]


def chunk_plan(client: PrometheusClient, names: MetricNames, window_start: datetime,
               window_end: datetime, notes: list[str] | None = None) -> list[rollup.Window]:
    """The chunks ingest reads [window_start, window_end) in, unless INGEST_CHUNK_HOURS fixes
    them: `sized_chunk_hours` of the window's busiest hour (ingest reads its first hour before
    them: docs/ingest.md, "Chunks"). The question is only a plan: when Prometheus refuses or
    fails it, the run goes on in DEFAULT_CHUNK_HOURS chunks and says so in `notes`."""
    if settings.INGEST_CHUNK_HOURS:
        return _chunks(window_start, window_end, settings.INGEST_CHUNK_HOURS)
    if window_start >= window_end:
        return []
    try:
        per_hour = client.busiest_hour(names, to_unix(window_start), to_unix(window_end))
    except PrometheusError as exc:
        log.warning("planning the chunks of an ingest failed: %s", exc)
        per_hour = None
        if notes is not None:
            notes.append(f"chunks of {DEFAULT_CHUNK_HOURS} h: the question that sizes them failed ({exc})")
    return _chunks(window_start, window_end, sized_chunk_hours(per_hour))


def first_chunk(window_start: datetime, window_end: datetime) -> rollup.Window:
    """The chunk a run sized from Prometheus reads first, while it plans the rest (`chunk_plan`
    from the end of it): its first FIRST_CHUNK_HOURS, within any budget of samples."""
    return _chunks(window_start, window_end, FIRST_CHUNK_HOURS)[0]


def _chunks(window_start: datetime, window_end: datetime, hours: int) -> list[rollup.Window]:
    """The window in chunks of `hours` (the last one shorter where the window ends)."""
    chunks, cursor = [], window_start
    while cursor < window_end:
        chunk_end = min(cursor + timedelta(hours=hours), window_end)
        chunks.append(rollup.Window(to_unix(cursor), to_unix(chunk_end)))
        cursor = chunk_end
    return chunks


def database_failure(exc: Exception) -> str:
    """'the database NAME at HOST:PORT failed: <first line of the driver's message>'."""
    db = connection.settings_dict
    where = f"{db.get('HOST') or 'localhost'}:{db.get('PORT') or 5432}" if connection.vendor != "sqlite" else "sqlite"
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
    return f"the database {db.get('NAME')} at {where} failed during the ingest: {first}"


def prefetched(fetcher: Fetcher, chunks: list[rollup.Window], pool: ThreadPoolExecutor, first: Future | None = None):
    """Yield (window, data), fetching the next chunk on `pool` while the caller writes this one;
    `first`: the first chunk's fetch, already under way.

    At most two chunks are in memory at once, whatever the window's length.
    """
    if first is None and (len(chunks) <= 1 or not settings.INGEST_PREFETCH):
        for window in chunks:
            yield window, fetcher(window)
        return
    pending = first or pool.submit(fetcher, chunks[0])
    for i, window in enumerate(chunks):
        data = pending.result()
        pending = pool.submit(fetcher, chunks[i + 1]) if i + 1 < len(chunks) else None
        yield window, data
        del data


def _finish(run: IngestRun, started: float, status: str, error: str = "") -> None:
    run.status = status
    run.error = error[:2000]
    run.finished_at = djtz.now()
    run.duration_seconds = round(time.monotonic() - started, 3)
    if status == IngestRun.Status.FAILED:
        run.rows_written = 0  # rolled back with the transaction
    try:
        run.save()
    except DatabaseError:
        # The failure may be the connection itself (a restarted database): record the run
        # on a fresh one; if that fails too, the next run marks this one interrupted.
        connection.close()
        with contextlib.suppress(DatabaseError):
            run.save()


def _names_seen(cluster: Cluster, client: PrometheusClient, start: datetime, end: datetime,
                notes: list[str]) -> MetricNames:
    """The DCGM metric names to read, and the label spelling (sticky) from the label names the
    utilization metrics carry over the window. Where nothing carries the cluster's names and the
    exporter's series are stored with lower-case names (`dcgm_fi_dev_gpu_util`: docs/ingest.md,
    "What real exporters emit"), those are read instead, each name a cluster does not override,
    and the run log says so."""
    names = metric_names(cluster)
    seen = _label_names(client, names, start, end)
    if not seen:
        overridden = set(cluster.metric_overrides or {})
        lower = MetricNames(**{role: name if role in overridden else name.lower()
                               for role, name in vars(names).items()})
        if lower != names and (seen := _label_names(client, lower, start, end)):
            notes.append(f"no series named {names.gpu_util} or {names.gr_engine_active}; this cluster's exporter "
                         f"writes them in lower case ({lower.gpu_util}, {lower.gr_engine_active}): read under those names")
            names = lower
    if cluster.label_spelling == "auto" and cluster.detected_label_spelling not in ("exported", "old"):
        detected = rollup.detect_spelling(seen)
        if detected != cluster.detected_label_spelling:
            cluster.detected_label_spelling = detected
            cluster.save(update_fields=["detected_label_spelling"])
    return names


def _label_names(client: PrometheusClient, names: MetricNames, start: datetime, end: datetime) -> set[str]:
    """The label names the utilization metrics carry over [start, end)."""
    return {label for metric in (names.gpu_util, names.gr_engine_active)
            for label in client.label_names(metric, to_unix(start), to_unix(end))}


def _advance_watermark(cluster: Cluster, now: datetime) -> None:
    """Move the watermark over every contiguous stretch of succeeded runs from where it stands.

    Runs of a backfill finish in any order on several workers: the watermark only passes an
    hour once every hour before it is in a succeeded run. A run counts up to the last hour
    that was closed when it started. The row lock orders concurrent finishers, so the last
    one sees every success committed before it.
    """
    with transaction.atomic():
        c = Cluster.objects.select_for_update().get(pk=cluster.pk)
        runs = IngestRun.objects.filter(cluster=c, status=IngestRun.Status.SUCCEEDED)
        if c.ingested_until is not None:
            runs = runs.filter(window_end__gt=c.ingested_until)
        spans = sorted((r.window_start, min(r.window_end, floor_hour(r.started_at)))
                       for r in runs.only("window_start", "window_end", "started_at"))
        mark = c.ingested_until if c.ingested_until is not None else (spans[0][0] if spans else None)
        if mark is None:
            return
        for span_start, span_end in spans:
            if span_start <= mark < span_end:
                mark = span_end
        mark = min(mark, floor_hour(now))
        if c.ingested_until is None or mark > c.ingested_until:
            Cluster.objects.filter(pk=c.pk).update(ingested_until=mark)
            cluster.ingested_until = mark
