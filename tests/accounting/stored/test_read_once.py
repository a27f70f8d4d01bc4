"""A page reads the node pools and the cluster names once, however many of its parts price or
name clusters (`stored.versions.read_once` inside `versions_read_once`); the next page reads
them again, so an edit between two pages is seen by the second."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounting.stored.versions import versions_read_once
from apps.accounting.models import NodePool
from apps.accounting.usage.price_classes import price_class_expr
from apps.accounting.usage.cells import cluster_name_by_id
from tests.support.factories import make_cluster

pytestmark = pytest.mark.django_db


def pool_reads(queries):
    return sum("accounting_nodepool" in q["sql"] for q in queries)


def test_node_pools_and_cluster_names_read_once_a_page():
    a = make_cluster("a", prometheus_url="http://prom-a:9090")
    NodePool.objects.create(cluster=a, name="spot", host_pattern="spot-*", price_class="spot")
    with versions_read_once(), CaptureQueriesContext(connection) as page:
        first, second = price_class_expr({a.pk}), price_class_expr({a.pk})
        assert cluster_name_by_id() == cluster_name_by_id() == {a.pk: "a"}
    assert str(first) == str(second) and "spot" in str(first)
    assert pool_reads(page.captured_queries) == 1
    assert sum("clusters_cluster" in q["sql"] for q in page.captured_queries) == 1

    # the next page sees an edit made in between
    NodePool.objects.filter(cluster=a).update(price_class="reserved")
    b = make_cluster("b", prometheus_url="http://prom-b:9090")
    with versions_read_once(), CaptureQueriesContext(connection) as later:
        assert "reserved" in str(price_class_expr({a.pk}))
        assert cluster_name_by_id() == {a.pk: "a", b.pk: "b"}
    assert pool_reads(later.captured_queries) == 1

    # outside a page (a task, an export), every call reads
    with CaptureQueriesContext(connection) as loose:
        price_class_expr({a.pk}), price_class_expr({a.pk})
    assert pool_reads(loose.captured_queries) == 2
