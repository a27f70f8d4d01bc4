from django import forms
from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from .models import Cluster, ClusterQueueQuota, Device
from .outbound import redacted

SECRET_FIELDS = ("bearer_token", "basic_auth_password")


class PrometheusURLFormField(forms.CharField):
    """Typed without a scheme, a Prometheus URL is http:// (in-cluster Prometheus rarely has TLS)."""

    def to_python(self, value):
        value = super().to_python(value)
        return value if not value or "://" in value else f"http://{value}"


class ClusterForm(forms.ModelForm):
    """Credentials are write-only: the form never shows the stored value (not even sealed); an
    empty box keeps it, the "clear" box removes it (docs/security.md)."""

    clear_bearer_token = forms.BooleanField(required=False, label="Clear the stored bearer token")
    clear_basic_auth_password = forms.BooleanField(required=False, label="Clear the stored password")

    class Meta:
        model = Cluster
        fields = "__all__"
        widgets = {name: forms.PasswordInput(render_value=False) for name in SECRET_FIELDS}
        field_classes = {"prometheus_url": PrometheusURLFormField}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in SECRET_FIELDS:
            stored = bool(self.instance.pk and getattr(self.instance, name))
            self.fields[name].help_text = ("a value is stored (encrypted); leave empty to keep it" if stored
                                           else "stored encrypted, never shown; or use the source field above")
            self.initial[name] = ""

    def clean(self):
        data = super().clean()
        for name in SECRET_FIELDS:
            if data.get(f"clear_{name}"):
                data[name] = ""
            elif not data.get(name) and self.instance.pk:
                data[name] = Cluster.objects.filter(pk=self.instance.pk).values_list(name, flat=True).first() or ""
        return data


@admin.register(Cluster)
class ClusterAdmin(SimpleHistoryAdmin):
    form = ClusterForm
    list_display = ("name", "prometheus_url", "archived", "label_spelling", "detected_label_spelling",
                    "detected_interval_seconds", "ingested_until")
    list_filter = ("archived",)
    search_fields = ("name",)

    @admin.display(description="Prometheus URL", ordering="prometheus_url")
    def prometheus_address(self, cluster):
        """A row saved before URLs with credentials were refused shows them as *** (docs/security.md)."""
        return redacted(cluster.prometheus_url)
    readonly_fields = ("detected_label_spelling", "detected_interval_seconds", "ingested_until", "created_at")


@admin.register(Device)
class DeviceAdmin(admin.ModelAdmin):
    list_display = ("cluster", "host", "gpu_index", "model_name", "mig_profile", "mig_instance_id", "uuid", "last_seen")
    list_filter = ("cluster", "model_name", "mig_profile")
    search_fields = ("uuid", "host")


@admin.register(ClusterQueueQuota)
class ClusterQueueQuotaAdmin(admin.ModelAdmin):
    list_display = ("cluster", "cluster_queue", "cohort", "flavor", "resource", "nominal_quota",
                    "borrowing_limit", "lending_limit", "pending_workloads", "observed_at")
    list_filter = ("cluster",)
