"""The rate card: an hourly rate per GPU model (optionally per MIG profile) and price class.

A rate is in force from midnight of `effective_from` in the billing zone until the next
rate for the same key. Node pools decide which price class a node's GPUs are billed at.
"""
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from simple_history.models import HistoricalRecords

from apps.clusters.models import Cluster

from apps.accounting.core.currencies import is_currency

ON_DEMAND = "on_demand"
PRICE_CLASSES = (ON_DEMAND, "spot", "reserved", "on_prem")


class PriceClass(models.TextChoices):
    ON_DEMAND = ON_DEMAND, "on-demand"
    SPOT = "spot", "spot"
    RESERVED = "reserved", "reserved"
    ON_PREM = "on_prem", "on-prem (amortised)"


def validate_currency(value):
    if not is_currency(value):
        raise ValidationError(f"{value!r} is not an ISO 4217 currency code")


class Rate(models.Model):
    gpu_model = models.CharField(max_length=200, help_text="DCGM modelName, e.g. NVIDIA H100 80GB HBM3")
    mig_profile = models.CharField(max_length=50, blank=True,
                                   help_text="empty: the whole GPU; e.g. 1g.10gb: per MIG instance-hour")
    price_class = models.CharField(max_length=20, choices=PriceClass.choices, default=ON_DEMAND)
    hourly_rate = models.DecimalField(max_digits=18, decimal_places=6, validators=[MinValueValidator(0)])
    currency = models.CharField(max_length=3, validators=[validate_currency])
    effective_from = models.DateField(help_text="in force from midnight of this day, billing time zone")
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()   # every change, with who and when (docs/chargeback.md)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["gpu_model", "mig_profile", "price_class", "effective_from"],
                                    name="rate_unique_key_date"),
            models.CheckConstraint(condition=models.Q(hourly_rate__gte=0), name="rate_not_negative"),
        ]
        ordering = ["gpu_model", "mig_profile", "price_class", "effective_from"]

    def __str__(self):
        profile = f" {self.mig_profile}" if self.mig_profile else ""
        return f"{self.gpu_model}{profile} {self.price_class} {self.hourly_rate} {self.currency} from {self.effective_from}"

    def as_dict(self):
        return {"gpu_model": self.gpu_model, "mig_profile": self.mig_profile, "price_class": self.price_class,
                "hourly_rate": str(self.hourly_rate), "currency": self.currency,
                "effective_from": self.effective_from.isoformat()}


class NodePool(models.Model):
    """Nodes of a cluster whose host name matches `host_pattern` (a glob) share a price class.

    Pools are tried in (priority, name) order and the first match wins; an unmatched node is
    on-demand.
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="node_pools")
    name = models.CharField(max_length=100)
    host_pattern = models.CharField(max_length=255, help_text="glob matched against the node name, e.g. spot-*")
    price_class = models.CharField(max_length=20, choices=PriceClass.choices, default=ON_DEMAND)
    priority = models.PositiveSmallIntegerField(default=100, help_text="lower is tried first")
    history = HistoricalRecords()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="node_pool_unique")]
        ordering = ["cluster", "priority", "name"]

    def __str__(self):
        return f"{self.cluster.name}/{self.name} ({self.host_pattern} → {self.price_class})"



class RateImport(models.Model):
    """One rate-card file uploaded from the browser and imported by a worker (docs/chargeback.md,
    "1. Import rates"): its progress while it runs, then what came of it — every line imported,
    or the whole file refused with each reason. The file is kept only until it is imported."""

    class Status(models.TextChoices):
        QUEUED = "queued", "waiting for a worker"
        CHECKING = "checking", "checking the lines"
        WRITING = "writing", "writing the rates"
        IMPORTED = "imported", "imported"
        REFUSED = "refused", "refused: nothing imported"
        FAILED = "failed", "failed: nothing imported"

    DONE = (Status.IMPORTED, Status.REFUSED, Status.FAILED)

    file_name = models.CharField(max_length=255)
    data = models.BinaryField(null=True, editable=False)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                     related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    lines_total = models.PositiveIntegerField(default=0)
    lines_checked = models.PositiveIntegerField(default=0)
    imported = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self):
        return f"{self.file_name} ({self.get_status_display()})"

    @property
    def done(self) -> bool:
        return self.status in self.DONE
