"""The explorer (#26): a month grain, sorting by cost, and week rows that never start before
the window.

Before: `grain=month` answered 400, `sort=cost` answered 400, and a window from Thursday
1 October listed a first week row "2026-09-28".
"""
import re
from datetime import date, timedelta

from apps.reports.data.explore import period_start
from tests.support.factories import make_rate

from tests.support.page_seed import A100, H100, day_d
from .test_page_figures import rows_of
from tests.support.bodies import body_of


def test_period_starts_never_lie_before_the_window():
    oct1 = date(2026, 10, 1)                     # a Thursday
    assert period_start(date(2026, 10, 2), "week", oct1) == oct1
    assert period_start(date(2026, 10, 5), "week", oct1) == date(2026, 10, 5)    # the next Monday
    assert period_start(date(2026, 10, 20), "month", oct1) == oct1
    assert period_start(date(2026, 11, 3), "month", date(2026, 10, 15)) == date(2026, 11, 1)
    assert period_start(date(2026, 10, 20), "month", date(2026, 10, 15)) == date(2026, 10, 15)


def window(days_before=3):
    d = day_d()
    return {"start": (d - timedelta(days=days_before)).isoformat(), "end": (d + timedelta(days=1)).isoformat()}


def test_week_and_month_rows_start_inside_the_window(login):
    client = login("admin")
    d, q = day_d(), window(0)                     # a one-day window: day D only
    for grain in ("week", "month"):
        response = client.get("/explore/", {**q, "grain": grain})
        assert response.status_code == 200, grain
        rows = rows_of(response.content.decode(), "explore-rows")
        assert {r[0] for r in rows} == {d.isoformat()}, grain
    csv_text = body_of(client.get("/explore/", {**q, "grain": "month", "format": "csv"})).decode()
    assert all(line.startswith(d.isoformat()) for line in csv_text.splitlines()[1:])


def test_sort_by_cost_prices_every_row(login):
    make_rate(H100, "2.00", effective_from=date(2020, 1, 1))
    make_rate(A100, "1.40", effective_from=date(2020, 1, 1))
    client = login("finance")
    body = client.get("/explore/", {**window(), "sort": "-cost", "page_size": 1}).content.decode()
    rows = rows_of(body, "explore-rows")
    # nlp-dev: 3 H100-hours = 6.00; cv-train H100 2 h = 4.00; cv-train A100 1/7 h = 0.20 — the dearest first
    assert [r[3] for r in rows] == ["nlp-dev"] and "$6.00" in rows[0]
    body = client.get("/explore/", {**window(), "sort": "cost", "page_size": 1}).content.decode()
    assert "$0.20" in rows_of(body, "explore-rows")[0]
    assert re.search(r"<a href=\"[^\"]*sort=-cost[^\"]*\">Cost▲</a>", body.replace("&amp;", "&"))
    # a role without money cannot sort by what it does not see
    assert login("viewer").get("/explore/", {**window(), "sort": "cost"}).status_code == 400
