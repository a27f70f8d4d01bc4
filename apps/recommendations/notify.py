"""What an alert says on each channel; the sending is apps/notifications' (docs/architecture.md,
"Notifications")."""
from __future__ import annotations

from django.conf import settings

from apps.notifications.channels import Outcome, post_webhook, send_email

from .models import Alert, AlertDelivery


def slack_text(text: str) -> str:
    """`text` as Slack's message format reads it as plain characters: `&`, `<` and `>` are its
    control characters (`<!channel>` pings everyone, `<https://…|label>` is a link), so a model,
    namespace or pod label carrying them is escaped (docs/security.md, "Hostile input")."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def webhook_payload(alert: Alert) -> dict:
    """Slack-compatible: `text` is what Slack (and Mattermost, Teams workflows) show, escaped
    for it; the structured fields ride along for other receivers as plain JSON values."""
    return {
        "text": slack_text(alert.text),
        "alert": {"key": alert.key, "kind": alert.kind, "team": alert.team,
                  "created_at": alert.created_at.isoformat().replace("+00:00", "Z"),
                  "url": settings.PORTAL_URL.rstrip("/") + "/advice/alerts/", **alert.fields},
    }


def alert_email(recipients: str, alert: Alert) -> tuple[str, str, list[str]]:
    """(subject, body, addresses) of an alert's e-mail."""
    to = [r.strip() for r in recipients.split(",") if r.strip()]
    subject = alert.text if len(alert.text) <= 120 else alert.text[:117] + "..."
    body = alert.text + "\n\n" + "\n".join(f"{k}: {v}" for k, v in alert.fields.items())
    body += f"\n\n{settings.PORTAL_URL.rstrip('/')}/advice/alerts/\n"
    return f"[gpuportal] {subject}", body, to


def send_alert(delivery: AlertDelivery) -> Outcome:
    """One attempt at one delivery, on its channel."""
    if delivery.channel == AlertDelivery.Channel.WEBHOOK:
        return post_webhook(delivery.target, webhook_payload(delivery.alert))
    return send_email(*alert_email(delivery.target, delivery.alert))
