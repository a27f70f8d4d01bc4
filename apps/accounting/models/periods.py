"""Billing periods and their frozen statements.

A period with no row, or with `closed_at` empty, is open: its statement is computed from the
rollups on every view. Closing stores the statement as `StatementLine`s (what finance saw and
signed off) and the usage it was computed from as `FrozenDay`s (the baseline against which
late data becomes adjustment lines in the next open period).
"""
from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

from .columns import ListColumn

period_validator = RegexValidator(r"^\d{4}-(0[1-9]|1[0-2])$", "a month like 2026-03 (YYYY-MM)")


class BillingPeriod(models.Model):
    period = models.CharField(max_length=7, unique=True, validators=[period_validator], help_text="YYYY-MM in the billing time zone")
    billing_timezone = models.CharField(max_length=64, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="+")
    # The rate card the frozen statement used: its last change (a HistoricalRate id) at closing.
    rate_card_version = models.PositiveIntegerField(null=True, blank=True)
    rate_card_changed_at = models.DateTimeField(null=True, blank=True)
    # Each cluster's ingest watermark at closing (name -> ISO instant or null): the freshness its
    # workbook states, which later ingests do not move (docs/chargeback.md, "The statement workbook").
    watermarks = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-period"]

    def __str__(self):
        return f"{self.period} ({'closed' if self.is_closed else 'open'})"

    @property
    def is_closed(self):
        return self.closed_at is not None


class LineKind(models.TextChoices):
    USAGE = "usage", "usage"
    UNALLOCATED = "unallocated", "unallocated capacity"
    ADJUSTMENT = "adjustment", "adjustment"


class StatementLine(models.Model):
    """One frozen line of a closed period's statement, as it was shown when closed."""

    # Not enforced by the database, as `FrozenDay.period` is not: only the close writes lines,
    # inside its transaction, which holds the period's row; deletes go through Django, which
    # cascades. A deferred foreign key checked each of a 10,000-GPU month's 22,800 lines one by
    # one at the commit (0.1 s of a 1.7 s close, docs/performance.md "Bulk writes"). Indexed by
    # (period, team) below.
    period = models.ForeignKey(BillingPeriod, on_delete=models.CASCADE, related_name="lines",
                               db_constraint=False, db_index=False)
    kind = models.CharField(max_length=20, choices=LineKind.choices)
    adjusts_period = models.CharField(max_length=7, blank=True, help_text="adjustments: the closed month corrected")
    team = models.CharField(max_length=100, blank=True)
    cluster = models.CharField(max_length=100)
    namespace = models.CharField(max_length=253, blank=True)
    gpu_model = models.CharField(max_length=200)
    mig_profile = models.CharField(max_length=50, blank=True)
    price_class = models.CharField(max_length=20)
    rate_basis = models.CharField(max_length=20, blank=True, help_text="mig_profile, gpu_model, or empty: unpriced")
    hourly_rate = models.DecimalField(max_digits=18, decimal_places=6, null=True, blank=True)
    currency = models.CharField(max_length=3, blank=True)
    allocated_gpu_seconds = models.FloatField()
    used_gpu_seconds = models.FloatField()
    billed_seconds = models.FloatField(help_text="what the rate multiplies: instance-seconds or GPU-seconds")
    cost = models.DecimalField(max_digits=28, decimal_places=12, null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["period", "team"])]


class FrozenDay(models.Model):
    """One billing day's usage cells booked in a statement, stored as columns: position i of
    every list is one cell at the (cluster, namespace, model, profile, price class, day) grain.

    `period` is the month the usage belongs to; `booked_in` the statement that carried it (the
    same period at close, or a later one for adjustments). A day may have several rows (a close
    writes its adjustments apart from its month). `apps/accounting/ledger/frozen.py` writes and reads them.
    """

    # Not enforced by the database: only the close writes them, inside its transaction, which
    # holds the closing period's row; deletes go through Django, which cascades. One row per day,
    # not per cell: a close of a 10,000-GPU month writes 31 rows of columns instead of 230,000
    # rows, a third of the time (docs/performance.md, "Frozen cells stored by the day"). Indexed
    # by BRIN on Postgres, plain indexes elsewhere (migration 0002).
    period = models.ForeignKey(BillingPeriod, on_delete=models.CASCADE, related_name="frozen_days",
                               db_constraint=False, db_index=False)
    booked_in = models.ForeignKey(BillingPeriod, on_delete=models.CASCADE, related_name="booked_days",
                                  db_constraint=False, db_index=False)
    day = models.DateField()
    cluster_ids = ListColumn(of="bigint")
    clusters = ListColumn(of="text")
    namespaces = ListColumn(of="text")
    teams = ListColumn(of="text")
    gpu_models = ListColumn(of="text")
    mig_profiles = ListColumn(of="text")
    price_classes = ListColumn(of="text")
    gpu_seconds = ListColumn(of="double precision")
    used_gpu_seconds = ListColumn(of="double precision")
    # The idle seconds the close froze with the cell (docs/chargeback.md, "Windows across a
    # close"). Null only between migration 0018's schema change and its back-fill.
    idle_gpu_seconds = ListColumn(of="double precision", null=True)
    mig_seconds = ListColumn(of="double precision")
