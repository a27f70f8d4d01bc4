"""Links of a paged, sortable list (Idle GPUs, the explorer): each keeps every filter of the page
and changes only the page or the order (apps/web/paging.py parses them back)."""
from apps.web.links import page_url as _link


def sort_links(request, paging, first_direction: dict) -> dict:
    """column -> (href, arrow): a click sorts by the column ("-" first in `first_direction`: a
    first click sorts descending), a second click reverses it; back to page 1."""
    out = {}
    for key, first in first_direction.items():
        if paging.key == key:
            sort, arrow = (key if paging.descending else f"-{key}"), ("▼" if paging.descending else "▲")
        else:
            sort, arrow = f"{first}{key}", ""
        out[key] = (_link(request, sort=sort, page=None), arrow)
    return out


def page_links(request, shown) -> dict:
    return {
        "previous": _link(request, page=shown.number - 1) if shown.number > 1 else None,
        "next": _link(request, page=shown.number + 1) if shown.number < shown.pages else None,
        "first": _link(request, page=None) if shown.number > 1 else None,
        "last": _link(request, page=shown.pages) if shown.number < shown.pages else None,
    }
