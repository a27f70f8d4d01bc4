"""Teams, namespaces, dated namespace -> team assignments, and who may see what."""
from django.conf import settings
from django.db import models

from apps.clusters.models import Cluster

UNASSIGNED = "unassigned"


class Team(models.Model):
    name = models.CharField(max_length=100, unique=True)
    cost_centre = models.CharField(max_length=100, blank=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="teams",
                                     help_text="team leads who may see this team's namespaces")

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Namespace(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="namespaces")
    name = models.CharField(max_length=253)
    label_team = models.CharField(max_length=100, blank=True, help_text="from kube_namespace_labels")
    label_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="namespace_unique_per_cluster")]
        ordering = ["cluster", "name"]

    def __str__(self):
        return f"{self.cluster.name}/{self.name}"


class NamespaceAssignment(models.Model):
    """The admin's mapping; in force from `effective_from` (a date in the billing zone) on."""

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="assignments")
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="assignments")
    effective_from = models.DateField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["namespace", "effective_from"], name="one_assignment_per_day"),
        ]
        ordering = ["namespace", "effective_from"]


class AuditEvent(models.Model):
    """Who did what, when, old -> new: every write that matters leaves one."""

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
