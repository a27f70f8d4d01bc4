"""A refused query string, said without any web framework: the report data modules raise it,
the pages answer it with `apps.web.pages.bad_request` and the API with a 400 of the same body
(`apps.web.drf.exception_handler`)."""
from django.http import Http404


class BadParameters(ValueError):
    """`detail` maps each refused parameter to its reason, e.g. {"page": "page=9 is past the last page (2)"}."""

    def __init__(self, detail: dict):
        super().__init__(detail)
        self.detail = detail


class UnknownName(Http404):
    """A query string names a cluster or team that does not exist: a 404 on the page and in the
    API (Django and DRF both answer `Http404`), raised by code that otherwise speaks no HTTP."""
