"""manage.py api_token USER --name NAME [--days 90] [--read-only | --read-write]: make a personal API
token for a user and print its key, once (docs/api.md). The same as the user's /account/tokens/ page."""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from apps.teams.tokens import EXPIRY_DAYS, TokenError, do_create_api_token


class Command(BaseCommand):
    help = "Make an API token for a user and print its key (shown once; the portal keeps only a digest)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", required=True, help="what script or person uses it")
        parser.add_argument("--days", type=int, default=90, choices=EXPIRY_DAYS, help="expires after (default 90)")
        scope = parser.add_mutually_exclusive_group()
        scope.add_argument("--read-only", dest="read_only", action="store_true", default=True,
                           help="GET only (the default)")
        scope.add_argument("--read-write", dest="read_only", action="store_false",
                           help="may also close periods, change rates: what the user may do")

    def handle(self, *args, username, name, days, read_only, **opts):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        try:
            info, key = do_create_api_token(user, name=name, days=days, read_only=read_only)
        except TokenError as exc:
            raise CommandError(str(exc))
        scope = "read-only" if info.read_only else "read-write"
        self.stderr.write(f"token {name!r} for {username}: {scope}, expires {info.token.expiry:%Y-%m-%d %H:%M} UTC; "
                          "the key is shown this once:")
        self.stdout.write(key)
