"""Sending one alert delivery: e-mail through Django mail, or a Slack-compatible webhook."""
from __future__ import annotations

import logging

import requests
from django.conf import settings
from django.core.mail import send_mail

from apps.clusters.outbound import outbound_problem

from .models import Alert

log = logging.getLogger(__name__)


def webhook_payload(alert: Alert) -> dict:
    """Slack-compatible: `text` is what Slack (and Mattermost, Teams workflows) show; the
    structured fields ride along for other receivers."""
    return {
        "text": alert.text,
        "alert": {"key": alert.key, "kind": alert.kind, "team": alert.team,
                  "created_at": alert.created_at.isoformat().replace("+00:00", "Z"),
                  "url": settings.PORTAL_URL.rstrip("/") + "/advice/alerts/", **alert.fields},
    }


def post_webhook(url: str, payload: dict) -> tuple[bool, int | None, str]:
    """(ok, HTTP status, error text); any 2xx is success. The error text is the status only:
    the receiver's reply goes to the log, never to the pages (docs/security.md, "Outbound requests")."""
    if problem := outbound_problem(url):
        return False, None, f"Refused: {problem}"
    try:
        response = requests.post(url, json=payload, timeout=settings.ALERT_WEBHOOK_TIMEOUT_SECONDS)
    except requests.RequestException as exc:
        return False, None, f"{type(exc).__name__}: {exc}"[:2000]
    if 200 <= response.status_code < 300:
        return True, response.status_code, ""
    log.warning("alert webhook %s answered HTTP %s: %s", url, response.status_code, " ".join(response.text[:500].split()))
    return False, response.status_code, f"HTTP {response.status_code}"


def send_email(recipients: str, alert: Alert) -> None:
    to = [r.strip() for r in recipients.split(",") if r.strip()]
    subject = alert.text if len(alert.text) <= 120 else alert.text[:117] + "..."
    body = alert.text + "\n\n" + "\n".join(f"{k}: {v}" for k, v in alert.fields.items())
    body += f"\n\n{settings.PORTAL_URL.rstrip('/')}/advice/alerts/\n"
    send_mail(f"[gpuportal] {subject}", body, settings.DEFAULT_FROM_EMAIL, to, fail_silently=False)
