"""A page's own URL with some parameters changed, every other filter kept: the links of paged and
sortable lists (the explorer, Idle GPUs, right-sizing)."""
from urllib.parse import urlencode


def page_url(request, **changes) -> str:
    """This page's query string with `changes` (a value of None drops that parameter)."""
    q = request.GET.copy()
    for key, value in changes.items():
        q.pop(key, None)
        if value is not None:
            q[key] = str(value)
    return "?" + urlencode(list(q.lists()), doseq=True)
