"""A team billed in several currencies shows each on its page (docs/chargeback.md; issue 39), never
'unpriced': currencies are never added together.

research's ml ran 2 h on each of three GPUs on 2 November 2026: an H100 at 0.753 BHD (1.506
BHD), an A100 at 0.0207 CLF (0.0414 CLF, four places) and an L4 at 200.5 JPY (401 yen)."""
import html
import re

import pytest

from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_usage, utc

pytestmark = pytest.mark.django_db
A100, L4 = "NVIDIA A100-SXM4-80GB", "NVIDIA L4"


def test_each_currency_of_the_month_is_shown(finance, client):
    prod = make_cluster()
    make_namespace(prod, "ml", "research")
    make_rate(hourly_rate="0.753", currency="BHD")
    make_rate(model=A100, hourly_rate="0.0207", currency="CLF")
    make_rate(model=L4, hourly_rate="200.5", currency="JPY")
    for host, model in (("n1", "NVIDIA H100 80GB HBM3"), ("n2", A100), ("n3", L4)):
        make_usage(make_device(prod, host=host, model=model), "ml", utc(2026, 11, 2, 8), hours=2)
    client.force_login(finance)
    page = html.unescape(client.get("/teams/research/").content.decode())
    table = page[page.index('id="costs"'):]
    row = re.search(r"<tr><td>Month to date.*?</tr>", table[:table.index("</table>")], re.S).group(0)
    assert "unpriced" not in row
    assert all(amount in row for amount in ("1.506", "0.0414", "401")), row
