"""Fleet health from DeviceHealthHour: XIDs, temperature, power; energy per team and month.

A GPU is flagged when it reported an XID in the window, or when it spent at least
HOT_SUSTAINED_SECONDS of one hour above 83 °C (sustained heat, not a passing spike).
Team leads see only the devices their namespaces held in the window, and their teams' energy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

from django.db.models import Avg, Max, Sum
from django.db.models.functions import TruncDate

from apps.accounting.models import DeviceHealthHour, UsageHour
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


def _health_rows(sel: Selection, device_ids):
    qs = DeviceHealthHour.objects.filter(hour_start__gte=sel.start, hour_start__lt=sel.end)
    if sel.cluster:
        qs = qs.filter(cluster__name=sel.cluster)
    if device_ids is not None:
        qs = qs.filter(device_id__in=device_ids)
    return qs


def scoped_device_ids(sel: Selection) -> set[int] | None:
    """Devices held by the selected/scoped teams' namespaces in the window; None when unscoped."""
    if sel.teams is None:
        return None
    qs = UsageHour.objects.filter(hour_start__gte=sel.start, hour_start__lt=sel.end).exclude(namespace="")
    if sel.cluster:
        qs = qs.filter(cluster__name=sel.cluster)
    held = (qs.values_list("cluster_id", "namespace", "device_id", TruncDate("hour_start", tzinfo=billing_zone()))
            .distinct().order_by())
    resolver = TeamResolver()
    return {device for cluster_id, ns, device, day in held if resolver.team(cluster_id, ns, day) in sel.teams}


def device_health(sel: Selection, device_ids=None) -> list[DeviceHealth]:
    qs = _health_rows(sel, device_ids)
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


def hourly_health(sel: Selection, device_ids=None) -> list[HealthHour]:
    rows = (_health_rows(sel, device_ids).values("hour_start")
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
