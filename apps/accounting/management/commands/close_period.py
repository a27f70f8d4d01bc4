"""manage.py close_period YYYY-MM — freeze a month's chargeback statement."""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from apps.accounting.actions.audit import ActionError
from apps.accounting.actions.periods import do_close_period


class Command(BaseCommand):
    help = "Close a billing period (YYYY-MM, billing time zone): its statement is frozen."

    def add_arguments(self, parser):
        parser.add_argument("period")
        parser.add_argument("--user", help="username recorded in the audit log")

    def handle(self, *args, **opts):
        actor = None
        if opts["user"]:
            actor = get_user_model().objects.filter(username=opts["user"]).first()
            if actor is None:
                raise CommandError(f"no user named {opts['user']!r}")
        try:
            bp = do_close_period(opts["period"], actor=actor)
        except ActionError as exc:
            raise CommandError(str(exc))
        self.stdout.write(f"closed {bp.period}: {bp.lines.count()} statement line(s) frozen")
