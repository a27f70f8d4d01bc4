"""/api/v1/rates/: the rate card, for admins; every change goes through an audited action."""
import re

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounting.actions.rates import do_delete_rate, do_save_rate
from apps.accounting.core.currencies import ISO_4217
from apps.accounting.query.filters import parse_choice
from apps.accounting.actions.audit import ActionError
from apps.accounting.models.rates import PRICE_CLASSES, NodePool, Rate
from apps.teams.access import is_admin


class IsPortalAdmin(BasePermission):
    message = "only an admin may read or change the rate card"

    def has_permission(self, request, view):
        return is_admin(request.user)


# What a rate's fields accept, stated in the OpenAPI document exactly (docs/api.md, "What a value may be"):
# up to 12 digits before the point and 6 after, not negative; a name with something besides
# spaces in it and no NUL character; an ISO 4217 code in capitals or small letters.
HOURLY_RATE_PATTERN = r"^[0-9]{1,12}(\.[0-9]{1,6})?$"
NAME_PATTERN = r"^[^\x00]*[^\x00\s][^\x00]*$"
NO_NUL_PATTERN = r"^[^\x00]*$"
CURRENCY_CHOICES = sorted(ISO_4217) + sorted(code.lower() for code in ISO_4217)


@extend_schema_field({"type": "string", "format": "decimal", "pattern": HOURLY_RATE_PATTERN})
class HourlyRateField(serializers.DecimalField):
    """A decimal written as the pattern says, as a JSON string: "2.50", never 2.5 or "2.5e0"."""

    def to_internal_value(self, data):
        if not isinstance(data, str) or not re.fullmatch(HOURLY_RATE_PATTERN, data):
            raise serializers.ValidationError(
                "give the rate as a string of digits with up to 12 before the point and 6 after, e.g. \"2.50\"")
        return super().to_internal_value(data)


class TextOnly:
    """A JSON string only: DRF's text fields would read 0 or true as "0" or "True", which the
    schema (type string) does not allow."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError(f"give text (a JSON string), not {type(data).__name__}")
        return super().to_internal_value(data)


class NameField(TextOnly, serializers.RegexField):
    pass


@extend_schema_field({"type": "string", "maxLength": 50, "pattern": NO_NUL_PATTERN, "default": ""})
class MigProfileField(TextOnly, serializers.CharField):
    """Any text without a NUL character (DRF refuses those), empty for the whole GPU."""


# A pattern, not an enum: the same set, and schema-driven clients and fuzzers do not walk 300 values.
@extend_schema_field({"type": "string", "pattern": f"^({'|'.join(CURRENCY_CHOICES)})$"})
class CurrencyField(serializers.CharField):
    """An ISO 4217 code in capitals or small letters, stored in capitals."""

    def to_internal_value(self, data):
        if data not in CURRENCY_CHOICES:
            raise serializers.ValidationError(f"{data!r} is not an ISO 4217 currency code (e.g. USD or usd)")
        return data.upper()


class RateSerializer(serializers.ModelSerializer):
    gpu_model = NameField(NAME_PATTERN, max_length=200,
                          help_text="DCGM modelName, e.g. NVIDIA H100 80GB HBM3")
    mig_profile = MigProfileField(max_length=50, required=False, allow_blank=True,
                                  help_text="empty: the whole GPU; e.g. 1g.10gb: per MIG instance-hour")
    hourly_rate = HourlyRateField(max_digits=18, decimal_places=6, min_value=0, coerce_to_string=True)
    currency = CurrencyField(help_text="ISO 4217, e.g. USD (or usd)")

    class Meta:
        model = Rate
        fields = ["id", "gpu_model", "mig_profile", "price_class", "hourly_rate", "currency", "effective_from",
                  "updated_at"]
        read_only_fields = ["id", "updated_at"]
        # No unique-together check here: a rate whose key and day are taken is a 409 from the
        # model's own check (_save), not a 400 for values the schema allows.
        validators = []


class NodePoolSerializer(serializers.ModelSerializer):
    cluster = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = NodePool
        fields = ["id", "cluster", "name", "host_pattern", "price_class", "priority"]


class DuplicateRate(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


def _only_unique(exc: DjangoValidationError) -> bool:
    errors = [e for errs in getattr(exc, "error_dict", {}).values() for e in errs]
    return bool(errors) and all(e.code in ("unique", "unique_together") for e in errors)


def _save(request, serializer):
    serializer.is_valid(raise_exception=True)
    rate = serializer.instance or Rate()
    for field, value in serializer.validated_data.items():
        setattr(rate, field, value)
    try:
        do_save_rate(request.user, rate)
    except DjangoValidationError as exc:
        if _only_unique(exc):     # the rate card already has this key on this day: a conflict, not a bad value
            raise DuplicateRate(" ".join(exc.messages))
        raise ValidationError(exc.message_dict if hasattr(exc, "message_dict") else exc.messages)
    return RateSerializer(rate).data


class RateListView(APIView):
    permission_classes = [IsAuthenticated, IsPortalAdmin]
    serializer_class = RateSerializer

    @extend_schema(operation_id="rates_list", responses=inline_serializer("RateList", {
        "results": RateSerializer(many=True), "node_pools": NodePoolSerializer(many=True)}),
        parameters=[OpenApiParameter("gpu_model", OpenApiTypes.STR, description="exact GPU model name"),
                    OpenApiParameter("price_class", OpenApiTypes.STR, enum=list(PRICE_CLASSES)),
                    OpenApiParameter("currency", OpenApiTypes.STR, description="ISO 4217 code, e.g. USD")],
        description="The rate card (admins only), filterable by gpu_model, price_class, currency.")
    def get(self, request):
        rates = Rate.objects.all()
        if "price_class" in request.query_params:     # one of the enum, as the schema says
            rates = rates.filter(price_class=parse_choice(request.query_params, "price_class", PRICE_CLASSES))
        for name in ("gpu_model", "currency"):
            if request.query_params.get(name):
                rates = rates.filter(**{name: request.query_params[name]})
        return Response({"results": RateSerializer(rates, many=True).data,
                         "node_pools": NodePoolSerializer(NodePool.objects.select_related("cluster"),
                                                          many=True).data})

    @extend_schema(operation_id="rates_create", request=RateSerializer, responses={201: RateSerializer},
                   description="Add a rate (admins only); audited. 201 with the rate as stored; 409 when the "
                               "rate card already holds a rate for the same GPU model, MIG profile, price class "
                               "and effective_from.")
    def post(self, request):
        return Response(_save(request, RateSerializer(data=request.data)), status=status.HTTP_201_CREATED)

    def csv_columns(self, rows):
        return None


class RateDetailView(APIView):
    permission_classes = [IsAuthenticated, IsPortalAdmin]
    serializer_class = RateSerializer

    def get(self, request, pk):
        return Response(RateSerializer(get_object_or_404(Rate, pk=pk)).data)

    def patch(self, request, pk):
        rate = get_object_or_404(Rate, pk=pk)
        return Response(_save(request, RateSerializer(rate, data=request.data, partial=True)))

    def put(self, request, pk):
        rate = get_object_or_404(Rate, pk=pk)
        return Response(_save(request, RateSerializer(rate, data=request.data)))

    @extend_schema(description="Delete a rate (admins only); audited. 204; 409 with the reason when the rate "
                               "priced a closed month: replace it from a date on with a later rate instead.")
    def delete(self, request, pk):
        try:
            do_delete_rate(request.user, get_object_or_404(Rate, pk=pk))
        except ActionError as exc:     # it priced a closed month (docs/chargeback.md, "History stays")
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(status=status.HTTP_204_NO_CONTENT)
