"""Refuse NUL characters in the URL before any view sees them.

PostgreSQL text cannot hold NUL, so a `?cluster=%00` reaching a query raised a 500; DRF
serializers and Django forms already refuse NUL in bodies, this covers the path and the query.
"""
from django.http import JsonResponse


class RejectNulMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path or any("\x00" in k or any("\x00" in v for v in values) for k, values in request.GET.lists()):
            return JsonResponse({"detail": "NUL characters are not allowed in the URL"}, status=400)
        return self.get_response(request)
