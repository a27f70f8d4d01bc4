"""The demo's story (docs/demo.md): a closed month with a late-data adjustment, a re-org, alerts.

Loaded as `make demo` loads it, through a real Prometheus, on a short history: 48 hours up to
2026-11-02 06:00 UTC (billing zone UTC), so October's last 18 hours are in it.
"""
from datetime import datetime, timezone

import pytest
from django.db.models import Sum

from apps.accounting.models import BillingPeriod, StatementLine
from apps.accounting.ledger.statements import statement
from apps.accounting.models import UsageHour
from apps.reports.statement_rows import statement_payload
from apps.accounting.usage.cells import UsageFilter, group_cells, usage_cells
from apps.recommendations.models import Alert, RecommendationSnapshot
from apps.recommendations.rightsizing.rows import RightsizeQuery, rightsizing_rows
from apps.ingest.models import IngestRun
from apps.simulator.demo import create_logins, is_loaded, load_demo, plan_story
from apps.teams.models import Team

pytestmark = [pytest.mark.django_db]

NOW = datetime(2026, 11, 2, 6, 30, tzinfo=timezone.utc)


def utc(*args):
    return datetime(*args, tzinfo=timezone.utc)


def ts(*args):
    return int(utc(*args).timestamp())


def test_the_story_calendar(settings):
    settings.BILLING_TIMEZONE = "UTC"
    story = plan_story(NOW, hours=48)
    assert (story.start, story.end) == (ts(2026, 10, 31, 6), ts(2026, 11, 2, 6))
    assert story.month_start == ts(2026, 11, 1)
    assert story.late_from == ts(2026, 10, 31, 18)            # six hours before October ends
    assert story.relabel_at == ts(2026, 11, 1, 15)           # halfway through November's 30 hours
    assert story.closed_period == "2026-10"
    # by default the history starts on the first of last month
    assert plan_story(NOW).start == ts(2026, 10, 1)
    # in a billing zone east of UTC, last month starts at its local midnight
    settings.BILLING_TIMEZONE = "Asia/Tokyo"
    assert plan_story(NOW).start == ts(2026, 9, 30, 15)
    # a history too short to hold last month's end closes nothing
    settings.BILLING_TIMEZONE = "UTC"
    assert plan_story(NOW, hours=20).closed_period is None


@pytest.mark.prometheus
def test_the_demo_loads_the_whole_story(settings):
    settings.BILLING_TIMEZONE = "UTC"
    create_logins()
    load_demo(48, log=lambda *_: None, now=NOW)
    assert is_loaded()

    # October closed; its last six hours arrived after the close and sit in November as
    # adjustments: 18 GPUs (12 whole, 2 L4s, 4 MIG boards fully cut) × 6 hours = 108 GPU-hours
    # in all, allocated or not.
    # closed by finance on 1 November, as docs/demo.md tells it — not when the demo ran
    assert BillingPeriod.objects.get(period="2026-10").closed_at == utc(2026, 11, 1, 9)
    lines = [line for line in statement("2026-11").lines if line.kind == "adjustment"]
    assert lines and {line.adjusts_period for line in lines} == {"2026-10"}
    assert float(sum(line.allocated_gpu_seconds for line in lines)) / 3600 == pytest.approx(108.0)
    october = statement_payload(statement("2026-10"), "team", None)
    assert october["closed"] and october["totals_by_currency"]["USD"] != "0.00"

    # the re-org: batch is platform's until 15:00 on November 1st, data's after
    for name in ("research", "search", "platform", "data"):
        assert Team.objects.filter(name=name).exists()
    before = group_cells(usage_cells(UsageFilter(start=utc(2026, 11, 1), end=utc(2026, 11, 1, 15))), "team")
    after = group_cells(usage_cells(UsageFilter(start=utc(2026, 11, 1, 15), end=utc(2026, 11, 2, 6))), "team")
    assert "data" not in {r.key for r in before} and "data" in {r.key for r in after}

    # what beat would have raised by now: the forgotten notebook, and both budgets crossed
    idle_alerts = Alert.objects.filter(kind=Alert.Kind.IDLE)
    assert all(a.fields["idle_minutes"] >= 180 for a in idle_alerts)      # only the long stretches
    [idle] = idle_alerts.filter(pod="jupyter-erin")
    assert (idle.namespace, idle.fields["still_idle"]) == ("notebooks", True)
    assert idle.fields["gpu_model"].startswith("NVIDIA H100")
    assert sorted(Alert.objects.filter(kind=Alert.Kind.BUDGET).values_list("key", flat=True)) == [
        "budget:research:2026-11:100", "budget:research:2026-11:80", "budget:search:2026-11:80"]
    assert RecommendationSnapshot.objects.exists()

    # one team on HAMi shares, one GPU handed out through ResourceClaims (docs/demo.md): the
    # embedders' rows hold parts of one spot H100, never more than it in any hour
    hami = UsageHour.objects.filter(pod__in=["embedder-hami-a", "reranker-hami", "embedder-hami-b"])
    assert hami.exists() and set(hami.values_list("namespace", flat=True)) == {"search-serving"}
    assert all(0 < f < 1 for f in hami.values_list("gpu_fraction", flat=True))
    [uuid] = set(hami.values_list("device__uuid", flat=True))
    per_hour = UsageHour.objects.filter(device__uuid=uuid).values("hour_start").annotate(s=Sum("gpu_seconds"))
    assert all(r["s"] <= 3600.0 + 1e-6 for r in per_hour)

    # the cluster's team labels need approval: all approved but the sandbox's fresh claim
    from apps.teams.claims import pending_claims
    [claim] = pending_claims()
    assert (claim.namespace, claim.team_label, claim.since) == ("sandbox", "research", utc(2026, 11, 1, 6))
    last_day = group_cells(usage_cells(UsageFilter(start=utc(2026, 11, 1, 6), end=utc(2026, 11, 2, 6),
                                                   namespaces=frozenset({"sandbox"}))), "team")
    assert {r.key for r in last_day} <= {"unassigned"}       # the claim does not count until approved
    assert StatementLine.objects.filter(period__period="2026-10").aggregate(n=Sum("allocated_gpu_seconds"))["n"] > 0

    # right-sizing has something to say besides keep and release (docs/demo.md, "The cluster"):
    rows = {r["workload_name"]: r for r in rightsizing_rows(RightsizeQuery(money=True, now=NOW))}
    assert {"mig", "share"} <= {r["action"] for r in rows.values()}
    # the light reranker holds a whole H100 from sample 345 of 576 (k(0.6), five-minute samples)
    # to the end: 231 × 5 min = 19.25 h, at most 8 % of 81,559 MiB (+15 %: 7,504 MiB ≤ 1g.10gb's
    # 9,537 MiB) and at most 11 % busy (+15 %: 12.7 % ≤ 1/7 of the GPU): MIG 1g.10gb, saving
    # (2.50 − 0.40 $/h, the card's H100 and its 1g.10gb) × 19.25 h = $40.425 → $40.43 (48 h < 730 h: as measured)
    mig = rows["reranker-small"]
    assert (mig["action"], mig["profile"], mig["resource_advised"]) == ("mig", "1g.10gb", "nvidia.com/mig-1g.10gb")
    assert mig["allocated_gpu_hours"] == pytest.approx(19.25)
    assert mig["fb_peak_mib"] * 1.15 <= 9536.7 and mig["activity_p95"] * 1.15 <= 1 / 7
    assert mig["monthly_saving"] == "40.43"
    # the light embedder holds the first L4 (no MIG) for the last 24 h: a quarter of its time and
    # of its 24 GB fits, so it shares the GPU four ways: (0.80 − 0.80 ÷ 4) $/h × 24 h = $14.40
    share = rows["embedder-small"]
    assert (share["action"], share["resource_advised"]) == ("share", "nvidia.com/gpu.shared")
    assert share["allocated_gpu_hours"] == pytest.approx(24.0) and share["monthly_saving"] == "14.40"

    # a clean demo's ingest log holds no warning of its own making: no "duplicate" samples (the
    # time-sliced GPU's series are dcgm-exporter's per-pod copies only), just the HAMi overcommit
    # the story tells
    warnings = [w for run in IngestRun.objects.all() for w in run.warnings]
    assert warnings and all(w.startswith("HAMi overcommitted GPU") for w in warnings), warnings
