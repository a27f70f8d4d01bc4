"""The API's exception handler (settings REST_FRAMEWORK["EXCEPTION_HANDLER"]): DRF's own, which
also answers a `BadParameters` from the data modules as the 400 a DRF ValidationError gives; and
its content negotiation (DEFAULT_CONTENT_NEGOTIATION_CLASS), which refuses an empty `?format=`."""
from rest_framework.exceptions import ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.views import exception_handler as drf_exception_handler

from .params import BadParameters


def exception_handler(exc, context):
    if isinstance(exc, BadParameters):
        exc = ValidationError(exc.detail)
    return drf_exception_handler(exc, context)


class StrictFormatNegotiation(DefaultContentNegotiation):
    """DRF's negotiation, except that `?format=` with no value is refused (400) like any other
    value outside the formats the OpenAPI document lists for the operation, instead of being
    read as no format at all (docs/api.md, "Errors")."""

    def select_renderer(self, request, renderers, format_suffix=None):
        if request.query_params.get(self.settings.URL_FORMAT_OVERRIDE) == "":
            formats = ", ".join(sorted({r.format for r in renderers if r.format not in ("api", "")}))
            raise ValidationError({"format": f"format is empty: give one of {formats}"})
        return super().select_renderer(request, renderers, format_suffix)


def paging_parameters(noun: str, default_size: int) -> list:
    """The OpenAPI parameters of a paged API ranking (`apps/web/paging.py`, docs/api.md, "Paging")."""
    from drf_spectacular.utils import OpenApiParameter

    from .paging import MAX_PAGE_SIZE
    return [
        OpenApiParameter("page", {"type": "integer", "minimum": 1},
                         description=f"page of the ranked {noun}, from 1 (JSON; the CSV holds every one)"),
        OpenApiParameter("page_size", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE},
                         description=f"{noun} per page, 1 to {MAX_PAGE_SIZE}; default {default_size}"),
    ]


def paging_fields(noun: str) -> dict:
    """The response fields a paged API ranking adds beside its `results`."""
    from rest_framework import serializers
    return {
        "count": serializers.IntegerField(help_text=f"{noun} in the whole ranking"),
        "page": serializers.IntegerField(), "pages": serializers.IntegerField(),
        "next": serializers.CharField(allow_null=True, help_text="the next page's URL; null on the last"),
        "previous": serializers.CharField(allow_null=True, help_text="the previous page's URL; null on the first"),
    }
