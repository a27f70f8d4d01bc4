"""Rate-card writes: import a file or entries, save one rate, delete one; atomic and audited
(docs/chargeback.md, "1. Import rates")."""
from __future__ import annotations


from django.db import transaction


from apps.accounting.models import Rate

from apps.accounting.actions.audit import ActionError, audit


def do_import_rate_file(data: bytes, actor=None, source="") -> list[Rate]:
    """A rate-card CSV as uploaded or read from disk: every row or none. Raises RateFileError
    listing each bad line (or the file's encoding) — the command line and the admin's upload
    page both call this (docs/chargeback.md)."""
    from apps.accounting.models import PRICE_CLASSES
    from apps.accounting.pricing.rate_csv import RateFileError, parse_rates
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RateFileError([f"the file is not UTF-8 text (byte {exc.start}): save it as CSV UTF-8"])
    text = text.replace("\r\n", "\n").replace("\r", "\n")   # universal newlines, as a text file is read
    existing = set(Rate.objects.values_list("gpu_model", "mig_profile", "price_class", "effective_from"))
    return do_import_rates(parse_rates(text, PRICE_CLASSES, existing), actor=actor, source=source)


def do_import_rates(entries, actor=None, source="") -> list[Rate]:
    """Store `entries` (`rate_csv.parse_rates`' RateEntry rows, each already checked in memory
    against the table's fields and the stored keys): one bulk insert of the rates and one of
    their history rows, in one transaction, audited once. A rate another import stored since
    the file was read fails the whole file, nothing kept (docs/chargeback.md, "1. Import rates":
    22,000 lines take seconds; a `full_clean()` and `save()` a row took 12 s for 2,000)."""
    from django.db import IntegrityError
    from simple_history.utils import bulk_create_with_history

    from apps.accounting.pricing.rate_csv import RateFileError
    rates = [Rate(gpu_model=e.gpu_model, mig_profile=e.mig_profile, price_class=e.price_class,
                  hourly_rate=e.hourly_rate, currency=e.currency, effective_from=e.effective_from)
             for e in entries]
    user = actor if actor is not None and actor.is_authenticated else None
    try:
        with transaction.atomic():
            bulk_create_with_history(rates, Rate, default_user=user)
            audit(actor, "rates.import", source or "csv", None, [r.as_dict() for r in rates])
    except IntegrityError:
        raise RateFileError(["a rate of this file was stored by someone else meanwhile; nothing imported: "
                             "upload the file again to see which line"]) from None
    return rates


def do_save_rate(actor, rate: Rate) -> Rate:
    """Create or change one rate (admin page, REST API); the audit row keeps old → new."""
    with transaction.atomic():
        old = None
        if rate.pk:
            old = Rate.objects.select_for_update().get(pk=rate.pk).as_dict()
        rate.full_clean()
        rate.save()
        rate.refresh_from_db()  # the stored value (6 decimal places), so old and new read alike
        audit(actor, "rate.change" if old else "rate.create", f"rate {rate.pk}", old, rate.as_dict())
    return rate


def do_delete_rate(actor, rate: Rate) -> None:
    """Delete one rate; refused (ActionError, with the reason) when it priced a closed month."""
    from apps.web.deletes import refusals
    reasons = refusals([rate])
    if reasons:
        raise ActionError("; ".join(reasons))
    with transaction.atomic():
        old = rate.as_dict()
        pk = rate.pk
        rate.delete()
        audit(actor, "rate.delete", f"rate {pk}", old, None)
