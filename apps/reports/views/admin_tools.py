"""The admins' pages in the portal's frame: label claims, the rate-card upload, the ingest log."""
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils import timezone as djtz

from apps.accounting.actions.audit import ActionError
from apps.accounting.actions.namespaces import do_assign_namespace
from apps.accounting.actions.rates import queue_rate_import
from apps.accounting.models.rates import RateImport
from apps.accounting.tasks import import_rate_file
from apps.accounting.pricing.rates import rates_in_force
from apps.accounting.pricing.rate_csv import COLUMNS as RATE_COLUMNS, OPTIONAL as RATE_OPTIONAL
from apps.accounting.calendar.zone import billing_zone
from apps.ingest.models import IngestRun
from apps.teams.claims import ClaimError, do_decide_claim, first_claimed, pending_claims, recent_decisions
from apps.teams.models import LabelClaim, Namespace, Team
from apps.web.dependencies import queue_or_run

from ..data.overview import ingest_freshness
from .common import page, report_view

RUN_LIMIT = 200


@report_view(admin_only=True)
def ingest_log(request, sel):
    runs = IngestRun.objects.select_related("cluster").order_by("-started_at")
    if sel.cluster:
        runs = runs.filter(cluster__name=sel.cluster)
    status = request.GET.get("status") or ""
    if status:
        runs = runs.filter(status=status)
    return page(request, sel, "reports/ingest_log.html", "ingest", {
        "runs": list(runs[:RUN_LIMIT]), "limit": RUN_LIMIT, "status": status,
        "statuses": IngestRun.Status.values, "freshness": [f for f in ingest_freshness() if not sel.cluster or f.cluster == sel.cluster],
    }, picker=("cluster",))   # the newest runs: no team, no dates


@report_view(admin_only=True)
def label_claims(request, sel):
    """The queue of namespace → team claims waiting for an admin (clusters with label trust
    `approve`): approve from the claim's first hour or from now, map the namespace to a team,
    or ignore (docs/teams-and-relabels.md, "Who may claim a team"). The claims and their rules
    are apps/teams/claims.py's; this page only shows them and posts decisions (it stays here,
    in the report shell, because mapping a namespace is accounting's dated action:
    docs/architecture.md, "Where each concept lives")."""
    message = ""
    if request.method == "POST":
        message = _decide(request)
        if not message.startswith("!"):
            # Said through the session, never the query string: the page shows only what the
            # portal wrote (docs/security.md, "Hostile input").
            messages.success(request, message)
            return redirect(reverse("reports:label-claims"))
    return page(request, sel, "reports/label_claims.html", "claims", {
        "claims": pending_claims(), "teams": sorted(Team.objects.values_list("name", flat=True)),
        "error": message[1:] if message.startswith("!") else "",
        "decided": recent_decisions(50),
    }, picker=())   # every pending claim: nothing to pick


RATE_FILE_LIMIT = 1024 * 1024     # bytes: a rate card is a few hundred lines


@report_view(admin_only=True)
def rate_upload(request, sel):
    """Admins import a rate-card CSV from the browser: the same all-or-nothing parse, errors
    per line and audit row as `manage.py import_rates` (docs/chargeback.md, "1. Import rates"),
    run by a worker (`tasks.import_rate_file`; here and now when Celery runs eagerly or its
    broker is away); the answer is the import's own page, which shows its progress, then its
    result."""
    errors, status = [], 200
    if request.method == "POST":
        upload = request.FILES.get("file")
        if upload is None:
            errors = ["choose a CSV file to upload"]
        elif upload.size > RATE_FILE_LIMIT:
            errors = [f"the file is {upload.size:,} bytes; a rate card may be at most {RATE_FILE_LIMIT:,}"]
        else:
            job = queue_rate_import(upload.read(), upload.name, request.user)
            queue_or_run(import_rate_file, job.pk)
            return redirect(reverse("reports:rate-import", args=[job.pk]))
        status = 400
    response = page(request, sel, "reports/rate_upload.html", "rates", {
        "errors": errors, "columns": ",".join(RATE_COLUMNS), "optional": RATE_OPTIONAL,
        "imports": RateImport.objects.select_related("requested_by").defer("data")[:IMPORTS_LISTED],
        **_rate_card(sel.today),
    }, picker=())
    response.status_code = status
    return response


IMPORTS_LISTED = 10
REFRESH_SECONDS = 1


@report_view(admin_only=True)
def rate_import(request, sel, pk):
    """One upload's page: how far its worker got (refreshed every REFRESH_SECONDS while it
    runs), then the rates imported or, for a refused file, each reason."""
    job = get_object_or_404(RateImport.objects.select_related("requested_by").defer("data"), pk=pk)
    return page(request, sel, "reports/rate_import.html", "rates", {
        "job": job, "refresh": None if job.done else REFRESH_SECONDS,
    }, picker=())


def _decide(request) -> str:
    """One claim's decision from the posted form; '!reason' when it cannot be made."""
    try:
        namespace = Namespace.objects.select_related("cluster").get(pk=int(request.POST.get("namespace", "")))
    except (ValueError, Namespace.DoesNotExist):
        return "!no such namespace"
    label, action = request.POST.get("team_label", ""), request.POST.get("action", "")
    first = first_claimed(namespace, label)
    if first is None:
        return f"!{namespace} never claimed team {label!r}"
    try:
        if action in ("approve_since_claim", "approve_now"):
            since = first if action == "approve_since_claim" else djtz.now()
            do_decide_claim(namespace, label, LabelClaim.Decision.APPROVED, since, actor=request.user)
            return f"{namespace} counts for {label} from {since:%Y-%m-%d %H:00} UTC"
        if action == "ignore":
            do_decide_claim(namespace, label, LabelClaim.Decision.IGNORED, first, actor=request.user)
            return f"{namespace}'s claim to {label} is ignored"
        if action == "map":
            team = Team.objects.filter(name=request.POST.get("team", "")).first()
            if team is None:
                return "!pick a team to map the namespace to"
            day = first.astimezone(billing_zone()).date()
            do_assign_namespace(namespace, team, day, actor=request.user)
            do_decide_claim(namespace, label, LabelClaim.Decision.IGNORED, first, actor=request.user)
            return f"{namespace} is mapped to {team.name} from {day}"
    except (ClaimError, ActionError) as exc:
        return f"!{exc}"
    return "!unknown action"


def _rate_card(today) -> dict:
    """The rate card as it stands (`pricing.rates.rates_in_force`), in the portal's formats."""
    current, upcoming = rates_in_force(today)
    return {"current_rates": current, "upcoming_rates": upcoming, "rates_today": today}
