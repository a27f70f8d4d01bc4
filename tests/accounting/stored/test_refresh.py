"""A write to any input of a month's answer recomputes the stored answer once it commits, before
anyone reads it (docs/performance.md, "Recomputed on write"). Celery runs eagerly here (no
REDIS_URL), so the task queued on commit runs at the commit."""
from datetime import date
from decimal import Decimal

import pytest
from django.test.utils import CaptureQueriesContext
from django.db import connection

from apps.accounting.stored import refresh
from apps.accounting.actions.namespaces import do_assign_namespace
from apps.accounting.actions.rates import do_save_rate
from apps.accounting.stored.answers import proven
from apps.accounting.stored.versions import read_inputs, stored_answers
from apps.accounting.models import MonthAnswer
from apps.accounting.ledger.answer import month_lines
from apps.clusters.models import Cluster
from apps.ingest.pipeline import ingest
from apps.teams.models import Namespace

from tests.support.factories import label_namespace, make_cluster, make_device, make_namespace, make_pool, make_rate, make_team, \
    make_usage, utc

pytestmark = [pytest.mark.django_db, pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="answers are stored on Postgres only")]

MARCH = "2026-03"


def current(period=MARCH) -> bool:
    """The month's lines are stored at the version their inputs have now."""
    inputs = read_inputs([period])
    return proven(period, MonthAnswer.LINES, inputs.lines(period)) is not None


@pytest.fixture
def march(db, django_capture_on_commit_callbacks):
    assert stored_answers()
    with django_capture_on_commit_callbacks(execute=True):
        prod = make_cluster()
        make_namespace(prod, "ml", "A")
        rate = make_rate(hourly_rate="2.00")
        gpu = make_device(prod, host="gpu-1")
        make_usage(gpu, "ml", utc(2026, 3, 10), hours=10)
    month_lines(MARCH)
    assert current()
    return prod, rate, gpu


WRITES = {
    "rate edit": lambda prod, rate, actor: (setattr(rate, "hourly_rate", Decimal("3.00")), do_save_rate(actor, rate)),
    "new node pool": lambda prod, rate, actor: make_pool(prod, "gpu-*", "spot"),
    "namespace move": lambda prod, rate, actor: do_assign_namespace(Namespace.objects.get(name="ml"), make_team("B"),
                                                                   date(2026, 3, 15), actor=actor),
    "re-label": lambda prod, rate, actor: label_namespace(Namespace.objects.get(name="ml"), "C",
                                                          since=utc(2026, 3, 12)),
    "label trust": lambda prod, rate, actor: (setattr(prod, "label_trust", Cluster.LabelTrust.APPROVE), prod.save()),
}


@pytest.mark.parametrize("write", list(WRITES))
def test_each_kind_of_write_leaves_the_month_stored_and_current(march, write, admin_user,
                                                                django_capture_on_commit_callbacks, monkeypatch):
    prod, rate, gpu = march
    monkeypatch.setattr("apps.accounting.tasks.timezone.now", lambda: utc(2026, 4, 10))   # March is last month
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        WRITES[write](prod, rate, admin_user)
        assert not current()                   # the write made it stale (not yet committed)
    assert current()                           # the commit's task recomputed it, nobody read it
    assert len([c for c in callbacks if isinstance(c, refresh._Pending)]) == 1


def test_a_commit_queues_one_task_and_it_stores_the_month(march, admin_user, django_capture_on_commit_callbacks,
                                                          monkeypatch):
    prod, rate, gpu = march
    monkeypatch.setattr("apps.accounting.tasks.timezone.now", lambda: utc(2026, 4, 10))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        make_pool(prod, "gpu-*", "spot")
        make_pool(prod, "spot-*", "spot")
        label_namespace(Namespace.objects.get(name="ml"), "C", since=utc(2026, 3, 12))
    assert len([c for c in callbacks if isinstance(c, refresh._Pending)]) == 1
    assert current()
    with CaptureQueriesContext(connection) as reads:         # the reader computes nothing
        month_lines(MARCH)
    assert not any('"accounting_usagehour"' in q["sql"] or '"accounting_usageday"' in q["sql"]
                   for q in reads.captured_queries)


def test_an_ingest_run_recomputes_the_months_it_wrote(db, django_capture_on_commit_callbacks, monkeypatch):
    from tests.support.series import T0, dt, small_cluster_fetcher
    with django_capture_on_commit_callbacks(execute=True):
        cluster = make_cluster("spine")
        make_rate(hourly_rate="2.00")
    october = "2026-10"
    monkeypatch.setattr("apps.accounting.tasks.timezone.now", lambda: utc(2026, 10, 20))
    with django_capture_on_commit_callbacks(execute=True):
        ingest(cluster, dt(T0), dt(T0 + 7200), fetcher=small_cluster_fetcher(), now=utc(2026, 10, 20))
    assert current(october)
