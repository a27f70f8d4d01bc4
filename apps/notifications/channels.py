"""The ways a message leaves the portal: e-mail and webhook (docs/architecture.md, "Notifications").
Neither raises for a failed send: the `Outcome` says what happened, for the delivery log."""
from __future__ import annotations

import logging
from typing import NamedTuple

import requests
from django.conf import settings
from django.core.mail import EmailMessage

from apps.clusters.outbound import OutboundRefused, outbound_problem, outbound_session

log = logging.getLogger(__name__)


class Outcome(NamedTuple):
    """What one attempt came to; unpacks as (ok, status_code, error)."""
    ok: bool
    status_code: int | None = None     # a webhook's HTTP status
    error: str = ""                    # empty when ok; at most 2,000 characters

    @classmethod
    def failed(cls, exc: BaseException, status_code: int | None = None) -> "Outcome":
        return cls(False, status_code, f"{type(exc).__name__}: {exc}"[:2000])


SENT = Outcome(True)


def send_email(subject: str, body: str, to: list[str], attachments=()) -> Outcome:
    """One e-mail through Django's mail backend (EMAIL_* settings), from DEFAULT_FROM_EMAIL;
    `attachments` are (file name, bytes, media type)."""
    message = EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, list(to))
    for name, content, media_type in attachments:
        message.attach(name, content, media_type)
    try:
        message.send(fail_silently=False)
    except Exception as exc:  # noqa: BLE001 — SMTP errors come in many classes; the outcome says which
        return Outcome.failed(exc)
    return SENT


def post_webhook(url: str, payload: dict, timeout: float | None = None) -> Outcome:
    """POST `payload` as JSON; any 2xx is success, a redirect is not followed (a failure naming
    its target). The error text is the status only: the receiver's reply goes to the log, never
    to the pages (docs/security.md, "Outbound requests")."""
    if problem := outbound_problem(url):
        return Outcome(False, None, f"Refused: {problem}")
    try:
        with outbound_session() as session:
            response = session.post(url, json=payload, timeout=timeout or settings.ALERT_WEBHOOK_TIMEOUT_SECONDS)
    except OutboundRefused as exc:      # a redirect, or an address the rules refuse
        return Outcome(False, None, f"Refused: {exc}"[:2000])
    except requests.RequestException as exc:
        return Outcome.failed(exc)
    if 200 <= response.status_code < 300:
        return Outcome(True, response.status_code)
    log.warning("webhook %s answered HTTP %s: %s", url, response.status_code, " ".join(response.text[:500].split()))
    return Outcome(False, response.status_code, f"HTTP {response.status_code}")
