"""The user's own page: their API tokens, made here (the key shown once), listed and revoked
(docs/security.md, "API tokens")."""
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from apps.teams.tokens import (EXPIRY_DAYS, TokenError, do_create_api_token, do_revoke_api_token, drop_expired_tokens,
                               tokens_of)


@login_required
@require_http_methods(["GET", "POST"])
def token_list(request):
    """GET lists the user's tokens; POST (with CSRF) makes one and answers with its key, once:
    the page is not a redirect, so the key is in this one answer (sent no-store) and nowhere else."""
    new_key = new_token = None
    errors = []
    status = 200
    drop_expired_tokens(request.user)
    if request.method == "POST":
        try:
            days = int(request.POST.get("days", ""))
        except ValueError:
            days = None
        try:
            new_token, new_key = do_create_api_token(
                request.user, name=request.POST.get("name", ""), days=days,
                read_only=request.POST.get("scope", "read_only") != "read_write")
        except TokenError as exc:
            errors, status = [str(exc)], 400
    return render(request, "account/tokens.html", {
        "tokens": tokens_of(request.user), "new_key": new_key, "new_token": new_token, "errors": errors,
        "expiry_days": EXPIRY_DAYS, "form": request.POST if errors else {},
        "zone": settings.BILLING_TIMEZONE,    # times as every page writes them, in the billing zone
    }, status=status)


@login_required
@require_POST
def token_revoke(request, pk):
    """Revoke one of the user's own tokens (another's is a 404: nothing learnt)."""
    info = get_object_or_404(tokens_of(request.user), pk=pk)
    do_revoke_api_token(request.user, info)
    messages.success(request, f"Token {info.name!r} is revoked: its key no longer works.")
    return redirect(reverse("teams:tokens"))
