"""/api/v1/rates/: the rate card, for admins; every change goes through an audited action."""
from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounting.actions import do_delete_rate, do_save_rate
from apps.accounting.currencies import is_currency
from apps.accounting.models.rates import PRICE_CLASSES, NodePool, Rate
from apps.teams.access import is_admin


class IsPortalAdmin(BasePermission):
    message = "only an admin may read or change the rate card"

    def has_permission(self, request, view):
        return is_admin(request.user)


class RateSerializer(serializers.ModelSerializer):
    hourly_rate = serializers.DecimalField(max_digits=18, decimal_places=6, min_value=0, coerce_to_string=True)
    currency = serializers.CharField(max_length=3, help_text="ISO 4217, e.g. USD (case-insensitive)")

    class Meta:
        model = Rate
        fields = ["id", "gpu_model", "mig_profile", "price_class", "hourly_rate", "currency", "effective_from",
                  "updated_at"]
        read_only_fields = ["id", "updated_at"]

    def validate_currency(self, value):
        value = value.upper()
        if not is_currency(value):
            raise serializers.ValidationError(f"{value!r} is not an ISO 4217 currency code")
        return value


class NodePoolSerializer(serializers.ModelSerializer):
    cluster = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = NodePool
        fields = ["id", "cluster", "name", "host_pattern", "price_class", "priority"]


def _save(request, serializer):
    serializer.is_valid(raise_exception=True)
    rate = serializer.instance or Rate()
    for field, value in serializer.validated_data.items():
        setattr(rate, field, value)
    try:
        do_save_rate(request.user, rate)
    except DjangoValidationError as exc:
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
        for name in ("gpu_model", "price_class", "currency"):
            if request.query_params.get(name):
                rates = rates.filter(**{name: request.query_params[name]})
        return Response({"results": RateSerializer(rates, many=True).data,
                         "node_pools": NodePoolSerializer(NodePool.objects.select_related("cluster"),
                                                          many=True).data})

    @extend_schema(operation_id="rates_create", request=RateSerializer, responses={201: RateSerializer},
                   description="Add a rate (admins only); audited. 201 with the rate as stored.")
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

    def delete(self, request, pk):
        do_delete_rate(request.user, get_object_or_404(Rate, pk=pk))
        return Response(status=status.HTTP_204_NO_CONTENT)
