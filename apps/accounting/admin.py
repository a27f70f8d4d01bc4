from django.contrib import admin, messages
from simple_history.admin import SimpleHistoryAdmin

from django import forms

from apps.clusters.admin import ClusterAdmin
from apps.clusters.models import Cluster
from apps.teams.models import NamespaceAssignment
from apps.web.deletes import RefusedDeletesAdmin

from apps.accounting.actions.audit import ActionError
from apps.accounting.actions.clusters import do_delete_node_pool, do_save_cluster, do_save_node_pool
from apps.accounting.actions.namespaces import do_assign_namespace
from apps.accounting.actions.periods import do_close_period, do_reopen_period
from apps.accounting.actions.rates import do_delete_rate, do_save_rate
from .models import BillingPeriod, NodePool, Rate, StatementLine


# A cluster that priced a closed month is not deleted (docs/chargeback.md, "History stays"): its
# admin (apps/clusters, below the plumbing that says why) is given the refusal here, once it is
# registered (clusters come first in INSTALLED_APPS).
# Its saves go through the audited action too (docs/conventions.md, "Writes that matter").
class AuditedClusterAdmin(RefusedDeletesAdmin, ClusterAdmin):
    def save_model(self, request, obj, form, change):
        do_save_cluster(request.user, obj)


admin.site.unregister(Cluster)
admin.site.register(Cluster, AuditedClusterAdmin)


@admin.register(Rate)
class RateAdmin(RefusedDeletesAdmin, SimpleHistoryAdmin):
    list_display = ("gpu_model", "mig_profile", "price_class", "hourly_rate", "currency", "effective_from",
                    "updated_at")
    list_filter = ("price_class", "currency", "gpu_model")
    search_fields = ("gpu_model", "mig_profile")
    date_hierarchy = "effective_from"

    # Every change goes through the audited actions, as in the API and the CLI.
    def save_model(self, request, obj, form, change):
        do_save_rate(request.user, obj)

    def delete_model(self, request, obj):
        do_delete_rate(request.user, obj)

    def delete_queryset(self, request, queryset):
        # A rate that priced a closed month is refused before anything is deleted (RefusedDeletesAdmin).
        if not self.refused(request, queryset):
            for rate in queryset:
                do_delete_rate(request.user, rate)


@admin.register(NodePool)
class NodePoolAdmin(SimpleHistoryAdmin):
    list_display = ("cluster", "name", "host_pattern", "price_class", "priority")
    list_filter = ("cluster", "price_class")

    # Every change goes through the audited actions (docs/conventions.md, "Writes that matter").
    def save_model(self, request, obj, form, change):
        do_save_node_pool(request.user, obj)

    def delete_model(self, request, obj):
        do_delete_node_pool(request.user, obj)

    def delete_queryset(self, request, queryset):
        for pool in queryset:
            do_delete_node_pool(request.user, pool)


class StatementLineInline(admin.TabularInline):
    model = StatementLine
    extra = 0
    can_delete = False
    fields = ("kind", "adjusts_period", "team", "cluster", "namespace", "gpu_model", "mig_profile", "price_class",
              "hourly_rate", "currency", "allocated_gpu_seconds", "cost")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(BillingPeriod)
class BillingPeriodAdmin(admin.ModelAdmin):
    list_display = ("period", "closed_at", "closed_by", "billing_timezone")
    inlines = [StatementLineInline]
    actions = ["close_periods", "reopen_periods"]

    def get_inlines(self, request, obj):
        return [StatementLineInline] if obj is not None and obj.is_closed else []

    def get_actions(self, request):
        # close and reopen only: a bulk delete on the list of months invites the wrong click
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    # Adding a period only names the month; closing and reopening are the audited actions on
    # the list page, the only writes of the rest (docs/chargeback.md, "3. Close the month").
    _SET_BY_CLOSING = ("closed_at", "closed_by", "billing_timezone", "rate_card_version", "rate_card_changed_at")

    def get_readonly_fields(self, request, obj=None):
        return ("period", *self._SET_BY_CLOSING) if obj else self._SET_BY_CLOSING

    def has_change_permission(self, request, obj=None):
        # A closed period is shown, never edited: its fields say what its statement was made with.
        return super().has_change_permission(request, obj) and not (obj is not None and obj.is_closed)

    def has_delete_permission(self, request, obj=None):
        # Deleting a closed period would delete its frozen statement; reopen it instead.
        return super().has_delete_permission(request, obj) and not (obj is not None and obj.is_closed)

    def delete_queryset(self, request, queryset):
        closed = sorted(queryset.filter(closed_at__isnull=False).values_list("period", flat=True))
        if closed:
            self.message_user(request, f"not deleted: {', '.join(closed)} closed; reopen first", level=messages.ERROR)
        queryset.filter(closed_at__isnull=True).delete()

    @admin.action(description="Close the selected periods (freeze their statements)")
    def close_periods(self, request, queryset):
        self._run(request, queryset, do_close_period, "closed")

    @admin.action(description="Reopen the selected periods (admins only)")
    def reopen_periods(self, request, queryset):
        self._run(request, queryset, do_reopen_period, "reopened")

    def _run(self, request, queryset, action, verb):
        for bp in queryset:
            try:
                action(bp.period, actor=request.user)
                self.message_user(request, f"{bp.period} {verb}")
            except ActionError as exc:
                self.message_user(request, f"{bp.period}: {exc}", level=messages.ERROR)


class NamespaceAssignmentForm(forms.ModelForm):
    class Meta:
        model = NamespaceAssignment
        fields = ("namespace", "team", "effective_from")

    def clean(self):
        data = super().clean()
        if self.instance.pk and any(f in self.changed_data for f in ("namespace", "effective_from")):
            raise forms.ValidationError("add a new assignment instead of moving an existing one")
        return data


@admin.register(NamespaceAssignment)
class NamespaceAssignmentAdmin(SimpleHistoryAdmin):
    """Dated namespace -> team moves; saved through do_assign_namespace (audited, closed months refused)."""

    form = NamespaceAssignmentForm
    list_display = ("namespace", "team", "effective_from", "created_by", "created_at")
    list_filter = ("team", "namespace__cluster")
    search_fields = ("namespace__name", "team__name")

    def save_model(self, request, obj, form, change):
        try:
            saved = do_assign_namespace(obj.namespace, obj.team, obj.effective_from, actor=request.user)
        except ActionError as exc:
            self.message_user(request, f"not saved: {exc}", level=messages.ERROR)
            raise _Refused() from exc
        obj.pk = saved.pk

    def add_view(self, request, *args, **kwargs):
        return self._guard(super().add_view, request, *args, **kwargs)

    def change_view(self, request, *args, **kwargs):
        return self._guard(super().change_view, request, *args, **kwargs)

    def _guard(self, view, request, *args, **kwargs):
        from django.http import HttpResponseRedirect

        try:
            return view(request, *args, **kwargs)
        except _Refused:
            return HttpResponseRedirect(request.path)

    def has_delete_permission(self, request, obj=None):
        return False  # a move is undone by a newer move, so history stays whole


class _Refused(Exception):
    pass
