"""Teams, namespaces, dated namespace -> team assignments and label history, and who may see what."""
from datetime import datetime, timezone

from django.conf import settings
from django.db import models
from simple_history.models import HistoricalRecords

from apps.clusters.models import Cluster

UNASSIGNED = "unassigned"
# `NamespaceLabel.valid_from` of a label known from before label history was kept: the data
# migration dates each namespace's label from here, so it still covers every earlier hour.
SINCE_EVER = datetime(1970, 1, 1, tzinfo=timezone.utc)


class Team(models.Model):
    name = models.CharField(max_length=100, unique=True)
    cost_centre = models.CharField(max_length=100, blank=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="teams",
                                     help_text="team leads who may see this team's namespaces")

    history = HistoricalRecords()

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Namespace(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="namespaces")
    name = models.CharField(max_length=253)
    # The latest label and when kube_namespace_labels was last seen, for the admin list and as
    # how far the label history is known; teams are resolved from NamespaceLabel.
    label_team = models.CharField(max_length=100, blank=True,
                                  help_text="latest team label from kube_namespace_labels (history: label rows)")
    label_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="namespace_unique_per_cluster")]
        ordering = ["cluster", "name"]

    def __str__(self):
        return f"{self.cluster.name}/{self.name}"


class NamespaceLabel(models.Model):
    """From `valid_from` (a whole UTC hour) on, kube_namespace_labels gave this team label
    (empty: the namespace had no team label). One row per change, written by ingest
    (apps/teams/labels.py); docs/teams-and-relabels.md says how hours are resolved.

    Its own history is dated (`history`: when each row was written and removed), so a closed
    month's late data and views read the label history as it stood at the month's close, not as a
    re-ingest rewrote it since (docs/accounting.md, "Late data for a closed month")."""

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="label_history")
    valid_from = models.DateTimeField()
    team_label = models.CharField(max_length=100, blank=True)

    history = HistoricalRecords()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["namespace", "valid_from"], name="one_label_per_hour")]
        ordering = ["namespace", "valid_from"]

    def __str__(self):
        return f"{self.namespace} from {self.valid_from:%Y-%m-%d %H:%M}: {self.team_label or '(none)'}"


class LabelClaim(models.Model):
    """An admin's decision on a namespace's claim to a team through its `team` label, for a
    cluster whose labels need approval (Cluster.label_trust = approve). An approved claim counts
    from `effective_from`; an ignored one never counts (docs/teams-and-relabels.md)."""

    class Decision(models.TextChoices):
        APPROVED = "approved", "approved"
        IGNORED = "ignored", "ignored"

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="claims")
    team_label = models.CharField(max_length=100)
    decision = models.CharField(max_length=10, choices=Decision.choices)
    effective_from = models.DateTimeField(help_text="an approved claim counts from this hour on")
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    decided_at = models.DateTimeField(auto_now_add=True)

    history = HistoricalRecords()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["namespace", "team_label"], name="one_decision_per_claim")]
        ordering = ["namespace", "team_label"]

    def __str__(self):
        return f"{self.namespace} → {self.team_label}: {self.decision} from {self.effective_from:%Y-%m-%d %H:%M}"


class NamespaceAssignment(models.Model):
    """The admin's mapping; in force from `effective_from` (a date in the billing zone) on."""

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="assignments")
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="assignments")
    effective_from = models.DateField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    history = HistoricalRecords()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["namespace", "effective_from"], name="one_assignment_per_day"),
        ]
        ordering = ["namespace", "effective_from"]


class AppendOnly(Exception):
    """An audit event was to be changed or deleted: they are written once and kept."""


class AuditEventQuerySet(models.QuerySet):
    def delete(self):
        raise AppendOnly("audit events are never deleted")

    def update(self, **kwargs):
        # Deleting a user empties `actor` on their events (on_delete=SET_NULL, which Django
        # does with this update); the events themselves stay as they were.
        if kwargs.keys() != {"actor"} or kwargs["actor"] is not None:
            raise AppendOnly("audit events are never changed")
        return super().update(**kwargs)


class AuditEvent(models.Model):
    """Who did what, when, old -> new: every write that matters leaves one. Append-only: no
    one changes or deletes an event, superusers included (docs/chargeback.md, "The audit log")."""

    objects = AuditEventQuerySet.as_manager()

    at = models.DateTimeField(auto_now_add=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    action = models.CharField(max_length=100)
    target = models.CharField(max_length=300, blank=True)
    old_value = models.JSONField(null=True, blank=True)
    new_value = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-at"]
        indexes = [models.Index(fields=["action", "at"])]

    def __str__(self):
        return f"{self.at:%Y-%m-%d %H:%M} {self.action} {self.target}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AppendOnly("audit events are never changed")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnly("audit events are never deleted")


class ApiToken(models.Model):
    """What the portal adds to a knox token (docs/security.md, "API tokens"): the name its owner
    gave it, its scope, and when it was last used. The key itself is never stored: knox keeps
    its SHA-512 digest and the first characters, by which it is looked up."""

    token = models.OneToOneField("knox.AuthToken", on_delete=models.CASCADE, related_name="portal")
    name = models.CharField(max_length=100)
    read_only = models.BooleanField(default=True, help_text="GET, HEAD and OPTIONS only")
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self):
        return f"{self.name} ({'read-only' if self.read_only else 'read-write'})"


class SignInIdentity(models.Model):
    """The identity provider's `sub` for a user who signs in by single sign-on (docs/security.md,
    "Single sign-on"): sign-ins are matched on it, never on the e-mail address, which a provider
    may let its users choose."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sign_in_identity")
    subject = models.CharField(max_length=255, unique=True, help_text="the identity provider's `sub` claim")
    linked_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "sign-in identities"

    def __str__(self):
        return f"{self.user} = sub {self.subject}"
