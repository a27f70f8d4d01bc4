from django.contrib import admin
from django.db import models

from .models import Cluster, ClusterQueueQuota, Device


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    # A Prometheus URL typed without a scheme is taken as http:// (in-cluster Prometheus rarely
    # has TLS), said explicitly because Django 6 changes the default to https://.
    formfield_overrides = {models.URLField: {"assume_scheme": "http"}}
    list_display = ("name", "prometheus_url", "label_spelling", "detected_label_spelling",
                    "detected_interval_seconds", "ingested_until")
    search_fields = ("name",)
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
