"""Every URL pattern of the project, found by walking the resolver (so none can be forgotten)."""
from django.urls import URLPattern, URLResolver, get_resolver

# Includes whose access is decided as a whole by their own site (the Django admin: staff only).
WHOLE_INCLUDES = {"admin"}


def routes(patterns=None, prefix=""):
    """Route strings like 'api/v1/rates/<int:pk>/'; a WHOLE_INCLUDES include counts as one route."""
    out = []
    for p in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(p, URLResolver):
            if p.namespace in WHOLE_INCLUDES:
                out.append(prefix + str(p.pattern))
            else:
                out.extend(routes(p.url_patterns, prefix + str(p.pattern)))
        elif isinstance(p, URLPattern):
            out.append(prefix + str(p.pattern))
    return out
