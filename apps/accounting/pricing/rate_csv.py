"""Parse a rate-card CSV: all or nothing, errors name their line.

Columns: `gpu_model,mig_profile,hourly_rate,currency,effective_from`, optionally a sixth
`price_class` (default on_demand). Line 1 is the header; data starts on line 2.
"""
from __future__ import annotations

import csv
import io
from datetime import date
from decimal import Decimal, InvalidOperation

from apps.accounting.core.ratecard import RateEntry
from apps.accounting.core.currencies import is_currency

COLUMNS = ["gpu_model", "mig_profile", "hourly_rate", "currency", "effective_from"]
OPTIONAL = "price_class"


class RateFileError(ValueError):
    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("; ".join(errors))


PROGRESS_EVERY = 2000      # lines between two calls of parse_rates' `progress`


def parse_rates(text: str, price_classes, existing_keys=frozenset(), progress=None) -> list[RateEntry]:
    """RateEntry per data row, or RateFileError listing every bad line.

    `existing_keys` holds (gpu_model, mig_profile, price_class, effective_from) already stored:
    a row repeating one is refused (change a stored rate through the admin or the API).
    `progress(line)`, if given, is called every PROGRESS_EVERY lines with the line reached.
    """
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    header = next(reader, None)
    if header is None:
        raise RateFileError(["line 1: the file is empty; expected the header " + ",".join(COLUMNS)])
    header = [h.strip() for h in header]
    if header not in (COLUMNS, COLUMNS + [OPTIONAL]):
        raise RateFileError([f"line 1: wrong header {','.join(header)!r}; expected "
                             f"{','.join(COLUMNS)} (optionally ,{OPTIONAL})"])
    errors, entries, seen = [], [], {}
    for row in reader:
        line = reader.line_num
        if progress is not None and line % PROGRESS_EVERY == 0:
            progress(line)
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            errors.append(f"line {line}: {len(row)} columns; expected {len(header)}")
            continue
        values = dict(zip(header, (cell.strip() for cell in row)))
        problems = []
        model = values["gpu_model"]
        if not model:
            problems.append("gpu_model is empty")
        rate = None
        try:
            rate = Decimal(values["hourly_rate"])
            if not rate.is_finite():
                raise InvalidOperation
            if rate < 0:
                problems.append(f"hourly_rate {values['hourly_rate']!r} is negative")
        except InvalidOperation:
            problems.append(f"hourly_rate {values['hourly_rate']!r} is not a number")
        currency = values["currency"].upper()
        if not is_currency(currency):
            problems.append(f"currency {values['currency']!r} is not an ISO 4217 code")
        day = None
        try:
            day = date.fromisoformat(values["effective_from"])
            if len(values["effective_from"]) != 10:
                raise ValueError
        except ValueError:
            problems.append(f"effective_from {values['effective_from']!r} is not a date (YYYY-MM-DD)")
        price_class = values.get(OPTIONAL) or "on_demand"
        if price_class not in price_classes:
            problems.append(f"price_class {price_class!r} is not one of {', '.join(price_classes)}")
        if any("\x00" in cell for cell in row):
            problems.append("a cell holds a NUL character")
        if not problems:
            problems += _field_problems(model, values["mig_profile"], price_class, rate, currency, day)
        if problems:
            errors.append(f"line {line}: " + "; ".join(problems))
            continue
        key = (model, values["mig_profile"], price_class, day)
        label = f"{model} {values['mig_profile'] or '(whole GPU)'} {price_class} from {day}"
        if key in seen:
            errors.append(f"line {line}: duplicate rate for {label} (also on line {seen[key]})")
            continue
        if key in existing_keys:
            errors.append(f"line {line}: a rate for {label} already exists (overlapping effective_from)")
            continue
        seen[key] = line
        entries.append(RateEntry(gpu_model=model, mig_profile=values["mig_profile"], price_class=price_class,
                                 hourly_rate=rate, currency=currency, effective_from=day))
    if errors:
        raise RateFileError(errors)
    return entries


def _field_problems(gpu_model, mig_profile, price_class, hourly_rate, currency, day) -> list[str]:
    """What the rate table itself would refuse (lengths, digits): said per line, before any row is saved."""
    from django.core.exceptions import ValidationError

    from apps.accounting.models.rates import Rate
    problems = []
    # Each field's own clean (its validators, length, digits), without making a model instance
    # per line: 22,000 lines are checked in memory in about a second (docs/chargeback.md).
    for name, value in (("gpu_model", gpu_model), ("mig_profile", mig_profile), ("price_class", price_class),
                        ("hourly_rate", hourly_rate), ("currency", currency), ("effective_from", day)):
        try:
            Rate._meta.get_field(name).clean(value, None)
        except ValidationError as exc:
            problems.append(f"{name}: {' '.join(exc.messages)}")
    return problems
