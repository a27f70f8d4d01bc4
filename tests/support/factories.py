"""The one set of factories every test builds its rows with: clusters, devices, hourly usage,
quota and queued demand, teams, namespaces, rates, node pools and users, with hand-chosen
numbers (no Prometheus needed). A test imports what it uses (`from tests.support.factories
import make_usage`) or the module (`from tests.support import factories as f`).

Usage comes in two shapes on one row builder (`usage_row`): `make_usage` lays consecutive whole
hours from a start, one saved row at a time (the money tests); `make_usage_hours` lays one row
per hour of a list, `gpus` GPU-equivalents each, in one bulk insert (the advice tests, whose
history ends at END).
"""
import threading
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

from django.contrib.auth.models import Group, User
from django.db import connections

from apps.accounting.models import NodePool, QueuedDemandHour, QuotaHour, Rate, UsageHour
from apps.clusters.models import Cluster, Device
from apps.teams.access import ROLES
from apps.teams.models import SINCE_EVER, Namespace, NamespaceAssignment, NamespaceLabel, Team

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"
HOUR = timedelta(hours=1)
END = datetime(2026, 11, 20, 0, 0, tzinfo=timezone.utc)   # the advice tests' last ingested hour ends here
PASSWORD = "correct-horse-battery"   # every made user's; the tests that sign in through the form type it
_uuid = [0]


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


def hours_before(end, count):
    """The `count` whole hours before `end`, oldest first."""
    return [end - (count - i) * HOUR for i in range(count)]


def make_cluster(name="prod", *, ingested_until=None, **fields) -> Cluster:
    """The cluster named `name` (made once): a Prometheus URL nobody serves unless `fields` gives
    one, and any other field of `Cluster` (credentials, label trust, metric names) as given."""
    defaults = {"prometheus_url": "http://prom.example:9090", "ingested_until": ingested_until, **fields}
    return Cluster.objects.get_or_create(name=name, defaults=defaults)[0]


def make_device(cluster, host="node-1", model=H100, mig_profile="", fraction=1.0, *, uuid=None,
                instance=None) -> Device:
    """A GPU (or a MIG slice of one: `mig_profile`, `fraction` of the board, `instance`)."""
    if uuid is None:
        _uuid[0] += 1
        uuid = f"GPU-{_uuid[0]}"
    if instance is None:
        instance = "1" if mig_profile else ""
    now = utc(2026, 1, 1)
    return Device.objects.create(cluster=cluster, uuid=uuid, mig_instance_id=instance, host=host, model_name=model,
                                 mig_profile=mig_profile, gpu_fraction=fraction, first_seen=now, last_seen=now)


def usage_row(device, namespace, hour_start, *, pod="", gpu_seconds=3600.0, used_gpu_seconds=0.0,
              **fields) -> UsageHour:
    """One hour of `device` held by `namespace`/`pod` (unsaved); the columns every test fills
    alike come from the device, `fields` sets any other (idle seconds, energy, MIG seconds)."""
    return UsageHour(cluster=device.cluster, device=device, namespace=namespace, pod=pod, hour_start=hour_start,
                     node=device.host, gpu_model=device.model_name, mig_profile=device.mig_profile,
                     gpu_fraction=device.gpu_fraction, sample_count=120, gpu_seconds=gpu_seconds,
                     used_gpu_seconds=used_gpu_seconds, **fields)


def make_usage(device, namespace, start: datetime, hours=1, *, pod="pod-0", used_ratio=0.5,
               instance_seconds_per_hour=3600.0):
    """`hours` consecutive full hours of the device held by the pod (namespace "" = unallocated)."""
    rows = []
    for i in range(hours):
        gpu_s = instance_seconds_per_hour * device.gpu_fraction
        row = usage_row(device, namespace, start + timedelta(hours=i), pod=pod if namespace else "",
                        gpu_seconds=gpu_s, used_gpu_seconds=gpu_s * used_ratio if namespace else 0.0,
                        mig_seconds=instance_seconds_per_hour if device.mig_profile else 0.0)
        row.save(force_insert=True)
        rows.append(row)
    return rows


def make_usage_hours(device, namespace, pod, hours, gpus, efficiency=0.5, **fields):
    """One row per hour of `hours` holding `gpus` GPU-equivalents (gpu_seconds = gpus × 3600),
    `efficiency` of it used; inserted in one go."""
    gpu_seconds = gpus * 3600.0
    return UsageHour.objects.bulk_create([
        usage_row(device, namespace, hour, pod=pod, gpu_seconds=gpu_seconds, used_gpu_seconds=gpu_seconds * efficiency,
                  **{"mig_seconds": (gpu_seconds / device.gpu_fraction) if device.mig_profile else 0.0, **fields})
        for hour in hours])


def make_quota(cluster, namespace, hours, hard, used=None, resource="requests.nvidia.com/gpu", seconds_at_hard=0.0):
    return QuotaHour.objects.bulk_create([
        QuotaHour(cluster=cluster, namespace=namespace, resource=resource, hour_start=h, hard=hard,
                  used_max=used, seconds_at_hard=seconds_at_hard) for h in hours
    ])


def make_queued(cluster, namespace, hour, gpu_hours, resource="nvidia_com_gpu", pod="waiting-0"):
    return QueuedDemandHour.objects.create(cluster=cluster, namespace=namespace, pod=pod, resource=resource,
                                           hour_start=hour, requested=1, pending_seconds=gpu_hours * 3600.0,
                                           queued_gpu_seconds=gpu_hours * 3600.0)


def make_team(name, lead=None) -> Team:
    team = Team.objects.get_or_create(name=name)[0]
    if lead is not None:
        team.members.add(lead)
    return team


def make_namespace(cluster, name, team: str | None = None, *, label_team="", since=date(2020, 1, 1)) -> Namespace:
    """Namespace `name`, labelled `label_team` since ever, assigned to `team` from `since` on."""
    ns = Namespace.objects.get_or_create(cluster=cluster, name=name, defaults={"label_team": label_team})[0]
    if label_team:
        label_namespace(ns, label_team)
    if team:
        NamespaceAssignment.objects.get_or_create(namespace=ns, effective_from=since,
                                                  defaults={"team": make_team(team)})
    return ns


def assign(cluster, namespace, team, since=date(2020, 1, 1)) -> Team:
    """The admin assigns `namespace` to `team` from `since` on; returns the team."""
    make_namespace(cluster, namespace, team, since=since)
    return Team.objects.get(name=team)


def label_namespace(ns: Namespace, label: str, since: datetime = SINCE_EVER) -> NamespaceLabel:
    """kube_namespace_labels said `label` from `since` on (a label history row, as ingest writes)."""
    row = NamespaceLabel.objects.update_or_create(namespace=ns, valid_from=since, defaults={"team_label": label})[0]
    latest = NamespaceLabel.objects.filter(namespace=ns).order_by("-valid_from").first()
    Namespace.objects.filter(pk=ns.pk).update(label_team=latest.team_label)
    return row


def make_rate(model=H100, hourly_rate="2.00", currency="USD", effective_from=date(2026, 1, 1), mig_profile="",
              price_class="on_demand") -> Rate:
    return Rate.objects.create(gpu_model=model, mig_profile=mig_profile, price_class=price_class,
                               hourly_rate=Decimal(hourly_rate), currency=currency, effective_from=effective_from)


def make_pool(cluster, pattern, price_class, name=None) -> NodePool:
    return NodePool.objects.create(cluster=cluster, name=name or pattern, host_pattern=pattern,
                                   price_class=price_class)


def make_user(username, role=None, *, teams=(), superuser=False, staff=False, password=PASSWORD) -> User:
    """A user in the group of `role` (None: no role), a member of `teams`."""
    user = User.objects.create_user(username=username, password=password, is_superuser=superuser, is_staff=staff)
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    for team in teams:
        team.members.add(user)
    return user


def make_role_users(roles=ROLES, *, admin_superuser=False) -> dict:
    """One user per role of `roles`, named for it, made in that order; with `admin_superuser`
    the admin is also a Django superuser and staff."""
    for role in ROLES:
        Group.objects.get_or_create(name=role)
    return {role: make_user(role, role, superuser=admin_superuser and role == "admin",
                            staff=admin_superuser and role == "admin") for role in roles}


def two_teams_in_march() -> dict:
    """Team A's namespace ml held one H100 for 3 hours on 1 March 2026, team B's cv one hour on
    another node; 2.00 USD per GPU-hour (A 6.00, B 2.00)."""
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_namespace(prod, "cv", "B")
    rate = make_rate(hourly_rate="2.00")
    gpu, other = make_device(prod, host="node-1"), make_device(prod, host="node-2")
    make_usage(gpu, "ml", utc(2026, 3, 1), hours=3)
    make_usage(other, "cv", utc(2026, 3, 1), hours=1)
    return {"cluster": prod, "gpu": gpu, "other": other, "rate": rate}


def in_thread(work):
    """Run `work` on the thread's own connection; re-raise what it raised. Returns its result."""
    out, errors = [], []

    def run():
        try:
            out.append(work())
        except Exception as exc:  # noqa: BLE001 — re-raised in the test's thread
            errors.append(exc)
        finally:
            connections.close_all()   # this thread's connections only

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out, errors
