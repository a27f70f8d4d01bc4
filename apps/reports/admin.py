"""Django admin: who receives the statements by e-mail, and every delivery (failures first to see)."""
from django.contrib import admin, messages

from .recipients import do_delete_recipient, do_save_recipient, statement_recipients
from .models import StatementDelivery, StatementRecipient
from apps.notifications.sending import queue_after_commit

from .tasks import send_statements


@admin.register(StatementRecipient)
class StatementRecipientAdmin(admin.ModelAdmin):
    list_display = ("__str__", "user", "email", "team", "enabled", "created_at")
    list_filter = ("enabled", "team")
    search_fields = ("email", "user__username", "user__email", "team__name")

    # Changes go through the audited actions (Teams → Audit events: who, when, old → new).
    def save_model(self, request, obj, form, change):
        do_save_recipient(request.user, obj)

    def delete_model(self, request, obj):
        do_delete_recipient(request.user, obj)

    def delete_queryset(self, request, queryset):
        for recipient in queryset:
            do_delete_recipient(request.user, recipient)

    def changelist_view(self, request, extra_context=None):
        """Say who gets the next statement, defaults included, above the list."""
        if request.method == "GET" and self.has_view_permission(request):
            who = [f"{r.email} ({r.scope})" + (f": not sent, {r.refused}" if r.refused else "")
                   for r in statement_recipients()]
            messages.info(request, "The next statement goes to: " + ("; ".join(who) or "nobody"))
        return super().changelist_view(request, extra_context)


@admin.register(StatementDelivery)
class StatementDeliveryAdmin(admin.ModelAdmin):
    list_display = ("created_at", "period", "occasion", "email", "scope", "status", "attempts", "sent_at", "error")
    list_filter = ("status", "occasion", "period")
    search_fields = ("email", "period", "scope", "error")
    readonly_fields = [f.name for f in StatementDelivery._meta.fields]
    actions = ["send_again"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Send the selected statements again (those not sent yet)")
    def send_again(self, request, queryset):
        editions = set(queryset.exclude(status=StatementDelivery.Status.SENT)
                       .values_list("period", "occasion", "edition"))
        for period, occasion, edition in sorted(editions):
            queue_after_commit(send_statements, period, occasion, edition)
        messages.info(request, f"queued {len(editions)} statement edition(s); each sends what has not gone yet")
