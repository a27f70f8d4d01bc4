"""Rate-card writes: import a file or entries, save one rate, delete one; atomic and audited
(docs/chargeback.md, "1. Import rates")."""
from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from apps.accounting.models import Rate, RateImport

from apps.accounting.actions.audit import ActionError, audit


log = logging.getLogger(__name__)
PROGRESS_UPDATES = 10       # writes of an upload's progress while its lines are checked


def do_import_rate_file(data: bytes, actor=None, source="", progress=None, writing=None) -> list[Rate]:
    """A rate-card CSV as uploaded or read from disk: every row or none. Raises RateFileError
    listing each bad line (or the file's encoding) — the command line and the admin's upload
    page (through `run_rate_import`) both call this (docs/chargeback.md). `progress(line)` is
    told how far the check has read, `writing()` when every line passed and the write begins."""
    from apps.accounting.models import PRICE_CLASSES
    from apps.accounting.pricing.rate_csv import RateFileError, parse_rates
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RateFileError([f"the file is not UTF-8 text (byte {exc.start}): save it as CSV UTF-8"])
    text = text.replace("\r\n", "\n").replace("\r", "\n")   # universal newlines, as a text file is read
    existing = set(Rate.objects.values_list("gpu_model", "mig_profile", "price_class", "effective_from"))
    entries = parse_rates(text, PRICE_CLASSES, existing, progress=progress)
    if writing is not None:
        writing()
    return do_import_rates(entries, actor=actor, source=source)


def queue_rate_import(data: bytes, file_name: str, actor) -> RateImport:
    """Keep an uploaded rate card for a worker (`tasks.import_rate_file` runs `run_rate_import`);
    the caller queues the task with the row's id."""
    user = actor if actor is not None and actor.is_authenticated else None
    return RateImport.objects.create(file_name=file_name[:255], data=data, requested_by=user,
                                     lines_total=max(data.count(b"\n") + (not data.endswith(b"\n")) - 1, 0))


def run_rate_import(import_id: int) -> RateImport:
    """Import a queued rate card, saying how far it got on its row as it goes: every line
    imported and audited once (`do_import_rate_file`), or the whole file refused with each
    reason. A row already finished is left as it is, so a task delivered twice imports once;
    the file is dropped once it is done."""
    from apps.accounting.pricing.rate_csv import RateFileError

    job = RateImport.objects.select_related("requested_by").get(pk=import_id)
    if job.done:
        return job
    rows = RateImport.objects.filter(pk=job.pk)
    rows.update(status=RateImport.Status.CHECKING, lines_checked=0)

    step, said = max(job.lines_total // PROGRESS_UPDATES, 1), [0]

    def progress(line):         # at most PROGRESS_UPDATES writes, however long the file
        if line - said[0] >= step:
            said[0] = line
            rows.update(lines_checked=max(line - 1, 0))

    def writing():
        rows.update(status=RateImport.Status.WRITING, lines_checked=job.lines_total)
    outcome = {"data": None, "finished_at": None}
    try:
        rates = do_import_rate_file(bytes(job.data), actor=job.requested_by, source=f"upload {job.file_name}",
                                    progress=progress, writing=writing)
    except RateFileError as exc:
        outcome.update(status=RateImport.Status.REFUSED, errors=exc.errors)
    except Exception as exc:  # noqa: BLE001 - said on the row and logged whole; nothing was kept
        log.exception("rate import %s (%s) failed", job.pk, job.file_name)
        outcome.update(status=RateImport.Status.FAILED,
                       errors=[f"the import failed ({type(exc).__name__}); nothing imported; the log has the details"])
    else:
        outcome.update(status=RateImport.Status.IMPORTED, imported=len(rates), lines_checked=job.lines_total)
    outcome["finished_at"] = timezone.now()
    rows.update(**outcome)
    job.refresh_from_db()
    return job


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
