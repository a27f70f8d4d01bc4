"""Right-sizing on simulated histories whose answers are known by hand (tests/recommendations/rightsizing_fleet.py):
the rows, their money at the rate card, the page, the team page, the API, the CSV and the YAML."""
import csv
import io

import pytest
import yaml
from django.test import Client
from rest_framework.test import APIClient

from apps.accounting.usage.workloads import workload_usage
from apps.recommendations.mig_profiles import mig_model, profile_named
from apps.recommendations.rightsizing.rows import CSV_COLUMNS, RightsizeQuery, rightsizing_rows

from tests.support import factories as f
from . import rightsizing_fleet as fleet

URL = "/api/v1/rightsizing/"
PAGE = "/advice/rightsizing/"
WINDOW = (f.END - 48 * f.HOUR, f.END)


@pytest.fixture
def world(db):
    fleet.rates()
    c, teams = fleet.build()
    return {"cluster": c, **teams}


def rows_by_name(**kw):
    return {r["workload_name"]: r for r in rightsizing_rows(RightsizeQuery(window_days=2, now=f.END, **kw))}


def test_workloads_group_pods_by_owner_and_fall_back_to_the_pod(world):
    usage = {(u.workload_kind, u.workload_name): u for u in workload_usage([world["cluster"].pk], *WINDOW)}
    assert set(usage) == {("Deployment", "infer-small"), ("StatefulSet", "peaky"), ("Notebook", "nb-erin"),
                          ("Deployment", "l4-serve"), ("Job", "l40s-train"), ("Deployment", "embedder"),
                          ("Pod", "tiny"), ("Job", "trainer")}
    infer = usage[("Deployment", "infer-small")]
    assert (infer.pods, infer.hours, infer.pod_hours, infer.device_hours) == (2, 48, 48, 48)
    assert infer.fb_peak_mib == 8192.0 and infer.activity_p95 == pytest.approx(0.10)
    peaky = usage[("StatefulSet", "peaky")]
    # one hour at 9,000 MiB among 47 at 4,096: the peak is 9,000; P95 (position 44.65 of 0..47) is 4,096
    assert (peaky.fb_peak_mib, peaky.fb_p95_mib) == (9000.0, 4096.0)
    assert usage[("Job", "trainer")].devices_per_pod == 2.0


def test_advice_and_savings_by_hand(world):
    rows = rows_by_name()
    expected = {
        # name: (action text, profile, monthly cost now, advised, saving, confidence), measured over the
        # 48-hour window and never extrapolated: a window under 730 hours gives its own saving
        # (docs/advice-and-alerts.md, "What a saving is")
        # H100 4.00 × 48 = 192.00 → its 1g.10gb at its own 0.60 × 48 = 28.80
        "infer-small": ("use 1g.10gb", "1g.10gb", "192.00", "28.80", "163.20", "medium"),
        # 9,000 MiB peak × 1.15 > 1g.10gb: 1g.20gb, no rate of its own: 4.00 × 1/7 × 48 = 27.428… → 27.43
        "peaky": ("use 1g.20gb", "1g.20gb", "192.00", "27.43", "164.57", "medium"),
        # A100 3g.40gb = 2.80 × 3/7 = 1.20 an instance-hour × 48 = 57.60 → 1g.10gb 0.40 × 48 = 19.20
        "embedder": ("use 1g.10gb", "1g.10gb", "57.60", "19.20", "38.40", "medium"),
        # idle every second it held the GPU: 2.80 × the 12 instance-hours it held = 33.60, all saved
        # (before: × 730 ÷ 48 hours of history = 511.00, fifteen times what it cost)
        "nb-erin": ("release it: never used", None, "33.60", "0.00", "33.60", "low"),
        # L4 0.70 × 48 = 33.60 → a quarter share 0.175 × 48 = 8.40
        "l4-serve": ("share a GPU (time-slicing)", None, "33.60", "8.40", "25.20", "medium"),
        # L40S (1.40): no MIG advice; too busy for a share
        "l40s-train": ("keep it", None, "67.20", "67.20", "0.00", "medium"),
        # already on the smallest A100 slice: 2.80 / 7 × 48 = 19.20, kept
        "tiny": ("keep it", None, "19.20", "19.20", "0.00", "medium"),
        # two H100s per pod: 2 × 4.00 × 48 = 384.00, kept
        "trainer": ("keep it", None, "384.00", "384.00", "0.00", "medium"),
    }
    got = {name: (r["action_text"], r["profile"], r["monthly_cost_now"], r["monthly_cost_advised"],
                  r["monthly_saving"], r["confidence"]) for name, r in rows.items()}
    assert got == expected
    assert all(r["currency"] == "EUR" for r in rows.values())
    # largest saving first
    assert [r["workload_name"] for r in rightsizing_rows(RightsizeQuery(window_days=2, now=f.END))][:5] == [
        "peaky", "infer-small", "embedder", "nb-erin", "l4-serve"]
    assert rows["l40s-train"]["resource_advised"] is None and rows["l40s-train"]["profile"] is None


def test_a_profile_is_never_below_the_peak(world):
    for r in rightsizing_rows(RightsizeQuery(window_days=2, now=f.END)):
        if r["profile"]:
            model = mig_model(r["gpu_model"])
            assert profile_named(model, r["profile"]).memory_mib(model) >= r["fb_peak_mib"] * 1.15


def test_yaml_is_the_resource_change(world):
    rows = rows_by_name()
    doc = yaml.safe_load(rows["infer-small"]["yaml"])
    assert doc == {"resources": {"limits": {"nvidia.com/mig-1g.10gb": 1}}}
    assert "# instead of nvidia.com/gpu: 1" in rows["infer-small"]["yaml"]
    assert "Deployment infer-small in namespace ml" in rows["infer-small"]["yaml"]
    assert yaml.safe_load(rows["embedder"]["yaml"]) == {"resources": {"limits": {"nvidia.com/mig-1g.10gb": 1}}}
    assert "instead of nvidia.com/mig-3g.40gb: 1" in rows["embedder"]["yaml"]
    assert yaml.safe_load(rows["l4-serve"]["yaml"]) == {"resources": {"limits": {"nvidia.com/gpu.shared": 1}}}
    # a release is a change to apply, not a comment: Kubeflow stops an annotated notebook
    assert yaml.safe_load(rows["nb-erin"]["yaml"]) == {"metadata": {"annotations": {"kubeflow-resource-stopped": "true"}}}
    assert rows["tiny"]["yaml"] == ""


def test_unpriced_without_a_rate(db):
    c, _ = fleet.build()
    rows = rows_by_name()
    assert rows["infer-small"]["action_text"] == "use 1g.10gb"
    assert rows["infer-small"]["monthly_saving"] is None and rows["infer-small"]["currency"] is None


def test_a_lead_sees_own_teams_workloads_and_the_saving(world):
    lead = f.make_user("lead", "team_lead", teams=[world["search"]])
    client = Client()
    client.force_login(lead)
    page = client.get(PAGE, {"window_days": 2})
    assert page.status_code == 200
    html = page.content.decode()
    assert "l4-serve" in html and "embedder" in html and "infer-small" not in html
    assert "nvidia.com/mig-1g.10gb: 1" in html
    # search saves 38.40 + 25.20 = 63.60 a month
    assert "€63.60" in html
    body = APIClient()
    body.force_authenticate(lead)
    answer = body.get(URL, {"window_days": 2}).json()
    assert {r["workload_name"] for r in answer["results"]} == {"l4-serve", "l40s-train", "embedder", "tiny"}
    assert answer["monthly_saving"] == [{"amount": "63.60", "currency": "EUR"}]
    assert body.get(URL, {"team": "vision"}).status_code == 403


def test_viewers_see_no_money(world):
    viewer = f.make_user("viewer", "viewer")
    api = APIClient()
    api.force_authenticate(viewer)
    answer = api.get(URL, {"window_days": 2}).json()
    assert len(answer["results"]) == 8 and answer["monthly_saving"] == []
    assert all(r["monthly_saving"] is None and r["currency"] is None for r in answer["results"])
    client = Client()
    client.force_login(viewer)
    assert "€" not in client.get(PAGE, {"window_days": 2}).content.decode()


def test_csv_has_one_row_per_workload(world):
    admin = f.make_user("admin", "admin")
    api = APIClient()
    api.force_authenticate(admin)
    r = api.get(URL, {"window_days": 2, "format": "csv", "team": "vision"})
    assert r.status_code == 200 and r["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.content.decode())))
    assert list(rows[0]) == CSV_COLUMNS
    assert {(x["workload_name"], x["monthly_saving"]) for x in rows} == {
        ("peaky", "164.57"), ("infer-small", "163.20"), ("trainer", "0.00")}


@pytest.mark.parametrize("params, status", [
    ({"window_days": "0"}, 400), ({"window_days": "x"}, 400), ({"cluster": "nope"}, 404), ({"team": "nope"}, 404),
    ({"team": "a\x00b"}, 400),
])
def test_bad_parameters_are_4xx(world, params, status):
    admin = f.make_user("admin", "admin")
    api = APIClient()
    api.force_authenticate(admin)
    assert api.get(URL, params).status_code == status
    client = Client()
    client.force_login(admin)
    assert client.get(PAGE, params).status_code == status


def test_team_page_and_advice_page_say_what_could_be_saved(world):
    lead = f.make_user("lead", "team_lead", teams=[world["vision"]])
    client = Client()
    client.force_login(lead)
    team = client.get("/teams/vision/", {"start": "2026-11-18", "end": "2026-11-20"})
    assert team.status_code == 200
    html = team.content.decode()
    assert "What you could save" in html and "€327.77" in html      # 164.57 + 163.20
    # the full list opens on the same window, so it shows the same figure
    assert "/advice/rightsizing/?start=2026-11-18&amp;end=2026-11-20&amp;team=vision" in html
    advice_page = client.get("/advice/").content.decode()
    assert "What you could save" in advice_page
