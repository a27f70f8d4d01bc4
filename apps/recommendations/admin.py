from django.contrib import admin
from django.db import models

from .budgets import BUDGET_FIELDS, do_set_team_budget
from .models import Alert, AlertDelivery, DeliveryAttempt, RecommendationSnapshot, TeamBudget


@admin.register(TeamBudget)
class TeamBudgetAdmin(admin.ModelAdmin):
    # A webhook URL typed without a scheme is taken as https://, Django 6's default, said now.
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    list_display = ("team", "unit", "monthly_amount", "currency", "email_to", "webhook_url", "active")
    list_filter = ("unit", "active")

    def save_model(self, request, obj, form, change):
        do_set_team_budget(request.user, obj.team, **{f: getattr(obj, f) for f in BUDGET_FIELDS})


class AlertDeliveryInline(admin.TabularInline):
    model = AlertDelivery
    extra = 0
    readonly_fields = ("channel", "target", "status", "attempts", "last_error", "sent_at")
    can_delete = False


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):
    list_display = ("created_at", "kind", "team", "text")
    list_filter = ("kind",)
    search_fields = ("key", "team", "namespace", "pod", "text")
    readonly_fields = [f.name for f in Alert._meta.fields]
    inlines = [AlertDeliveryInline]


@admin.register(DeliveryAttempt)
class DeliveryAttemptAdmin(admin.ModelAdmin):
    list_display = ("at", "delivery", "ok", "status_code", "error")
    list_filter = ("ok",)


@admin.register(RecommendationSnapshot)
class RecommendationSnapshotAdmin(admin.ModelAdmin):
    list_display = ("day", "cluster", "kind", "name", "resource", "hard", "target", "verdict", "monthly_money_at_stake")
    list_filter = ("kind", "verdict", "cluster")
    date_hierarchy = "day"
