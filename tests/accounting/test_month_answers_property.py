"""The stored month answer is the direct computation, whatever the data and whatever changes
(docs/performance.md, "Stored month answers"): hypothesis builds a small fleet, reads March
through the stored answers, then applies changes of every kind — an ingested hour, a rate,
a node pool, a namespace move, a relabel, a team or cluster rename, label trust, closing or
reopening February — and after each compares every stored part with computing it afresh.
"""
from datetime import date, timedelta
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from django.db import transaction

from apps.accounting.actions.audit import ActionError
from apps.accounting.actions.namespaces import do_assign_namespace
from apps.accounting.actions.periods import do_close_period, do_reopen_period
from apps.accounting.core.periods import period_bounds
from apps.accounting.models import BillingPeriod, NodePool, Rate
from apps.accounting.ledger.answer import closed_periods, late_cells, month_late_cells, month_lines, own_cells, own_days
from apps.accounting.ledger.statements import compute_open
from apps.accounting.calendar.zone import billing_zone
from apps.accounting.usage.cells import UsageFilter, usage_cells
from apps.clusters.models import Cluster
from apps.ingest.models import IngestRun
from apps.teams.models import Team

from tests.support.factories import (A100, H100, label_namespace, make_cluster, make_device, make_namespace, make_pool, make_rate,
                        make_team, make_usage, make_user, utc)

pytestmark = pytest.mark.django_db
MARCH = utc(2026, 3, 1)
NAMESPACES = ("ml", "cv", "lab")
TEAMS = ("A", "B", "C")


class Rollback(Exception):
    pass


hour_offsets = st.integers(min_value=-24 * 10, max_value=24 * 33)     # late February to early April
# One change of every kind per example, in an order and with values hypothesis picks.
EVERY_KIND = st.tuples(
    st.tuples(st.just("hour"), st.integers(0, 2), hour_offsets, st.integers(0, 2)),
    st.tuples(st.just("rate"), st.sampled_from(["0.25", "1.10"]), st.integers(-10, 35), st.just(True)),
    st.tuples(st.just("rate"), st.sampled_from(["1.25", "3.10"]), st.integers(-10, 35), st.just(False)),
    st.tuples(st.just("pool"), st.sampled_from(["node-1", "node-*", "gpu-9", ""])),
    st.tuples(st.just("assign"), st.integers(0, 2), st.integers(0, 2), st.integers(-5, 35)),
    st.tuples(st.just("label"), st.integers(1, 2), st.sampled_from(["A", "M", ""]), st.integers(0, 24 * 31 - 1)),
    st.tuples(st.just("rename_team"), st.integers(0, 2)),
    st.tuples(st.just("rename_cluster"),),
    st.tuples(st.just("trust"), st.sampled_from(["known_teams", "approve"])),
    st.tuples(st.just("close_february"),),
    st.tuples(st.just("hour"), st.integers(0, 2), st.integers(-24 * 10, -1), st.integers(0, 2)),   # late data?
).flatmap(lambda changes: st.permutations(list(changes)))
INITIAL = st.lists(st.tuples(st.integers(0, 2), hour_offsets, st.integers(0, 2), st.integers(1, 30)),
                   min_size=1, max_size=6)


class Fleet:
    def __init__(self, initial):
        self.cluster = make_cluster()
        self.devices = [make_device(self.cluster, host="node-1"), make_device(self.cluster, host="node-2"),
                        make_device(self.cluster, host="node-3", model=A100, mig_profile="1g.10gb",
                                    fraction=1 / 7)]
        self.namespaces = [make_namespace(self.cluster, "ml", "A"), make_namespace(self.cluster, "cv", label_team="B"),
                           make_namespace(self.cluster, "lab", label_team="L")]
        make_rate(hourly_rate="2.00")
        make_rate(model=A100, hourly_rate="1.40")
        make_rate(model=A100, mig_profile="1g.10gb", hourly_rate="0.25", effective_from=date(2026, 3, 10))
        self.admin = make_user("prop-admin", "admin", superuser=True)
        # Ingested from February on, so February can be closed whatever hours it holds.
        IngestRun.objects.create(cluster=self.cluster, window_start=utc(2026, 2, 1), window_end=MARCH,
                                 status=IngestRun.Status.SUCCEEDED)
        self.pods = 0
        self.held: set[tuple] = set()          # (device, hour): one holder per device-hour
        for ns, offset, device, hours in initial:
            self.hour(ns, offset, device, hours)

    def hour(self, ns, offset, device, hours=1):
        """`hours` hours of a device from March 1 + `offset` hours; hours it already has are skipped.
        Every fifth start of the lab namespace is unallocated capacity instead."""
        self.pods += 1
        namespace = NAMESPACES[ns] if ns < 2 or offset % 5 else ""
        for h in range(offset, offset + hours):
            if (device, h) not in self.held:
                self.held.add((device, h))
                make_usage(self.devices[device], namespace, MARCH + timedelta(hours=h), pod=f"p{self.pods}")

    def apply(self, change):
        kind, *args = change
        if kind == "hour":
            self.hour(*args)
        elif kind == "rate":
            value, day, edit = args
            existing = Rate.objects.filter(gpu_model=H100).order_by("-effective_from").first()
            if edit and existing is not None:
                existing.hourly_rate = existing.hourly_rate + Decimal(value)      # always a new rate
                existing.save()
            else:
                Rate.objects.update_or_create(gpu_model=H100, mig_profile="", price_class="on_demand",
                                              effective_from=date(2026, 3, 1) + timedelta(days=day),
                                              defaults={"hourly_rate": value, "currency": "USD"})
        elif kind == "pool":
            NodePool.objects.all().delete()
            if args[0]:
                make_rate(hourly_rate="0.70", price_class="spot") if not Rate.objects.filter(
                    price_class="spot").exists() else None
                make_pool(self.cluster, args[0], "spot")
        elif kind == "assign":
            ns, team, day = args
            try:
                do_assign_namespace(self.namespaces[ns], make_team(TEAMS[team]),
                                    date(2026, 3, 1) + timedelta(days=day))
            except ActionError:
                pass        # a move into a closed month is refused
        elif kind == "label":
            ns, label, offset = args
            at = (MARCH + timedelta(hours=offset)).replace(minute=0)
            label_namespace(self.namespaces[ns], label, since=at)
        elif kind == "rename_team":
            team = Team.objects.order_by("name")[args[0] % Team.objects.count()]
            team.name = team.name + "x"
            team.save()
        elif kind == "rename_cluster":
            self.cluster.name = self.cluster.name + "x"
            self.cluster.save()
        elif kind == "trust":
            Cluster.objects.filter(pk=self.cluster.pk).update(label_trust=args[0])
        elif kind == "close_february":
            if BillingPeriod.objects.filter(period="2026-02", closed_at__isnull=False).exists():
                do_reopen_period("2026-02", self.admin)
            else:
                do_close_period("2026-02", actor=self.admin)


def key(cell):
    return repr(cell)


def as_usage_cell(c):
    """A late-data cell's fields (`core.lines.Cell`, live or stored)."""
    return (c.cluster_id, c.cluster, c.namespace, c.team, c.gpu_model, c.mig_profile, c.price_class, c.day,
            c.gpu_seconds, c.used_gpu_seconds, c.mig_seconds)


def check(period="2026-03"):
    """Every stored part equals computing it afresh; read twice (the second read is the stored one)."""
    start, end = period_bounds(period, billing_zone())
    direct = compute_open(period).lines
    assert month_lines(period) == direct
    assert month_lines(period) == direct
    assert sorted(own_cells(period), key=key) == sorted(usage_cells(UsageFilter(start, end), per_day=False), key=key)
    assert sorted(own_days(period), key=key) == sorted(usage_cells(UsageFilter(start, end)), key=key)
    closed = closed_periods()
    if "2026-02" in closed:
        stored, direct_late = month_late_cells("2026-02", closed["2026-02"]), late_cells("2026-02", closed["2026-02"])
        assert [as_usage_cell(c) for c in stored] == [as_usage_cell(c) for c in direct_late]


# No shrinking: a failing example is shown as found (shrinking one took minutes here).
@settings(max_examples=12, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(initial=INITIAL, changes=EVERY_KIND)
def test_the_stored_answer_is_the_direct_computation(db, initial, changes):
    try:
        with transaction.atomic():
            fleet = Fleet(initial)
            check()
            for change in changes:
                fleet.apply(change)
                check()
            check("2026-04")
            raise Rollback
    except Rollback:
        pass
