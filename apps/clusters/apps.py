from django.apps import AppConfig


class ClustersConfig(AppConfig):
    name = "apps.clusters"
    label = "clusters"
    default_auto_field = "django.db.models.BigAutoField"
