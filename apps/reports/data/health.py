"""Fleet health from DeviceHealthHour: XIDs, temperature, power; energy per team and month.

A GPU is flagged when it reported an XID in the window, or when it spent at least
HOT_SUSTAINED_SECONDS of one hour above 83 °C (sustained heat, not a passing spike).
Team leads (and a picked team) see only the hours their namespaces held a GPU: a GPU their
pod held on Monday shows Monday's readings, not the rest of the week's, when it was someone
else's or nobody's. The energy per team is scoped the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from math import fsum

from django.db.models import Q

from apps.accounting.usage import reader as rollup_reader
from apps.accounting.usage.reader import HourTeams
from apps.clusters.models import Device
from apps.accounting.query.filters import ReportFilter


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

    def readings(self, sel: ReportFilter) -> list[tuple]:
        if self._readings is None:
            self._readings = rollup_reader.held_readings(sel.usage_filter(), self.q)
        return self._readings


def held_hours(sel: ReportFilter) -> HeldHours | None:
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
    return HeldHours(rollup_reader.held_hours(sel.usage_filter(), HourTeams()))


def _aggregate_by_device(readings: list[tuple]) -> list[dict]:
    """`device_health`'s SQL aggregates (MAX, AVG and SUM ignore NULLs) over held readings."""
    by_device: dict[int, list[tuple]] = {}
    for r in readings:
        by_device.setdefault(r[0], []).append(r)
    return [{"device_id": d, "t_max": _max(r[2] for r in rs), "t_avg": _avg(r[3] for r in rs),
             "hot_max": _max(r[4] for r in rs), "hot_sum": _sum(r[4] for r in rs), "p_avg": _avg(r[5] for r in rs),
             "e_sum": _sum(r[6] for r in rs), "xid_n": sum(r[7] or 0 for r in rs)} for d, rs in by_device.items()]


def _scoped_device_rows(sel: ReportFilter, held: HeldHours) -> tuple[list[dict], list[tuple]]:
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


def _fleet_device_rows(sel: ReportFilter) -> tuple:
    f = sel.usage_filter()
    return rollup_reader.fleet_health_by_device(f), rollup_reader.fleet_xids(f)


def device_health(sel: ReportFilter, held: HeldHours | None = None) -> list[DeviceHealth]:
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


def hourly_health(sel: ReportFilter, held: HeldHours | None = None) -> list[HealthHour]:
    if held is not None:
        by_hour: dict[datetime, list[tuple]] = {}
        for r in held.readings(sel):
            by_hour.setdefault(r[1], []).append(r)
        return [HealthHour(hour, _max(r[2] for r in rs), _avg(r[3] for r in rs), _sum(r[5] for r in rs))
                for hour, rs in sorted(by_hour.items())]
    rows = rollup_reader.fleet_health_by_hour(sel.usage_filter())
    return [HealthHour(r["hour_start"], r["t_max"], r["t_avg"], r["p"]) for r in rows]


def energy_by_team_month(sel: ReportFilter) -> list[dict]:
    """kWh per (team, month) from UsageHour.energy_joules; devices no pod held count as `unallocated capacity`."""
    totals: dict[tuple[str, date], float] = {}
    for r in rollup_reader.energy_by_team_day(sel.usage_filter(), HourTeams()):
        team = r["team"]
        if sel.teams is not None and (not team or team not in sel.teams):
            continue
        key = (team or "(no pod)", r["day"].replace(day=1))
        totals[key] = totals.get(key, 0.0) + (r["e"] or 0.0)
    return [{"team": team, "month": month.strftime("%Y-%m"), "energy_kwh": joules / JOULES_PER_KWH}
            for (team, month), joules in sorted(totals.items(), key=lambda kv: (kv[0][1], kv[0][0]))]
