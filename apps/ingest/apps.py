from django.apps import AppConfig


class IngestConfig(AppConfig):
    name = "apps.ingest"
    label = "ingest"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # A close asks when the fleet's history begins (docs/chargeback.md, "3. Close the month").
        from apps.accounting.signals import history_asked

        from .models import first_ingested_hour

        history_asked.connect(first_ingested_hour, dispatch_uid="ingest.first_ingested_hour")
