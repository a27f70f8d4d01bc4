from django.conf import settings
from django.contrib import admin
from rest_framework.authtoken.admin import TokenProxy
from simple_history.admin import SimpleHistoryAdmin

from apps.web.deletes import RefusedDeletesAdmin

from .audit import do_delete_team, do_save_team
from .models import AuditEvent, LabelClaim, Namespace, NamespaceLabel, SignInIdentity, Team


@admin.register(Team)
class TeamAdmin(RefusedDeletesAdmin, SimpleHistoryAdmin):
    list_display = ("name", "cost_centre")
    filter_horizontal = ("members",)
    search_fields = ("name",)

    # Every change goes through the audited actions (docs/conventions.md, "Writes that matter").
    def save_model(self, request, obj, form, change):
        do_save_team(request.user, obj)

    def delete_model(self, request, obj):
        do_delete_team(request.user, obj)

    def delete_queryset(self, request, queryset):
        if not self.refused(request, queryset):
            for team in queryset:
                do_delete_team(request.user, team)


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


@admin.register(SignInIdentity)
class SignInIdentityAdmin(admin.ModelAdmin):
    """Which account each single sign-on `sub` signs in as (docs/security.md, "Single sign-on").
    Made on first sign-in; an admin adds one by hand to give an account that single sign-on may
    not take over by e-mail (a superuser, one with a local password) to a provider identity."""
    list_display = ("user", "subject", "linked_at")
    search_fields = ("user__username", "user__email", "subject")
    raw_id_fields = ("user",)


# DRF's older keys are plain text, and its admin lists them to any staff user who may view
# tokens. Gone while API_LEGACY_TOKENS is off (the keys are refused then anyway); while it is on,
# superusers only, and the list shows whose key it is, not the key (docs/api.md, "Tokens").
admin.site.unregister(TokenProxy)
if settings.API_LEGACY_TOKENS:
    @admin.register(TokenProxy)
    class LegacyTokenAdmin(admin.ModelAdmin):
        list_display = ("user", "created")
        fields = ("user",)
        raw_id_fields = ("user",)

        def has_module_permission(self, request):
            return request.user.is_active and request.user.is_superuser

        def has_view_permission(self, request, obj=None):
            return request.user.is_active and request.user.is_superuser

        def has_change_permission(self, request, obj=None):
            return False

        has_add_permission = has_delete_permission = has_view_permission
