"""The team page's "GPUs held in parts" drawn in Chromium: a lead sees their team's HAMi share
with its money, on a desktop and a phone (no sideways scroll of the page, the table scrolls in
its own box), with no console error or foreign request (docs/pages.md)."""
import pytest

from apps.accounting.models import UsageHour
from apps.clusters.models import Cluster, Device
from tests.support.factories import H100, usage_row
from tests.support.page_seed import at, seed_rates

from .browser import PHONE, browser, session, site  # noqa: F401  (fixtures)

WIDTH_JS = "() => document.documentElement.scrollWidth"
ROWS_JS = """() => Array.from(document.querySelectorAll('#shared-gpu-rows tbody tr'))
    .map(tr => Array.from(tr.querySelectorAll('td')).map(td => td.innerText.trim()))"""


def hami_share():
    """Day D 14:00-16:00: cv-train's pod holds 0.30 of an H100 (1 080 s an hour, 540 used); the
    rest, 2 520 s an hour, is unallocated."""
    alpha = Cluster.objects.get(name="alpha")
    gpu = Device.objects.create(cluster=alpha, uuid="GPU-H", host="node-h", gpu_index="0", model_name=H100,
                                gpu_fraction=1.0, first_seen=at(0), last_seen=at(23))
    rows = []
    for hour in (14, 15):
        share = usage_row(gpu, "cv-train", at(hour), pod="embed-0", gpu_seconds=1080.0, used_gpu_seconds=540.0)
        share.gpu_fraction = 0.3
        rows += [share, usage_row(gpu, "", at(hour), gpu_seconds=2520.0)]
    UsageHour.objects.bulk_create(rows)


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_a_leads_hami_share_on_the_team_page(session, site, viewport):
    seed_rates()
    hami_share()
    s = session("team_lead", PHONE) if viewport == "phone" else session("team_lead")
    s.open("/teams/vision/")
    section = s.page.locator("#shared-gpus")
    section.scroll_into_view_if_needed()
    assert section.is_visible()
    [row] = s.page.evaluate(ROWS_JS)
    assert row[:6] == ["cv-train alpha", "NVIDIA H100 80GB HBM3", "HAMi share", "0.60", "0.30", "50.0 %"]
    assert row[6:] == ["$1.20", "1.40", "$2.80"]     # 0.6 GPU-h × 2.00; the rest 0.70 × 2 h = 1.4 GPU-h
    if viewport == "phone":
        assert s.page.evaluate(WIDTH_JS) <= PHONE["width"], "the phone page scrolls sideways"
    s.shot(f"team-shared-gpus-{viewport}", full_page=viewport == "desktop")
    assert s.csp_violations == [] and s.console_errors == [] and s.foreign_requests() == []
