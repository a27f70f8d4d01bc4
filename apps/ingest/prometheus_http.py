"""How the portal talks HTTP to Prometheus: the one session every request goes through, and the
error every failure becomes (`prometheus.py` asks; `hourly.py` asks for per-hour sums)."""
from __future__ import annotations

from apps.clusters.outbound import OutboundSession, outbound_session


def http_session(compressed: bool | None = None) -> OutboundSession:
    """The HTTP session every request to Prometheus goes through, the outbound rules' own (no
    redirect followed, the address checked: docs/security.md, "Outbound requests"), answers uncompressed unless
    `compressed` (default: the PROMETHEUS_COMPRESSION setting). Prometheus gzips an answer
    whenever the client accepts it, and on a fast link that costs it several times the query
    itself (docs/performance.md, "Answers uncompressed")."""
    if compressed is None:
        from django.conf import settings

        compressed = settings.PROMETHEUS_COMPRESSION
    session = outbound_session()
    if not compressed:
        session.headers["Accept-Encoding"] = "identity"
    return session


class PrometheusError(Exception):
    """Prometheus could not be read: unreachable, an HTTP error, garbage, or a rejected query."""


def _one_line(text, limit=300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
