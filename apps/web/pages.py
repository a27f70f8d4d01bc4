"""What every page answers with when its query string is refused."""
from django.shortcuts import render


def bad_request(request, detail):
    """A 400 page listing each refused parameter with its reason (DRF ValidationError detail)."""
    messages = []
    if isinstance(detail, dict):
        for field, errs in detail.items():
            for e in errs if isinstance(errs, list) else [errs]:
                messages.append(f"{field}: {e}")
    else:
        messages = [str(d) for d in (detail if isinstance(detail, list) else [detail])]
    return render(request, "400_parameters.html", {"messages_": messages}, status=400)
