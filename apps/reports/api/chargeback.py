"""GET /api/v1/chargeback/, its CSV and XLSX, and closing / reopening periods."""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from apps.accounting.actions.audit import ActionError, NotAllowed
from apps.accounting.actions.periods import do_close_period, do_reopen_period
from apps.accounting.stored import scope_tag
from apps.accounting.query.filters import PERIOD_PATTERN, iso_utc as iso, parse_choice, parse_period_param
from apps.accounting.ledger.answer import month_bounds, statement_version
from apps.accounting.ledger.statements import SHARED_IDLE, clusters_behind, default_period, statement
from apps.teams.access import can_see_money, money_scope, require_team
from apps.reports.statement_book import statement_book
from apps.reports.statement_rows import CSV_COLUMNS, GROUP_BYS, csv_rows, statement_payload
from apps.reports.statement_xlsx import statement_workbook, workbook_name
from apps.reports.xlsx import XLSXRenderer
from apps.web.csv import streaming_csv
from apps.web.rendered import renders_stored

from .stored import stored_response


class SeesMoney(BasePermission):
    message = "your role may not see money figures"

    def has_permission(self, request, view):
        return can_see_money(request.user)


def statement_scope(request, team=None):
    """The teams whose statement lines a request may see: `team=` narrows to that one (403
    when it is not the user's, 404 when no such team), else the user's money scope — never
    widened by `viewer` (docs/security.md, "Money scope"). The statement, its CSV and XLSX,
    the FOCUS export and the forecast all ask this."""
    if team:
        require_team(request.user, team, money=True)
        return {team}
    return money_scope(request.user)


def chargeback_key(group_by: str, shared_idle: str, scope) -> str:
    """The stored body's key of a statement as sent to `scope` (None: every team)."""
    return f"chargeback?group_by={group_by}&shared_idle={shared_idle}&scope={scope_tag(scope)}"


def chargeback_payload(request, period, group_by, shared_idle, team=None):
    """The statement, with the month's window echoed as UTC instants (docs/dates-and-money.md)."""
    stmt = statement(period, shared_idle=shared_idle)
    payload = statement_payload(stmt, group_by, statement_scope(request, team), shared_idle)
    start, end = month_bounds(period)
    return {"period": payload.pop("period"), "start": iso(start), "end": iso(end), **payload}


class ChargebackView(APIView):
    permission_classes = [IsAuthenticated, SeesMoney]
    renderer_classes = api_settings.DEFAULT_RENDERER_CLASSES + [XLSXRenderer]

    @extend_schema(
        parameters=[
            OpenApiParameter("period", OpenApiTypes.STR, description="YYYY-MM in the billing time zone; "
                             "default the last complete month"),
            OpenApiParameter("group_by", OpenApiTypes.STR, enum=list(GROUP_BYS), default="team",
                             description="a group per team, or per namespace"),
            OpenApiParameter("shared_idle", OpenApiTypes.STR, enum=list(SHARED_IDLE), default="apart",
                             description="unallocated cost shown apart (default) or spread over teams"),
            OpenApiParameter("team", OpenApiTypes.STR, description="one team's lines only (team leads: one of "
                             "theirs, else 403; an unknown team: 404)"),
        ],
        responses=inline_serializer("ChargebackResponse", {
            "period": serializers.CharField(), "group_by": serializers.CharField(),
            "start": serializers.CharField(help_text="the month's first instant, UTC"),
            "end": serializers.CharField(help_text="the next month's first instant, UTC"),
            "closed": serializers.BooleanField(), "results": serializers.ListField(child=serializers.DictField()),
        }),
        description="A month's chargeback statement: groups with their lines. `?format=csv` gives one row "
                    "per line, `?format=xlsx` the statement workbook (a sheet per view, "
                    "a cover with state, freshness and rates).",
    )
    def get(self, request, *args, **kwargs):
        params = request.query_params
        period = parse_period_param(params, default=None if params.get("period") else default_period())
        group_by = parse_choice(params, "group_by", GROUP_BYS, default="team")
        shared_idle = parse_choice(params, "shared_idle", SHARED_IDLE, default="apart")
        team = params.get("team") or None
        if renders_stored(request.accepted_renderer):
            scope = statement_scope(request, team)   # 403 for a team not the user's, before anything
            version = statement_version(period)
            if version is not None:     # the statement as sent to this set of teams, kept with its version
                return stored_response(
                    request, period, chargeback_key(group_by, shared_idle, scope), version, lambda: chargeback_payload(request, period, group_by, shared_idle, team))
        fmt = getattr(request.accepted_renderer, "format", "")
        if fmt == "xlsx":
            # The statement workbook: every view of the month in one file (docs/chargeback.md).
            book = statement_book(statement(period, shared_idle=shared_idle), statement_scope(request, team),
                                  shared_idle)
            response = Response(statement_workbook(book))
            response["Content-Disposition"] = f'attachment; filename="{workbook_name(period)}"'
            return response
        payload = chargeback_payload(request, period, group_by, shared_idle, team)
        if fmt == "csv":    # one row per line, streamed (docs/performance.md, "Exports stream")
            return streaming_csv(csv_rows(payload), CSV_COLUMNS, f"chargeback-{period}-{group_by}.csv")
        return Response(payload)

    def csv_columns(self, rows):
        if rows and isinstance(rows[0], dict) and "kind" not in rows[0]:
            return None
        return CSV_COLUMNS


class ChargebackXLSXView(ChargebackView):
    """/api/v1/chargeback/xlsx/?period= : the same statement, always as the statement workbook."""
    renderer_classes = [XLSXRenderer]

    def perform_content_negotiation(self, request, force=False):
        renderer = XLSXRenderer()
        return renderer, renderer.media_type


PERIOD_BODY = inline_serializer("PeriodRequest", {"period": serializers.RegexField(
    PERIOD_PATTERN, help_text="YYYY-MM, years 2000-2100, in the billing time zone")})


class ClosePeriodView(APIView):
    @extend_schema(request=PERIOD_BODY, responses=OpenApiTypes.OBJECT,
                   description="Close (freeze) a billing period. Finance or admin.")
    def post(self, request):
        period = parse_period_param(request.data)
        try:
            bp = do_close_period(period, actor=request.user)
        except NotAllowed as exc:
            raise PermissionDenied(str(exc))
        except ActionError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        behind = clusters_behind(period)
        warnings = [f"ingest of {', '.join(behind)} had not reached the end of {period}: hours still to come "
                    "will be adjustments in the next open month"] if behind else []
        return Response({"period": bp.period, "closed": True, "closed_at": bp.closed_at.isoformat(),
                         "lines": bp.lines.count(), "warnings": warnings})


class ReopenPeriodView(APIView):
    @extend_schema(request=PERIOD_BODY, responses=OpenApiTypes.OBJECT,
                   description="Reopen a closed billing period. Admins only; audited.")
    def post(self, request):
        period = parse_period_param(request.data)
        try:
            bp = do_reopen_period(period, actor=request.user)
        except NotAllowed as exc:
            raise PermissionDenied(str(exc))
        except ActionError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response({"period": bp.period, "closed": False})
