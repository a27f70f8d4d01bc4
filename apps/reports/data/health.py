"""Fleet health from DeviceHealthHour: XIDs, temperature, power; energy per team and month.

A GPU is flagged when it reported an XID in the window, or when it spent at least
HOT_SUSTAINED_SECONDS of one hour above 83 °C (sustained heat, not a passing spike).
Team leads (and a picked team) see only the hours their namespaces held a GPU: a GPU their
pod held on Monday shows Monday's readings, not the rest of the week's, when it was someone
else's or nobody's. The energy per team is scoped the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from math import fsum

from django.db.models import Avg, Exists, Max, OuterRef, Q, Subquery, Sum
from django.db.models.functions import TruncDate

from apps.accounting.models import DeviceHealthHour, UsageHour
from apps.clusters.models import Device
from apps.accounting.days import day_of
from apps.accounting.usage import billing_zone
from apps.teams.resolve import TeamResolver

from ..selection import Selection

HOT_SUSTAINED_SECONDS = 900.0
JOULES_PER_KWH = 3.6e6


@dataclass
class DeviceHealth:
    cluster: str
    host: str
    gpu: str
    model: str
    uuid: str
    temperature_c_max: float | None
    temperature_c_avg: float | None
    hot_seconds_max_hour: float
    hot_seconds: float
    power_watts_avg: float | None
    energy_kwh: float | None
    xid_samples: int
    xid_codes: list[int] = field(default_factory=list)
    last_xid_hour: datetime | None = None

    @property
    def hot(self) -> bool:
        return self.hot_seconds_max_hour >= HOT_SUSTAINED_SECONDS

    @property
    def flagged(self) -> bool:
        return self.xid_samples > 0 or self.hot


HOUR = timedelta(hours=1)


def _health_rows(sel: Selection):
    qs = DeviceHealthHour.objects.filter(hour_start__gte=sel.start, hour_start__lt=sel.end)
    if sel.cluster:
        qs = qs.filter(cluster__name=sel.cluster)
    return qs


_READINGS = ("device_id", "hour_start", "temperature_c_max", "temperature_c_avg", "seconds_above_83c",
             "power_watts_avg", "energy_joules", "xid_samples", "xid_codes")


def _held_readings(sel: Selection, held: Q) -> list[tuple]:
    """The health readings of the device-hours one of the teams' pods held (a GPU shared by
    time-slicing counts when any of its pods that hour is theirs), as `_READINGS` tuples.

    Read from the held side: the held (cluster, device, hour) from UsageHour by namespace (its
    index), each reading looked up by DeviceHealthHour's unique (cluster, device, hour) — not a
    subquery per reading, which scanned every hour of the device on SQLite (docs/performance.md)."""
    qs = UsageHour.objects.filter(held, hour_start__gte=sel.start, hour_start__lt=sel.end)
    if sel.cluster:
        qs = qs.filter(cluster__name=sel.cluster)
    reading = DeviceHealthHour.objects.filter(cluster_id=OuterRef("cluster_id"), device_id=OuterRef("device_id"),
                                              hour_start=OuterRef("hour_start"))
    fields = _READINGS[2:]
    rows = (qs.values("cluster_id", "device_id", "hour_start").distinct().order_by()
            .annotate(has=Exists(reading), **{f"r_{f}": Subquery(reading.values(f)[:1]) for f in fields}))
    return [(r["device_id"], r["hour_start"], *(r[f"r_{f}"] for f in fields)) for r in rows if r["has"]]


def _max(values):
    values = [v for v in values if v is not None]
    return max(values) if values else None


def _avg(values):
    values = [v for v in values if v is not None]
    return fsum(values) / len(values) if values else None


def _sum(values):
    values = [v for v in values if v is not None]
    return fsum(values) if values else None


@dataclass
class HeldHours:
    """The hours the selected teams' namespaces held GPUs (`q`, a filter on UsageHour) and, read
    once for every view of the page, the health readings of those device-hours."""
    q: Q
    _readings: list[tuple] | None = None

    def readings(self, sel: Selection) -> list[tuple]:
        if self._readings is None:
            self._readings = _held_readings(sel, self.q)
        return self._readings


def held_hours(sel: Selection) -> HeldHours | None:
    """A filter on UsageHour for the hours the selected/scoped teams' namespaces held GPUs, as
    runs of hours per (cluster, namespace); None when unscoped (every reading counts).

    Teams resolve per hour (a re-label moves a namespace from its hour on); one query of
    (cluster, namespace, hour), whatever the number of devices. A namespace that was theirs in
    every hour it held a GPU is matched by name alone (`namespace IN (…)`, per cluster); only one
    that changed hands in the window is matched by its runs of hours — a filter of one range per
    run and namespace took minutes on SQLite for a lead's month (docs/performance.md).
    """
    if sel.teams is None:
        return None
    qs = UsageHour.objects.filter(hour_start__gte=sel.start, hour_start__lt=sel.end).exclude(namespace="")
    if sel.cluster:
        qs = qs.filter(cluster__name=sel.cluster)
    resolver, zone = TeamResolver(), billing_zone()
    names = resolver.namespaces_of(sel.teams)
    if names is not None:
        qs = qs.filter(namespace__in=names)
    runs: dict[tuple[int, str], list[list[datetime]]] = {}
    changed_hands: set[tuple[int, str]] = set()
    for cluster_id, ns, hour in (qs.values_list("cluster_id", "namespace", "hour_start").distinct()
                                 .order_by("cluster_id", "namespace", "hour_start")):
        if resolver.team(cluster_id, ns, day_of(hour, zone), hour) not in sel.teams:
            changed_hands.add((cluster_id, ns))
            continue
        spans = runs.setdefault((cluster_id, ns), [])
        if spans and spans[-1][1] == hour:
            spans[-1][1] = hour + HOUR
        else:
            spans.append([hour, hour + HOUR])
    held = Q(pk__in=[])            # no hour held: nothing matches
    whole: dict[int, list[str]] = {}
    for (cluster_id, ns), spans in sorted(runs.items()):
        if (cluster_id, ns) not in changed_hands:
            whole.setdefault(cluster_id, []).append(ns)
            continue
        for a, b in spans:
            held |= Q(cluster_id=cluster_id, namespace=ns, hour_start__gte=a, hour_start__lt=b)
    for cluster_id, whole_names in whole.items():
        held |= Q(cluster_id=cluster_id, namespace__in=whole_names)
    return HeldHours(held)


def _aggregate_by_device(readings: list[tuple]) -> list[dict]:
    """`device_health`'s SQL aggregates (MAX, AVG and SUM ignore NULLs) over held readings."""
    by_device: dict[int, list[tuple]] = {}
    for r in readings:
        by_device.setdefault(r[0], []).append(r)
    return [{"device_id": d, "t_max": _max(r[2] for r in rs), "t_avg": _avg(r[3] for r in rs),
             "hot_max": _max(r[4] for r in rs), "hot_sum": _sum(r[4] for r in rs), "p_avg": _avg(r[5] for r in rs),
             "e_sum": _sum(r[6] for r in rs), "xid_n": sum(r[7] or 0 for r in rs)} for d, rs in by_device.items()]


def _scoped_device_rows(sel: Selection, held: HeldHours) -> tuple[list[dict], list[tuple]]:
    """`device_health`'s rows and XID readings over the held device-hours only."""
    readings = held.readings(sel)
    figures = {f["device_id"]: f for f in _aggregate_by_device(readings)}
    described = (Device.objects.filter(pk__in=figures)
                 .values("id", "cluster__name", "host", "gpu_index", "mig_instance_id", "model_name", "uuid"))
    rows = [{**figures[d["id"]], "device_id": d["id"], "cluster__name": d["cluster__name"], "device__host": d["host"],
             "device__gpu_index": d["gpu_index"], "device__mig_instance_id": d["mig_instance_id"],
             "device__model_name": d["model_name"], "device__uuid": d["uuid"]} for d in described]
    rows.sort(key=lambda r: (r["cluster__name"], r["device__host"], r["device__gpu_index"],
                             r["device__mig_instance_id"]))
    xids = sorted(((r[0], r[8], r[1]) for r in readings if r[7]), key=lambda x: x[2])
    return rows, xids


def _fleet_device_rows(sel: Selection) -> tuple:
    qs = _health_rows(sel)
    rows = (qs.values("device_id", "cluster__name", "device__host", "device__gpu_index", "device__mig_instance_id",
                      "device__model_name", "device__uuid")
            .annotate(t_max=Max("temperature_c_max"), t_avg=Avg("temperature_c_avg"),
                      hot_max=Max("seconds_above_83c"), hot_sum=Sum("seconds_above_83c"),
                      p_avg=Avg("power_watts_avg"), e_sum=Sum("energy_joules"), xid_n=Sum("xid_samples"))
            .order_by("cluster__name", "device__host", "device__gpu_index", "device__mig_instance_id"))
    xids = (qs.filter(xid_samples__gt=0).order_by("hour_start").values_list("device_id", "xid_codes", "hour_start"))
    return rows, xids


def device_health(sel: Selection, held: HeldHours | None = None) -> list[DeviceHealth]:
    """Per device: temperatures, heat, power, energy and XIDs over the window — for a team
    scope over the hours its namespaces held the device (`held_hours`)."""
    rows, xids = _fleet_device_rows(sel) if held is None else _scoped_device_rows(sel, held)
    devices = {}
    for r in rows:
        gpu = r["device__gpu_index"] + (f" MIG {r['device__mig_instance_id']}" if r["device__mig_instance_id"] else "")
        devices[r["device_id"]] = DeviceHealth(
            cluster=r["cluster__name"], host=r["device__host"], gpu=gpu, model=r["device__model_name"],
            uuid=r["device__uuid"], temperature_c_max=r["t_max"], temperature_c_avg=r["t_avg"],
            hot_seconds_max_hour=r["hot_max"] or 0.0, hot_seconds=r["hot_sum"] or 0.0, power_watts_avg=r["p_avg"],
            energy_kwh=r["e_sum"] / JOULES_PER_KWH if r["e_sum"] is not None else None, xid_samples=r["xid_n"] or 0,
        )
    for device_id, codes, hour in xids:
        d = devices.get(device_id)
        if d is not None:
            d.xid_codes = sorted(set(d.xid_codes) | {int(c) for c in codes or []})
            d.last_xid_hour = hour
    return list(devices.values())


@dataclass
class HealthHour:
    hour_start: datetime
    temperature_c_max: float | None
    temperature_c_avg: float | None
    power_watts: float | None


def hourly_health(sel: Selection, held: HeldHours | None = None) -> list[HealthHour]:
    if held is not None:
        by_hour: dict[datetime, list[tuple]] = {}
        for r in held.readings(sel):
            by_hour.setdefault(r[1], []).append(r)
        return [HealthHour(hour, _max(r[2] for r in rs), _avg(r[3] for r in rs), _sum(r[5] for r in rs))
                for hour, rs in sorted(by_hour.items())]
    rows = (_health_rows(sel).values("hour_start")
            .annotate(t_max=Max("temperature_c_max"), t_avg=Avg("temperature_c_avg"), p=Sum("power_watts_avg"))
            .order_by("hour_start"))
    return [HealthHour(r["hour_start"], r["t_max"], r["t_avg"], r["p"]) for r in rows]


def energy_by_team_month(sel: Selection) -> list[dict]:
    """kWh per (team, month) from UsageHour.energy_joules; devices no pod held count as `unallocated capacity`."""
    qs = UsageHour.objects.filter(hour_start__gte=sel.start, hour_start__lt=sel.end, energy_joules__isnull=False)
    if sel.cluster:
        qs = qs.filter(cluster__name=sel.cluster)
    rows = (qs.values("cluster_id", "namespace", day=TruncDate("hour_start", tzinfo=billing_zone()))
            .annotate(e=Sum("energy_joules")).order_by())
    resolver = TeamResolver()
    totals: dict[tuple[str, date], float] = {}
    for r in rows:
        team = resolver.team(r["cluster_id"], r["namespace"], r["day"]) if r["namespace"] else ""
        if sel.teams is not None and (not team or team not in sel.teams):
            continue
        key = (team or "(no pod)", r["day"].replace(day=1))
        totals[key] = totals.get(key, 0.0) + (r["e"] or 0.0)
    return [{"team": team, "month": month.strftime("%Y-%m"), "energy_kwh": joules / JOULES_PER_KWH}
            for (team, month), joules in sorted(totals.items(), key=lambda kv: (kv[0][1], kv[0][0]))]
