"""One snapshot read on two connections (`db.bulk.one_snapshot`, `db.bulk.beside_in_snapshot`): a
close writes a month's frozen cells on its own connection while a second one, in the close's
snapshot, prices the same cells (docs/performance.md, "Bulk writes"). The second connection must
see exactly what the first sees: nothing committed after the snapshot was taken."""
import pytest
from django.db import connection, transaction

from apps.accounting.db.bulk import beside_in_snapshot, one_snapshot
from apps.clusters.models import Cluster

from tests.support.factories import in_thread, make_cluster

# real commits, seen by other connections
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def pid_and_clusters():
    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        pid = cur.fetchone()[0]
    return pid, sorted(Cluster.objects.values_list("name", flat=True))


def commit_elsewhere(name):
    thread, _out, errors = in_thread(lambda: make_cluster(name))
    thread.join()
    assert not errors


def test_a_second_connection_reads_the_snapshot_not_what_was_committed_since():
    make_cluster("before")
    with transaction.atomic(), one_snapshot():
        mine = pid_and_clusters()               # the snapshot is taken here
        commit_elsewhere("during")
        with beside_in_snapshot(pid_and_clusters) as beside:
            assert pid_and_clusters()[1] == ["before"]
        pid, seen = beside.result()
    assert pid != mine[0]                       # another backend…
    assert seen == ["before"]                   # …in this transaction's snapshot
    assert pid_and_clusters()[1] == ["before", "during"]


def test_outside_one_snapshot_the_reads_run_here_after_the_block():
    with transaction.atomic():
        mine = pid_and_clusters()
        with beside_in_snapshot(pid_and_clusters) as beside:
            make_cluster("written in the block")
        pid, seen = beside.result()
    assert pid == mine[0]
    assert seen == ["written in the block"]


def test_what_the_reads_raise_is_raised_by_the_result():
    def broken():
        raise LookupError("no such month")

    for snapshot in (one_snapshot, None):
        with transaction.atomic(), (snapshot() if snapshot else transaction.atomic()):
            pid_and_clusters()
            with beside_in_snapshot(broken) as beside:
                pass
            with pytest.raises(LookupError, match="no such month"):
                beside.result()
