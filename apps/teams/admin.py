from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from .models import AuditEvent, LabelClaim, Namespace, NamespaceLabel, Team


@admin.register(Team)
class TeamAdmin(SimpleHistoryAdmin):
    list_display = ("name", "cost_centre")
    filter_horizontal = ("members",)
    search_fields = ("name",)


class NamespaceLabelInline(admin.TabularInline):
    """The label history as ingest recorded it: read-only, like the data it came from."""
    model = NamespaceLabel
    fields = readonly_fields = ("valid_from", "team_label")
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Namespace)
class NamespaceAdmin(admin.ModelAdmin):
    list_display = ("name", "cluster", "label_team", "label_seen_at")
    list_filter = ("cluster",)
    search_fields = ("name",)
    readonly_fields = ("cluster", "name", "label_team", "label_seen_at")
    inlines = [NamespaceLabelInline]

    def has_add_permission(self, request):
        return False  # namespaces are learned from the data


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("at", "actor", "action", "target")
    list_filter = ("action",)
    readonly_fields = ("at", "actor", "action", "target", "old_value", "new_value")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False     # append-only, superusers included (AuditEvent)


@admin.register(LabelClaim)
class LabelClaimAdmin(SimpleHistoryAdmin):
    """Decisions on namespace → team claims; made from the Team claims page (audited there)."""
    list_display = ("namespace", "team_label", "decision", "effective_from", "decided_by", "decided_at")
    list_filter = ("decision", "namespace__cluster")
    readonly_fields = ("namespace", "team_label", "decision", "effective_from", "decided_by", "decided_at")

    def has_add_permission(self, request):
        return False
