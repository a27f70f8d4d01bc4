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
