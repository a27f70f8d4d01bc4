"""Parts of a page rendered once per version of their inputs and stored (docs/performance.md,
"Pages' stored fragments").

A page's month part (the overview's figures, the chargeback page's team table) is HTML computed
from a month's stored answer. Rendering it from those answers is most of a warm view (reading
back 22,800 statement lines and rendering 250 rows at 10,000 GPUs), so it is rendered once per
version of the month's inputs and stored as a `MonthBody` beside the API's bodies; a view while
that version holds reads the HTML back in one query.

The version is the caller's: the month's stored-answer version (`ledger.answer.statement_version`,
`ledger.answer.usage_version`, the stored forecast's), read *before* rendering, so a write committed
meanwhile leaves the fragment stale, never served stale. The key names everything else the HTML
depends on: the view's own parameters (money shown, whose teams: `stored.responses.scope_tag`, the query
string its links carry), the money locale, and a digest of the templates and formatting filters
that render it (a deploy that changes either is a miss). The page around a fragment (navigation,
CSRF token, a month's closed state, freshness) is rendered per request.
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from apps.accounting.stored import month_body


def fragment(period: str | None, view: str, version: str | None, params, templates: tuple[str, ...], render) -> str:
    """`render()` (HTML), stored under `fragment_key(view, params, templates)` of `period` with
    `version`: the stored HTML while the version holds. No period or version (a window that is not
    a month's stored answer, SQLite): rendered on every view, nothing stored."""
    if period is None or version is None:
        return render()
    return month_body(period, fragment_key(view, params, templates), version, lambda: render().encode()).decode()


PART = "<!-- fragment part -->"     # between the parts of one stored fragment


def fragment_parts(period: str | None, view: str, version: str | None, params, templates: tuple[str, ...],
                   render) -> list[str]:
    """`fragment` of several parts of a page rendered together (`render()` returns them as a list),
    stored as one and split again: one read for all of them."""
    return fragment(period, view, version, params, templates, lambda: PART.join(render())).split(PART)


def fragment_key(view: str, params, templates: tuple[str, ...]) -> str:
    """`view?name=value&…&locale=…&source=…`: `params` (pairs, in order; values without `&`, so
    anything free-form goes in as `digest(...)`), the money locale and the digest of `templates`."""
    parts = [f"{name}={value}" for name, value in params]
    parts += [f"locale={settings.MONEY_LOCALE}", f"source={source_digest(tuple(templates))}"]
    return f"{view}?{'&'.join(parts)}"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@functools.cache
def source_digest(templates: tuple[str, ...]) -> str:
    """A digest of what renders the stored HTML besides its data: the templates and the formatting
    filters. A deploy that changes either makes every stored fragment a miss."""
    from django.template.loader import get_template

    from .templatetags import report_format

    h = hashlib.sha256()
    for name in templates:
        h.update(name.encode() + b"\0" + get_template(name).template.source.encode() + b"\0")
    h.update(Path(report_format.__file__).read_bytes())
    return h.hexdigest()[:32]


@receiver(setting_changed)
def _templates_changed(setting, **_kwargs):
    """Another template configuration (tests override it) may find other sources: digest again."""
    if setting in ("TEMPLATES", "INSTALLED_APPS"):
        source_digest.cache_clear()
