from django.apps import AppConfig


class IngestConfig(AppConfig):
    name = "apps.ingest"
    label = "ingest"
    default_auto_field = "django.db.models.BigAutoField"
