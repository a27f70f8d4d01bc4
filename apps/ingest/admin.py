from django.contrib import admin

from .models import IngestRun


@admin.register(IngestRun)
class IngestRunAdmin(admin.ModelAdmin):
    list_display = ("started_at", "cluster", "window_start", "window_end", "trigger", "status",
                    "rows_written", "duration_seconds", "error")
    list_filter = ("cluster", "status", "trigger")
    readonly_fields = [f.name for f in IngestRun._meta.fields]

    def has_add_permission(self, request):
        return False
