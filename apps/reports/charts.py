"""Every chart of the portal, built with plotly and returned as an HTML fragment.

The fragments carry no plotly.js: base pages load it once from static/ (the portal runs
air-gapped), as the partial "cartesian" bundle, which has every trace type used here (bar,
scatter, heatmap) at a third of the full bundle's size (docs/performance.md, "Pages"). Each builder returns None when there is nothing to draw, so a template can say so.
"""
from __future__ import annotations

import functools
import html
import json
import uuid
from datetime import date, datetime, time, timedelta

import plotly.graph_objects as go
import plotly.io as pio
from plotly.utils import PlotlyJSONEncoder

from apps.accounting.core.measures import efficiency, gpu_hours

CONFIG = {"displaylogo": False, "responsive": True, "modeBarButtonsToRemove": ["sendDataToCloud"]}
COLORS = {"used": "#2e7d32", "allocated": "#f9a825", "unallocated": "#b0bec5", "idle": "#c62828",
          "efficiency": "#1565c0", "hard": "#6a1b9a"}


# Trace attributes that may carry names from the cluster (teams, namespaces, pods, models).
_NAME_ATTRIBUTES = ("x", "y", "name", "text", "hovertext", "legendgroup", "customdata", "ids")


def as_text(value):
    """plotly reads labels, legends and hover text as a subset of HTML (`<a href>` included),
    so a namespace called `<a href="javascript:…">` would become a live link. Escaped, it is
    shown as the characters it is."""
    if isinstance(value, str):
        return html.escape(value, quote=False)
    if isinstance(value, (list, tuple)):
        return [as_text(v) for v in value]
    return value


def _names_as_text(fig: go.Figure) -> None:
    for trace in fig.data:
        for attribute in _NAME_ATTRIBUTES:
            value = getattr(trace, attribute, None)
            if value is not None:
                trace[attribute] = as_text(list(value) if not isinstance(value, str) else value)


# What json_script escapes: the figure's JSON sits in a <script type="application/json">.
_JSON_ESCAPES = {ord(">"): "\\u003E", ord("<"): "\\u003C", ord("&"): "\\u0026"}


def _html(fig: go.Figure, height: int = 320) -> str:
    """The figure as data, not code: a <div> and its JSON in a non-executable
    <script type="application/json">, drawn by static/js/portal.js. No inline script, so the
    Content-Security-Policy can forbid them all (docs/security.md)."""
    _names_as_text(fig)
    fig.update_layout(height=height, margin={"l": 55, "r": 20, "t": 30, "b": 45},
                      legend={"orientation": "h", "y": -0.2}, font={"size": 12})
    figure = fig.to_plotly_json()
    # The template goes in as its JSON, made once: plotly validates and deep-copies a template
    # on every update_layout(template=…), which was most of a page's chart time.
    layout = {**figure["layout"], "template": _template_json()}
    spec = json.dumps({"data": figure["data"], "layout": layout, "config": CONFIG},
                      cls=PlotlyJSONEncoder, separators=(",", ":"))
    element = f"plot-{uuid.uuid4().hex[:12]}"
    return (f'<div id="{element}" class="plotly-graph-div" style="height:{height}px; width:100%;"></div>'
            f'<script type="application/json" data-plotly-for="{element}">{spec.translate(_JSON_ESCAPES)}</script>')


@functools.cache
def _template_json() -> dict:
    """plotly's "plotly_white" template as JSON, parsed back into plain data (read-only: shared)."""
    return json.loads(json.dumps(pio.templates["plotly_white"].to_plotly_json(), cls=PlotlyJSONEncoder))


def _day_axis(fig: go.Figure, days, partial=None) -> None:
    """Daily points: label days, not instants — every day while they fit, else every k-th
    counted back from the last, so the last point always has its label. A partial day
    (`data.overview.PartialDay`) is shaded and labelled with the hours it holds."""
    days = sorted({date.fromisoformat(d) if isinstance(d, str) else d for d in days})
    if not days:
        return
    step = max(1, -(-len(days) // 14))
    shown = days[::-1][::step][::-1]
    labels = [f"{d:%b %d}" + (f" ({partial.hours_with_data:.0f} h)" if partial and d == partial.day else "")
              for d in shown]
    # Half a day of room either side: a filled area ends on its last point, and a label there,
    # centred on the plot's edge, was hidden by the browser.
    fig.update_xaxes(type="date", hoverformat="%Y-%m-%d", tickmode="array", tickvals=shown, ticktext=labels,
                     range=[_shifted(days[0], -0.5), _shifted(days[-1], 0.5)])
    if partial is not None and partial.day in days:
        fig.add_vrect(x0=_shifted(partial.day, -0.5), x1=_shifted(partial.day, 0.5), fillcolor="#90a4ae",
                      opacity=0.18, line_width=0, layer="below",
                      annotation_text=f"{partial.hours_with_data:.0f} of {partial.hours:.0f} h, at that pace",
                      # anchored at the shade's right edge, the text runs leftwards into the plot:
                      # from its left edge it ran past the plot's right end and was cut off
                      annotation_position="top right", annotation_font_size=10)


def _shifted(day, days: float) -> str:
    return (datetime.combine(day, time()) + timedelta(days=days)).isoformat()


def _paced(days, values, partial):
    """Per-day figures, the partial day's scaled to a whole day at the pace it ran (a day with
    20 of 24 hours of data and 320 GPU-hours plots 384): a chart of GPU-hours per day must not
    end in a cliff because today is not over."""
    if partial is None:
        return list(values)
    return [v * partial.scale if d == partial.day and v is not None else v for d, v in zip(days, values)]


def fleet_area(days, fleet: bool, partial=None) -> str | None:
    """Stacked: used + allocated-but-unused (+ unallocated) = allocated (capacity)."""
    if not days:
        return None
    x = [d.day for d in days]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=_paced(x, [d.used_gpu_hours for d in days], partial), name="used",
                             stackgroup="gpu", line={"color": COLORS["used"]}))
    fig.add_trace(go.Scatter(x=x, y=_paced(x, [max(d.allocated_gpu_hours - d.used_gpu_hours, 0.0) for d in days],
                                           partial),
                             name="allocated, not used", stackgroup="gpu", line={"color": COLORS["allocated"]}))
    if fleet:
        fig.add_trace(go.Scatter(x=x, y=_paced(x, [d.unallocated_gpu_hours for d in days], partial),
                                 name="unallocated", stackgroup="gpu", line={"color": COLORS["unallocated"]}))
    fig.update_traces(mode="lines+markers")
    fig.update_yaxes(title_text="GPU-hours per day")
    _day_axis(fig, x, partial)
    return _html(fig)


def efficiency_trend(days, partial=None) -> str | None:
    points = [(d.day, d.efficiency) for d in days if d.efficiency is not None]
    if not points:
        return None
    fig = go.Figure(go.Scatter(x=[p[0] for p in points], y=[p[1] for p in points], mode="lines+markers",
                               name="efficiency", line={"color": COLORS["efficiency"]}))
    fig.update_yaxes(title_text="used ÷ allocated", tickformat=".0%", rangemode="tozero")
    _day_axis(fig, [p[0] for p in points], partial)
    return _html(fig, 320)


def idle_teams_bar(rows) -> str | None:
    if not rows:
        return None
    fig = go.Figure(go.Bar(x=[gpu_hours(r.idle_gpu_seconds) for r in rows], y=[r.key for r in rows],
                           orientation="h", marker_color=COLORS["idle"], name="idle GPU-hours"))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title_text="idle GPU-hours")
    return _html(fig, 80 + 28 * len(rows))


def models_bar(models) -> str | None:
    if not models:
        return None
    x = [m["gpu_model"] for m in models]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=x, y=[m["used_gpu_hours"] for m in models], name="used", marker_color=COLORS["used"]))
    fig.add_trace(go.Bar(x=x, y=[max(m["allocated_gpu_hours"] - m["used_gpu_hours"], 0.0) for m in models],
                         name="allocated, not used", marker_color=COLORS["allocated"]))
    fig.add_trace(go.Bar(x=x, y=[m["unallocated_gpu_hours"] for m in models], name="unallocated",
                         marker_color=COLORS["unallocated"]))
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title_text="GPU-hours")
    return _html(fig)


def namespace_lines(series, partial=None) -> str | None:
    if not series:
        return None
    fig = go.Figure()
    for ns, points in series.items():
        x = [p[0] for p in points]
        fig.add_trace(go.Scatter(x=x, y=_paced(x, [p[1] for p in points], partial), name=f"{ns} allocated",
                                 mode="lines", line={"dash": "dot"}, legendgroup=ns))
        fig.add_trace(go.Scatter(x=x, y=_paced(x, [p[2] for p in points], partial), name=f"{ns} used",
                                 mode="lines+markers", legendgroup=ns))
    fig.update_yaxes(title_text="GPU-hours per day", rangemode="tozero")
    _day_axis(fig, [p[0] for points in series.values() for p in points], partial)
    return _html(fig)


def mig_bar(mig_hours: dict[str, float]) -> str | None:
    if not mig_hours:
        return None
    fig = go.Figure(go.Bar(x=list(mig_hours), y=list(mig_hours.values()), name="MIG instance-hours",
                           marker_color=COLORS["efficiency"]))
    fig.update_yaxes(title_text="instance-hours")
    return _html(fig, 260)


def quota_bar(quotas) -> str | None:
    if not quotas:
        return None
    x = [q.namespace for q in quotas]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=x, y=[q.hard for q in quotas], name="quota (hard)", marker_color=COLORS["hard"]))
    fig.add_trace(go.Bar(x=x, y=[q.used_peak for q in quotas], name="peak used", marker_color=COLORS["allocated"]))
    fig.update_layout(barmode="group")
    fig.update_yaxes(title_text="GPUs")
    return _html(fig, 260)


def efficiency_heatmap(heat: dict) -> str | None:
    """Team × day, colour = used ÷ allocated; cells without allocation stay blank."""
    if not heat:
        return None
    teams = sorted({t for t, _ in heat})
    days = sorted({d for _, d in heat})
    z = [[efficiency(heat[(t, d)][1], heat[(t, d)][0]) if (t, d) in heat else None for d in days] for t in teams]
    fig = go.Figure(go.Heatmap(x=days, y=teams, z=z, zmin=0, zmax=1, colorscale="RdYlGn",
                               colorbar={"title": {"text": "efficiency"}, "tickformat": ".0%"},
                               hovertemplate="%{y} %{x}<br>efficiency %{z:.1%}<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    _day_axis(fig, days)
    return _html(fig, 120 + 30 * len(teams))


def idle_pods_bar(pods, limit: int = 15) -> str | None:
    pods = pods[:limit]
    if not pods:
        return None
    fig = go.Figure(go.Bar(x=[gpu_hours(p.idle_gpu_seconds) for p in pods], y=[f"{p.namespace}/{p.pod}" for p in pods],
                           orientation="h", marker_color=COLORS["idle"], name="idle GPU-hours"))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title_text="idle GPU-hours")
    return _html(fig, 80 + 28 * len(pods))


def temperature_lines(hours) -> str | None:
    if not any(h.temperature_c_max is not None for h in hours):
        return None
    x = [h.hour_start for h in hours]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=[h.temperature_c_max for h in hours], name="hottest GPU", mode="lines",
                             line={"color": COLORS["idle"]}))
    fig.add_trace(go.Scatter(x=x, y=[h.temperature_c_avg for h in hours], name="average", mode="lines",
                             line={"color": COLORS["efficiency"]}))
    fig.add_hline(y=83, line_dash="dash", line_color="#888", annotation_text="83 °C")
    fig.update_yaxes(title_text="°C")
    return _html(fig, 280)


def power_line(hours) -> str | None:
    if not any(h.power_watts is not None for h in hours):
        return None
    fig = go.Figure(go.Scatter(x=[h.hour_start for h in hours], y=[h.power_watts for h in hours], mode="lines",
                               name="power", fill="tozeroy", line={"color": COLORS["allocated"]}))
    fig.update_yaxes(title_text="W (sum of GPUs)")
    return _html(fig, 260)


def energy_bar(energy) -> str | None:
    if not energy:
        return None
    fig = go.Figure()
    for month in sorted({e["month"] for e in energy}):
        rows = [e for e in energy if e["month"] == month]
        fig.add_trace(go.Bar(x=[e["team"] for e in rows], y=[e["energy_kwh"] for e in rows], name=month))
    fig.update_layout(barmode="group")
    fig.update_yaxes(title_text="kWh")
    return _html(fig, 280)
