"""Fleet health for a team lead covers only the hours their teams' pods held a GPU (#14 P2).

Seed (tests/support/page_seed.py) plus two readings of gpu0: at 11:00, when vision's train-0 held it,
and at 12:00, when nobody did (unallocated). Before, the lead saw gpu0's whole window: the
12:00 reading's heat, power and energy too, which are the fleet's, not vision's.
"""
import json
import re

import pytest

from apps.accounting.models import DeviceHealthHour

from tests.support.page_seed import at
from .test_page_figures import rows_of


@pytest.fixture
def readings(seeded):
    gpu0, _, _ = seeded["devices"]
    DeviceHealthHour.objects.create(cluster=gpu0.cluster, device=gpu0, hour_start=at(11), temperature_c_avg=70,
                                    temperature_c_max=75, power_watts_avg=500, energy_joules=1.8e6)
    DeviceHealthHour.objects.create(cluster=gpu0.cluster, device=gpu0, hour_start=at(12), temperature_c_avg=88,
                                    temperature_c_max=90, seconds_above_83c=1800, power_watts_avg=700,
                                    energy_joules=2.52e6)
    return seeded


def power_points(body):
    chart = re.search(r'data-chart="power">.*?<script type="application/json"[^>]*>(.*?)</script>', body, re.S)
    trace = json.loads(chart.group(1))["data"][0]
    return [(x[11:16], y) for x, y in zip(trace["x"], trace["y"])]


def test_the_lead_sees_only_the_hours_their_pods_held(login, readings):
    body = login("team_lead").get("/health/").content.decode()
    devices = {r[2]: r for r in rows_of(body, "devices")}
    # gpu0 at 10:00 (80 °C avg, 86 max, 600 W, 0.6 kWh) and 11:00 (70, 75, 500 W, 0.5 kWh); not 12:00.
    assert devices["0"][4:8] == ["75.0", "86", "550", "1.10"]
    assert devices["0 MIG 1"][7] == "0.09"                                   # 3.24e5 J, its one held hour
    # The power per hour sums the GPUs the lead's pods held that hour: gpu0 + the MIG slice at 10:00.
    assert power_points(body) == [("10:00", 690.0), ("11:00", 500.0)]
    # The 12:00 heat (30 minutes above 83 °C) was nobody's: it flags nothing for the lead.
    assert {r[2] for r in rows_of(body, "flagged")} == {"0"}
    assert re.search(r'<tr class="flagged"><td>alpha</td><td>node-a</td><td>0</td>.*?<td class="num">86</td>', body)
    assert "covers only the hours your teams' pods held a GPU" in body


def test_admin_and_a_picked_team(login, readings):
    c = login("admin")
    devices = {r[2]: r for r in rows_of(c.get("/health/").content.decode(), "devices")}
    assert devices["0"][4:8] == [f"{(80 + 70 + 88) / 3:.1f}", "90", "600", "1.80"]
    body = c.get("/health/?team=vision").content.decode()
    assert {r[2]: r for r in rows_of(body, "devices")}["0"][7] == "1.10"
    assert "covers only the hours team vision's pods held a GPU" in body
    assert power_points(c.get("/health/?team=nlp").content.decode()) == [("10:00", 120.0)]
