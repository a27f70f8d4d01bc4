"""A cluster is one Prometheus-compatible endpoint holding DCGM + kube-state-metrics data."""
import re
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from simple_history.models import HistoricalRecords

from .outbound import outbound_problem, redacted
from .secrets import SealedField, resolve, validate_source

# Fields ingest maintains by itself: saving only these is not a configuration change and
# leaves no history row (docs/security.md, "Who changed what").
INGEST_MAINTAINED = frozenset({"detected_label_spelling", "detected_interval_seconds", "ingested_until"})

# Canonical metric roles -> (default metric name, scale to the canonical unit).
# Canonical units: utilization as a ratio 0-1, memory MiB, power W, energy J, temperature °C.
DEFAULT_METRICS = {
    "gpu_util": ("DCGM_FI_DEV_GPU_UTIL", 0.01),
    "gr_engine_active": ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1.0),
    "fb_used": ("DCGM_FI_DEV_FB_USED", 1.0),
    "power": ("DCGM_FI_DEV_POWER_USAGE", 1.0),
    "energy": ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 0.001),
    "temperature": ("DCGM_FI_DEV_GPU_TEMP", 1.0),
    "xid": ("DCGM_FI_DEV_XID_ERRORS", 1.0),
}

SPELLING_AUTO = "auto"
DEFAULT_REPLICA_LABELS = "prometheus_replica,replica,__replica__,rule_replica,receive_replica"
SPELLINGS = ("plain", "exported", "old")


def validate_metric_overrides(value):
    if not isinstance(value, dict):
        raise ValidationError("metric overrides must be an object of role -> {name, scale}")
    for role, override in value.items():
        if role not in DEFAULT_METRICS:
            raise ValidationError(f"unknown metric role {role!r}; known: {', '.join(DEFAULT_METRICS)}")
        if not isinstance(override, dict) or not set(override) <= {"name", "scale"}:
            raise ValidationError(f"override for {role!r} must be {{'name': str, 'scale': number}}")
        if "scale" in override and not isinstance(override["scale"], (int, float)):
            raise ValidationError(f"scale for {role!r} must be a number")


_HOST_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$", re.IGNORECASE)


def validate_prometheus_url(value: str) -> None:
    """http(s)://host[:port][/path]. Unlike Django's URLValidator, a host without a dot is fine:
    in-cluster and compose service names (`http://prometheus:9090`) are how Prometheus is found."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise ValidationError(f"{redacted(value)!r} is not a URL (a bad port?)") from None
    host = parts.hostname or ""
    labels = host.split(".")
    ip_like = host.replace(".", "").replace(":", "").isalnum() and (":" in host or host.replace(".", "").isdigit())
    if parts.scheme not in ("http", "https") or not host or (
            not ip_like and not all(_HOST_LABEL.match(label) for label in labels)) or (port is not None and port == 0):
        raise ValidationError(f"{redacted(value)!r} is not an http(s) URL of a Prometheus, e.g. http://prometheus:9090")
    if problem := outbound_problem(value):   # backslashes, credentials, the allow-list (docs/security.md)
        raise ValidationError(problem)


class Cluster(models.Model):
    class Spelling(models.TextChoices):
        AUTO = SPELLING_AUTO, "detect from data"
        PLAIN = "plain", "namespace / pod / container"
        EXPORTED = "exported", "exported_namespace / exported_pod / exported_container"
        OLD = "old", "pod_namespace / pod_name / container_name"

    name = models.SlugField(max_length=100, unique=True)
    prometheus_url = models.CharField(max_length=500, validators=[validate_prometheus_url],
                                      help_text="e.g. http://prometheus:9090 or https://thanos.example.com")
    # Credentials (docs/security.md): a source (file:/path of a mounted Secret, or env:NAME) is
    # read at each ingest; a value typed into the admin is kept encrypted and never shown back.
    bearer_token_source = models.CharField(
        max_length=500, blank=True, validators=[validate_source],
        help_text="file:/var/run/secrets/prometheus/token or env:PROMETHEUS_TOKEN; wins over a stored token")
    bearer_token = SealedField(blank=True, help_text="stored encrypted; leave empty to keep the current one")
    basic_auth_user = models.CharField(max_length=200, blank=True)
    basic_auth_password_source = models.CharField(
        max_length=500, blank=True, validators=[validate_source],
        help_text="file:/path or env:NAME; wins over a stored password")
    basic_auth_password = SealedField(blank=True, help_text="stored encrypted; leave empty to keep the current one")
    ca_bundle_path = models.CharField(max_length=500, blank=True, help_text="path to a PEM CA bundle")
    tls_verify = models.BooleanField(default=True)
    series_selector = models.CharField(
        max_length=500, blank=True,
        help_text='extra label matchers added to every query, e.g. cluster="prod" on a shared Thanos',
    )

    label_spelling = models.CharField(max_length=10, choices=Spelling.choices, default=SPELLING_AUTO)
    detected_label_spelling = models.CharField(max_length=10, blank=True)
    pinned_interval_seconds = models.FloatField(null=True, blank=True)
    detected_interval_seconds = models.FloatField(null=True, blank=True)
    metric_overrides = models.JSONField(default=dict, blank=True, validators=[validate_metric_overrides])
    team_label_key = models.CharField(max_length=100, default="team")
    idle_threshold = models.FloatField(null=True, blank=True, help_text="ratio 0-1; empty: portal default")
    mig_slices_overrides = models.JSONField(
        default=dict, blank=True, help_text='maximum compute slices per model, e.g. {"NVIDIA GB300": 7}',
    )

    replica_labels = models.CharField(
        max_length=500, blank=True, default=DEFAULT_REPLICA_LABELS,
        help_text="comma-separated labels that tell HA Prometheus replicas apart; copies differing only in them "
                  "count once (docs/accounting.md)",
    )

    class TimeSlicing(models.TextChoices):
        AUTO = "auto", "detect from the values"
        COPIES = "copies", "per-pod series copy the device's values (dcgm-exporter 4.4-4.5.2)"
        OWN = "own", "per-pod series hold each pod's own utilization (dcgm-exporter 4.5.3+)"

    time_slicing = models.CharField(max_length=10, choices=TimeSlicing.choices, default="auto")

    class LabelTrust(models.TextChoices):
        TRUSTED = "trusted", "trusted: every team label counts (a fresh install works from labels alone)"
        KNOWN_TEAMS = "known_teams", "known teams: a label counts only if it names a team an admin created"
        APPROVE = "approve", "approve: a new or changed claim counts from the hour an admin approves it"

    # Who pays is decided by admins (docs/teams-and-relabels.md): anyone who can label a
    # namespace could otherwise move its cost onto any team.
    label_trust = models.CharField(max_length=12, choices=LabelTrust.choices, default=LabelTrust.TRUSTED)
    verify_workloads = models.BooleanField(
        default=True,
        help_text="count a GPU as allocated to a pod only when kube-state-metrics shows that pod requesting a GPU "
                  "(turn off for Dynamic Resource Allocation, which kube-state-metrics does not show as requests)",
    )

    ingested_until = models.DateTimeField(null=True, blank=True, help_text="watermark: every hour before it is ingested")
    # A cluster whose usage priced a closed month cannot be deleted; archived, it is no longer
    # ingested nor offered in pickers, and its history stays (docs/chargeback.md, "History stays").
    archived = models.BooleanField(default=False, help_text="no longer ingested nor offered in pickers; "
                                   "its history and the statements it priced stay")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def metric(self, role):
        name, scale = DEFAULT_METRICS[role]
        override = (self.metric_overrides or {}).get(role) or {}
        return override.get("name", name), float(override.get("scale", scale))

    @property
    def effective_idle_threshold(self):
        return settings.IDLE_THRESHOLD if self.idle_threshold is None else self.idle_threshold

    @property
    def replica_label_names(self) -> tuple[str, ...]:
        return tuple(x.strip() for x in (self.replica_labels or "").split(",") if x.strip())

    # Credentials are left out of the history: it would keep every sealed value ever stored.
    history = HistoricalRecords(excluded_fields=["bearer_token", "basic_auth_password"])

    def save(self, *args, **kwargs):
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and set(update_fields) <= INGEST_MAINTAINED:
            self.skip_history_when_saving = True
        try:
            super().save(*args, **kwargs)
        finally:
            self.__dict__.pop("skip_history_when_saving", None)

    def credentials(self) -> tuple[str, tuple[str, str] | None]:
        """(bearer token, basic auth) to talk to Prometheus, read now; CredentialError if unreadable."""
        token = resolve(self.bearer_token_source, self.bearer_token, "bearer token")
        if not self.basic_auth_user:
            return token, None
        return token, (self.basic_auth_user, resolve(self.basic_auth_password_source, self.basic_auth_password,
                                                      "basic auth password"))


class Device(models.Model):
    """A GPU or a MIG instance, learned from the DCGM series."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="devices")
    uuid = models.CharField(max_length=100)
    mig_instance_id = models.CharField(max_length=20, blank=True)
    gpu_index = models.CharField(max_length=10, blank=True)
    host = models.CharField(max_length=255, blank=True)
    model_name = models.CharField(max_length=200, blank=True)
    mig_profile = models.CharField(max_length=50, blank=True)
    pci_bus_id = models.CharField(max_length=50, blank=True)
    gpu_fraction = models.FloatField(default=1.0)
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "uuid", "mig_instance_id"], name="device_unique_per_cluster"),
        ]
        ordering = ["cluster", "host", "gpu_index", "mig_instance_id"]

    def __str__(self):
        base = f"{self.host}/gpu{self.gpu_index} {self.model_name}"
        return f"{base} MIG {self.mig_profile}#{self.mig_instance_id}" if self.mig_profile else base


class ClusterQueueQuota(models.Model):
    """A Kueue ClusterQueue's quota for one flavor and resource, as last seen by ingest."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="cluster_queues")
    cluster_queue = models.CharField(max_length=253)
    cohort = models.CharField(max_length=253, blank=True)
    flavor = models.CharField(max_length=253, blank=True)
    resource = models.CharField(max_length=100)
    nominal_quota = models.FloatField(null=True, blank=True)
    borrowing_limit = models.FloatField(null=True, blank=True)
    lending_limit = models.FloatField(null=True, blank=True)
    pending_workloads = models.FloatField(null=True, blank=True)
    namespaces = models.JSONField(
        default=list, blank=True,
        help_text="namespaces whose LocalQueues point at this ClusterQueue (Kueue does not export it: set by admins)",
    )
    observed_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "cluster_queue", "flavor", "resource"],
                                    name="cluster_queue_quota_unique"),
        ]
        ordering = ["cluster", "cluster_queue", "flavor", "resource"]

    def __str__(self):
        return f"{self.cluster}/{self.cluster_queue} {self.flavor} {self.resource}"
