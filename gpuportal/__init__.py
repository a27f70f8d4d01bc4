"""The project package: settings, URLs, the API's URL list, sign-in, health probes; the Celery app is loaded with it."""
from .celery import app as celery_app

__all__ = ("celery_app",)
