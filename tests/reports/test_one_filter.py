"""One query string, one answer: every surface parses its window and scope with the one parser
(apps/accounting/query/filters.py, docs/conventions.md "A query string is parsed once"), so the same
bad value is refused with the same status and the same reason on the page, the API and the CSV,
and the same window and scope give the same rows.
"""
import csv
import html
import io
import re
from datetime import timedelta

import pytest

from tests.support.bodies import body_of

from tests.support.page_seed import day_d

EXPLORE = ["/explore/", "/explore/?format=csv", "/api/v1/usage/", "/api/v1/usage/?format=csv"]
IDLE = ["/idle/", "/api/v1/idle/", "/api/v1/idle/?format=csv"]
HEALTH = ["/health/"]
WINDOWED = EXPLORE + IDLE + HEALTH
CHARGEBACK = ["/chargeback/", "/api/v1/chargeback/", "/api/v1/chargeback/?format=csv"]
ADVICE = ["/advice/", "/api/v1/quota-recommendations/", "/api/v1/quota-recommendations/?format=csv"]
RIGHTSIZING = ["/advice/rightsizing/", "/api/v1/rightsizing/", "/api/v1/rightsizing/?format=csv"]
SCOPED = WINDOWED + ADVICE + RIGHTSIZING


def refusal(response) -> tuple[int, str]:
    """(status, reason) whatever the format: the 400 page's list, a JSON body, a CSV body."""
    body = response.content.decode()
    kind = response.get("Content-Type", "")
    if kind.startswith("application/json"):
        data = response.json()
        reasons = [str(v) if k == "detail" else f"{k}: {v[0] if isinstance(v, list) else v}"
                   for k, v in data.items()]
    elif kind.startswith("text/csv"):
        rows = list(csv.reader(io.StringIO(body)))
        reasons = []
        for k, v in zip(rows[0], rows[1]):
            v = re.sub(r"^\[(?:ErrorDetail\(string=)?'(.*?)'(?:, code='\w+'\))?\]$", r"\1", v)
            reasons.append(v if k == "detail" else f"{k}: {v}")
    else:
        found = re.findall(r'<ul class="error">(.*?)</ul>', body, re.S)
        if found:
            reasons = [html.unescape(m) for m in re.findall(r"<li>(.*?)</li>", found[0], re.S)]
        else:   # the 403 / 404 pages say the reason in their first paragraph
            text = html.unescape(re.findall(r"<p>(.*?)</p>", body, re.S)[0])
            reasons = [text.removeprefix("There is nothing at this address: ").removesuffix(".")
                       if response.status_code == 404 else text]
    return response.status_code, " | ".join(sorted(reasons))


def ask(client, url, params):
    path, _, fmt = url.partition("?")
    return client.get(path, {**params, **({"format": "csv"} if fmt else {})})


FAR = (day_d() + timedelta(days=365 * 100)).isoformat()
CASES = [
    # (who, surfaces, params, status, reason)
    ("admin", WINDOWED, {"start": "2026-13-01"}, 400, "start: "),
    ("admin", WINDOWED, {"start": "2026-03-10", "end": "2026-03-01"}, 400,
     "end: end (2026-03-01T00:00:00+00:00) must be after start (2026-03-10T00:00:00+00:00)"),
    # Each endpoint's own limit (docs/security.md, "No request ties up the portal"): daily
    # figures MAX_REPORT_DAYS, hourly rows per pod (idle) MAX_HOURLY_REPORT_DAYS.
    ("admin", EXPLORE + HEALTH, {"start": "2020-01-01", "end": "2026-01-01"}, 400,
     "end: the window is 2192 days; the limit is 400 days (MAX_REPORT_DAYS)"),
    ("admin", IDLE, {"start": "2020-01-01", "end": "2026-01-01"}, 400,
     "end: the window is 2192 days; the limit for reads of hourly rows is 93 days (MAX_HOURLY_REPORT_DAYS)"),
    ("admin", WINDOWED, {"start": "2026-03-01", "end": FAR}, 400, "end: "),
    ("admin", SCOPED, {"team": "no-such-team"}, 404, "no team named 'no-such-team'"),
    ("team_lead", SCOPED, {"team": "nlp"}, 403, "team 'nlp' is not one of yours"),
    ("admin", SCOPED, {"cluster": "no-such-cluster"}, 404, "no cluster named 'no-such-cluster'"),
    ("admin", EXPLORE[:2], {"grain": "fortnight"}, 400, "grain: grain='fortnight' is not one of"),
    ("admin", ADVICE, {"window_days": "0"}, 400,
     "window_days: window_days must be a whole number of days, 1 to 366"),
    ("admin", RIGHTSIZING, {"window_days": "0"}, 400,
     "window_days: window_days must be a whole number of days, 1 to 31 (MAX_RIGHTSIZING_DAYS: this reads every hourly row of each workload)"),
    ("admin", CHARGEBACK, {"period": "2026-13"}, 400, "period: "),
    ("admin", CHARGEBACK, {"team": "no-such-team"}, 404, "no team named 'no-such-team'"),
]


@pytest.mark.parametrize("who,surfaces,params,status,reason", CASES,
                         ids=[f"{c[0]}-{'&'.join(f'{k}={v!r}' for k, v in c[2].items())}-{c[1][0]}" for c in CASES])
def test_one_refusal_everywhere(login, who, surfaces, params, status, reason):
    c = login(who)
    answers = {url: refusal(ask(c, url, params)) for url in surfaces}
    assert {a[0] for a in answers.values()} == {status}, answers
    assert len({a[1] for a in answers.values()}) == 1, answers
    assert next(iter(answers.values()))[1].startswith(reason), answers


def test_the_same_rows_on_page_api_and_csv(login):
    """The idle pods of one window and team: the page's table, the API and its CSV list the same
    pods (vision's train-0: 600 s idle at 11:00 = 0.166667 idle GPU-hours; mig-0 none)."""
    c = login("team_lead")
    window = {"start": day_d().isoformat(), "end": (day_d() + timedelta(days=1)).isoformat()}
    api = c.get("/api/v1/idle/", window).json()["results"]
    rows = list(csv.DictReader(io.StringIO(c.get("/api/v1/idle/", {**window, "format": "csv"}).content.decode())))
    page = c.get("/idle/", {**window, "max_utilization": "1", "min_idle_minutes": "0"}).content.decode()
    assert [(r["pod"], r["idle_gpu_hours"]) for r in api] == [("train-0", 0.166667)]
    assert [(r["pod"], r["idle_gpu_hours"]) for r in rows] == [("train-0", "0.166667")]
    assert "train-0" in page and "notebook-0" not in page
    # and the advice's API and CSV, scoped to the team lead's one team
    api = c.get("/api/v1/quota-recommendations/").json()
    rows = list(csv.DictReader(io.StringIO(
        c.get("/api/v1/quota-recommendations/", {"format": "csv"}).content.decode())))
    assert sorted((r["kind"], r["name"]) for r in api["results"]) == sorted((r["kind"], r["name"]) for r in rows)
    assert {r["team"] for r in rows} <= {"vision"}


@pytest.mark.parametrize("url", SCOPED)
def test_one_spelling_of_a_scope(login, url):
    """A cluster or team name with spaces round it is the same name on every surface (the
    parser strips both), never a 404 on some and an answer on others."""
    c = login("admin")
    assert ask(c, url, {"cluster": " alpha ", "team": " vision "}).status_code == 200


def test_explorer_csv_and_usage_api_agree(login):
    """One day, one team's scope: the explorer's CSV rows summed per namespace are the usage
    API's rows by namespace. vision = cv-train: train-0 2 h on an H100 + mig-0 1/7 h = 2.142857."""
    c = login("team_lead")
    window = {"start": day_d().isoformat(), "end": (day_d() + timedelta(days=1)).isoformat()}
    rows = list(csv.DictReader(io.StringIO(body_of(c.get("/explore/", {**window, "format": "csv"})).decode())))
    by_ns = {}
    for r in rows:
        by_ns[r["namespace"]] = round(by_ns.get(r["namespace"], 0) + float(r["allocated_gpu_hours"]), 6)
    api = {r["key"]: r["allocated_gpu_hours"]
           for r in c.get("/api/v1/usage/", {**window, "group_by": "namespace"}).json()["results"]}
    assert by_ns == api == {"cv-train": 2.142857}
