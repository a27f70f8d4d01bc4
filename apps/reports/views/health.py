"""The fleet health page: temperatures, power, XIDs and held-but-failing hours."""
from .. import charts
from ..data.health import HOT_SUSTAINED_SECONDS, device_health, energy_by_team_month, held_hours, hourly_health
from .common import page, report_view


@report_view
def health(request, sel):
    held = held_hours(sel)
    devices = device_health(sel, held)
    hours = hourly_health(sel, held)
    energy = energy_by_team_month(sel)
    return page(request, sel, "reports/health.html", "health", {
        "flagged": [d for d in devices if d.flagged], "devices": devices, "energy": energy,
        "hot_minutes": HOT_SUSTAINED_SECONDS / 60,
        "fig_temperature": charts.temperature_lines(hours),
        "fig_power": charts.power_line(hours),
        "fig_energy": charts.energy_bar(energy),
    })
