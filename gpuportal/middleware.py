"""Request and response guards.

Refuse NUL characters in the URL before any view sees them. Say when a request computed a
stored month answer itself (`AnswerComputedMiddleware`).

PostgreSQL text cannot hold NUL, so a `?cluster=%00` reaching a query raised a 500; DRF
serializers and Django forms already refuse NUL in bodies, this covers the path and the query.
"""
from django.conf import settings
from django.http import Http404, JsonResponse
from django.utils.cache import patch_cache_control


class RejectNulMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path or any("\x00" in k or any("\x00" in v for v in values) for k, values in request.GET.lists()):
            return JsonResponse({"detail": "NUL characters are not allowed in the URL"}, status=400)
        return self.get_response(request)


class PrivateNoStoreMiddleware:
    """Every answer to a signed-in user (pages, API, CSV, XLSX) holds figures for that user's
    role and teams, money included: no shared or browser cache may keep it. A response that
    set its own Cache-Control (the health probes) keeps it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated and not response.has_header("Cache-Control"):
            patch_cache_control(response, no_store=True, private=True)
        return response


class AnswerComputedMiddleware:
    """A stored month answer is recomputed by a worker after every write; a request that found
    one stale with no worker computing it computed it itself, and says so with
    `X-Answer-Computed: on-read` (docs/performance.md, "A read that computes")."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        from apps.accounting.stored import computed_on_read

        with computed_on_read() as computed:
            response = self.get_response(request)
        if computed:
            response["X-Answer-Computed"] = "on-read"
        return response


class PortalNotFoundMiddleware:
    """Under DEBUG (the demo, docs/demo.md) Django answers a page that does not exist with its
    technical 404, which lists every URL pattern of the portal; a user gets the portal's own
    "Not found" page instead (gpuportal/errors.py), with the reason a view gave; a path under
    /api/ its JSON answer, as without DEBUG."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (settings.DEBUG and response.status_code == 404
                and response.get("Content-Type", "").startswith("text/html")
                and b"DEBUG = True" in getattr(response, "content", b"")):
            from .errors import not_found
            return not_found(request, getattr(request, "_not_found", None))
        return response

    def process_exception(self, request, exception):
        if isinstance(exception, Http404):
            request._not_found = exception
        return None
