"""Server-side paging and sorting of a long list (the Idle GPUs page, the explorer) and of an
API's ranking (idle GPUs, right-sizing): `page`, `page_size` and `sort` from the URL, each refused
with a message naming it (400, never 500), and the API's paged body (docs/api.md, "Paging")."""
from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from apps.web.params import BadParameters

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


@dataclass(frozen=True)
class Paging:
    page: int                  # 1-based
    page_size: int
    sort: str                  # a key of the list's sorts, "-" first for descending

    @property
    def key(self) -> str:
        return self.sort.removeprefix("-")

    @property
    def descending(self) -> bool:
        return self.sort.startswith("-")


@dataclass(frozen=True)
class Page:
    rows: list
    number: int
    pages: int
    total: int
    first_index: int           # 1-based position of its first row (0 when empty)

    @property
    def last_index(self) -> int:
        return self.first_index + len(self.rows) - 1 if self.rows else 0


def _whole(params, name: str, default: int, low: int, high: int | None, errors: dict) -> int:
    raw = params.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        errors[name] = f"{name}={raw!r} is not a whole number"
        return default
    if value < low or (high is not None and value > high):
        errors[name] = f"{name}={raw!r} must lie between {low} and {high if high is not None else 'infinity'}"
    return value


def parse_paging(params, sorts, default_sort: str) -> Paging:
    """`sorts`: the keys a list may be sorted by. Raises BadParameters naming each bad parameter."""
    errors: dict[str, str] = {}
    page = _whole(params, "page", 1, 1, None, errors)
    size = _whole(params, "page_size", DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE, errors)
    sort = params.get("sort") or default_sort
    if sort.removeprefix("-") not in sorts:
        names = ", ".join(sorted(sorts))
        errors["sort"] = f"sort={sort!r} is not one of {names} (a leading - sorts descending)"
    if errors:
        raise BadParameters(errors)
    return Paging(page=page, page_size=size, sort=sort)


def parse_page(params, *, default_size: int = DEFAULT_PAGE_SIZE, sort: str = "") -> Paging:
    """`page` and `page_size` alone, for a list in one fixed order (an API's ranking)."""
    errors: dict[str, str] = {}
    page = _whole(params, "page", 1, 1, None, errors)
    size = _whole(params, "page_size", default_size, 1, MAX_PAGE_SIZE, errors)
    if errors:
        raise BadParameters(errors)
    return Paging(page=page, page_size=size, sort=sort)


def sort_rows(rows: list, paging: Paging, sorts, tie) -> list:
    """Rows in the asked order; `sorts[key](row)` gives the value (None sorts last either way),
    `tie(row)` breaks ties the same way whatever the direction."""
    value = sorts[paging.key]
    present = [r for r in rows if value(r) is not None]
    missing = [r for r in rows if value(r) is None]
    present.sort(key=tie)
    present.sort(key=value, reverse=paging.descending)        # stable: ties keep the tie order
    return present + sorted(missing, key=tie)


def page_of(rows: list, paging: Paging) -> Page:
    """One page of `rows`; a page past the last is refused (its number names the problem)."""
    pages = max(1, ceil(len(rows) / paging.page_size))
    if paging.page > pages:
        raise BadParameters({"page": f"page={paging.page} is past the last page ({pages})"})
    start = (paging.page - 1) * paging.page_size
    chunk = rows[start:start + paging.page_size]
    return Page(rows=chunk, number=paging.page, pages=pages, total=len(rows), first_index=start + 1 if chunk else 0)


def api_page(request, rows: list, paging: Paging) -> dict:
    """An API ranking's page as every paged endpoint answers it (docs/api.md, "Paging"): `count`
    (the whole ranking's rows), `page`, `pages`, `next` / `previous` (the neighbouring pages' URLs
    with every other parameter kept, null at either end) and `results`. A page past the last is an
    empty page, not an error: the ranking may have shrunk between two calls, and a client walking
    `next` stops at null; its `previous` is the last page."""
    pages = max(1, ceil(len(rows) / paging.page_size))
    shown = page_of(rows, paging).rows if paging.page <= pages else []

    def link(number):
        query = request.query_params.copy()
        query["page"] = str(number)
        return request.build_absolute_uri("?" + query.urlencode())
    return {"count": len(rows), "page": paging.page, "pages": pages,
            "next": link(paging.page + 1) if paging.page < pages else None,
            "previous": link(min(paging.page - 1, pages)) if paging.page > 1 else None,
            "results": shown}
