"""The orjson renderer writes the bytes DRF's JSONRenderer writes, only faster."""
from datetime import date, datetime, timezone
from decimal import Decimal

import pytest
from django.utils.translation import gettext_lazy
from rest_framework.renderers import JSONRenderer

from gpuportal.json import FastJSONRenderer


def both(data, **kwargs):
    return FastJSONRenderer().render(data, **kwargs), JSONRenderer().render(data, **kwargs)


@pytest.mark.parametrize("data", [
    {"cost": "12.34", "hours": 2.5, "n": 3, "none": None, "ok": True, "rows": [{"key": "ml"}]},
    {"when": datetime(2026, 3, 1, 10, 0, 0, 123456, tzinfo=timezone.utc), "day": date(2026, 3, 1)},
    {"amount": Decimal("1.50"), "detail": gettext_lazy("Not found.")},
    {"name": "team <b>&</b> é \u2028 \u2029 \U0001F600"},
    {1: "int key"},
    [10 ** 30],   # beyond orjson's 64 bits: DRF's encoder answers
])
def test_bytes_equal_drf(data):
    fast, drf = both(data)
    assert fast == drf


def test_indented_answers_are_drfs():
    fast, drf = both({"a": [1, 2]}, accepted_media_type="application/json; indent=4")
    assert fast == drf == b'{\n    "a": [\n        1,\n        2\n    ]\n}'


def test_the_api_answers_with_it(admin_client):
    r = admin_client.get("/api/v1/usage/?group_by=team")
    assert r.status_code == 200 and r["Content-Type"] == "application/json"
    assert isinstance(r.renderer_context["response"].accepted_renderer, FastJSONRenderer)
    assert r.content == JSONRenderer().render(r.data)
