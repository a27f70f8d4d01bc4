"""The overview's figures: fleet over time, top idle teams, fleet by model, ingest freshness."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from django.conf import settings
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from apps.accounting.calendar.zone import day_of, day_start
from apps.accounting.core.measures import efficiency, gpu_hours, hours_of, share, shown_hours
from apps.accounting.forecast.teams import watermarks
from apps.accounting.calendar.zone import billing_zone
from apps.accounting.core.lines import Cell
from apps.accounting.usage.cells import UsageFilter, UsageRow, group_cells
from apps.clusters.models import Cluster
from apps.ingest.models import IngestRun


@dataclass
class DayTotals:
    """A day (or, summed, the whole window) of the fleet: seconds in, hours out."""
    day: date | None
    allocated_gpu_seconds: float = 0.0
    used_gpu_seconds: float = 0.0
    idle_gpu_seconds: float = 0.0
    unallocated_gpu_seconds: float = 0.0

    def add(self, other: "DayTotals") -> None:
        self.allocated_gpu_seconds += other.allocated_gpu_seconds
        self.used_gpu_seconds += other.used_gpu_seconds
        self.idle_gpu_seconds += other.idle_gpu_seconds
        self.unallocated_gpu_seconds += other.unallocated_gpu_seconds

    @property
    def allocated_gpu_hours(self) -> float:
        return gpu_hours(self.allocated_gpu_seconds)

    @property
    def used_gpu_hours(self) -> float:
        return gpu_hours(self.used_gpu_seconds)

    @property
    def idle_gpu_hours(self) -> float:
        return gpu_hours(self.idle_gpu_seconds)

    @property
    def unallocated_gpu_hours(self) -> float:
        return gpu_hours(self.unallocated_gpu_seconds)

    @property
    def capacity_gpu_hours(self) -> float:
        return gpu_hours(self.allocated_gpu_seconds + self.unallocated_gpu_seconds)

    @property
    def efficiency(self) -> float | None:
        return efficiency(self.used_gpu_seconds, self.allocated_gpu_seconds)


@dataclass(frozen=True)
class PartialDay:
    """The window's last day when the data stops inside it (today, mostly): the charts scale its
    figures to the whole day's pace and mark it (docs/pages.md, "Charts")."""
    day: date
    hours_with_data: float
    hours: float            # of the day inside the window (23 or 25 on a DST change)

    @property
    def scale(self) -> float:
        return self.hours / self.hours_with_data


def partial_day(f: UsageFilter, now: datetime | None = None) -> PartialDay | None:
    """The billing day in which the data of the window's clusters stops — the latest cluster's
    ingest watermark, never after now — when the window goes on past it; None when every day
    of the window is complete."""
    now = now or timezone.now()
    latest = max((at for name, at in watermarks().items() if not f.cluster or name == f.cluster), default=None)
    horizon = min(latest or now, now)
    if not (f.start < horizon < f.end):
        return None
    zone = billing_zone()
    day = day_of(horizon, zone)
    start = max(day_start(day, zone), f.start)
    end = min(day_start(date.fromordinal(day.toordinal() + 1), zone), f.end)
    if horizon <= start or horizon >= end:
        return None
    return PartialDay(day, hours_of((horizon - start).total_seconds()), hours_of((end - start).total_seconds()))


def daily_totals(cells: list[Cell]) -> list[DayTotals]:
    days: dict[date, DayTotals] = {}
    for c in cells:
        d = days.get(c.day) or days.setdefault(c.day, DayTotals(day=c.day))
        if c.allocated:
            d.allocated_gpu_seconds += c.gpu_seconds
            d.used_gpu_seconds += c.used_gpu_seconds
            d.idle_gpu_seconds += c.idle_gpu_seconds
        else:
            d.unallocated_gpu_seconds += c.gpu_seconds
    return [days[k] for k in sorted(days)]


def window_totals(days: list[DayTotals]) -> DayTotals:
    total = DayTotals(day=None)
    for d in days:
        total.add(d)
    return total


def top_idle_teams(cells: list[Cell], limit: int = 10) -> list[UsageRow]:
    rows = [r for r in group_cells(cells, "team") if r.idle_gpu_seconds > 0]
    return sorted(rows, key=lambda r: (-r.idle_gpu_seconds, r.key))[:limit]


def fleet_by_model(cells: list[Cell]) -> list[dict]:
    out = []
    for r in group_cells(cells, "gpu_model"):
        capacity = r.allocated_gpu_seconds + r.unallocated_gpu_seconds
        out.append({
            "gpu_model": r.key,
            "capacity_gpu_hours": shown_hours(capacity),
            "allocated_gpu_hours": shown_hours(r.allocated_gpu_seconds),
            "used_gpu_hours": shown_hours(r.used_gpu_seconds),
            "unallocated_gpu_hours": shown_hours(r.unallocated_gpu_seconds),
            "efficiency": r.efficiency,
            "allocation_ratio": share(r.allocated_gpu_seconds, capacity),
        })
    return sorted(out, key=lambda m: (-m["capacity_gpu_hours"], m["gpu_model"]))


@dataclass
class Freshness:
    cluster: str
    ingested_until: datetime | None
    lag_hours: float | None
    stale: bool
    last_status: str | None
    last_started_at: datetime | None
    last_error: str


def ingest_freshness(now: datetime | None = None, stale_hours: float | None = None) -> list[Freshness]:
    """One row per cluster, stale when its watermark lags `now` by more than STALE_INGEST_HOURS."""
    now = now or timezone.now()
    stale_hours = settings.STALE_INGEST_HOURS if stale_hours is None else stale_hours
    last = IngestRun.objects.filter(cluster=OuterRef("pk")).order_by("-started_at")
    clusters = Cluster.objects.only("name", "ingested_until").annotate(     # not the sealed credentials
        last_status=Subquery(last.values("status")[:1]),
        last_started_at=Subquery(last.values("started_at")[:1]),
        last_error=Subquery(last.values("error")[:1]),
    ).order_by("name")
    out = []
    for c in clusters:
        lag = hours_of((now - c.ingested_until).total_seconds()) if c.ingested_until else None
        out.append(Freshness(
            cluster=c.name, ingested_until=c.ingested_until, lag_hours=lag,
            stale=lag is None or lag > stale_hours, last_status=c.last_status,
            last_started_at=c.last_started_at, last_error=c.last_error or "",
        ))
    return out
