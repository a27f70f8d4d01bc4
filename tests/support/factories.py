"""Hand-built rollups, rates, teams and users for chargeback tests (no Prometheus needed)."""
import threading
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

from django.contrib.auth.models import Group, User
from django.db import connections

from apps.accounting.models import NodePool, Rate, UsageHour
from apps.clusters.models import Cluster, Device
from apps.teams.models import SINCE_EVER, Namespace, NamespaceAssignment, NamespaceLabel, Team

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"
HOUR = 3600.0
_uuid = [0]


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


def make_cluster(name="prod") -> Cluster:
    return Cluster.objects.get_or_create(name=name, defaults={"prometheus_url": "http://prom.example:9090"})[0]


def make_device(cluster, host="node-1", model=H100, mig_profile="", fraction=1.0) -> Device:
    _uuid[0] += 1
    now = utc(2026, 1, 1)
    return Device.objects.create(cluster=cluster, uuid=f"GPU-{_uuid[0]}", mig_instance_id="1" if mig_profile else "",
                                 host=host, model_name=model, mig_profile=mig_profile, gpu_fraction=fraction,
                                 first_seen=now, last_seen=now)


def make_usage(device, namespace, start: datetime, hours=1, *, pod="pod-0", used_ratio=0.5,
               instance_seconds_per_hour=HOUR):
    """`hours` consecutive full hours of the device held by the pod (namespace "" = unallocated)."""
    rows = []
    for i in range(hours):
        gpu_s = instance_seconds_per_hour * device.gpu_fraction
        rows.append(UsageHour.objects.create(
            cluster=device.cluster, device=device, namespace=namespace, pod=pod if namespace else "",
            hour_start=start + timedelta(hours=i), node=device.host, gpu_model=device.model_name,
            mig_profile=device.mig_profile, gpu_fraction=device.gpu_fraction, sample_count=120,
            gpu_seconds=gpu_s, used_gpu_seconds=gpu_s * used_ratio if namespace else 0.0,
            mig_seconds=instance_seconds_per_hour if device.mig_profile else 0.0,
        ))
    return rows


def make_team(name, lead=None) -> Team:
    team = Team.objects.get_or_create(name=name)[0]
    if lead is not None:
        team.members.add(lead)
    return team


def make_namespace(cluster, name, team: str | None = None, *, label_team="") -> Namespace:
    ns = Namespace.objects.get_or_create(cluster=cluster, name=name, defaults={"label_team": label_team})[0]
    if label_team:
        label_namespace(ns, label_team)
    if team:
        NamespaceAssignment.objects.get_or_create(namespace=ns, effective_from=date(2020, 1, 1),
                                                  defaults={"team": make_team(team)})
    return ns


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


def make_user(username, role=None, *, superuser=False) -> User:
    user = User.objects.create_user(username=username, password="pw", is_superuser=superuser)
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


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
