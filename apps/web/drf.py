"""The API's exception handler (settings REST_FRAMEWORK["EXCEPTION_HANDLER"]): DRF's own, which
also answers a `BadParameters` from the data modules as the 400 a DRF ValidationError gives."""
from rest_framework.exceptions import ValidationError
from rest_framework.views import exception_handler as drf_exception_handler

from .params import BadParameters


def exception_handler(exc, context):
    if isinstance(exc, BadParameters):
        exc = ValidationError(exc.detail)
    return drf_exception_handler(exc, context)
