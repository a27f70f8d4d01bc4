"""Schemathesis hooks for tests/hardening/test_api_fuzz.py, loaded by the schemathesis command
through SCHEMATHESIS_HOOKS.

Every built-in check runs. `positive_data_acceptance` ("a request the schema allows is
accepted") runs through `positive_data_acceptance_but_cross_field_rules`, which passes exactly
one kind of refusal: a 400 whose JSON error is one of the rules between several parameters
that an OpenAPI schema cannot state and that the operation's description documents
(docs/api.md, "Rules between parameters"). Any other refusal of a schema-valid request fails as
the built-in check would.
"""
import csv
import io
import json
import re

import schemathesis
from schemathesis.specs.openapi.checks import positive_data_acceptance

# rule -> (the words the operation's description uses for it, the error it answers with:
#          {parameter: message})
CROSS_FIELD_RULES = {
    "end after start": (re.compile(re.escape("`end` must be after `start`")),
                        ("end", re.compile(r"end \(\S+\) must be after start \(\S+\)"))),
    # Reads of daily figures have MAX_REPORT_DAYS, reads of hourly rows MAX_HOURLY_REPORT_DAYS
    # (docs/security.md, "No request ties up the portal"); each description names its own.
    "window limit": (re.compile(r"at most (MAX_REPORT_DAYS|MAX_HOURLY_REPORT_DAYS) days"),
                     ("end", re.compile(r"the window is \d+ days; the limit( for reads of hourly rows)? is \d+ days "
                                        r"\((MAX_REPORT_DAYS|MAX_HOURLY_REPORT_DAYS)\)"))),
}


def documented_cross_field_refusal(response, case) -> str | None:
    """The name of the documented rule this 400 answers with, else None."""
    if response.status_code != 400:
        return None
    try:
        body = _error(response)
    except ValueError:
        return None
    if not isinstance(body, dict) or len(body) != 1:
        return None
    (name, message), = body.items()
    description = case.operation.definition.raw.get("description", "")
    for rule, (documented, (parameter, pattern)) in CROSS_FIELD_RULES.items():
        if name == parameter and isinstance(message, str) and pattern.fullmatch(message) and \
                documented.search(description):
            return rule
    return None


def _error(response):
    """The error as {parameter: message}; asked for with ?format=csv it comes as a header row
    of parameter names and a row of messages."""
    text = response.content.decode("utf-8")
    if (response.headers.get("content-type") or [""])[0].startswith("text/csv"):
        rows = list(csv.reader(io.StringIO(text)))
        if len(rows) != 2:
            raise ValueError("not one error row")
        return dict(zip(*rows))
    return json.loads(text)


@schemathesis.check
def positive_data_acceptance_but_cross_field_rules(ctx, response, case):
    if documented_cross_field_refusal(response, case):
        return True
    return positive_data_acceptance(ctx, response, case)
