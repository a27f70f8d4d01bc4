from django.contrib import admin

from .models import AuditEvent, Namespace, Team


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "cost_centre")
    filter_horizontal = ("members",)
    search_fields = ("name",)


@admin.register(Namespace)
class NamespaceAdmin(admin.ModelAdmin):
    list_display = ("name", "cluster", "label_team", "label_seen_at")
    list_filter = ("cluster",)
    search_fields = ("name",)
    readonly_fields = ("cluster", "name", "label_team", "label_seen_at")

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
