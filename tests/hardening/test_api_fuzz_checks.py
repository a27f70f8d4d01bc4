"""The custom check of the API fuzz run lets through only the documented rules between
parameters, recognised by their message and by the operation's description."""
from types import SimpleNamespace

from .api_fuzz_checks import documented_cross_field_refusal

USAGE = "Allocated GPU-hours.\n\nRules between parameters (a 400 naming `end`): `end` must be after `start` " \
        "(…), and the window may be at most MAX_REPORT_DAYS days long (400 as configured)."


def response(status, body, content_type="application/json"):
    return SimpleNamespace(status_code=status, content=body.encode(), headers={"content-type": [content_type]})


def case(description):
    return SimpleNamespace(operation=SimpleNamespace(definition=SimpleNamespace(raw={"description": description})))


def test_documented_rules_pass_and_nothing_else():
    window = '{"end": "the window is 424 days; the limit is 400 days (MAX_REPORT_DAYS)"}'
    order = '{"end": "end (2026-11-01T00:00:00+00:00) must be after start (2099-01-01T00:00:00+00:00)"}'
    assert documented_cross_field_refusal(response(400, window), case(USAGE)) == "window limit"
    assert documented_cross_field_refusal(response(400, order), case(USAGE)) == "end after start"
    assert documented_cross_field_refusal(response(400, "end\nthe window is 424 days; the limit is 400 days (MAX_REPORT_DAYS)\n",
                                                    "text/csv; charset=utf-8"), case(USAGE)) == "window limit"
    # the same message on an operation that does not document the rule, another status, another parameter,
    # another message, or a second error beside it: the built-in check decides
    assert documented_cross_field_refusal(response(400, window), case("Rates.")) is None
    assert documented_cross_field_refusal(response(409, window), case(USAGE)) is None
    assert documented_cross_field_refusal(response(400, window.replace('"end"', '"start"')), case(USAGE)) is None
    assert documented_cross_field_refusal(response(400, '{"end": "end is not a date"}'), case(USAGE)) is None
    assert documented_cross_field_refusal(
        response(400, '{"end": "the window is 424 days; the limit is 400 days (MAX_REPORT_DAYS)", "team": "x"}'), case(USAGE)) is None
