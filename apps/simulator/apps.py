from django.apps import AppConfig


class SimulatorConfig(AppConfig):
    name = "apps.simulator"
    label = "simulator"
    default_auto_field = "django.db.models.BigAutoField"
