"""A page view reads a closed month's frozen days once (docs/performance.md, "Closed months read
as billed"): the overview of a closed October reads the month as billed, its days' money and its
late hours from one query of the frozen days, with the same figures."""
import html
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounting.actions.periods import do_close_period
from apps.accounting.models import MonthBody

from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_team, make_usage, utc

pytestmark = pytest.mark.django_db
OCTOBER = {"start": "2026-10-01", "end": "2026-11-01"}


def test_the_overview_of_a_closed_month_reads_its_frozen_days_once(finance, client):
    """October: `ml` 10 h at 2.00 on 10 October, closed (20.00); 2 late hours on the 27th."""
    prod = make_cluster()
    make_team("research")
    make_namespace(prod, "ml", label_team="research")
    make_rate(hourly_rate="2.00")
    gpu = make_device(prod, host="n1")
    make_usage(gpu, "ml", utc(2026, 10, 10), hours=10)
    do_close_period("2026-10", actor=finance)
    make_usage(gpu, "ml", utc(2026, 10, 27), hours=2, pod="late")
    client.force_login(finance)
    MonthBody.objects.all().delete()
    with CaptureQueriesContext(connection) as queries:
        page = html.unescape(client.get("/", OCTOBER).content.decode())
    assert re.search(r'id="kpi-cost">\$20.00<', page)
    assert "2.0 GPU-h arrived after the close, billed in 2026-11" in re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", page))
    assert sum("accounting_frozenday" in q["sql"] for q in queries.captured_queries) == 1
