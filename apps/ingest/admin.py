from django.contrib import admin, messages

from .models import IngestRun, counted_twice_by_cluster


@admin.register(IngestRun)
class IngestRunAdmin(admin.ModelAdmin):
    list_display = ("started_at", "cluster", "window_start", "window_end", "trigger", "status",
                    "rows_written", "duration_seconds", "error")
    list_filter = ("cluster", "status", "trigger")
    readonly_fields = [f.name for f in IngestRun._meta.fields]

    def has_add_permission(self, request):
        return False

    def changelist_view(self, request, extra_context=None):
        # A banner while a cluster's last run found GPUs another cluster holds in the same hour
        # (docs/ingest.md, "The same GPU in two clusters"): their hours are billed twice.
        twice = {name: n for name, n in counted_twice_by_cluster().items() if n}
        if twice:
            self.message_user(request, "GPUs billed twice (the same UUID in two clusters in the same hour; see the "
                              "runs' warnings): " + ", ".join(f"{name}: {n}" for name, n in sorted(twice.items())),
                              messages.WARNING)
        return super().changelist_view(request, extra_context)
