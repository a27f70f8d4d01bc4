"""Number formatting shared by the report templates."""
from django import template

from apps.accounting.figures import gpu_hours, percent_text

register = template.Library()


@register.filter
def gpuh(seconds, digits=2):
    """Seconds as GPU-hours, e.g. 5400.0 -> '1.50'."""
    if seconds is None:
        return "–"
    return f"{gpu_hours(seconds):,.{int(digits)}f}"


@register.filter
def num(value, digits=2):
    if value is None:
        return "–"
    return f"{value:,.{int(digits)}f}"


@register.filter
def pct(ratio, digits=1):
    """A ratio as a percentage, e.g. 0.4 -> '40.0 %'; None (no allocation) -> '–'."""
    return percent_text(ratio, digits)


@register.filter
def minutes(seconds):
    if seconds is None:
        return "–"
    return f"{seconds / 60.0:,.0f}"
