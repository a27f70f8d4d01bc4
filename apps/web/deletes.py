"""Deletes a higher layer may refuse, with its reason (docs/chargeback.md, "History stays").

A model of a lower app (a cluster, a team) may carry history an app above it depends on (a
closed month's statement). The lower app cannot ask the higher one, so the higher one answers
`delete_refusals`: sent with the objects about to be deleted, each receiver returns a list of
reasons (empty: no objection). `guard(model)` connects Django's `pre_delete` so that any delete
(admin, API, shell, cascade) of a refused object raises `ProtectedError` naming the reasons; the
admins mix in `RefusedDeletesAdmin`, which lists the reasons on the delete page, as Django lists
protected objects, and deletes nothing. No domain here: the rules are the receivers'.
"""
from __future__ import annotations

from django.contrib import messages
from django.db.models import ProtectedError
from django.db.models.signals import pre_delete
from django.dispatch import Signal

delete_refusals = Signal()   # keyword argument: objects (a list of model instances); returns [reason, …]


def refusals(objects) -> list[str]:
    """Why these objects may not be deleted (every receiver's reasons, in order); empty: they may."""
    objects = list(objects)
    if not objects:
        return []
    out: list[str] = []
    for _receiver, reasons in delete_refusals.send(sender=type(objects[0]), objects=objects):
        out += list(reasons or ())
    return out


def _refuse(sender, instance, **kwargs):
    reasons = refusals([instance])
    if reasons:
        raise ProtectedError("; ".join(reasons), {instance})


def guard(model) -> None:
    """Refuse every delete of `model` that a `delete_refusals` receiver objects to."""
    pre_delete.connect(_refuse, sender=model, dispatch_uid=f"web.deletes.guard.{model._meta.label}")


class RefusedDeletesAdmin:
    """A ModelAdmin mix-in: a refused delete shows its reasons where Django lists protected objects,
    and the confirmation is never offered; a bulk delete of refused rows deletes none of them."""

    def get_deleted_objects(self, objs, request):
        deleted, counts, perms, protected = super().get_deleted_objects(objs, request)
        reasons = refusals(objs)
        # The reasons first: Django's page shows lacking permissions instead of protected objects.
        return deleted, counts, (set() if reasons else perms), [*reasons, *protected]

    def refused(self, request, objects) -> bool:
        """Whether a delete of `objects` is refused (the reasons shown to the user)."""
        reasons = refusals(objects)
        if reasons:
            self.message_user(request, "Nothing deleted: " + "; ".join(reasons), messages.ERROR)
        return bool(reasons)

    def delete_queryset(self, request, queryset):
        if not self.refused(request, queryset):
            super().delete_queryset(request, queryset)
