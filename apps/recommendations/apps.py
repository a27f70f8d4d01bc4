from django.apps import AppConfig


class RecommendationsConfig(AppConfig):
    name = "apps.recommendations"
    label = "recommendations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The worker stores the default right-sizing window once a month's answer is current
        # (docs/performance.md, "The longest reads").
        from apps.accounting.signals import month_prepared

        month_prepared.connect(_prepare_rightsizing, dispatch_uid="recommendations.rightsizing_on_prepare")


def _prepare_rightsizing(sender=None, **kwargs):
    """`month_prepared` receiver, imported when a month is prepared, not by every process that
    loads the apps (docs/performance.md, "Process start-up")."""
    from .rightsizing.prepared import prepare_default_window

    return prepare_default_window(sender=sender, **kwargs)
