"""GET /api/v1/chargeback/focus/?period=YYYY-MM: a month as FOCUS 1.0 or 1.3 CSV (docs/chargeback.md, "FOCUS export").

Scoped like the statement it is cut from (`statement_scope`): roles that may see money, a
team lead their teams' rows, `team=` one team (403 for another's).
"""
from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.views import APIView

from apps.accounting.ledger.daily_money import focus_month
from apps.reports.focus_csv import FOCUS_VERSION, FOCUS_VERSIONS, Issuer, columns, iter_focus_rows
from apps.accounting.ledger.statements import SHARED_IDLE, default_period
from apps.accounting.query.filters import parse_choice, parse_period_param
from apps.web.csv import SafeCSVRenderer, streaming_csv
from apps.web.params import BadParameters

from .chargeback import SeesMoney, statement_scope

LEGACY_NAMES = ("include", "omit")


def issuer() -> Issuer:
    return Issuer(provider_name=settings.FOCUS_PROVIDER_NAME, host_provider_name=settings.FOCUS_HOST_PROVIDER_NAME,
                  billing_account_id=settings.FOCUS_BILLING_ACCOUNT_ID,
                  billing_account_name=settings.FOCUS_BILLING_ACCOUNT_NAME)


class FocusExportView(APIView):
    permission_classes = [IsAuthenticated, SeesMoney]
    renderer_classes = [SafeCSVRenderer]
    csv_header = None

    def perform_content_negotiation(self, request, force=False):
        renderer = SafeCSVRenderer()      # always CSV, whatever Accept or ?format= say; errors too
        return renderer, renderer.media_type

    @extend_schema(
        parameters=[
            OpenApiParameter("period", OpenApiTypes.STR, description="YYYY-MM in the billing time zone; "
                             "default the last complete month"),
            OpenApiParameter("team", OpenApiTypes.STR, description="one team's rows only (team leads: one of "
                             "theirs, else 403; an unknown team: 404)"),
            OpenApiParameter("focus_version", OpenApiTypes.STR, enum=list(FOCUS_VERSIONS), default=FOCUS_VERSION,
                             description="the FOCUS version written: 1.0, or 1.3 with ServiceProviderName, "
                             "HostProviderName and the split cost allocation columns"),
            OpenApiParameter("legacy_names", OpenApiTypes.STR, enum=list(LEGACY_NAMES), default="include",
                             description="FOCUS 1.0 only: also write ChargeType, InvoiceIssuer, Provider, Publisher and "
                             "ResourceID, the names focus-validator 1.0.0 checks (omit: FOCUS 1.0 names only)"),
            OpenApiParameter("shared_idle", OpenApiTypes.STR, enum=["apart", "spread"], default="apart",
                             description="unallocated capacity as rows of its own (apart), or spread over the teams "
                             "in proportion to their allocated cost, as split cost rows (spread)"),
        ],
        responses={200: OpenApiResponse(OpenApiTypes.STR, description="FOCUS CSV, one row per charge: team × "
                                        "namespace × cluster × GPU model / MIG profile × price class × day")},
        description="A month's chargeback as FOCUS 1.0 or 1.3 CSV (FinOps Open Cost and Usage Specification). "
                    "The rows' BilledCost adds up to the statement's total per currency exactly (in its minor unit).",
    )
    def get(self, request, *args, **kwargs):
        params = request.query_params
        period = parse_period_param(params, default=None if params.get("period") else default_period())
        version = parse_choice(params, "focus_version", FOCUS_VERSIONS, default=FOCUS_VERSION)
        legacy = parse_choice(params, "legacy_names", LEGACY_NAMES,
                              default="include" if version == "1.0" else "omit") == "include"
        if legacy and version != "1.0":
            raise BadParameters({"legacy_names": f"legacy_names=include is for FOCUS 1.0 only: FOCUS {version} "
                                                 f"reads those names as custom columns"})
        shared_idle = parse_choice(params, "shared_idle", SHARED_IDLE, default="apart")
        scope = statement_scope(request, params.get("team") or None)
        month = focus_month(period)     # read before the first byte: a failure is still an error status
        # Streamed (docs/performance.md, "Exports stream"): rows are written as the client reads them.
        rows = iter_focus_rows(month, scope, issuer(), legacy_names=legacy, version=version, shared_idle=shared_idle)
        return streaming_csv(rows, columns(legacy, version), f"focus-{version}-{period}.csv")

    def csv_columns(self, rows):
        return self.csv_header     # None for an error body: its own keys
