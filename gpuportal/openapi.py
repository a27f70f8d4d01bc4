"""OpenAPI post-processing: every operation documents the errors the API can answer with.

DRF answers a refused request with a JSON object (`{"detail": "..."}` or `{"<field>": [...]}`);
the views raise 400 for bad parameters, 404 for unknown clusters or ids, 409 for a period that
cannot be closed or reopened, and the authentication, permission and throttle layers add
401, 403 and 429. The hook adds those responses where a view did not say more, in every media type the
operation answers in (an error asked for with `?format=csv` comes back as CSV). Path integers
get `minimum: 0`: Django's `int` converter matches digits only, so `/rates/-1/` is no route.

`describe_parameters` states what the parsers accept, so a generated client knows it: a
`period` is `YYYY-MM` (years 2000-2100), a `start`/`end` an ISO 8601 date or instant in those
years (docs/dates-and-money.md), each empty or absent for its default, and a parameter with an enum takes one of its values (an empty
value is refused like any other value outside it); any other text parameter may hold anything but
a NUL character.
"""
import re

from apps.accounting.query.filters import INSTANT_PATTERN, PERIOD_PATTERN
from apps.reports.api.forecast import running_period

EMPTY_OR = "^$|"
# Django refuses a URL holding a NUL character (400) before any view sees it.
NO_NUL_PATTERN = r"^[^\x00]*$"
PATTERNS = {"period": (PERIOD_PATTERN, "YYYY-MM, years 2000-2100"),
            "start": (INSTANT_PATTERN, "ISO 8601 date or instant, years 2000-2100"),
            "end": (INSTANT_PATTERN, "ISO 8601 date or instant, years 2000-2100")}
ERROR_SCHEMA = {"type": "object", "additionalProperties": {}, "description": "DRF error: detail or per-field messages"}
ERRORS = {
    "400": "bad parameters (the message names the parameter and the limit)",
    "401": "no or unknown credentials",
    "403": "the role may not do this",
    "404": "no such cluster, team or object",
    "409": "the request conflicts with the current state (e.g. a period already closed)",
    "429": "throttled: too many requests for this token",
}


FORMAT_MEDIA_TYPES = {"json": "application/json", "csv": "text/csv",
                      "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}


def _media_types(operation):
    """What an error may come back as: the success media types and every `?format=` choice."""
    types = ["application/json"]
    for code, response in sorted(operation.get("responses", {}).items()):
        if code.startswith("2"):
            types += [mt for mt in response.get("content", {}) if mt not in types]
    for param in operation.get("parameters", []):
        if param.get("in") == "query" and param.get("name") == "format":
            types += [FORMAT_MEDIA_TYPES[f] for f in param["schema"].get("enum", [])
                      if f in FORMAT_MEDIA_TYPES and FORMAT_MEDIA_TYPES[f] not in types]
    return types


def document_errors(result, generator, request, public):
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            for param in operation.get("parameters", []):
                if param.get("in") == "path" and param.get("schema", {}).get("type") == "integer":
                    param["schema"]["minimum"] = 0
            responses = operation.setdefault("responses", {})
            content = {mt: {"schema": {"$ref": "#/components/schemas/Error"} if "json" in mt else {"type": "string"}}
                       for mt in _media_types(operation)}
            for code, text in ERRORS.items():
                responses.setdefault(code, {"description": text, "content": content})
    return result


# Parameters whose allowed values depend on the day the document is asked for: the forecast is
# made for the running month only (docs/forecast.md); empty, like absent, means that month.
TODAYS_ENUMS = {("/api/v1/forecast/", "period"): lambda: [running_period(), ""]}


def _blank_alternative_is_redundant(prop) -> bool:
    """drf-spectacular writes a blank-allowed text field with a pattern as oneOf [the field, an
    empty string]; when the field's own pattern already takes "", an empty value matches both
    and fails the oneOf."""
    one_of = prop.get("oneOf") or []
    return (len(one_of) == 2 and one_of[1] == {"type": "string", "maxLength": 0}
            and re.search(one_of[0].get("pattern", "(?!)"), "") is not None)


def collapse_blank_alternatives(result):
    for component in result.get("components", {}).get("schemas", {}).values():
        for prop in component.get("properties", {}).values():
            if _blank_alternative_is_redundant(prop):
                inner = prop.pop("oneOf")[0]
                prop.update(inner)


def describe_parameters(result, generator, request, public):
    collapse_blank_alternatives(result)
    for path, path_item in result.get("paths", {}).items():
        for operation in path_item.values():
            for param in operation.get("parameters", []):
                schema = param.get("schema", {})
                if param.get("in") != "query" or schema.get("type") != "string":
                    continue
                if (path, param["name"]) in TODAYS_ENUMS:
                    schema["enum"] = TODAYS_ENUMS[path, param["name"]]()
                    continue
                if param["name"] in PATTERNS and "enum" not in schema:
                    pattern, example = PATTERNS[param["name"]]
                    schema["pattern"] = EMPTY_OR + pattern     # empty, like absent, is the default
                    param.setdefault("description", example)
                if "enum" in schema:
                    schema["enum"] = [v for v in schema["enum"] if v not in ("", None)]
                else:
                    schema.setdefault("pattern", NO_NUL_PATTERN)
    return result
