"""Environment variables read once, typed (docs/conventions.md, "Settings are read once"; docs/configuration.md): a malformed value
stops start-up with ImproperlyConfigured naming it, instead of surfacing later."""
import environ
from django.core.exceptions import ImproperlyConfigured

env = environ.Env()


def env_float(name, default, low=None, high=None):
    raw = env.str(name, default=str(default))
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ImproperlyConfigured(f"{name}={raw!r} must lie between {low} and {high}")
    return value


def env_int(name, default, low=1):
    raw = env.str(name, default=str(default))
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a whole number")
    if value < low:
        raise ImproperlyConfigured(f"{name}={raw!r} must be at least {low}")
    return value
