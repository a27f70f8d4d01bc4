"""The running month's forecast is a stored answer (docs/forecast.md, "Kept current";
docs/performance.md, "The running month's forecast, stored"): the worker computes every team's
forecast once after a write, the chargeback page and /api/v1/forecast/ read it back without
touching usage, a team lead reads their teams' rows of it, and a write that changes it (an hour,
a rate edit, a namespace move, the watermark) is never served stale.

November 2026 starts on a Sunday; "now" is 13:30 UTC on Wednesday the 18th and the ingest
watermark stands at noon. Team research holds one H100 at 2.00 USD per GPU-hour for 8 hours
(08:00-16:00) every weekday and 2 hours (10:00-12:00) every weekend day, from 20 October
(docs/forecast.md, worked example): month to date 110 h = 220.00, history 4-17 November (ten
weekdays at 16.00, four weekend days at 4.00), left 8.5 weekdays and 4 weekend days: projected
220 + 8.5 × 16 + 4 × 4 = 372.00. Team vision holds another H100 4 hours (00:00-04:00) every
day: month to date 18 × 4 h × 2.00 = 144.00, every day 8.00, projected 144 + 12.5 × 8 = 244.00.
Celery runs eagerly here (no REDIS_URL): the task queued on commit runs when the captured
callbacks run.
"""
from datetime import date, datetime, timedelta, timezone as dt_timezone
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounting.stored.provenance import recomputed
from apps.accounting.actions.namespaces import do_assign_namespace
from apps.accounting.actions.rates import do_save_rate
from apps.accounting.forecast.stored import fleet_forecast
from apps.accounting.models import MonthBody, Rate
from apps.accounting.forecast.teams import month_forecast
from apps.clusters.models import Cluster
from apps.reports.forecast_rows import forecast_payload
from apps.teams.models import Namespace

from tests.support.factories import H100, make_cluster, make_device, make_namespace, make_rate, make_team, make_usage, utc

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]   # stored answers: Postgres triggers log the inputs
NOVEMBER = "2026-11"
NOON_18 = utc(2026, 11, 18, 12)
CLOCK = utc(2026, 11, 18, 13, 30)
API = "/api/v1/forecast/"
PAGE = f"/chargeback/?period={NOVEMBER}"
USAGE_TABLES = ('"accounting_usagehour"', '"accounting_usageday"')


def steady_history(device, namespace, first: date, until: datetime):
    """8 hours from 08:00 on weekdays, 2 from 10:00 on weekend days, up to `until`."""
    day = first
    while True:
        weekend = day.weekday() >= 5
        start = datetime.combine(day, datetime.min.time(), tzinfo=dt_timezone.utc) + timedelta(hours=10 if weekend else 8)
        if start >= until:
            return
        make_usage(device, namespace, start, min(2 if weekend else 8, int((until - start).total_seconds() // 3600)))
        day += timedelta(days=1)


@pytest.fixture
def november(db, team_lead, monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr("apps.accounting.tasks.timezone.now", lambda: CLOCK)   # django.utils.timezone.now
    with django_capture_on_commit_callbacks(execute=True):
        prod = make_cluster()
        make_rate(H100, "2.00", effective_from=date(2026, 1, 1))
        make_namespace(prod, "llm", "research")
        make_team("vision", lead=team_lead)
        make_namespace(prod, "cv", "vision")
        gpu = make_device(prod, "node-1")
        steady_history(gpu, "llm", date(2026, 10, 20), NOON_18)
        make_usage(make_device(prod, "node-2"), "cv", utc(2026, 10, 20), 4)
        for back in range(1, 30):
            make_usage(prod.devices.get(host="node-2"), "cv", utc(2026, 10, 20) + timedelta(days=back), 4)
        Cluster.objects.filter(pk=prod.pk).update(ingested_until=NOON_18)
    return prod, gpu


def rows_of(response) -> dict:
    assert response.status_code == 200, response.content[:300]
    return {r["team"]: (r["month_to_date"], r["projected"], r["low"], r["high"]) for r in response.json()["results"]}


def page_rows(response) -> dict:
    assert response.status_code == 200
    return {row["key"]: [(f["month_to_date"], f["projected"]) for f in row.get("forecast", [])]
            for row in response.context["payload"]["results"] if row.get("forecast")}


def read(client_, url):
    """The response, whether the request computed anything, and whether it read a usage table."""
    seen = recomputed.copy()
    with CaptureQueriesContext(connection) as queries:
        response = client_.get(url)
    computed = recomputed - seen
    usage = any(t in q["sql"] for q in queries.captured_queries for t in USAGE_TABLES)
    return response, computed, usage


STEADY = {"research": ("220.00", "372.00", "372.00", "372.00"), "vision": ("144.00", "244.00", "244.00", "244.00")}


def test_the_worker_stores_the_forecast_and_page_and_api_compute_nothing(november, finance, api, client):
    key = MonthBody.objects.filter(period=NOVEMBER, key__startswith="forecast").values_list("key", flat=True)
    assert list(key), "the worker stored no forecast"
    response, computed, usage = read(api(finance), API)
    assert rows_of(response) == STEADY
    assert not computed and not usage and "X-Answer-Computed" not in response.headers
    assert response.json() == forecast_payload(month_forecast(NOVEMBER, now=CLOCK))   # the live answer, exactly
    client.force_login(finance)
    response, computed, usage = read(client, PAGE)
    assert page_rows(response) == {"research": [("220.00", "372.00")], "vision": [("144.00", "244.00")]}
    assert not computed and not usage and "X-Answer-Computed" not in response.headers


def test_an_ingested_hour_is_prepared_by_the_worker_and_read_stored(november, finance, api,
                                                                    django_capture_on_commit_callbacks):
    prod, gpu = november
    with django_capture_on_commit_callbacks(execute=True):
        make_usage(gpu, "llm", NOON_18)                                     # 12:00-13:00, as ingest writes it
        Cluster.objects.filter(pk=prod.pk).update(ingested_until=utc(2026, 11, 18, 13))
    response, computed, usage = read(api(finance), API)
    assert not computed and not usage and "X-Answer-Computed" not in response.headers
    # research: 222.00 booked; left 11/24 of the 18th + 8 weekdays at 16.00, 4 weekend days at 4.00:
    # 222 + 128 + 7.333… + 16 = 373.33. vision: 144 + (8 + 11/24 + 4) × 8 = 243.67
    assert rows_of(response) == {"research": ("222.00", "373.33", "373.33", "373.33"),
                                 "vision": ("144.00", "243.67", "243.67", "243.67")}
    assert response.json()["as_of"] == "2026-11-18T13:00:00Z"
    # the stored dataclasses are the live ones, to the last digit (373.3333… and each day's path)
    assert fleet_forecast(NOVEMBER) == month_forecast(NOVEMBER, now=CLOCK)


def _hour_into_history(prod, gpu, actor):
    make_usage(gpu, "llm", utc(2026, 11, 10, 16), 4)                       # Tuesday the 10th: 12 h, 24.00


def _next_hour(prod, gpu, actor):
    make_usage(gpu, "llm", NOON_18)
    Cluster.objects.filter(pk=prod.pk).update(ingested_until=utc(2026, 11, 18, 13))


def _rate_edit(prod, gpu, actor):
    rate = Rate.objects.get(gpu_model=H100)
    rate.hourly_rate = Decimal("3.00")
    do_save_rate(actor, rate)


def _namespace_move(prod, gpu, actor):
    do_assign_namespace(Namespace.objects.get(name="llm"), make_team("newco"), date(2026, 11, 18), actor=actor)


WRITES = {
    # 220 + 8 = 228 booked; weekday mean (9 × 16 + 24) / 10 = 16.80: 228 + 8.5 × 16.80 + 4 × 4 = 386.80,
    # low 228 + 8.5 × 16 + 16 = 380.00, high 228 + 8.5 × 24 + 16 = 448.00
    "an hour into the history": (_hour_into_history, {"research": ("228.00", "386.80", "380.00", "448.00"),
                                                      "vision": STEADY["vision"]}),
    "the next hour and the watermark": (_next_hour, {"research": ("222.00", "373.33", "373.33", "373.33"),
                                                     "vision": ("144.00", "243.67", "243.67", "243.67")}),
    # everything at 3.00: research 110 h = 330.00 + 8.5 × 24 + 4 × 6 = 558.00 (186 h × 3.00);
    # vision 72 h = 216.00 + 12.5 × 12 = 366.00
    "a rate edit": (_rate_edit, {"research": ("330.00", "558.00", "558.00", "558.00"),
                                 "vision": ("216.00", "366.00", "366.00", "366.00")}),
    # llm is newco's from the 18th: research keeps 220 − 4 h × 2.00 = 212.00 and spends no more;
    # newco has the 18th's 4 h (8.00) and no history of its own: too new to project, its month to
    # date the 8.00 on its statement all the same
    "a namespace move": (_namespace_move, {"research": ("212.00", "212.00", "212.00", "212.00"),
                                           "newco": ("8.00", None, None, None), "vision": STEADY["vision"]}),
}


@pytest.mark.parametrize("write", list(WRITES))
def test_a_write_makes_it_stale_and_the_next_read_shows_the_new_figures(november, write, finance, admin_user, api,
                                                                         client, django_capture_on_commit_callbacks):
    prod, gpu = november
    change, expected = WRITES[write]
    assert rows_of(api(finance).get(API)) == STEADY
    with django_capture_on_commit_callbacks(execute=False):        # no worker: the callbacks never run
        change(prod, gpu, admin_user)
    response, computed, _usage = read(api(finance), API)
    assert rows_of(response) == expected                            # never the old figures
    assert (NOVEMBER, "forecast") in computed and response.headers["X-Answer-Computed"] == "on-read"
    again, computed, usage = read(api(finance), API)                # what the reader stored is read back
    assert rows_of(again) == expected and not computed and not usage
    client.force_login(finance)
    response, computed, usage = read(client, PAGE)
    assert {team: rows[0] for team, rows in page_rows(response).items()} == \
        {team: (r[0], r[1]) for team, r in expected.items()}
    assert not computed and not usage


def test_a_write_with_the_worker_is_read_stored_with_the_new_figures(november, finance, admin_user, api,
                                                                     django_capture_on_commit_callbacks):
    prod, gpu = november
    with django_capture_on_commit_callbacks(execute=True):
        _rate_edit(prod, gpu, admin_user)
    response, computed, usage = read(api(finance), API)
    assert rows_of(response) == WRITES["a rate edit"][1]
    assert not computed and not usage and "X-Answer-Computed" not in response.headers


def test_a_team_lead_reads_their_teams_rows_of_the_stored_answer(november, team_lead, api, client):
    response, computed, usage = read(api(team_lead), API)
    assert rows_of(response) == {"vision": STEADY["vision"]}
    assert not computed and not usage and "X-Answer-Computed" not in response.headers
    assert response.json() == forecast_payload(month_forecast(NOVEMBER, now=CLOCK, teams={"vision"}))
    assert api(team_lead).get(API, {"team": "research"}).status_code == 403
    client.force_login(team_lead)
    response, computed, usage = read(client, PAGE)
    assert page_rows(response) == {"vision": [("144.00", "244.00")]}
    assert not computed and not usage


def test_an_ingest_run_leaves_the_forecast_current_at_its_new_watermark(db, finance, api, monkeypatch,
                                                                       django_capture_on_commit_callbacks):
    """The worker's task runs once the run's rows *and* its watermark are committed: a task run
    between the two would store a forecast at the old watermark, stale as soon as it moves."""
    from apps.ingest.pipeline import ingest
    from tests.support.series import T0, dt, small_cluster_fetcher
    clock = utc(2026, 10, 5, 13)
    monkeypatch.setattr("apps.accounting.tasks.timezone.now", lambda: clock)
    with django_capture_on_commit_callbacks(execute=True):
        cluster = make_cluster("spine")
        make_rate(hourly_rate="2.00")
    with django_capture_on_commit_callbacks(execute=True):
        ingest(cluster, dt(T0), dt(T0 + 7200), fetcher=small_cluster_fetcher(), now=clock)
    cluster.refresh_from_db()
    assert cluster.ingested_until == utc(2026, 10, 5, 12)
    response, computed, usage = read(api(finance), API)
    assert response.status_code == 200 and response.json()["as_of"] == "2026-10-05T12:00:00Z"
    assert not computed and not usage and "X-Answer-Computed" not in response.headers


def test_a_cluster_filter_and_the_clock_past_the_month_stay_live(november, finance, api, monkeypatch):
    # `cluster=` is not stored; the API does not take it, so the live function answers it as before
    assert {t.team for t in month_forecast(NOVEMBER, now=CLOCK, cluster="prod").teams} == {"research", "vision"}
    monkeypatch.setattr("apps.accounting.tasks.timezone.now", lambda: utc(2026, 12, 1, 1))
    ended = api(finance).get(API, {"period": NOVEMBER})
    assert ended.status_code == 400 and "has ended" in ended.json()["period"]


def test_pricing_each_history_day_once_per_rate_epoch_changes_no_figure(november):
    """The live computation prices a history day once per stretch of the card in which no rate
    takes effect (`RateCard.epoch`), not once per day left: the same Decimals as pricing every
    day. With 3.00 from the 25th, research: 220 + 4.5 weekdays (half the 18th, 19, 20, 23, 24) × 16
    + 2 weekend days × 4 + 4 weekdays (25-27, 30) × 24 + 2 weekend days × 6 = 220 + 80 + 108 =
    408.00; vision: 144 + 6.5 days × 8 + 6 days × 12 = 268.00."""
    from apps.accounting.pricing.rates import load_rate_card
    make_rate(H100, "3.00", effective_from=date(2026, 11, 25))
    card = load_rate_card()

    class DayByDay:                     # the card without its epochs: every day priced on its own
        def lookup(self, *args):
            return card.lookup(*args)
    fast = month_forecast(NOVEMBER, now=CLOCK, card=card)
    assert fast == month_forecast(NOVEMBER, now=CLOCK, card=DayByDay())
    assert {t.team: str(t.forecast.projected.quantize(Decimal("0.01"))) for t in fast.teams} == \
        {"research": "408.00", "vision": "268.00"}


def forecast_cells(body: str) -> list[list[str]]:
    """The team page's forecast table: each row's cells, tags stripped."""
    import re
    table = re.search(r'<table[^>]*id="forecast-table".*?</table>', body, re.S).group(0)
    return [[re.sub(r"<[^>]+>", "", td).strip() for td in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
            for tr in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S)]


def test_the_team_page_shows_the_teams_rows_of_the_stored_forecast(november, finance, admin_user, client,
                                                                   monkeypatch, django_capture_on_commit_callbacks):
    """The team page, the chargeback page and the API show one forecast per team: the stored fleet
    answer's rows. While the worker keeps it current, the page computes no forecast (until
    2026-11-26 it computed the team's own from its usage on every miss of its fragment)."""
    prod, gpu = november

    def computed(*args, **kwargs):
        raise AssertionError("the team page computed a forecast")
    for name in ("apps.accounting.forecast.stored.month_forecast", "apps.reports.data.team.month_forecast"):
        monkeypatch.setattr(name, computed, raising=False)
    client.force_login(finance)
    assert forecast_cells(client.get("/teams/research/").content.decode())[0][:2] == ["$220.00", "$372.00"]
    assert forecast_cells(client.get("/teams/vision/").content.decode())[0][:2] == ["$144.00", "$244.00"]
    with django_capture_on_commit_callbacks(execute=True):          # the worker stores the new answer
        monkeypatch.undo()
        _namespace_move(prod, gpu, admin_user)
    for name in ("apps.accounting.forecast.stored.month_forecast", "apps.reports.data.team.month_forecast"):
        monkeypatch.setattr(name, computed, raising=False)
    # llm is newco's from the 18th: research keeps 212.00 and spends no more; newco: too new to project
    assert forecast_cells(client.get("/teams/research/").content.decode())[0][:2] == ["$212.00", "$212.00"]
    assert forecast_cells(client.get("/teams/newco/").content.decode()) == [
        ["no usage in the last 14 complete days: too new to project"]]
