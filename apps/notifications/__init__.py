"""Notifications: the one path every message of the portal leaves by (docs/architecture.md,
"Notifications").

Statements by e-mail (apps/reports) and alerts (apps/recommendations) both compose their own
words and keep their own delivery rows (what was sent to whom), and send through here:

- `channels`: e-mail through Django's mail backend, and webhooks (a JSON POST to a URL the
  outbound rules allow); each answers an `Outcome` instead of raising;
- `sending`: the log of what was sent (`send_once`: a delivery row already marked sent is never
  sent again; every attempt counts and keeps its error), the retry policy (`retry_countdown`:
  exponential backoff with jitter), and queueing (`queue`, `queue_after_commit`: a Celery task
  queued once the caller's transaction has committed, run here when the broker is away).

It knows no domain: it sits just above the plumbing layer, so both apps may import it.
"""
