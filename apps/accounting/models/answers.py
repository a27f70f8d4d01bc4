"""Stored month answers and the input versions that prove them current (docs/performance.md).

`InputChange` is written only by Postgres triggers (migration 0006): every statement that
changes an input of a month's answer — usage rows, rates, node pools, namespace mappings,
labels and claims, team and cluster names, label trust, closed months' frozen cells —
appends a row, so no writer (the ORM, raw SQL, ingest's COPY) can forget it. Usage rows are
logged per touched date (the UTC date of an hour, the billing day of a daily row): November's
ingest leaves October's answers current. Everything else is logged with no date: it may
change any month.

A month's answer (`MonthAnswer`: its usage cells, its statement lines, or a closed month's
late-data cells) carries the version it was computed from; a read compares that with the
version now (one query over `InputChange`) and serves the stored rows only when they match.
"""
from django.db import models


class InputChange(models.Model):
    USAGE = "usage"        # dated: usage rows of `day`
    MAPPING = "mapping"    # which team, cluster name, price class, span boundaries: any month
    RATES = "rates"                # hourly rates and currencies only: re-pricing, not re-reading usage
    FROZEN = "frozen"      # closed months' frozen cells (closes and reopens): their late data
    EPOCH = "epoch"        # compaction of this log: every stored answer is re-proved
    OWNERS = "owners"              # pods' workloads (stored page parts: the right-sizing block)
    QUOTA = "quota"                # ResourceQuota and queued-demand hours (the team page's quota table, the quota advice)

    id = models.BigAutoField(primary_key=True)
    category = models.CharField(max_length=10)
    source = models.CharField(max_length=63, help_text="the table whose change this records")
    day = models.DateField(null=True, blank=True, help_text="usage: the date touched; empty: any month")
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["day", "id"], name="input_change_day"),
                   models.Index(fields=["category", "id"], name="input_change_undated",
                                condition=models.Q(day__isnull=True))]


class MonthAnswer(models.Model):
    """A stored part of a month's answer. Its cells and lines (`MonthCell`, `MonthLine`) point
    at it without a database key: `stored/answers.py` alone writes them, with the answer row in the same
    transaction, and deletes them before it (a deferred key checked each of a 10,000-GPU month's
    253,000 cells one by one at the commit, docs/performance.md "Bulk writes")."""
    CELLS = "cells"      # usage_cells(month, per_day=False): the usage API's and the lines' cells
    LINES = "lines"      # build_lines of those cells: the month's own statement lines
    DAYS = "days"        # usage_cells(month): the per-day cells closing freezes and FOCUS splits by day
    DELTA = "delta"      # a closed month: live per-day cells minus its frozen cells (late data)

    period = models.CharField(max_length=7)
    part = models.CharField(max_length=10)
    version = models.TextField()
    computed_at = models.DateTimeField(auto_now=True)
    compute_ms = models.FloatField(default=0.0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["period", "part"], name="month_answer_unique")]


class MonthCell(models.Model):
    """A stored usage cell (`core.lines.Cell`), in the order it was computed."""
    answer = models.ForeignKey(MonthAnswer, on_delete=models.CASCADE, related_name="+", db_index=False,
                               db_constraint=False)   # see MonthAnswer
    position = models.PositiveIntegerField()
    cluster_id_value = models.BigIntegerField()
    cluster = models.CharField(max_length=100)
    namespace = models.CharField(max_length=253, blank=True)
    team = models.CharField(max_length=100, blank=True)
    gpu_model = models.CharField(max_length=200)
    mig_profile = models.CharField(max_length=50, blank=True)
    price_class = models.CharField(max_length=20)
    day = models.DateField()
    gpu_seconds = models.FloatField()
    used_gpu_seconds = models.FloatField()
    idle_gpu_seconds = models.FloatField()
    mig_seconds = models.FloatField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["answer", "position"], name="month_cell_order")]


class MonthLine(models.Model):
    """A stored statement line (`core.lines.Line`), in the order it was computed."""
    answer = models.ForeignKey(MonthAnswer, on_delete=models.CASCADE, related_name="+", db_index=False,
                               db_constraint=False)   # see MonthAnswer
    position = models.PositiveIntegerField()
    kind = models.CharField(max_length=20)
    adjusts_period = models.CharField(max_length=7, blank=True)
    team = models.CharField(max_length=100, blank=True)
    cluster = models.CharField(max_length=100)
    namespace = models.CharField(max_length=253, blank=True)
    gpu_model = models.CharField(max_length=200)
    mig_profile = models.CharField(max_length=50, blank=True)
    price_class = models.CharField(max_length=20)
    rate_basis = models.CharField(max_length=20, blank=True)
    hourly_rate = models.DecimalField(max_digits=18, decimal_places=6, null=True)
    currency = models.CharField(max_length=3, blank=True)
    # The lines' seconds are floats' exact Decimals (`core.ratecard.to_decimal`): stored as the float.
    allocated_gpu_seconds = models.FloatField()
    used_gpu_seconds = models.FloatField()
    billed_seconds = models.FloatField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["answer", "position"], name="month_line_order")]


class MonthBody(models.Model):
    """A month's API answer as sent (JSON bytes, and a gzip copy of them), for one set of teams:
    the key ends in `stored.responses.scope_tag` (`all`, or a digest of the team names), with the version
    of the answer it was rendered from (docs/performance.md, "Stored month answers")."""
    period = models.CharField(max_length=7)
    key = models.CharField(max_length=200, help_text="which answer: endpoint and parameters")
    version = models.TextField()
    body = models.BinaryField()
    gzipped = models.BinaryField(null=True, help_text="the same body gzip-compressed, for clients that accept it")
    rendered_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["period", "key"], name="month_body_unique")]
