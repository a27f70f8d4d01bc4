"""The one reader of the hourly rollups for the pages, the API, the alerts and the advice
(docs/architecture.md; the rule is docs/teams-and-relabels.md, "Which team owns an hour").

Nothing outside accounting reads `UsageHour`, `QuotaHour`, `QueuedDemandHour` or
`DeviceHealthHour` (an import-linter contract in pyproject.toml says so; ingest writes them).
Every read here takes the window and scope as one `UsageFilter` and answers at one grain: per
pod, per hour, per day, per namespace. Rows that carry a namespace also carry its team, by one
rule: **an hour belongs to the team that owned its namespace at that hour** (the admin mapping
in force on the hour's billing day, else the label in force at the hour; `TeamResolver`).

A read grouped coarser than the hour (a pod's window, a day) is split in SQL at every instant
inside the window at which some namespace changes team (`TeamResolver.team_changes`): each
part is one team's, resolved at its first hour. A pod that ran across a re-org is then two
rows, its hours before the move with the old team and its hours after with the new one; with
no change in the window the query is the plain aggregate it always was.
"""
from __future__ import annotations

from .teams import HourTeams, attributed  # noqa: F401
from .pods import Epoch, epoch_instant, summary_days, pod_totals, pod_idle_blocks, pod_cells  # noqa: F401
from .hours import unallocated_rows, hour_cells, idle_hours_since, has_usage, energy_by_team_day, quota_days  # noqa: F401
from .health import health_rows, fleet_health_by_device, fleet_xids, fleet_health_by_hour, HELD_NOTHING, held_hours, HELD_READINGS, held_readings  # noqa: F401
from .advice import first_hours, namespace_hours, namespace_model_totals, quota_hours, queued_hours, capacity_by_model  # noqa: F401
