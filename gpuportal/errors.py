"""Error answers for paths no view handled: JSON under /api/, the portal's pages elsewhere.

DRF answers its own errors as JSON; a path under /api/ that matches no route (or a view that
fails before DRF) would otherwise get Django's HTML page, which an API client cannot read
(docs/api.md, "Errors").
"""
import logging

from django.http import JsonResponse
from django.views import defaults

API_PREFIX = "/api/"


def _is_api(request) -> bool:
    return request.path.startswith(API_PREFIX)


def not_found(request, exception=None):
    if _is_api(request):
        return JsonResponse({"detail": f"no API endpoint at {request.path}; see /api/v1/docs/"}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    if _is_api(request):
        return JsonResponse({"detail": "internal error; it was logged"}, status=500)
    return defaults.server_error(request)


def permission_denied(request, exception=None):
    if _is_api(request):
        return JsonResponse({"detail": str(exception) if exception and str(exception) else "permission denied"},
                            status=403)
    return defaults.permission_denied(request, exception)


def bad_request(request, exception=None):
    if _is_api(request):
        return JsonResponse({"detail": "bad request"}, status=400)
    return defaults.bad_request(request, exception)


class OneLineRefusals(logging.Filter):
    """A refusal the portal means to give — 403 for a team not yours, 404, 405 — is logged as
    its one line ("Forbidden (Permission denied): /teams/nlp/"), without the traceback of the
    PermissionDenied that produced it; a 5xx keeps its traceback (settings.LOGGING)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", 500) < 500:
            record.exc_info = None
            record.exc_text = None
        return True
