"""The utilization explorer: one function builds the rows that the table, the heatmap and the CSV show."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from apps.accounting.usage import reader as rollup_reader
from apps.accounting.core.measures import efficiency, shown_hours, shown_ratio
from apps.accounting.usage.reader import HourTeams
from apps.accounting.calendar.zone import billing_zone
from apps.accounting.core.lines import Cell
from apps.accounting.usage.cells import cluster_name_by_id, usage_cells
from apps.accounting.ledger.as_billed import billed_cells, billed_hour_cells
from apps.web.params import BadParameters
from apps.accounting.query.filters import ReportFilter


GRAINS = ("hour", "day", "week", "month")
MAX_HOURLY_DAYS = 7
CSV_COLUMNS = ["period_start", "cluster", "team", "namespace", "gpu_model",
               "allocated_gpu_hours", "used_gpu_hours", "idle_gpu_hours", "efficiency"]
MONEY_COLUMNS = ["cost", "idle_cost", "currency"]     # for roles that see money

# The table is shown a page at a time (a month of 5,000 namespaces is 150,000 daily rows); the
# CSV has every row. Sorts (apps/web/paging.py), by default the period, then the row's names.
SORTS = {
    "period": lambda r: r.period_start,
    "team": lambda r: r.team,
    "namespace": lambda r: r.namespace,
    "allocated_gpu_hours": lambda r: r.allocated_gpu_seconds,
    "idle_gpu_hours": lambda r: r.idle_gpu_seconds,
    "efficiency": lambda r: r.efficiency,
}
DEFAULT_SORT = "period"
# For roles that see money: every row of the filters is priced first (the page otherwise
# prices only the rows it shows), then sorted by its cost.
MONEY_SORTS = {
    "cost": lambda r: r.priced.cost if r.priced is not None else None,
    "idle_cost": lambda r: r.priced.idle_cost if r.priced is not None else None,
}


def row_order(r: "ExploreRow") -> tuple:
    return (r.period_start, r.cluster, r.team, r.namespace, r.gpu_model)


@dataclass(frozen=True)
class ExploreOptions:
    namespace: str | None = None
    gpu_model: str | None = None
    grain: str = "day"
    note: str = ""          # why the grain shown is not the one asked for


@dataclass
class ExploreRow:
    period_start: date | datetime
    cluster: str
    team: str
    namespace: str
    gpu_model: str
    allocated_gpu_seconds: float = 0.0
    used_gpu_seconds: float = 0.0
    idle_gpu_seconds: float = 0.0
    cells: list = field(default_factory=list, repr=False)     # what its cost is priced from
    priced: object = field(default=None, repr=False)           # its money.Priced, once priced

    @property
    def efficiency(self) -> float | None:
        return efficiency(self.used_gpu_seconds, self.allocated_gpu_seconds)

    def as_dict(self) -> dict:
        return {
            "period_start": self.period_start.isoformat(),
            "cluster": self.cluster, "team": self.team, "namespace": self.namespace, "gpu_model": self.gpu_model,
            "allocated_gpu_hours": shown_hours(self.allocated_gpu_seconds),
            "used_gpu_hours": shown_hours(self.used_gpu_seconds),
            "idle_gpu_hours": shown_hours(self.idle_gpu_seconds),
            "efficiency": shown_ratio(self.efficiency),
        }


@dataclass
class Explored:
    rows: list[ExploreRow]
    heatmap: dict[tuple[str, date], list[float]]   # (team, day) -> [allocated_s, used_s]


def parse_options(params, sel: ReportFilter) -> ExploreOptions:
    grain = params.get("grain") or "day"
    if grain not in GRAINS:
        raise BadParameters({"grain": f"grain={grain!r} is not one of {', '.join(GRAINS)}"})
    note = ""
    if grain == "hour" and sel.end - sel.start > timedelta(days=MAX_HOURLY_DAYS):
        # Any window the picker offers must show something: too long for hours, it shows days.
        days = (sel.end - sel.start) / timedelta(days=1)
        note = (f"Hourly rows cover at most {MAX_HOURLY_DAYS} days and this window spans {days:g}: "
                "shown per day instead. Pick a shorter window for hourly rows.")
        grain = "day"
    return ExploreOptions(namespace=(params.get("namespace") or "").strip() or None,
                          gpu_model=(params.get("gpu_model") or "").strip() or None, grain=grain, note=note)


def _hourly_cells(sel: ReportFilter, opts: ExploreOptions):
    """Usage cells of one hour each, straight from the hourly rows: (bucket, cell)."""
    names = cluster_name_by_id()
    f = sel.usage_filter(namespaces=frozenset({opts.namespace}) if opts.namespace else None,
                         gpu_models=frozenset({opts.gpu_model}) if opts.gpu_model else None)
    zone = billing_zone()
    # With money, as billed: a closed month's hours attributed as its close attributed them
    # (docs/chargeback.md, "Windows across a close").
    for r in (billed_hour_cells(f) if sel.money else rollup_reader.hour_cells(f, HourTeams())):
        yield r["hour_start"], Cell(
            cluster_id=r["cluster_id"], cluster=names.get(r["cluster_id"], "?"), namespace=r["namespace"],
            team=r["team"], gpu_model=r["gpu_model"], mig_profile=r["mig_profile"],
            day=r["hour_start"].astimezone(zone).date(), gpu_seconds=r["gpu_s"] or 0.0,
            used_gpu_seconds=r["used_s"] or 0.0, idle_gpu_seconds=r["idle_s"] or 0.0, mig_seconds=r["mig_s"] or 0.0,
            price_class=r["price_class"])


def period_start(day: date, grain: str, first_day: date) -> date:
    """The first day of the row a billing day falls in: itself, its ISO week's Monday or its
    month's 1st — never before the window's first day (a window from Thursday 1 October has
    a first week row "2026-10-01", not "2026-09-28": the row holds only the window's days)."""
    if grain == "week":
        start = day - timedelta(days=day.weekday())
    elif grain == "month":
        start = day.replace(day=1)
    else:
        start = day
    return max(start, first_day)


def _daily_cells(sel: ReportFilter, opts: ExploreOptions):
    f = sel.usage_filter(namespaces=frozenset({opts.namespace}) if opts.namespace else None,
                         gpu_models=frozenset({opts.gpu_model}) if opts.gpu_model else None)
    first_day = sel.start.astimezone(billing_zone()).date()
    # With money, as billed: a closed month's days as its close froze them (docs/chargeback.md,
    # "Windows across a close"), so a relabel after the close moves none of its hours or money.
    for c in (billed_cells(f) if sel.money else usage_cells(f)):
        if not c.allocated:
            continue
        yield period_start(c.day, opts.grain, first_day), c


def explore(sel: ReportFilter, opts: ExploreOptions) -> Explored:
    cells = _hourly_cells(sel, opts) if opts.grain == "hour" else _daily_cells(sel, opts)
    teams = sel.teams
    rows: dict[tuple, ExploreRow] = {}
    heat: dict[tuple[str, date], list[float]] = {}
    for bucket, c in cells:
        if teams is not None and c.team not in teams:
            continue
        key = (bucket, c.cluster, c.team, c.namespace, c.gpu_model)
        row = rows.get(key) or rows.setdefault(key, ExploreRow(bucket, c.cluster, c.team, c.namespace, c.gpu_model))
        row.allocated_gpu_seconds += c.gpu_seconds
        row.used_gpu_seconds += c.used_gpu_seconds
        row.idle_gpu_seconds += c.idle_gpu_seconds
        row.cells.append(c)
        h = heat.setdefault((c.team, c.day), [0.0, 0.0])
        h[0] += c.gpu_seconds
        h[1] += c.used_gpu_seconds
    return Explored(rows=[rows[k] for k in sorted(rows)], heatmap=heat)
