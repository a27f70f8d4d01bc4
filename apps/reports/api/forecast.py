"""GET /api/v1/forecast/?period=YYYY-MM: each team's month-end cost forecast (docs/forecast.md).

Scoped like the statement (`statement_scope`): roles that may see money, a team lead their
teams only, `team=` one team (403 for another's). Only the running month has a forecast.
"""
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounting.core.periods import period_of
from apps.accounting.query.filters import parse_period_param
from apps.accounting.forecast.stored import stored_forecast
from apps.accounting.forecast.teams import NotRunning
from apps.reports.forecast_rows import forecast_payload
from apps.accounting.calendar.zone import billing_zone

from .chargeback import SeesMoney, statement_scope

ROW_FIELDS = {
    "team": serializers.CharField(),
    "currency": serializers.CharField(allow_null=True),
    "month_to_date": serializers.CharField(allow_null=True, help_text="usage cost so far, in the minor unit"),
    "projected": serializers.CharField(allow_null=True, help_text="month-end cost at the recent run rates"),
    "low": serializers.CharField(allow_null=True, help_text="at each kind of day's lowest recent day"),
    "high": serializers.CharField(allow_null=True, help_text="at each kind of day's highest recent day"),
    "weekday_daily": serializers.CharField(allow_null=True), "weekend_daily": serializers.CharField(allow_null=True),
    "history_days": serializers.IntegerField(), "unpriced_gpu_hours": serializers.FloatField(),
    "note": serializers.CharField(allow_null=True, help_text="why a team has no forecast"),
}


def running_period() -> str:
    return period_of(timezone.now().astimezone(billing_zone()).date())


class ForecastView(APIView):
    permission_classes = [IsAuthenticated, SeesMoney]

    @extend_schema(
        parameters=[
            OpenApiParameter("period", OpenApiTypes.STR, description="YYYY-MM in the billing time zone: the "
                             "running month, the default and the only value (the document's enum names it "
                             "on the day it is asked for)"),
            OpenApiParameter("team", OpenApiTypes.STR, description="one team only (team leads: one of theirs, "
                             "else 403; an unknown team: 404)"),
        ],
        responses=inline_serializer("ForecastResponse", {
            "period": serializers.CharField(), "as_of": serializers.CharField(help_text="UTC instant"),
            "unit": serializers.CharField(), "lookback_days": serializers.IntegerField(),
            "weekdays_left": serializers.FloatField(), "weekend_days_left": serializers.FloatField(),
            "results": inline_serializer("ForecastRow", ROW_FIELDS, many=True),
        }),
        description="Each team's month-end usage cost: month to date plus the weekday and weekend run rates of "
                    "the last 14 complete days over the days left, with a range (docs/forecast.md). One row per "
                    "team and currency.",
    )
    def get(self, request, *args, **kwargs):
        params = request.query_params
        period = parse_period_param(params, default=running_period())
        scope = statement_scope(request, params.get("team") or None)
        try:
            month = stored_forecast(period, teams=scope)   # the worker's stored answer when current
        except NotRunning as exc:
            raise ValidationError({"period": str(exc)})
        return Response(forecast_payload(month))
