"""Who receives the monthly statement by e-mail, and every delivery made (docs/chargeback.md,
"Statements by e-mail")."""
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from apps.teams.models import Team


class StatementRecipient(models.Model):
    """A person or a mailbox that gets the statement when a month is closed.

    Without any row, finance users and team leads with an e-mail address get it (their own
    scope: finance every team, a lead their teams). A row naming a user replaces that user's
    default (disable it to stop their mail); a row naming an address adds a mailbox.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                             related_name="+", help_text="sent to the user's e-mail address, within what the user may see")
    email = models.EmailField(blank=True, help_text="or an address (e.g. the accounts-payable mailbox)")
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE, related_name="+",
                             help_text="empty: all teams (a user: all of theirs)")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["email", "user__username", "team__name"]
        constraints = [
            models.CheckConstraint(
                condition=(models.Q(user__isnull=True) & ~models.Q(email=""))
                | (models.Q(user__isnull=False) & models.Q(email="")),
                name="statement_recipient_user_or_email"),
        ]

    def clean(self):
        if (self.user_id is None) == (not self.email):
            raise ValidationError("give either a user or an e-mail address, not both")
        if self.user_id is not None and not self.user.email:
            raise ValidationError({"user": f"{self.user.get_username()} has no e-mail address"})

    def __str__(self):
        who = self.user.get_username() if self.user_id else self.email
        return f"{who}: {self.team.name if self.team_id else 'all teams'}{'' if self.enabled else ' (disabled)'}"


class StatementDelivery(models.Model):
    """One statement e-mailed (or not) to one address: what, to whom, when, and what went wrong."""

    class Occasion(models.TextChoices):
        CLOSE = "close", "month closed"
        MONTH_TO_DATE = "month_to_date", "month to date (schedule)"

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        SENT = "sent", "sent"
        FAILED = "failed", "failed"

    period = models.CharField(max_length=7)
    occasion = models.CharField(max_length=20, choices=Occasion.choices)
    edition = models.CharField(max_length=40, help_text="the close's instant, or the day of a scheduled statement")
    email = models.CharField(max_length=254)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    scope = models.CharField(max_length=1000, help_text="the teams the attached statement covers")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "email"]
        verbose_name_plural = "statement deliveries"
        constraints = [models.UniqueConstraint(fields=["period", "occasion", "edition", "email", "scope"],
                                               name="statement_delivery_once")]
        indexes = [models.Index(fields=["status"])]

    def __str__(self):
        return f"{self.period} to {self.email} ({self.status})"
