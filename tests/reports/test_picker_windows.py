"""The date picker (#14 P2) and the explorer's hourly limit (#14 P1).

- Presets (last 7 / 30 days, month to date, this month, last month, custom) are whole
  billing-zone days carried as `start` / `end` dates; the page shows the exact window it
  computed, in the billing zone, and the date inputs show the dates that window has.
- Any window the picker offers is valid on every page: the explorer asked for hourly rows over
  more than 7 days shows days with a note instead of answering 400 (it answered 400 to the
  dates its own picker put in the form: 8 days).
"""
import re
from datetime import date, datetime, timedelta, timezone as dt_timezone
from zoneinfo import ZoneInfo

from django.utils import timezone

from apps.accounting.query import presets
from apps.accounting.query.presets import Preset

from tests.support.page_seed import day_d
from .test_page_figures import rows_of
from tests.support.bodies import body_of

BERLIN = ZoneInfo("Europe/Berlin")


def test_presets_by_hand():
    # 2026-03-10 is a Tuesday; February 2026 has 28 days.
    assert presets.presets(date(2026, 3, 10)) == [
        Preset("last_7_days", "Last 7 days", date(2026, 3, 4), date(2026, 3, 11)),
        Preset("last_30_days", "Last 30 days", date(2026, 2, 9), date(2026, 3, 11)),
        Preset("month_to_date", "Month to date", date(2026, 3, 1), date(2026, 3, 11)),
        Preset("this_month", "This month", date(2026, 3, 1), date(2026, 4, 1)),
        Preset("last_month", "Last month", date(2026, 2, 1), date(2026, 3, 1)),
    ]
    # December rolls into the next year, January's last month is December.
    dec = {p.key: p for p in presets.presets(date(2026, 12, 31))}
    assert (dec["this_month"].start, dec["this_month"].end) == (date(2026, 12, 1), date(2027, 1, 1))
    jan = {p.key: p for p in presets.presets(date(2027, 1, 1))}
    assert (jan["last_month"].start, jan["last_month"].end) == (date(2026, 12, 1), date(2027, 1, 1))
    assert jan["last_7_days"].days == 7 and jan["last_30_days"].days == 30


def test_which_preset_a_url_names():
    today = date(2026, 3, 10)
    assert presets.matching(None, "", today) == "last_7_days"
    assert presets.matching("2026-02-01", "2026-03-01", today) == "last_month"
    assert presets.matching("2026-03-01", "2026-03-11", today) == "month_to_date"
    assert presets.matching("2026-03-01", "2026-03-10", today) == "custom"
    assert presets.matching("2026-03-01T00:00:00Z", "2026-04-01", today) == "custom"


def test_window_text_is_the_billing_zone_across_a_dst_change():
    # Europe/Berlin moves to summer time on 2026-03-29: midnight is 23:00 UTC before, 22:00 after.
    start = datetime(2026, 3, 22, 23, tzinfo=dt_timezone.utc)
    end = datetime(2026, 3, 31, 22, tzinfo=dt_timezone.utc)
    assert presets.window_text(start, end, BERLIN) == \
        "2026-03-23 00:00 CET – 2026-04-01 00:00 CEST (Europe/Berlin, 9 days)"   # 215 hours
    assert presets.window_text(start, start + timedelta(hours=5), BERLIN) == \
        "2026-03-23 00:00 CET – 2026-03-23 05:00 CET (Europe/Berlin, 5 hours)"
    assert presets.window_text(start + timedelta(hours=1), end, BERLIN).endswith("(Europe/Berlin, 8.92 days)")
    utc = ZoneInfo("UTC")
    assert presets.window_text(datetime(2026, 3, 1, tzinfo=utc), datetime(2026, 3, 8, tzinfo=utc), utc) == \
        "2026-03-01 00:00 UTC – 2026-03-08 00:00 UTC (7 days)"
    assert presets.input_dates("", "", start, end, BERLIN) == (date(2026, 3, 23), date(2026, 4, 1))
    assert presets.input_dates("", "", start, end + timedelta(hours=5), BERLIN) == (date(2026, 3, 23), date(2026, 4, 2))


def picker(body):
    start = re.search(r'<input type="date" name="start" value="([^"]*)"', body).group(1)
    end = re.search(r'<input type="date" name="end" value="([^"]*)"', body).group(1)
    window = re.search(r'id="picker-window">Window shown: <span>([^<]*)</span>', body).group(1)
    links = dict((label, href.replace("&amp;", "&")) for href, label in
                 re.findall(r'<a href="([^"]*)"[^>]*>([^<]*)</a>', body.split('class="presets"')[1].split("</nav>")[0]))
    current = re.search(r'aria-current="true">([^<]*)</a>', body)
    return start, end, window, links, current.group(1) if current else None


def test_the_default_window_is_the_dates_the_picker_shows(login):
    today = timezone.now().date()
    body = login("admin").get("/").content.decode()
    start, end, window, links, current = picker(body)
    assert (start, end) == ((today - timedelta(days=6)).isoformat(), (today + timedelta(days=1)).isoformat())
    assert window == f"{start} 00:00 UTC – {end} 00:00 UTC (7 days)"
    assert current == "Last 7 days"
    assert list(links) == ["Last 7 days", "Last 30 days", "Month to date", "This month", "Last month"]


def test_preset_links_keep_the_other_parameters_and_drop_page_and_format(login):
    c = login("admin")
    body = c.get("/explore/?team=vision&grain=week&page=1&format=").content.decode()
    _, _, _, links, _ = picker(body)
    first = timezone.now().date().replace(day=1)
    last_first = (first - timedelta(days=1)).replace(day=1)
    assert links["Last month"] == f"?team=vision&grain=week&start={last_first}&end={first}"
    assert links["Last 7 days"] == "?team=vision&grain=week"
    response = c.get("/explore/" + links["Last month"])
    assert response.status_code == 200
    start, end, window, _, current = picker(response.content.decode())
    assert (start, end, current) == (last_first.isoformat(), first.isoformat(), "Last month")


def test_the_window_shown_is_the_one_computed_in_the_billing_zone(login, settings):
    settings.BILLING_TIMEZONE = "Europe/Berlin"
    c = login("admin")
    # Whatever a date means to the parser, the page shows the instants it used, as the API reports them.
    api = c.get("/api/v1/usage/?start=2026-03-23&end=2026-04-01").json()
    used = [datetime.fromisoformat(api[k].replace("Z", "+00:00")) for k in ("start", "end")]
    body = c.get("/?start=2026-03-23&end=2026-04-01").content.decode()
    start, end, window, _, current = picker(body)
    assert (start, end, current) == ("2026-03-23", "2026-04-01", None)
    assert window == presets.window_text(used[0], used[1], BERLIN)
    assert "Custom dates" in body


def test_explorer_hourly_rows_over_its_own_default_dates(login):
    c = login("admin")
    start, end, *_ = picker(c.get("/explore/").content.decode())
    response = c.get(f"/explore/?grain=hour&start={start}&end={end}&namespace=cv-train")
    assert response.status_code == 200
    rows = rows_of(response.content.decode(), "explore-rows")
    assert [r[0][-5:] for r in rows] == ["10:00", "10:00", "11:00"]


def test_explorer_hourly_over_a_long_window_shows_days_with_a_note(login):
    c = login("admin")
    start, end = day_d() - timedelta(days=8), day_d() + timedelta(days=1)     # 9 days
    response = c.get(f"/explore/?grain=hour&start={start}&end={end}&namespace=cv-train")
    assert response.status_code == 200
    body = response.content.decode()
    assert "Hourly rows cover at most 7 days and this window spans 9: shown per day instead" in body
    rows = rows_of(body, "explore-rows")
    assert [(r[0], r[4]) for r in rows] == [(day_d().isoformat(), "NVIDIA A100-SXM4-80GB"),
                                            (day_d().isoformat(), "NVIDIA H100 80GB HBM3")]
    assert re.search(r'<option value="day" selected>', body)
    csv = c.get(f"/explore/?grain=hour&start={start}&end={end}&namespace=cv-train&format=csv")
    assert csv.status_code == 200 and body_of(csv).decode().count("\n") == 3
