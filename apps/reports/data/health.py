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

from django.db.models import Avg, Exists, Max, OuterRef, Q, Sum
from django.db.models.functions import TruncDate

from apps.accounting.models import DeviceHealthHour, UsageHour
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


def _health_rows(sel: Selection, held: Q | None):
    qs = DeviceHealthHour.objects.filter(hour_start__gte=sel.start, hour_start__lt=sel.end)
    if sel.cluster:
        qs = qs.filter(cluster__name=sel.cluster)
    if held is not None:
        # The device-hours one of the teams' pods held (a GPU shared by time-slicing counts
        # when any of its pods that hour is theirs).
        qs = qs.filter(Exists(UsageHour.objects.filter(held, device_id=OuterRef("device_id"),
                                                       hour_start=OuterRef("hour_start"))))
    return qs


def held_hours(sel: Selection) -> Q | None:
    """A filter on UsageHour for the hours the selected/scoped teams' namespaces held GPUs, as
    runs of hours per (cluster, namespace); None when unscoped (every reading counts).

    Teams resolve per hour (a re-label moves a namespace from its hour on); one query of
    (cluster, namespace, hour), whatever the number of devices.
    """
    if sel.teams is None:
        return None
    qs = UsageHour.objects.filter(hour_start__gte=sel.start, hour_start__lt=sel.end).exclude(namespace="")
    if sel.cluster:
        qs = qs.filter(cluster__name=sel.cluster)
    resolver, zone = TeamResolver(), billing_zone()
    runs: dict[tuple[int, str], list[list[datetime]]] = {}
    for cluster_id, ns, hour in (qs.values_list("cluster_id", "namespace", "hour_start").distinct()
                                 .order_by("cluster_id", "namespace", "hour_start")):
        if resolver.team(cluster_id, ns, day_of(hour, zone), hour) not in sel.teams:
            continue
        spans = runs.setdefault((cluster_id, ns), [])
        if spans and spans[-1][1] == hour:
            spans[-1][1] = hour + HOUR
        else:
            spans.append([hour, hour + HOUR])
    held = Q(pk__in=[])            # no hour held: nothing matches
    for (cluster_id, ns), spans in runs.items():
        for a, b in spans:
            held |= Q(cluster_id=cluster_id, namespace=ns, hour_start__gte=a, hour_start__lt=b)
    return held


def device_health(sel: Selection, held: Q | None = None) -> list[DeviceHealth]:
    qs = _health_rows(sel, held)
    rows = (qs.values("device_id", "cluster__name", "device__host", "device__gpu_index", "device__mig_instance_id",
                      "device__model_name", "device__uuid")
            .annotate(t_max=Max("temperature_c_max"), t_avg=Avg("temperature_c_avg"),
                      hot_max=Max("seconds_above_83c"), hot_sum=Sum("seconds_above_83c"),
                      p_avg=Avg("power_watts_avg"), e_sum=Sum("energy_joules"), xid_n=Sum("xid_samples"))
            .order_by("cluster__name", "device__host", "device__gpu_index", "device__mig_instance_id"))
    devices = {}
    for r in rows:
        gpu = r["device__gpu_index"] + (f" MIG {r['device__mig_instance_id']}" if r["device__mig_instance_id"] else "")
        devices[r["device_id"]] = DeviceHealth(
            cluster=r["cluster__name"], host=r["device__host"], gpu=gpu, model=r["device__model_name"],
            uuid=r["device__uuid"], temperature_c_max=r["t_max"], temperature_c_avg=r["t_avg"],
            hot_seconds_max_hour=r["hot_max"] or 0.0, hot_seconds=r["hot_sum"] or 0.0, power_watts_avg=r["p_avg"],
            energy_kwh=r["e_sum"] / JOULES_PER_KWH if r["e_sum"] is not None else None, xid_samples=r["xid_n"] or 0,
        )
    for device_id, codes, hour in (qs.filter(xid_samples__gt=0).order_by("hour_start")
                                   .values_list("device_id", "xid_codes", "hour_start")):
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


def hourly_health(sel: Selection, held: Q | None = None) -> list[HealthHour]:
    rows = (_health_rows(sel, held).values("hour_start")
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
