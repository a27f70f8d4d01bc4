"""A stored month answer as an HTTP response (docs/performance.md, "Stored month answers").

The bytes are the ones the JSON renderer would write (`render_plain`), kept with the version of
the month's inputs. A client that accepts gzip gets the stored gzip copy with
`Content-Encoding: gzip` — a statement by namespace is ~9 MB of JSON at 10,000 GPUs and ~0.5 MB
compressed — so nothing is compressed per request; others, and indented JSON, get the plain bytes.
"""
import re

from django.utils.cache import patch_vary_headers
from rest_framework.response import Response

from apps.accounting.stored import month_body
from apps.web.rendered import Rendered, render_plain

# As Django's GZipMiddleware reads Accept-Encoding, plus an explicit "gzip;q=0" refusing it.
_GZIP = re.compile(r"\bgzip\b(?!\s*;\s*q\s*=\s*0(?:\.0*)?\s*(?:,|$))", re.IGNORECASE)


def accepts_gzip(request) -> bool:
    return bool(_GZIP.search(request.META.get("HTTP_ACCEPT_ENCODING", "")))


def stored_response(request, period: str, key: str, version: str, payload) -> Response:
    """The stored answer `key` of `period` at `version` (rendered from `payload()` and stored
    first when missing or stale), gzip-compressed when the client accepts it."""
    renderer = request.accepted_renderer
    indented = renderer.get_indent(request.accepted_media_type, {}) is not None
    packed = accepts_gzip(request) and not indented
    data = month_body(period, key, version, lambda: render_plain(renderer, payload()), gzipped=packed)
    response = Response(Rendered(data))
    if packed:
        response["Content-Encoding"] = "gzip"
    patch_vary_headers(response, ["Accept-Encoding"])
    return response
