"""Rows for advice and alert tests, built directly with hand-chosen numbers."""
from datetime import datetime, timedelta, timezone
from decimal import Decimal  # noqa: F401  (tests use f.Decimal)

from django.contrib.auth.models import Group, User

from apps.accounting.models import QueuedDemandHour, QuotaHour, UsageHour
from apps.clusters.models import Cluster, Device
from apps.teams.models import Namespace, NamespaceAssignment, Team  # noqa: F401

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"
END = datetime(2026, 11, 20, 0, 0, tzinfo=timezone.utc)   # the last ingested hour ends here
HOUR = timedelta(hours=1)


def cluster(name="prod", ingested_until=END):
    return Cluster.objects.create(name=name, prometheus_url="http://prom.invalid:9090", ingested_until=ingested_until)


def device(c, uuid="GPU-1", model=H100, profile="", fraction=1.0, instance=""):
    return Device.objects.create(cluster=c, uuid=uuid, mig_instance_id=instance, model_name=model,
                                 mig_profile=profile, gpu_fraction=fraction, host="node-1",
                                 first_seen=END - timedelta(days=60), last_seen=END)


def hours_before(end, count):
    return [end - (count - i) * HOUR for i in range(count)]


def usage(c, dev, namespace, pod, hours, gpus, efficiency=0.5, **extra):
    """One row per hour holding `gpus` GPU-equivalents (gpu_seconds = gpus × 3600)."""
    rows = []
    for hour in hours:
        gpu_seconds = gpus * 3600.0
        fields = dict(
            cluster=c, device=dev, namespace=namespace, pod=pod, hour_start=hour, node="node-1",
            gpu_model=dev.model_name, mig_profile=dev.mig_profile, gpu_fraction=dev.gpu_fraction,
            sample_count=120, gpu_seconds=gpu_seconds, used_gpu_seconds=gpu_seconds * efficiency,
            mig_seconds=(gpu_seconds / dev.gpu_fraction) if dev.mig_profile else 0.0,
        )
        fields.update(extra)
        rows.append(UsageHour(**fields))
    return UsageHour.objects.bulk_create(rows)


def quota(c, namespace, hours, hard, used=None, resource="requests.nvidia.com/gpu", seconds_at_hard=0.0):
    return QuotaHour.objects.bulk_create([
        QuotaHour(cluster=c, namespace=namespace, resource=resource, hour_start=h, hard=hard,
                  used_max=used, seconds_at_hard=seconds_at_hard) for h in hours
    ])


def queued(c, namespace, hour, gpu_hours, resource="nvidia_com_gpu", pod="waiting-0"):
    return QueuedDemandHour.objects.create(cluster=c, namespace=namespace, pod=pod, resource=resource,
                                           hour_start=hour, requested=1, pending_seconds=gpu_hours * 3600.0,
                                           queued_gpu_seconds=gpu_hours * 3600.0)


def assign(c, namespace, team_name, day=None):
    team, _ = Team.objects.get_or_create(name=team_name)
    ns, _ = Namespace.objects.get_or_create(cluster=c, name=namespace)
    NamespaceAssignment.objects.create(namespace=ns, team=team, effective_from=day or (END - timedelta(days=90)).date())
    return team


def user(name, role, teams=()):
    u = User.objects.create_user(name, password="pw-" + name)
    if role:
        u.groups.add(Group.objects.get_or_create(name=role)[0])
    for t in teams:
        t.members.add(u)
    return u
