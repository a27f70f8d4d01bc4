"""Quota advice snapshots, team budgets, and alerts with their deliveries."""
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from apps.accounting.core.rounding import present
from apps.accounting.core.currencies import minor_digits
from apps.accounting.text import money_text, quantity_text
from apps.clusters.models import Cluster
from apps.clusters.outbound import outbound_problem
from apps.teams.models import Team

KIND_NAMESPACE = "namespace"
KIND_CLUSTER_QUEUE = "cluster_queue"


class RecommendationSnapshot(models.Model):
    """The advice for one resource of one namespace or ClusterQueue, as it stood on `day`."""

    class Kind(models.TextChoices):
        NAMESPACE = KIND_NAMESPACE, "namespace (ResourceQuota)"
        CLUSTER_QUEUE = KIND_CLUSTER_QUEUE, "Kueue ClusterQueue"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    name = models.CharField(max_length=253, help_text="namespace or ClusterQueue name")
    resource = models.CharField(max_length=100)
    day = models.DateField()
    window_days = models.PositiveIntegerField()
    history_hours = models.PositiveIntegerField()
    hard = models.FloatField(null=True, blank=True)
    p50 = models.FloatField()
    p90 = models.FloatField()
    p95 = models.FloatField()
    target = models.PositiveIntegerField()
    lower_bound = models.FloatField()
    upper_bound = models.FloatField()
    verdict = models.CharField(max_length=20)
    reason = models.TextField()
    # 3 places: the finest minor unit of a currency in circulation (KWD; docs/dates-and-money.md)
    monthly_money_at_stake = models.DecimalField(max_digits=15, decimal_places=3, null=True, blank=True)
    currency = models.CharField(max_length=3, blank=True)
    created_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "kind", "name", "resource", "day"], name="snapshot_unique_per_day"),
        ]
        indexes = [models.Index(fields=["cluster", "kind", "name", "resource", "-day"], name="snapshot_latest")]
        ordering = ["-day", "cluster", "kind", "name", "resource"]


class TeamBudget(models.Model):
    """A team's monthly GPU budget: money (in `currency`) or allocated GPU-hours."""

    class Unit(models.TextChoices):
        MONEY = "money", "money"
        GPU_HOURS = "gpu_hours", "GPU-hours"

    team = models.OneToOneField(Team, on_delete=models.CASCADE, related_name="gpu_budget")
    unit = models.CharField(max_length=10, choices=Unit.choices, default=Unit.GPU_HOURS)
    monthly_amount = models.DecimalField(max_digits=15, decimal_places=3, validators=[MinValueValidator(0)])
    currency = models.CharField(max_length=3, blank=True, help_text="money budgets only")
    email_to = models.CharField(max_length=1000, blank=True, help_text="comma-separated; empty: ALERT_EMAIL_TO")
    webhook_url = models.URLField(max_length=500, blank=True, help_text="empty: ALERT_WEBHOOK_URL")
    active = models.BooleanField(default=True)

    def __str__(self):
        return f"{self.team.name}: {self.amount_text(self.monthly_amount)} {self.currency or 'GPU-hours'}/month"

    def clean(self):
        if self.webhook_url and (problem := outbound_problem(self.webhook_url)):
            raise ValidationError({"webhook_url": problem})
        if self.unit == self.Unit.MONEY and not self.currency:
            raise ValidationError({"currency": "a money budget needs a currency"})
        if self.unit == self.Unit.MONEY and self.monthly_amount is not None:
            digits = minor_digits(self.currency)
            if -self.monthly_amount.normalize().as_tuple().exponent > digits:
                raise ValidationError({"monthly_amount": f"{self.currency} amounts have {digits} decimal place(s)"})

    def shown(self, amount) -> str:
        """An amount as people read it (alerts, e-mails): '$5,492.52', '1,234.50 GPU-hours'."""
        if self.unit == self.Unit.MONEY:
            return money_text(amount, self.currency)
        return f"{quantity_text(amount)} GPU-hours"

    def amount_text(self, amount) -> str:
        """An amount in this budget's unit as the alerts and the audit log write it: money in
        its currency's minor unit, GPU-hours to two decimals."""
        if self.unit == self.Unit.MONEY:
            return present(amount, self.currency)
        return str(amount.quantize(Decimal("0.01")))


class Alert(models.Model):
    """One alert per budget threshold per team per month, per team's month-end forecast passing
    its budget per month, or per pod idle episode.

    `key` is the dedup key: `budget:<team>:<YYYY-MM>:<percent>`, `forecast:<team>:<YYYY-MM>` or
    `idle:<cluster id>:<namespace>/<pod>:<episode start, epoch seconds>`.
    """

    class Kind(models.TextChoices):
        BUDGET = "budget", "budget"
        FORECAST = "forecast", "budget forecast"
        IDLE = "idle", "idle GPU"

    key = models.CharField(max_length=600, unique=True)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    team = models.CharField(max_length=100, blank=True)
    cluster = models.ForeignKey(Cluster, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    namespace = models.CharField(max_length=253, blank=True)
    pod = models.CharField(max_length=253, blank=True)
    episode_start = models.DateTimeField(null=True, blank=True)
    episode_end = models.DateTimeField(null=True, blank=True)
    text = models.TextField()
    fields = models.JSONField(default=dict, blank=True, help_text="structured details, as sent")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["kind", "cluster", "namespace", "pod"], name="alert_pod")]

    def __str__(self):
        return self.text[:120]


class AlertDelivery(models.Model):
    class Channel(models.TextChoices):
        EMAIL = "email", "e-mail"
        WEBHOOK = "webhook", "webhook"

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        SENT = "sent", "sent"
        FAILED = "failed", "failed"

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.CharField(max_length=10, choices=Channel.choices)
    target = models.CharField(max_length=1000, help_text="recipients or URL")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["alert", "channel", "target"], name="delivery_unique"),
        ]

    def __str__(self):
        return f"{self.get_channel_display()} to {self.target} ({self.status})"

    def public_error(self) -> str:
        """What a non-admin may read of a failure: the HTTP status or the error's kind, never
        the receiving server's reply (its error page may echo tokens or internal addresses)."""
        if not self.last_error:
            return ""
        head = self.last_error.split(":", 1)[0].strip()
        if head.startswith("HTTP ") and head[5:].isdigit():
            return f"delivery failed ({head})"
        return f"delivery failed ({head if head.isidentifier() else 'error'})"


class DeliveryAttempt(models.Model):
    delivery = models.ForeignKey(AlertDelivery, on_delete=models.CASCADE, related_name="attempt_log")
    at = models.DateTimeField(auto_now_add=True)
    ok = models.BooleanField()
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "id"]
