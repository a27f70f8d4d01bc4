"""A page's own URL with some parameters changed, every other filter kept: the links of paged and
sortable lists (the explorer, Idle GPUs, right-sizing), each changing only the page or the order
(apps/web/paging.py parses them back)."""
from urllib.parse import urlencode


def page_url(request, **changes) -> str:
    """This page's query string with `changes` (a value of None drops that parameter)."""
    q = request.GET.copy()
    for key, value in changes.items():
        q.pop(key, None)
        if value is not None:
            q[key] = str(value)
    return "?" + urlencode(list(q.lists()), doseq=True)


def sort_links(request, paging, first_direction: dict) -> dict:
    """column -> (href, arrow): a click sorts by the column ("-" first in `first_direction`: a
    first click sorts descending), a second click reverses it; back to page 1."""
    out = {}
    for key, first in first_direction.items():
        if paging.key == key:
            sort, arrow = (key if paging.descending else f"-{key}"), ("▼" if paging.descending else "▲")
        else:
            sort, arrow = f"{first}{key}", ""
        out[key] = (page_url(request, sort=sort, page=None), arrow)
    return out


def page_links(request, shown) -> dict:
    """previous / next / first / last of a list shown a page at a time (`paging.Page`); None at an end."""
    return {
        "previous": page_url(request, page=shown.number - 1) if shown.number > 1 else None,
        "next": page_url(request, page=shown.number + 1) if shown.number < shown.pages else None,
        "first": page_url(request, page=None) if shown.number > 1 else None,
        "last": page_url(request, page=shown.pages) if shown.number < shown.pages else None,
    }
